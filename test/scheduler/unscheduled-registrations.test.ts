import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { UNSCHEDULED_AFTER_MS } from '../../src/runtime/scheduler/scheduler-runtime.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import type { SchedulerState } from '../../src/scheduler/state.js';
import type { SimJob } from '../../simulations/jobs.js';
import { FOUNDERS, MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';

const KEPT: SimJob = { name: 'kept', spec: { every: '1s' }, runMs: [1, 5] };
const DROPPED: SimJob = { name: 'dropped', spec: { every: '1s' }, runMs: [1, 5] };

/** Three members scheduling KEPT and DROPPED, each then killed and started again scheduling KEPT alone (a deploy that drops a job, its processes killed, not stopped). */
async function deployDropping(seed: number): Promise<{ readonly sim: MembershipSim; readonly runs: Array<{ readonly job: string; readonly t: number; readonly id: NodeId }>; readonly lastStartT: number }> {
  const sim = new MembershipSim(seed, SETTINGS, [KEPT, DROPPED]);
  const runs: Array<{ job: string; t: number; id: NodeId }> = [];
  sim.onRunStart = (id, _incarnation, run) => void runs.push({ job: run.job, t: sim.scheduler.nowMs, id });
  for (const id of FOUNDERS) await sim.start(id);
  await sim.run(10_000);
  let lastStartT = 0;
  for (const id of FOUNDERS) {
    const m = sim.get(id);
    m.crash();
    await sim.run(1_000);
    m.jobs = [KEPT];
    await sim.restart(id);
    lastStartT = sim.scheduler.nowMs;
    await sim.run(5_000);
  }
  return { sim, runs, lastStartT };
}

/** Runs the simulation until its time is `t`. */
async function runUntil(sim: MembershipSim, t: number): Promise<void> {
  await sim.run(t - sim.scheduler.nowMs);
}

function leaderState(sim: MembershipSim): SchedulerState {
  const state = sim.leader()?.member?.scheduler.state;
  if (state === undefined) throw new Error('no leader');
  return state;
}

describe('the registrations that earlier lives of the members left for a job their app no longer schedules', () => {
  it('are taken off the log as its slots reach the members UNSCHEDULED_AFTER_MS after they start: no member handles the dropped job, none of its slots is claimed, the kept job runs on (before, each slot was claimed for a member with no handler, reported interrupted there, on every member in turn, for good)', async () => {
    const { sim, runs, lastStartT } = await deployDropping(5);
    // Within the minute after it started, a slot that reaches the member last started leaves its registration alone.
    expect(leaderState(sim).jobs.get('dropped')?.handlers.has('m3')).toBe(true);
    const offAt = lastStartT + UNSCHEDULED_AFTER_MS + 5_000;
    await runUntil(sim, offAt);
    const state = leaderState(sim);
    expect([...(state.jobs.get('dropped')?.handlers ?? [])]).toEqual([]);
    const latestClaimOfDropped = (): number => Math.max(0, ...[...state.claims.values()].filter((c) => c.job === 'dropped').map((c) => c.token));
    const latestBefore = latestClaimOfDropped();
    await sim.run(20_000);
    expect(latestClaimOfDropped()).toBe(latestBefore);
    expect(runs.filter((r) => r.job === 'kept' && r.t >= offAt).length).toBeGreaterThanOrEqual(18);
    // The kept job's registrations stay.
    expect([...(state.jobs.get('kept')?.handlers ?? [])].sort()).toEqual([...FOUNDERS]);
  }, 120_000);

  it("a job the app schedules again within UNSCHEDULED_AFTER_MS keeps that member's registration, while the others' go", async () => {
    const { sim, lastStartT } = await deployDropping(6);
    const m1 = sim.get('m1').member;
    m1?.scheduler.schedule('dropped', parseSpec(DROPPED.spec), async () => undefined, {});
    await runUntil(sim, lastStartT + UNSCHEDULED_AFTER_MS + 10_000);
    expect([...(leaderState(sim).jobs.get('dropped')?.handlers ?? [])]).toEqual(['m1']);
  }, 120_000);

  it('a job the app schedules later is registered again, and runs', async () => {
    const { sim, lastStartT } = await deployDropping(7);
    await runUntil(sim, lastStartT + UNSCHEDULED_AFTER_MS + 5_000);
    expect([...(leaderState(sim).jobs.get('dropped')?.handlers ?? [])]).toEqual([]);
    let ran = 0;
    sim.get('m2').member?.scheduler.schedule('dropped', parseSpec(DROPPED.spec), () => void ran++, {});
    await sim.run(10_000);
    expect([...(leaderState(sim).jobs.get('dropped')?.handlers ?? [])]).toEqual(['m2']);
    expect(ran).toBeGreaterThanOrEqual(8);
  }, 120_000);
});
