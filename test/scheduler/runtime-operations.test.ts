import { afterEach, describe, expect, it } from 'vitest';
import { cluster, stopClusters, T0 } from '../fixtures/scheduler-cluster.js';
import { TimeoutError, UnknownJobError, VersionNotActiveError } from '../../src/errors.js';
import { MAX_TRIGGER_ATTEMPTS } from '../../src/runtime/scheduler/job-operations.js';
import { PAUSED_REASON } from '../../src/scheduler/command.js';
import { claimKey } from '../../src/scheduler/records.js';

afterEach(stopClusters);

describe('pause and resume on the runtime', () => {
  it('records the slots that fire while paused as skipped (paused) on every member, lets a run in progress finish, and runs again once resumed', async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'report', { every: '1s' }, 300);
    await c.time.advanceTo(T0 + 1100);
    expect(c.runs.filter((r) => r.job === 'report')).toHaveLength(1);
    // Paused from b while the run of T0 + 1000 is in progress: it finishes.
    const paused = c.members.get('b')!.operations.setPaused('report', true);
    await c.time.advanceTo(T0 + 1200);
    await expect(paused).resolves.toEqual({ job: 'report', paused: true });
    expect(c.state('a').jobs.get('report')?.paused).toBe(true);
    await c.time.advanceTo(T0 + 3500);
    const first = c.runs.find((r) => r.slotMs === T0 + 1000)!;
    expect(first.endMs).toBe(T0 + 1300);
    // T0 + 2000 and 3000 fired paused: claimed, skipped, not run.
    expect(c.runs.map((r) => r.slotMs)).toEqual([T0 + 1000]);
    for (const slotMs of [T0 + 2000, T0 + 3000]) {
      const claim = c.state('b').claims.get(claimKey('report', slotMs))!;
      expect(claim.outcomes.get(claim.assignees[0]!)).toMatchObject({ outcome: 'skipped', error: PAUSED_REASON });
    }
    expect(c.state('a').jobs.get('report')).toMatchObject({ missedSlots: 0, skippedRuns: 2 });
    const resumed = c.members.get('a')!.operations.setPaused('report', false);
    await c.time.advanceTo(T0 + 3600);
    await expect(resumed).resolves.toEqual({ job: 'report', paused: false });
    await c.time.advanceTo(T0 + 4500);
    // No slot of the pause is run again (they were skipped, not missed); the next one runs.
    expect(c.runs.map((r) => r.slotMs)).toEqual([T0 + 1000, T0 + 4000]);
  });

  it('refuses an unknown job, and every operation before cluster version 3', async () => {
    const c = cluster(['a']);
    c.schedule(['a'], 'report', { every: '1s' }, 10);
    await c.time.advanceTo(T0 + 100);
    const unknown = c.members.get('a')!.operations.setPaused('nope', true);
    const caught = unknown.catch((error: unknown) => error);
    await c.time.advanceTo(T0 + 200);
    expect(await caught).toBeInstanceOf(UnknownJobError);
    const old = cluster(['a'], 5, {
      operations: {
        require: (feature) => {
          throw new VersionNotActiveError(feature, 3, 2);
        },
        propose: () => Promise.reject(new Error('never proposed')),
      },
    });
    old.schedule(['a'], 'report', { every: '1s' }, 10);
    await expect(old.members.get('a')!.operations.trigger('report')).rejects.toBeInstanceOf(VersionNotActiveError);
    await expect(old.members.get('a')!.operations.setPaused('report', true)).rejects.toBeInstanceOf(VersionNotActiveError);
  });
});

describe('trigger on the runtime', () => {
  it('runs one extra slot now, once across the members, even while the job is paused, with its own fencing token', async () => {
    const c = cluster(['a', 'b', 'c']);
    c.schedule(['a', 'b', 'c'], 'report', { every: '1h' }, 50);
    await c.time.advanceTo(T0 + 500);
    const pause = c.members.get('c')!.operations.setPaused('report', true);
    await c.time.advanceTo(T0 + 600);
    await pause;
    const triggered = c.members.get('c')!.operations.trigger('report');
    await c.time.advanceTo(T0 + 700);
    const slot = await triggered;
    expect(slot.slot.getTime()).toBe(T0 + 600);
    await c.time.advanceTo(T0 + 2000);
    const runs = c.runs.filter((r) => r.job === 'report');
    expect(runs).toHaveLength(1);
    expect(runs[0]).toMatchObject({ slotMs: T0 + 600 });
    const claim = c.state('a').claims.get(claimKey('report', T0 + 600))!;
    expect(claim).toMatchObject({ trigger: true, token: slot.fencingToken });
    expect(claim.outcomes.get(claim.assignees[0]!)?.outcome).toBe('succeeded');
  });

  it('waits for a due slot to be claimed first, and gives up after MAX_TRIGGER_ATTEMPTS plan intervals if it never is', async () => {
    // No member leads: the due slot is never claimed, so no trigger may move the mark past it.
    const c = cluster(['a'], 5, { isLeader: () => false });
    c.schedule(['a'], 'report', { every: '1s' }, 10);
    await c.time.advanceTo(T0 + 1500);
    const triggered = c.members.get('a')!.operations.trigger('report').catch((error: unknown) => error);
    await c.time.advanceTo(T0 + 1500 + (MAX_TRIGGER_ATTEMPTS + 1) * 100);
    expect(await triggered).toBeInstanceOf(TimeoutError);
    expect(c.state('a').claims.size).toBe(0);
  });
});
