import { describe, expect, it } from 'vitest';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import type { NodeId } from '../../src/raft/types.js';
import type { Member } from '../../src/runtime/member.js';
import { MAX_STAMP_HOLD_MS } from '../../src/time/stamp-clock.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import type { SimJob } from '../../simulations/jobs.js';
import { FOUNDERS, JOB, MembershipSim, SETTINGS as MEMBER_SETTINGS } from '../fixtures/membership-sim.js';

/**
 * How far every member's wall clock steps back at once, so that the cluster's time (their
 * median) steps back as much: within what the stamp clock holds stamps through.
 */
const STEP_BACK_MS = MAX_STAMP_HOLD_MS - 200;

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 2, timeoutMs: 5000, backoffMs: 100, ratePerSecond: null, maxPending: null };

function memberOf(sim: MembershipSim, id: NodeId): Member {
  const member = sim.get(id).member;
  if (member === undefined || member === null) throw new Error(`${id} has no member`);
  return member;
}

/** Three members on simulated time, fan-out on and the cluster's time learned by each. */
async function syncedCluster(seed: number): Promise<MembershipSim> {
  const sim = new MembershipSim(seed);
  for (const id of FOUNDERS) await sim.start(id);
  await sim.until('cluster version 3 and the cluster time on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION && sim.get(id).driver?.clockSynced === true) ? true : undefined));
  return sim;
}

/** Steps every member's wall clock back: the cluster's time follows once the leader measures them again. */
function stepEveryClockBack(sim: MembershipSim): void {
  for (const id of FOUNDERS) sim.get(id).clock.jump(-STEP_BACK_MS);
}

/**
 * Which of the member's clocks each part reads (member.ts): fan-out stamps by the stamp clock,
 * which does not go back with a small step of the cluster's time, and slots fire by the
 * cluster's time itself. The stamp clock's own rules are stamp-clock.test.ts's; these fail if
 * the member hands a part the other clock.
 */
describe("the member's clocks", () => {
  it("stamps a member's emits in order across a step back of the cluster's time", async () => {
    const sim = await syncedCluster(21);
    const leader = await sim.until('a leader', () => sim.leader());
    const emitter = FOUNDERS.find((id) => id !== leader.id) as NodeId;
    const member = memberOf(sim, emitter);
    await sim.settle(member.fanoutRuntime.consume('t', () => undefined, SETTINGS));
    const stamps: number[] = [];
    sim.onFanoutApplied = (id, _index, command) => {
      if (id === emitter && command.type === 'emit') stamps.push(command.atMs);
    };
    stepEveryClockBack(sim);
    // Emit one item at a time until several went while the cluster's time was behind an
    // earlier emit's stamp (the step reaches the emitter with the leader's next estimate).
    let behind = 0;
    for (let i = 0; i < 200 && behind < 3; i++) {
      if (stamps.length > 0 && member.driver.clusterClock().now() < Math.max(...stamps)) behind++;
      await sim.settle(member.fanoutRuntime.emit('t', [{ data: Uint8Array.of(i), key: null }], null));
    }
    expect(behind).toBe(3);
    for (let i = 1; i < stamps.length; i++) expect(stamps[i]).toBeGreaterThanOrEqual(stamps[i - 1] as number);
  });

  it("fires a slot by the cluster's time and stamps its start so, though triggered at a stamp held ahead of that time", async () => {
    const sim = await syncedCluster(22);
    const starts: Array<{ readonly slotMs: number; readonly startedAtMs: number; readonly clusterMs: number }> = [];
    sim.onRunStart = (id, _incarnation, run) => {
      starts.push({ slotMs: run.slotMs, startedAtMs: run.startedAtMs, clusterMs: memberOf(sim, id).driver.clusterClock().now() });
    };
    const member = memberOf(sim, 'm1');
    const first = await sim.settle(member.scheduler.operations.trigger(JOB.name));
    // Its runs end before the next slot can overlap them.
    await sim.run(100);
    stepEveryClockBack(sim);
    await sim.until('the step back on m1', () => (member.driver.clusterClock().now() < first.slot.getTime() ? true : undefined));
    // Stamped at the time held ahead (the first trigger's, or later): the slot is that far off.
    const second = await sim.settle(member.scheduler.operations.trigger(JOB.name));
    expect(second.slot.getTime()).toBeGreaterThan(member.driver.clusterClock().now() + STEP_BACK_MS / 2);
    await sim.run(2 * STEP_BACK_MS);
    // It ran (its instant is fractional; the call gives it to the millisecond).
    expect(starts.filter((s) => Math.floor(s.slotMs) === second.slot.getTime()).length).toBeGreaterThan(0);
    for (const s of starts) {
      // Within a millisecond: timers take whole milliseconds, the cluster's time is fractional.
      expect(s.clusterMs).toBeGreaterThan(s.slotMs - 1);
      // A start is the cluster's time as the run starts, not a stamp held ahead of it: that
      // would make an on-time run look late (its lateness, overlap's late runs).
      expect(Math.abs(s.startedAtMs - s.clusterMs)).toBeLessThan(1);
    }
  });

  it('cancels the slots it triggered just before, the second a millisecond past the stamp held across a step back', async () => {
    const sim = await syncedCluster(23);
    const started: number[] = [];
    sim.onRunStart = (_id, _incarnation, run) => void started.push(run.slotMs);
    const member = memberOf(sim, 'm2');
    const first = await sim.settle(member.scheduler.operations.trigger(JOB.name));
    stepEveryClockBack(sim);
    await sim.until('the step back on m2', () => (member.driver.clusterClock().now() < first.slot.getTime() ? true : undefined));
    // The stamp holds at the first's instant, so the second is a millisecond past it: a cancel
    // stamped by the held time alone left it out, and it ran.
    const second = await sim.settle(member.scheduler.operations.trigger(JOB.name));
    const cancelled = await sim.settle(member.scheduler.operations.cancel(JOB.name));
    expect(cancelled.cancelled.map((s) => s.slot.getTime())).toContain(second.slot.getTime());
    await sim.run(2 * STEP_BACK_MS);
    expect(started.map(Math.floor)).not.toContain(second.slot.getTime());
  });
});

describe('a member whose wall clock NTP steps past maxClockSkewMs while it runs a slot', () => {
  /** One slot a minute, each run 20 s long. */
  const LONG: SimJob = { name: 'long', spec: { every: '60s' }, runMs: [20_000, 20_000], options: { timeoutMs: 50_000 } };

  /** Where the first slot's run started, and how it and any other start of its slot ended, after `stepMs` of that member's wall clock 5 s into the run. */
  async function afterStep(stepMs: number): Promise<{ starts: NodeId[]; outcomes: string[]; skewed: boolean }> {
    const sim = new MembershipSim(9, MEMBER_SETTINGS, [LONG]);
    const starts: Array<{ id: NodeId; slotMs: number }> = [];
    const ends: Array<{ slotMs: number; outcome: string }> = [];
    sim.onRunStart = (id, _incarnation, run) => void starts.push({ id, slotMs: run.slotMs });
    sim.onRun = (_id, _incarnation, run) => void ends.push({ slotMs: run.slotMs, outcome: run.outcome });
    for (const id of FOUNDERS) await sim.start(id);
    // The first slot comes within a minute (run() moves at most LIMIT_MS at once).
    await sim.run(20_000);
    await sim.run(20_000);
    const first = await sim.until('a run starts', () => starts[0]);
    await sim.run(5000);
    sim.get(first.id).clock.jump(stepMs);
    await sim.run(25_000);
    const leader = sim.leader();
    const skewed = leader?.member?.eligibleMembers().includes(first.id) === false;
    return { starts: starts.filter((s) => s.slotMs === first.slotMs).map((s) => s.id), outcomes: ends.filter((e) => e.slotMs === first.slotMs).map((e) => e.outcome), skewed };
  }

  it('gets no new work but keeps its run: the slot fires by the cluster’s time, which the step does not move (its claim was moved, the run aborted and run again elsewhere)', async () => {
    const first = await afterStep(3000);
    expect(first.skewed).toBe(true);
    expect(first.outcomes).toEqual(['succeeded']);
    expect(first.starts).toHaveLength(1);
  }, 60_000);

  it('(beside it) keeps its run through a step within maxClockSkewMs', async () => {
    const within = await afterStep(MEMBER_SETTINGS.timing.maxClockSkewMs - 200);
    expect(within.skewed).toBe(false);
    expect(within.outcomes).toEqual(['succeeded']);
    expect(within.starts).toHaveLength(1);
  }, 60_000);
});

describe('a cluster formed with one member down and one clock an hour off', () => {
  const HOUR = 3_600_000;
  const JOBS: readonly SimJob[] = [
    { name: 'every-1s', spec: { every: '1s' }, runMs: [1, 5] },
    { name: 'cron-5s', spec: '*/5 * * * * *', runMs: [1, 5] },
    { name: 'delay-1s', spec: { delayAfterCompletion: '1s' }, runMs: [1, 5] },
  ];
  /** Runs each job has at least in 30 s on time (a few fewer than its slots, for the edges). */
  const ON_TIME: Record<string, number> = { 'every-1s': 25, 'cron-5s': 5, 'delay-1s': 12 };

  /** Runs of each job in the last 30 s, once the third member (a good clock) has been back for 20 s; m2's clock is `offMs` off. */
  async function runsAfterThirdBack(offMs: number): Promise<Record<string, number>> {
    const sim = new MembershipSim(11, MEMBER_SETTINGS, JOBS);
    const runs: Array<{ job: string; t: number }> = [];
    sim.onRunStart = (_id, _incarnation, run) => void runs.push({ job: run.job, t: sim.scheduler.nowMs });
    await sim.start('m1');
    (await sim.start('m2')).clock.jump(offMs);
    await sim.until('the two synced', () => (['m1', 'm2'].every((id) => sim.get(id).driver?.clockSynced === true) ? true : undefined));
    await sim.run(10_000);
    await sim.start('m3');
    await sim.run(20_000);
    const from = sim.scheduler.nowMs;
    await sim.run(30_000);
    return Object.fromEntries(JOBS.map((j) => [j.name, runs.filter((r) => r.job === j.name && r.t >= from).length]));
  }

  it('runs every job on once the third is back, the clock ahead: the two clocks’ time was the earlier (their mean ran half an hour ahead, and every job waited that long once the time was put right)', async () => {
    const runs = await runsAfterThirdBack(HOUR);
    for (const job of JOBS) expect(runs[job.name], job.name).toBeGreaterThanOrEqual(ON_TIME[job.name] ?? 0);
  }, 60_000);

  it('(beside it) runs every job on once the third is back, the clock behind: the time put right forward is caught up', async () => {
    const runs = await runsAfterThirdBack(-HOUR);
    for (const job of JOBS) expect(runs[job.name], job.name).toBeGreaterThanOrEqual(ON_TIME[job.name] ?? 0);
  }, 60_000);
});

describe('a leader back from a crash, its clock a minute behind, with one member down', () => {
  const JOBS: readonly SimJob[] = [{ name: 'every-1s', spec: { every: '1s' }, runMs: [1, 5] }];

  it('leads on the time its follower holds: the slots run on (found by a census: it took its own clock as the earlier of two, and the jobs waited a minute)', async () => {
    const sim = new MembershipSim(13, MEMBER_SETTINGS, JOBS);
    const runs: number[] = [];
    sim.onRunStart = () => void runs.push(sim.scheduler.nowMs);
    for (const id of FOUNDERS) await sim.start(id);
    sim.get('m1').clock.jump(-62_000);
    await sim.until('the cluster time on every member', () => (FOUNDERS.every((id) => sim.get(id).driver?.clockSynced === true) ? true : undefined));
    await sim.run(5_000);
    // m3 goes down; m1 crashes, which takes the time it held, and comes back.
    sim.get('m3').crash();
    sim.get('m1').crash();
    await sim.run(2_000);
    await sim.restart('m1');
    const leader = await sim.until('a leader', () => sim.leader());
    if (leader.id !== 'm1') {
      expect(leader.driver?.transferLeadership()).toBe('m1');
      await sim.until('m1 leads', () => (sim.leader()?.id === 'm1' ? true : undefined));
    }
    const ledAt = sim.scheduler.nowMs;
    await sim.run(15_000);
    const m1 = sim.get('m1');
    const m2 = sim.get('m2');
    expect(m1.driver?.node.role).toBe('leader');
    // m2's clock is right: m1's cluster time is the real time, not its own clock's, a minute behind.
    expect(Math.abs((m1.driver?.clusterClock().now() ?? 0) - m2.clock.now())).toBeLessThan(100);
    expect(Math.abs((m2.driver?.clusterClock().now() ?? 0) - m2.clock.now())).toBeLessThan(100);
    // A slot a second in the 10 s after m1 first learned the time; before, none for a minute.
    expect(runs.filter((t) => t >= ledAt + 5_000).length).toBeGreaterThanOrEqual(8);
  }, 60_000);
});
