import { afterEach, describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { LeaseEchoes } from '../../src/runtime/lease-echoes.js';
import { leaseMs } from '../../src/runtime/lease.js';
import type { SimJob } from '../../simulations/jobs.js';
import { MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';
import { patchMethod } from '../fixtures/plants.js';

/** A job of mode 'one' every second, its runs short. */
const TICK: SimJob = { name: 'tick', spec: { every: '1s' }, runMs: [1, 5] };
/** How long the leader's link to the follower stays cut: long enough for a plan to move its claims, far shorter than its lease. */
const CUT_MS = 150;
/** A slot of the follower's at least this far ahead of the cut, past its lease and a plan interval. */
const AHEAD_MS = leaseMs(SETTINGS.timing.electionTimeoutMs) + 2 * SETTINGS.timing.planIntervalMs;

interface Run {
  readonly id: NodeId;
  readonly slotMs: number;
  readonly token: number;
}

/**
 * Three members run TICK. The leader's appends to a follower are lost (a lossy link: its
 * heartbeats, and the follower's answers, get through), and then the leader's connection to it
 * closes for CUT_MS: the leader counts it lost at once and moves its claims, a slot AHEAD_MS
 * away among them, which the follower does not learn. Returns the runs of that slot.
 */
async function closedThenHealed(seed: number): Promise<{ readonly runs: readonly Run[]; readonly follower: NodeId; readonly slotMs: number }> {
  const sim = new MembershipSim(seed, SETTINGS, [TICK]);
  const runs: Run[] = [];
  sim.onRunStart = (id, _incarnation, run) => void runs.push({ id, slotMs: run.slotMs, token: run.fencingToken });
  const { leader, follower } = await sim.foundersLed(3, 3000);
  const slotMs = await sim.until('a claim of the follower far enough ahead', () => {
    const state = follower.member?.scheduler.state;
    const now = follower.driver?.clusterClock().now() ?? 0;
    for (const claim of state?.openClaims() ?? []) if (claim.assignees[0] === follower.id && claim.slotMs - now >= AHEAD_MS) return claim.slotMs;
    return undefined;
  });
  const send = sim.network.send.bind(sim.network);
  let losing = true;
  sim.network.send = (m): void => {
    if (!(losing && m.type === 'append' && m.from === leader.id && m.to === follower.id)) send(m);
  };
  sim.network.block(leader.id, follower.id);
  await sim.run(CUT_MS);
  sim.network.healPartitions();
  await sim.run(slotMs - (leader.driver?.clusterClock().now() ?? 0) + 200);
  losing = false;
  await sim.run(500);
  return { runs: runs.filter((r) => r.slotMs === slotMs), follower: follower.id, slotMs };
}

describe("a member's lease after its leader's connection to it closed", () => {
  let unplant: (() => void) | null = null;
  afterEach(() => {
    unplant?.();
    unplant = null;
  });

  it('is renewed only once the member holds the moves the leader made meanwhile: a member whose appends are lost runs none of its moved slots (before, the simulator’s blocked links told no member of their closed connections, and it ran the slot beside the new holder)', async () => {
    for (const seed of [1, 2, 3]) {
      const { runs, follower } = await closedThenHealed(seed);
      // The slot ran once, on the member the leader moved it to.
      expect(runs, `seed ${seed}`).toHaveLength(1);
      expect(runs[0]?.id, `seed ${seed}`).not.toBe(follower);
    }
  }, 60_000);

  it('a leader that forgot nothing as the connection closed (planted) renews the lease unfenced, and the slot runs on both members', async () => {
    unplant = patchMethod(LeaseEchoes.prototype, 'forget', () => (): void => undefined);
    const { runs, follower } = await closedThenHealed(1);
    expect(runs.map((r) => r.id)).toContain(follower);
    expect(runs).toHaveLength(2);
  }, 60_000);
});
