import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import type { RunRecord } from '../../src/runtime/scheduler/job-types.js';
import type { SchedulerRuntimeOptions } from '../../src/runtime/scheduler/runtime-context.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { claimKey } from '../../src/scheduler/records.js';
import { PROPOSE_UNTIL_GIVE_UP_MS, PROPOSE_UNTIL_MAX_WAIT_MS } from '../../src/runtime/scheduler/runtime-context.js';

afterEach(stopClusters);

/**
 * One member whose cluster time is the virtual time plus `step.by`: set it below zero for a
 * step back of the cluster's time, as clock sync makes (under a millisecond) and as a new
 * leader's estimate may (more).
 */
function stepping(): { c: Cluster; step: { by: number }; records: RunRecord[] } {
  const step = { by: 0 };
  const records: RunRecord[] = [];
  const c: Cluster = track(new Cluster(['a'], 5, { onRun: (r) => records.push(r) }, () => ({ clock: { now: () => c.time.nowMs + step.by } })));
  return { c, step, records };
}

describe('the runtime when the cluster’s time steps back', () => {
  it('never ends a run before it started', async () => {
    const { c, step, records } = stepping();
    c.members.get('a')!.schedule(
      'quick',
      parseSpec({ every: '1s' }),
      async () => {
        // The correction moves 0.4 ms back while the handler awaits a short I/O.
        c.time.setTimeout(() => (step.by -= 0.4), 0.1);
        await c.time.sleep(0.3);
      },
      {},
    );
    await c.time.advanceTo(T0 + 1500);
    expect(records).toHaveLength(1);
    const run = records[0]!;
    expect(run.endedAtMs).toBeGreaterThanOrEqual(run.startedAtMs);
    // The log's start and outcome keep that order too (before: the outcome 0.1 ms before the start).
    const claim = c.state().claims.get(claimKey('quick', run.slotMs))!;
    expect(claim.outcomes.get('a')!.atMs).toBeGreaterThanOrEqual(claim.starts.get('a')!.atMs);
  });

  it('a second trigger of a job that replaces its runs is a later slot than the first, and replaces it', async () => {
    const { c, step } = stepping();
    const runs: Array<{ slot: number; signal: AbortSignal }> = [];
    c.members.get('a')!.schedule(
      'rep',
      parseSpec({ every: '1h' }),
      async (ctx) => {
        runs.push({ slot: ctx.slot.getTime(), signal: ctx.signal });
        await c.time.sleep(10_000, ctx.signal);
      },
      { overlap: 'replace' },
    );
    await c.time.advanceTo(T0 + 500);
    const first = c.members.get('a')!.operations.trigger('rep');
    await c.time.advanceTo(T0 + 550);
    const one = await first;
    expect(runs).toHaveLength(1);
    step.by = -150;
    const second = c.members.get('a')!.operations.trigger('rep');
    await c.time.advanceTo(T0 + 700);
    const two = await second;
    // Before: the second slot at T0 + 400, before the first's, and recorded skipped as the earlier one.
    expect(two.slot.getTime()).toBeGreaterThan(one.slot.getTime());
    await c.time.advanceTo(T0 + 800);
    expect(runs[0]!.signal.aborted).toBe(true);
    expect(c.state().claims.get(claimKey('rep', two.slot.getTime()))!.outcomes.get('a')).toBeUndefined();
    expect(runs.map((r) => r.slot)).toEqual([one.slot.getTime(), two.slot.getTime()]);
  });

  it('a cancel right after a trigger reaches the triggered run', async () => {
    const { c, step } = stepping();
    const signals: AbortSignal[] = [];
    c.members.get('a')!.schedule(
      'long',
      parseSpec({ every: '1h' }),
      async (ctx) => {
        signals.push(ctx.signal);
        await c.time.sleep(30_000);
      },
      { overlap: 'allow', timeoutMs: 60_000 },
    );
    await c.time.advanceTo(T0 + 500);
    const triggered = c.members.get('a')!.operations.trigger('long');
    await c.time.advanceTo(T0 + 506);
    await triggered;
    step.by = -50;
    const cancelled = c.members.get('a')!.operations.cancel('long');
    await c.time.advanceTo(T0 + 600);
    // Before: cancelled none, its time before the triggered slot's, and the run went on.
    expect((await cancelled).cancelled).toHaveLength(1);
    expect(signals.every((s) => s.aborted)).toBe(true);
  });
});

describe('a new leader whose cluster time steps back', () => {
  it('moves a lost member’s claim once it has led for the grace on its own timers, however far its time stepped back', async () => {
    // 'a' leads from the start with a cluster time a minute ahead (a bad estimate), corrected at 100 ms.
    const step = { by: 60_000 };
    let reachable = ['a', 'b', 'c'];
    const c: Cluster = track(
      new Cluster(['a', 'b', 'c'], 5, { reassignGraceMs: 1000, eligibleMembers: () => reachable }, (id) => (id === 'a' ? { clock: { now: () => c.time.nowMs + step.by } } : {})),
    );
    await c.time.advanceTo(T0 + 100);
    step.by = 0;
    c.schedule(['b', 'c'], 'report', { at: T0 + 3000 }, 10);
    await c.time.advanceTo(T0 + 2500);
    expect(c.claims('report').map((claim) => claim.assignees)).toEqual([['b']]);
    reachable = ['a', 'c'];
    await c.time.advanceTo(T0 + 3500);
    // Before: the grace counted on the cluster's time ended only a minute later, and the slot stayed with b.
    expect(c.runs.map((r) => [r.member, r.startMs - T0])).toEqual([['c', 3000]]);
  });
});

describe('a run’s record proposed while no leader takes it', () => {
  it('is proposed again until the horizon passes on the member’s own timers, whatever its cluster time does meanwhile', async () => {
    // 'b' runs the slot; its proposals fail (no leader) from 1.2 s to 5 s, and its cluster time
    // steps 11 minutes ahead at 2 s, past the horizon the record is tried for.
    const step = { by: 0 };
    let down = false;
    const c: Cluster = track(
      new Cluster(['a', 'b'], 5, {}, (id) =>
        id === 'b' ? { clock: { now: () => c.time.nowMs + step.by }, propose: (command) => (down ? Promise.reject(new Error('no leader')) : c.propose(command)) } : {},
      ),
    );
    c.schedule(['b'], 'report', { at: T0 + 1000 }, 500);
    await c.time.advanceTo(T0 + 1200);
    down = true;
    await c.time.advanceTo(T0 + 2000);
    step.by = 11 * 60_000;
    await c.time.advanceTo(T0 + 5000);
    down = false;
    await c.time.advanceTo(T0 + 6000);
    const claim = c.claims('report')[0]!;
    // Before: the tries stopped at the step, and the slot kept a run in progress for good.
    expect(claim.outcomes.get('b')).toMatchObject({ outcome: 'succeeded', token: claim.token });
  });
});

/**
 * Members a and b (reassignment horizon 3 s, and `options`); while `b.down`, b's proposals fail
 * as with no leader, counted in `b.tries`.
 */
function cutOffB(options: Partial<SchedulerRuntimeOptions> = {}): { c: Cluster; b: { down: boolean; tries: number } } {
  const b = { down: false, tries: 0 };
  const c: Cluster = track(
    new Cluster(['a', 'b'], 5, { reassignHorizonMs: 3000, ...options }, (id) =>
      id === 'b'
        ? {
            propose: (command) => {
              if (!b.down) return c.propose(command);
              b.tries++;
              return Promise.reject(new Error('no leader'));
            },
          }
        : {},
    ),
  );
  return { c, b };
}

describe('a run’s record proposed while its member is cut off past the horizon', () => {
  // Found by the simulator once it drew short horizons: the tries stopped at the horizon, and
  // every member's history showed the run that succeeded in progress for good.
  it('is recorded once a leader takes it again, the tries spaced out after the horizon', async () => {
    const { c, b } = cutOffB();
    c.schedule(['b'], 'report', { at: T0 + 1000 }, 500);
    await c.time.advanceTo(T0 + 1200);
    b.down = true;
    await c.time.advanceTo(T0 + 61_200);
    // A try every plan interval until the horizon (30), then twice as long each time, up to 10 s.
    expect(b.tries).toBeGreaterThan(30);
    expect(b.tries).toBeLessThan(45);
    b.down = false;
    await c.time.advanceTo(T0 + 75_000);
    const claim = c.claims('report')[0]!;
    expect(claim.outcomes.get('b')).toMatchObject({ outcome: 'succeeded', token: claim.token });
  });
});

describe('a run’s record proposed while its member reaches no leader for over a day', () => {
  it('is given up after PROPOSE_UNTIL_GIVE_UP_MS, its tries spaced out to PROPOSE_UNTIL_MAX_WAIT_MS', async () => {
    // Plans every 5 s, not every 100 ms: a day of them on two members is all the test's cost.
    const { c, b } = cutOffB({ planIntervalMs: 5000, lookaheadMs: 10_000 });
    c.schedule(['b'], 'report', { at: T0 + 1000 }, 500);
    await c.time.advanceTo(T0 + 1200);
    b.down = true;
    const downAtMs = c.time.nowMs;
    await c.time.advanceTo(downAtMs + PROPOSE_UNTIL_GIVE_UP_MS - 60_000);
    const before = b.tries;
    // Over the last minute of the day, one try every PROPOSE_UNTIL_MAX_WAIT_MS.
    await c.time.advanceTo(downAtMs + PROPOSE_UNTIL_GIVE_UP_MS);
    expect(b.tries - before).toBeGreaterThanOrEqual(60_000 / PROPOSE_UNTIL_MAX_WAIT_MS - 1);
    expect(b.tries - before).toBeLessThanOrEqual(60_000 / PROPOSE_UNTIL_MAX_WAIT_MS + 1);
    const atGiveUp = b.tries;
    await c.time.advanceTo(downAtMs + PROPOSE_UNTIL_GIVE_UP_MS + 10 * PROPOSE_UNTIL_MAX_WAIT_MS);
    expect(b.tries).toBeLessThanOrEqual(atGiveUp + 1);
    b.down = false;
    await c.time.advanceTo(c.time.nowMs + 5000);
    // Given up: the run's outcome stays unrecorded.
    const claim = c.claims('report')[0]!;
    expect(claim.outcomes.get('b')).toBeUndefined();
  }, 60_000);
});
