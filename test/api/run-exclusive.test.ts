import { describe, expect, it } from 'vitest';
import { ExclusiveTasks, exclusiveAbortMarginMs, runExclusive, type ExclusiveContext } from '../../src/api/run-exclusive.js';
import { letGoIfUnanswered, UnansweredLocks } from '../../src/api/unanswered-locks.js';
import { OutcomeUnknownError, TimeoutError } from '../../src/errors.js';
import { decodeEntry } from '../../src/runtime/commands.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { StampClock } from '../../src/time/stamp-clock.js';
import { SUPPORTED } from '../../src/version/versions.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/**
 * A member's context over a driver whose cluster time is `clusterClock` and whose proposals
 * apply their command to `state` as entry `nextIndex()`, once `commit()` (the commit round) ran.
 */
function contextOver(
  self: string,
  state: SchedulerState,
  clusterClock: { now(): number },
  timers: ExclusiveContext['timers'],
  nextIndex: () => number,
  commit: () => void = () => undefined,
): ExclusiveContext {
  const stamps = new StampClock(clusterClock);
  const driver = {
    clockSynced: true,
    node: { leader: 'a' },
    clusterClock: () => clusterClock,
    stampClock: () => stamps,
    propose: async (data: Uint8Array) => {
      const entry = decodeEntry(data, SUPPORTED.stateMachine.max, SUPPORTED);
      if (entry.kind !== 'scheduler') throw new Error(`not a scheduler command: ${entry.kind}`);
      commit();
      const index = nextIndex();
      return { index, result: state.apply(index, entry.command) };
    },
  };
  return { self, driver: () => driver as never, timers, clockSyncTimeoutMs: 1000, waitFor: async () => true, clockSyncPollMs: 10, tasks: new ExclusiveTasks(), abortMarginMs: exclusiveAbortMarginMs(1000), unanswered: new UnansweredLocks(), locks: () => state.locks };
}

/** runExclusive over a driver that applies each command to a SchedulerState, a commit round (1 ms) later. */
function member(state = new SchedulerState()): { ctx: ExclusiveContext; time: { ms: number; stepMs: number; commitMs: number } } {
  const time = { ms: T0, stepMs: 0, commitMs: 1 };
  let index = 0;
  const timers = { now: () => time.ms, setTimeout: () => 0, clearTimeout: () => undefined };
  const ctx = contextOver('a', state, { now: () => time.ms + time.stepMs }, timers, () => ++index, () => (time.ms += time.commitMs));
  return { ctx, time };
}

describe('runExclusive', () => {
  it('takes the lock again on the member that let it go, though the cluster’s time stepped back between the two', async () => {
    const { ctx, time } = member();
    let ran = 0;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 60_000 }, () => void ran++)).toBe(true);
    // Further back than the commit round since the unlock read the time: before, the second
    // lock's time was before the first's end, and the lock was refused as still held.
    time.stepMs = -1.5;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 60_000 }, () => void ran++)).toBe(true);
    expect(ran).toBe(2);
  });

  it('runs nothing under a lock that expired before it was granted (its commit took longer than atMostFor), and lets it go', async () => {
    const { ctx, time } = member();
    let ran = 0;
    // The lock's commit takes 2 s, past its atMostFor of 1 s: another member may take it at once.
    time.commitMs = 2000;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 1000 }, () => void ran++)).toBe(false);
    expect(ran).toBe(0);
    time.commitMs = 1;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 1000 }, () => void ran++)).toBe(true);
    expect(ran).toBe(1);
  });

  it('runs nothing under a lock granted past its abort point (its commit took that long), and lets it go at once', async () => {
    const { ctx, time } = member();
    let ran = 0;
    // A lock of 10 s whose commit took 9 s: past its end less the abort margin (2 s).
    time.commitMs = 9000;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 10_000 }, () => void ran++)).toBe(false);
    expect(ran).toBe(0);
    // Let go: taken again at once, 1 s before the first lock's end.
    time.commitMs = 1;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 10_000 }, () => void ran++)).toBe(true);
    expect(ran).toBe(1);
  });

  it('refuses with CRONRAFT_BACKPRESSURE a name nobody holds when every lock the cluster keeps is held, not as held by another (false)', async () => {
    const state = new SchedulerState({ maxLocks: 3 });
    for (const name of ['a', 'b', 'c']) state.apply(1, { type: 'lock', name, member: 'z', atMs: T0, untilMs: T0 + 600_000 });
    const { ctx } = member(state);
    await expect(runExclusive(ctx, 'd', { atMostFor: 1000 }, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_BACKPRESSURE' });
    expect(await runExclusive(ctx, 'a', { atMostFor: 1000 }, () => undefined)).toBe(false);
  });

  it('tells a call waiting for the cluster’s time as its member stops CRONRAFT_NOT_RUNNING, not CLOCK_UNSYNCED, and one made after the stop began at once', async () => {
    const { ctx } = member();
    const driver = ctx.driver() as unknown as { clockSynced: boolean };
    driver.clockSynced = false;
    // The member's wait for its clock ends (false) when it stops, as Cluster's does.
    let stop: () => void = () => undefined;
    const waiting = runExclusive({ ...ctx, waitFor: () => new Promise<boolean>((resolve) => (stop = () => resolve(false))) }, 'nightly', { atMostFor: 1000 }, () => undefined);
    const settled = ctx.tasks.settle(new ManualTimers(), 0);
    stop();
    await expect(waiting).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
    await settled;
    await expect(runExclusive(ctx, 'nightly', { atMostFor: 1000 }, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
  });

  it('lets go of a lock whose proposal timed out and then committed, where it was held with no task until atMostFor and the caller refused when it tried again', async () => {
    const state = new SchedulerState();
    const { ctx, time } = member(state);
    // The proposal is appended, but its answer does not come within the request timeout.
    let late: { index: number; data: Uint8Array } | null = null;
    const driver = ctx.driver() as unknown as { propose: (data: Uint8Array) => Promise<unknown> };
    const propose = driver.propose;
    driver.propose = async (data) => {
      late = { index: 7, data };
      throw new TimeoutError('The proposal', 5000);
    };
    await expect(runExclusive(ctx, 'nightly', { atMostFor: 600_000 }, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_TIMEOUT' });
    driver.propose = propose;
    // It commits after all, and this member applies it.
    time.ms += 6000;
    const entry = decodeEntry(late!.data, SUPPORTED.stateMachine.max, SUPPORTED);
    if (entry.kind !== 'scheduler') throw new Error('not a scheduler command');
    const result = state.apply(late!.index, entry.command);
    expect(result).toMatchObject({ ok: true });
    const lettingGo: Promise<unknown>[] = [];
    letGoIfUnanswered('a', late!.index, entry.command, result, ctx.unanswered, (data) => {
      const p = propose(data);
      lettingGo.push(p);
      return p;
    });
    await Promise.all(lettingGo);
    expect(lettingGo).toHaveLength(1);
    expect(ctx.unanswered.size).toBe(0);
    // Free at once, not ten minutes on.
    let ran = 0;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 600_000 }, () => void ran++)).toBe(true);
    expect(ran).toBe(1);
  });

  it('lets go at once of a lock the leader’s snapshot brought before its proposal was answered CRONRAFT_OUTCOME_UNKNOWN, where it was held with no task until atMostFor', async () => {
    const state = new SchedulerState();
    const { ctx } = member(state);
    const driver = ctx.driver() as unknown as { propose: (data: Uint8Array) => Promise<unknown> };
    const propose = driver.propose;
    const proposed: string[] = [];
    // The lock commits, and comes here in a snapshot that covers the proposal (its state is the
    // restored one), which the driver then answers so.
    driver.propose = async (data) => {
      const entry = decodeEntry(data, SUPPORTED.stateMachine.max, SUPPORTED);
      if (entry.kind === 'scheduler') proposed.push(entry.command.type);
      if (proposed.length > 1) return propose(data);
      const { index } = (await propose(data)) as { index: number };
      ctx.unanswered.installed(index);
      throw new OutcomeUnknownError('A snapshot from the leader replaced the log here before the proposal was applied');
    };
    await expect(runExclusive(ctx, 'nightly', { atMostFor: 600_000 }, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_OUTCOME_UNKNOWN' });
    await Promise.resolve();
    expect(proposed).toEqual(['lock', 'unlock']);
    expect(ctx.unanswered.size).toBe(0);
    driver.propose = propose;
    let ran = 0;
    expect(await runExclusive(ctx, 'nightly', { atMostFor: 600_000 }, () => void ran++)).toBe(true);
    expect(ran).toBe(1);
  });

  it('never lets go of a lock whose task is about to run for a call of the same name and end that went unanswered in the same turn (found by a reviewing helper)', async () => {
    const state = new SchedulerState();
    const { ctx, time } = member(state);
    const driver = ctx.driver() as unknown as { propose: (data: Uint8Array) => Promise<unknown> };
    const propose = driver.propose;
    const waiting: Array<{ command: Extract<SchedulerCommand, { type: 'lock' }>; resolve: (v: unknown) => void; reject: (e: Error) => void }> = [];
    // Locks wait for the test to answer them; anything else commits at once.
    driver.propose = (data) => {
      const entry = decodeEntry(data, SUPPORTED.stateMachine.max, SUPPORTED);
      if (entry.kind === 'scheduler' && entry.command.type === 'lock') {
        const command = entry.command;
        return new Promise((resolve, reject) => waiting.push({ command, resolve, reject }));
      }
      return propose(data);
    };
    let otherGranted = false;
    // B: 60 s from T0; A: 55 s five seconds on, so both end at the same instant.
    const b = runExclusive(ctx, 'report', { atMostFor: 60_000 }, () => {
      otherGranted = state.apply(1000, { type: 'lock', name: 'report', member: 'c', atMs: time.ms, untilMs: time.ms + 60_000 }).ok;
    });
    time.ms += 5000;
    const a = runExclusive(ctx, 'report', { atMostFor: 55_000 }, () => undefined);
    await Promise.resolve();
    const [lockB, lockA] = waiting as [(typeof waiting)[0], (typeof waiting)[0]];
    expect(lockA.command.untilMs).toBe(lockB.command.untilMs);
    // One turn of the driver's loop: A is answered CRONRAFT_OUTCOME_UNKNOWN (its leader changed),
    // then B's entry applies (the member's hook sees it first) and B is answered.
    lockA.reject(new OutcomeUnknownError());
    const result = state.apply(500, lockB.command);
    letGoIfUnanswered('a', 500, lockB.command, result, ctx.unanswered, propose);
    lockB.resolve({ index: 500, result });
    await expect(a).rejects.toMatchObject({ code: 'CRONRAFT_OUTCOME_UNKNOWN' });
    expect(await b).toBe(true);
    // B's lock held while its task ran: no other member was granted it.
    expect(otherGranted).toBe(false);
  });

  it('refuses a name with a lone surrogate, which the log would make one with another (a 200-character cut through an emoji)', async () => {
    const { ctx } = member();
    const cut = `${'x'.repeat(199)}${'😀'}`.slice(0, 200);
    await expect(runExclusive(ctx, cut, { atMostFor: 1000 }, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    await expect(runExclusive(ctx, '\uDE00x', { atMostFor: 1000 }, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    // A whole emoji is a name as any other.
    expect(await runExclusive(ctx, `${'x'.repeat(198)}😀`, { atMostFor: 1000 }, () => undefined)).toBe(true);
  });
});

describe('runExclusive: the holder’s signal and another member’s grant', () => {
  it('aborts the holder’s signal by the margin before the lock’s end, so that a member whose estimate of the cluster’s time is ahead is not granted it while the task runs unaborted', async () => {
    // Members over one replicated state, on one monotonic time base: each member's cluster time
    // is the true one plus its estimate's error. A's is 300 ms behind (within maxClockSkewMs).
    const state = new SchedulerState();
    const timers = new ManualTimers();
    let index = 0;
    const at = (id: string, offsetMs: number): ExclusiveContext => contextOver(id, state, { now: () => T0 + timers.now() + offsetMs }, timers, () => ++index);
    const a = at('a', -300);
    const b = at('b', 0);
    let aRunning = false;
    let aSignal: AbortSignal | null = null;
    const holding = runExclusive(a, 'reindex', { atMostFor: 10_000 }, ({ signal }) => {
      aRunning = true;
      aSignal = signal;
      return new Promise<void>((resolve) => signal.addEventListener('abort', () => ((aRunning = false), resolve()), { once: true }));
    });
    for (let i = 0; i < 20; i++) await Promise.resolve();
    expect(aRunning).toBe(true);
    // Aborted 2 s before its end by A's clock (8 s on), not at 10 s.
    timers.advance(7_999);
    expect((aSignal as AbortSignal | null)?.aborted).toBe(false);
    timers.advance(1);
    expect((aSignal as AbortSignal | null)?.aborted).toBe(true);
    // Its reason is a run's timeout, as a job run's is, naming the lock's time less the margin.
    expect((aSignal as AbortSignal | null)?.reason).toMatchObject({ code: 'CRONRAFT_RUN_TIMEOUT', reason: 'timeout', message: expect.stringContaining('atMostFor (10000 ms) less the abort margin (2000 ms)') });
    // B, whose estimate is 300 ms ahead of A's, past the lock's end by its own: A's task was
    // told to stop before (without the margin, B was granted it at 9.75 s, A's signal not aborted).
    timers.advance(1_750);
    let overlap = true;
    expect(await runExclusive(b, 'reindex', { atMostFor: 10_000 }, () => void (overlap = aRunning))).toBe(true);
    expect(overlap).toBe(false);
    await holding;
  });
});
