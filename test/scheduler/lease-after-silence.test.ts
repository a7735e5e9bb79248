import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { claimKey } from '../../src/scheduler/records.js';
import type { WireMessage } from '../../src/transport/envelope.js';
import type { SimJob } from '../../simulations/jobs.js';
import { SIM_EPOCH_MS } from '../../simulations/scheduler.js';
import { watchRuns } from '../fixtures/follower-run.js';
import { FOUNDERS, MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';

/** A short slot every two seconds. */
const JOB: SimJob = { name: 'tick', spec: { every: '2s' }, runMs: [100, 100], options: { mode: 'one' } };

// Seen in the swarm (seed 105 of a five-member sweep, its partitions quiet): a member cut off
// for longer than its lease had its claim moved; heard again, its answers renewed its lease at
// once, before it applied the move, and it ran the slot beside the member the slot moved to.
// Its lease now renews only once it holds, and has applied, the log as it ended when the leader
// heard it again (lease-echoes.ts). Here the leader's appends to it are lost while its
// heartbeats go through, so that it cannot learn of the move.
describe('a member cut off for longer than its lease, heard again', () => {
  it('does not run a claim that moved meanwhile before it applied the move', async () => {
    for (const seed of [1, 2, 3]) {
      const sim = new MembershipSim(seed, SETTINGS, [JOB], FOUNDERS);
      for (const id of FOUNDERS) await sim.start(id);
      const { starts } = watchRuns(sim);
      await sim.run(3000);
      // A follower X holding a claim at least 800 ms ahead.
      const held = await sim.until('a follower holds a claim ahead', () => {
        const now = SIM_EPOCH_MS + sim.scheduler.nowMs;
        for (const id of FOUNDERS) {
          const m = sim.get(id);
          if (m.driver?.node.role !== 'follower') continue;
          for (const claim of m.member!.scheduler.state.claims.values()) {
            if (claim.assignees[0] === id && claim.slotMs - now >= 800) return { x: id, slotMs: claim.slotMs, token: claim.token };
          }
        }
        return undefined;
      });
      const { x, slotMs, token } = held;
      const others = FOUNDERS.filter((id) => id !== x);
      // Cut off, its connections open, until the leader counts it lost and moves the claim.
      for (const id of others) {
        sim.network.mute(x, id);
        sim.network.mute(id, x);
      }
      await sim.run(750);
      const leader = sim.leader();
      const moved = leader?.member?.scheduler.state.claims.get(claimKey(JOB.name, slotMs));
      expect(moved?.token, `seed ${seed}: the claim moved`).toBeGreaterThan(token);
      // Heard again, but the leader's appends to X are lost: X cannot apply the move.
      sim.network.healAll();
      const send = sim.network.send.bind(sim.network);
      sim.network.send = (m: WireMessage): void => {
        if (m.to === x && (m.type === 'append' || m.type === 'snapshot')) return;
        send(m);
      };
      await sim.run(slotMs - SIM_EPOCH_MS - sim.scheduler.nowMs + 500);
      const ran: NodeId[] = starts.filter((s) => s.slotMs === slotMs).map((s) => s.id);
      expect(ran, `seed ${seed}: X is ${x}`).toEqual([moved!.assignees[0]]);
    }
  }, 120_000);
});
