import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { memberSettings, type MemberSettings } from '../../src/runtime/member-settings.js';
import { MISSED } from '../../src/scheduler/command.js';
import { claimKey, type ClaimRecord } from '../../src/scheduler/records.js';
import type { SimJob } from '../../simulations/jobs.js';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

/** The reassignment horizon here: the run outlasts it, as a run of an hour outlasts production's ten minutes. */
const HORIZON_MS = 6000;
/** Production's settings but the horizon (the simulator draws it likewise: simulations/settings.ts). */
const defaults = memberSettings();
const SETTINGS: MemberSettings = { ...defaults, timing: { ...defaults.timing, reassignHorizonMs: HORIZON_MS } };
/** A slot every 25 s, each run 20 s: it starts on whichever member the leader picks. */
const LONG: SimJob = { name: 'long', spec: { every: '25s' }, runMs: [20_000, 20_000], options: { mode: 'one' } };

interface RunStart {
  readonly id: NodeId;
  readonly slotMs: number;
  readonly t: number;
}

/**
 * Three members run the long job until the leader of the moment runs a slot; 10 s into that run
 * (past the horizon from the slot and from the start), `lose` takes the leader away. Returns the
 * lost run, every run started, and the slot's claim on the new leader 25 s on.
 */
async function loseLeaderMidRun(seed: number, lose: (sim: MembershipSim, leader: NodeId) => void): Promise<{ sim: MembershipSim; lost: RunStart; started: RunStart[]; claim: ClaimRecord }> {
  const sim = new MembershipSim(seed, SETTINGS, [LONG]);
  for (const id of FOUNDERS) await sim.start(id);
  const started: RunStart[] = [];
  sim.onRunStart = (id, _incarnation, run) => started.push({ id, slotMs: run.slotMs, t: sim.scheduler.nowMs });
  let lost: RunStart | undefined;
  for (let slot = 0; slot < 12 && lost === undefined; slot++) {
    const from = started.length;
    await sim.until('the next run starts', () => (started.length > from ? true : undefined));
    const run = started[started.length - 1]!;
    if (sim.leader()?.id === run.id) lost = run;
  }
  expect(lost).toBeDefined();
  await sim.run(10_000);
  expect(sim.leader()?.id).toBe(lost!.id);
  lose(sim, lost!.id);
  const next = await sim.until('a new leader', () => {
    const l = sim.leader();
    return l !== undefined && l.id !== lost!.id ? l : undefined;
  });
  await sim.run(25_000);
  const claim = next.member!.scheduler.state.claims.get(claimKey(LONG.name, lost!.slotMs));
  expect(claim).toBeDefined();
  return { sim, lost: lost!, started, claim: claim! };
}

// The leader's planning knew when it last saw each member hold its claims, but a new leader
// knew nothing of the old one's: a long run lost together with its leader was counted from its
// start, past the horizon, and recorded missed rather than moved.
describe('a run longer than the horizon, lost together with the leader that ran it', () => {
  it('is moved to another member by the new leader, which counts the horizon from when it last heard the old one', async () => {
    const { lost, started, claim } = await loseLeaderMidRun(11, (sim, leader) => sim.get(leader).crash());
    const outcomes = [...claim.outcomes.entries()].map(([id, o]) => ({ id, outcome: o.outcome, current: o.token === claim.token }));
    expect(outcomes.filter((o) => o.outcome === MISSED)).toEqual([]);
    expect(claim.assignees).not.toContain(lost.id);
    expect(outcomes).toEqual([{ id: claim.assignees[0], outcome: 'succeeded', current: true }]);
    // The slot ran again, from the start, elsewhere.
    expect(started.filter((r) => r.slotMs === lost.slotMs).map((r) => r.id)).toEqual([lost.id, claim.assignees[0]]);
  }, 60_000);

  it('is moved when the leader is cut off, once the cut-off run was aborted at its lease, and that run is recorded stale', async () => {
    const aborted: Array<{ id: NodeId; t: number }> = [];
    const { sim, lost, started, claim } = await loseLeaderMidRun(11, (sim, leader) => {
      sim.onRun = (id, _incarnation, run) => {
        if (run.outcome === 'interrupted') aborted.push({ id, t: sim.scheduler.nowMs });
      };
      // Cut off with its connections open, as a partition leaves them at first (a blocked link
      // closes them, which moves the slot at once: README, "Failures").
      for (const id of FOUNDERS.filter((other) => other !== leader)) {
        sim.network.clog(leader, id, 3_600_000);
        sim.network.clog(id, leader, 3_600_000);
      }
    });
    expect(aborted.map((a) => a.id)).toEqual([lost.id]);
    expect(claim.assignees).not.toContain(lost.id);
    expect(claim.outcomes.get(claim.assignees[0]!)).toMatchObject({ outcome: 'succeeded', token: claim.token });
    const runs = started.filter((r) => r.slotMs === lost.slotMs);
    expect(runs.map((r) => r.id)).toEqual([lost.id, claim.assignees[0]]);
    // Never on two members at once.
    expect(runs[1]!.t).toBeGreaterThanOrEqual(aborted[0]!.t);
    // Healed, the old leader's report of its interrupted run is under a stale token: the slot stays succeeded.
    sim.network.healAll();
    await sim.run(5000);
    const after = sim.leader()!.member!.scheduler.state.claims.get(claimKey(LONG.name, lost.slotMs))!;
    expect(after.token).toBe(claim.token);
    expect([...after.outcomes.values()].filter((o) => o.token === after.token).map((o) => o.outcome)).toEqual(['succeeded']);
  }, 60_000);
});

describe('a run longer than the horizon, on a follower cut off with the leader in a minority', () => {
  it('is counted from its start by the new leader, which never heard its member, and recorded missed rather than moved', async () => {
    const founders = ['m1', 'm2', 'm3', 'm4', 'm5'];
    const sim = new MembershipSim(12, SETTINGS, [LONG], founders);
    for (const id of founders) await sim.start(id);
    const started: RunStart[] = [];
    const interrupted: NodeId[] = [];
    sim.onRunStart = (id, _incarnation, run) => started.push({ id, slotMs: run.slotMs, t: sim.scheduler.nowMs });
    sim.onRun = (id, _incarnation, run) => {
      if (run.outcome === 'interrupted') interrupted.push(id);
    };
    let lost: RunStart | undefined;
    for (let slot = 0; slot < 12 && lost === undefined; slot++) {
      const from = started.length;
      await sim.until('the next run starts', () => (started.length > from ? true : undefined));
      const run = started[started.length - 1]!;
      if (sim.leader()?.id !== run.id) lost = run;
    }
    expect(lost).toBeDefined();
    await sim.run(10_000);
    const old = sim.leader()!.id;
    expect(old).not.toBe(lost!.id);
    // The old leader and the run's member, cut off together from the majority, connections open.
    const minority = [old, lost!.id];
    for (const a of minority) {
      for (const b of founders.filter((id) => !minority.includes(id))) {
        sim.network.clog(a, b, 3_600_000);
        sim.network.clog(b, a, 3_600_000);
      }
    }
    const next = await sim.until('a new leader in the majority', () => {
      const l = sim.leader();
      return l !== undefined && !minority.includes(l.id) ? l : undefined;
    });
    await sim.run(25_000);
    const claim = next.member!.scheduler.state.claims.get(claimKey(LONG.name, lost!.slotMs))!;
    // Recorded missed for the member it was lost with, under the token it ran with, and run nowhere else.
    expect([...claim.outcomes.entries()].map(([id, o]) => [id, o.outcome, o.token === claim.token])).toEqual([[lost!.id, MISSED, true]]);
    expect(claim.outcomes.get(lost!.id)?.error).toMatch(/^expired: /);
    expect(started.filter((r) => r.slotMs === lost!.slotMs).map((r) => r.id)).toEqual([lost!.id]);
    // Its member aborted the run at its lease, heard by no leader once the old one stepped down.
    expect(interrupted).toContain(lost!.id);
  }, 60_000);
});
