import { describe, expect, it } from 'vitest';
import { ExclusiveTasks, runExclusive, type ExclusiveContext } from '../../src/api/run-exclusive.js';
import { decodeEntry } from '../../src/runtime/commands.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { StampClock } from '../../src/time/stamp-clock.js';
import { SUPPORTED } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** runExclusive over a driver that applies each command to a SchedulerState, a commit round (1 ms) later. */
function member(): { ctx: ExclusiveContext; time: { ms: number; stepMs: number; commitMs: number } } {
  const state = new SchedulerState();
  const time = { ms: T0, stepMs: 0, commitMs: 1 };
  const cluster = { now: () => time.ms + time.stepMs };
  const stamps = new StampClock(cluster);
  let index = 0;
  const driver = {
    clockSynced: true,
    node: { leader: 'a' },
    clusterClock: () => cluster,
    stampClock: () => stamps,
    propose: async (data: Uint8Array) => {
      const entry = decodeEntry(data, SUPPORTED.stateMachine.max, SUPPORTED);
      if (entry.kind !== 'scheduler') throw new Error(`not a scheduler command: ${entry.kind}`);
      time.ms += time.commitMs;
      return { index: ++index, result: state.apply(index, entry.command) };
    },
  };
  const timers = { now: () => time.ms, setTimeout: () => 0, clearTimeout: () => undefined };
  const ctx: ExclusiveContext = { self: 'a', driver: () => driver as never, timers, clockSyncTimeoutMs: 1000, waitFor: async () => true, clockSyncPollMs: 10, tasks: new ExclusiveTasks() };
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
});
