import { afterEach, describe, expect, it } from 'vitest';
import { cluster, Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { NotLeaderError, RunAbortedError, TimeoutError, UnknownJobError, VersionNotActiveError } from '../../src/errors.js';
import type { JobContext, JobOptions } from '../../src/runtime/scheduler/job-types.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
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

  it("runs none of the pause's slots on resume under a catch-up window either: they were recorded skipped, not missed", async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'report', { every: '1s' }, 100, { catchUp: { windowMs: 60_000, maxSlots: 100 } });
    await c.time.advanceTo(T0 + 1500);
    const paused = c.members.get('a')!.operations.setPaused('report', true);
    await c.time.advanceTo(T0 + 1600);
    await paused;
    await c.time.advanceTo(T0 + 5500);
    const resumed = c.members.get('b')!.operations.setPaused('report', false);
    await c.time.advanceTo(T0 + 5600);
    await resumed;
    await c.time.advanceTo(T0 + 7500);
    // A window that would catch the slots of T0 + 2000 to 5000 up had they been missed runs none.
    expect(c.runs.map((r) => r.slotMs)).toEqual([T0 + 1000, T0 + 6000, T0 + 7000]);
    expect(c.state('a').jobs.get('report')).toMatchObject({ missedSlots: 0, skippedRuns: 4 });
    for (const slotMs of [T0 + 2000, T0 + 3000, T0 + 4000, T0 + 5000]) {
      const claim = c.state('b').claims.get(claimKey('report', slotMs))!;
      expect(claim.outcomes.get(claim.assignees[0]!)).toMatchObject({ outcome: 'skipped', error: PAUSED_REASON });
    }
  });

  it("runs a slot that fires on a member still behind the pause's commit, as the README says; the members that applied it show the job paused", async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['b'], 'report', { every: '1s' }, 100);
    // b does not apply the pause (it is behind the commit, for as long as this test lasts).
    const behind = c.members.get('b')!;
    const apply = behind.apply.bind(behind);
    behind.apply = (index, command) => (command.type === 'pause' ? { ok: true } : apply(index, command));
    await c.time.advanceTo(T0 + 1500);
    const paused = c.members.get('a')!.operations.setPaused('report', true);
    await c.time.advanceTo(T0 + 1600);
    await paused;
    await c.time.advanceTo(T0 + 3500);
    expect(c.state('a').jobs.get('report')?.paused).toBe(true);
    expect(c.state('b').jobs.get('report')?.paused).toBe(false);
    expect(c.runs.map((r) => [r.member, r.slotMs])).toEqual([
      ['b', T0 + 1000],
      ['b', T0 + 2000],
      ['b', T0 + 3000],
    ]);
  });

  it("skips the runs queued behind a long one (overlap 'queue') once the pause applied: they were not in progress", async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'import', { every: '1s' }, 5_000, { overlap: 'queue' });
    // The run of T0 + 1000 goes until T0 + 6000; the slots of T0 + 2000 to 4000 queue behind it.
    await c.time.advanceTo(T0 + 4_500);
    expect(c.runs.map((r) => r.slotMs)).toEqual([T0 + 1000]);
    const paused = c.members.get('b')!.operations.setPaused('import', true);
    await c.time.advanceTo(T0 + 4_600);
    await expect(paused).resolves.toEqual({ job: 'import', paused: true });
    await c.time.advanceTo(T0 + 30_000);
    // Before: the queued slots started at T0 + 6000, 11000 and 16000, the job paused.
    expect(c.runs.map((r) => r.slotMs)).toEqual([T0 + 1000]);
    const assignee = c.claims('import')[0]!.assignees[0]!;
    for (const slotMs of [T0 + 2000, T0 + 3000, T0 + 4000]) {
      expect(c.state('a').claims.get(claimKey('import', slotMs))!.outcomes.get(assignee)).toMatchObject({ outcome: 'skipped', error: PAUSED_REASON });
    }
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
        require: (feature) => Promise.reject(new VersionNotActiveError(feature, 3, 2)),
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

  it("follows the job's overlap policy: under 'skip' a slot triggered while a run is in progress is skipped, under 'queue' it runs once that run ended", async () => {
    for (const overlap of ['skip', 'queue'] as const) {
      const c = cluster(['a']);
      c.schedule(['a'], 'report', { every: '1h' }, 5_000, { overlap, timeoutMs: 60_000 });
      await c.time.advanceTo(T0 + 500);
      const first = c.members.get('a')!.operations.trigger('report');
      await c.time.advanceTo(T0 + 1000);
      const running = await first;
      const second = c.members.get('a')!.operations.trigger('report');
      await c.time.advanceTo(T0 + 1500);
      const waiting = await second;
      await c.time.advanceTo(T0 + 20_000);
      const claim = c.state('a').claims.get(claimKey('report', waiting.slot.getTime()))!;
      expect(claim.trigger).toBe(true);
      if (overlap === 'skip') {
        expect(c.runs.map((r) => r.slotMs)).toEqual([running.slot.getTime()]);
        expect(claim.outcomes.get('a')).toMatchObject({ outcome: 'skipped' });
        expect(claim.outcomes.get('a')?.error).toMatch(/^overlap: a run of the job .* was still in progress/);
      } else {
        const runs = c.runs.filter((r) => r.job === 'report');
        expect(runs.map((r) => r.slotMs)).toEqual([running.slot.getTime(), waiting.slot.getTime()]);
        expect(runs[1]!.startMs).toBe(runs[0]!.endMs);
        expect(claim.outcomes.get('a')?.outcome).toBe('succeeded');
      }
    }
  });

  it("runs a mode 'all' slot triggered on a follower on every member with a handler", async () => {
    // A follower counts only itself eligible, as MemberReach does where it does not lead (it
    // hears from no other follower): before, its trigger assigned the slot to it alone.
    const ids = ['a', 'b', 'c'];
    const c = track(new Cluster(ids, 5, {}, (id) => ({ eligibleMembers: () => (id === 'a' ? ids : [id]) })));
    c.schedule(ids, 'report', { every: '1h' }, 50, { mode: 'all' });
    await c.time.advanceTo(T0 + 500);
    const triggered = c.members.get('b')!.operations.trigger('report');
    await c.time.advanceTo(T0 + 600);
    const slot = await triggered;
    await c.time.advanceTo(T0 + 2000);
    expect(c.state('a').claims.get(claimKey('report', slot.slot.getTime()))?.assignees).toEqual(ids);
    expect(c.runs.filter((r) => r.job === 'report').map((r) => r.member).sort()).toEqual(ids);
  });

  it('refuses a job no member has a handler for with InvalidArgumentError (README, "Trigger")', async () => {
    const c = cluster(['a']);
    c.schedule(['a'], 'report', { every: '1h' }, 10);
    await c.time.advanceTo(T0 + 100);
    expect(c.members.get('a')!.unschedule('report')).toBe(true);
    await c.time.advanceTo(T0 + 200);
    expect(c.state('a').jobs.get('report')?.handlers.size).toBe(0);
    const refused = c.members.get('a')!.operations.trigger('report').catch((error: unknown) => error);
    await c.time.advanceTo(T0 + 300);
    expect(await refused).toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'name', message: expect.stringContaining('a job that some member has a handler for') });
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

  it('refuses with CRONRAFT_NOT_LEADER at once, not a timeout, while a due slot waits and no leader is known', async () => {
    const c = cluster(['a'], 5, { isLeader: () => false, barrier: () => Promise.reject(new NotLeaderError(null)) });
    c.schedule(['a'], 'report', { every: '1s' }, 10);
    await c.time.advanceTo(T0 + 1500);
    const triggered = c.members.get('a')!.operations.trigger('report').catch((error: unknown) => error);
    await c.time.advanceTo(T0 + 1500 + 100);
    // It waited MAX_TRIGGER_ATTEMPTS plan intervals and timed out, as if it might have taken effect.
    expect(await triggered).toBeInstanceOf(NotLeaderError);
  });
});

describe("trigger and cancel on a member that has not learned the cluster's time", () => {
  it('wait for it, at most MAX_TRIGGER_ATTEMPTS plan intervals, then reject with CRONRAFT_CLOCK_UNSYNCED, claiming and cancelling nothing', async () => {
    let synced = false;
    const c = track(new Cluster(['a', 'b'], 5, {}, (id) => (id === 'b' ? { clockReady: () => synced } : {})));
    c.schedule(['a', 'b'], 'report', { every: '1h' }, 10);
    await c.time.advanceTo(T0 + 500);
    const claims = c.state('a').claims.size;
    const triggered = c.members.get('b')!.operations.trigger('report').catch((error: unknown) => error);
    const cancelled = c.members.get('b')!.operations.cancel('report').catch((error: unknown) => error);
    await c.time.advanceTo(T0 + 500 + (MAX_TRIGGER_ATTEMPTS + 2) * 100);
    expect(await triggered).toMatchObject({ code: 'CRONRAFT_CLOCK_UNSYNCED' });
    expect(await cancelled).toMatchObject({ code: 'CRONRAFT_CLOCK_UNSYNCED' });
    expect(c.state('a').claims.size).toBe(claims);
    // Learned within the wait, they go on: the trigger claims its slot, the cancel finds nothing running.
    const start = c.time.now();
    const later = c.members.get('b')!.operations.trigger('report');
    const cancel = c.members.get('b')!.operations.cancel('report');
    await c.time.advanceTo(start + 300);
    synced = true;
    await c.time.advanceTo(start + 600);
    const slot = await later;
    expect(slot.slot.getTime()).toBeGreaterThanOrEqual(start + 300);
    expect(c.state('a').claims.get(claimKey('report', slot.slot.getTime()))?.trigger).toBe(true);
    await expect(cancel).resolves.toMatchObject({ job: 'report' });
  });
});

describe('cancel on the runtime', () => {
  /** A job whose handler ignores its signal for 30 s, each run's context kept by member. */
  function longJob(c: Cluster, ids: readonly string[], options: JobOptions = {}): Array<{ member: string; ctx: JobContext; endMs: number | null }> {
    const seen: Array<{ member: string; ctx: JobContext; endMs: number | null }> = [];
    for (const id of ids) {
      c.members.get(id)!.schedule('long', parseSpec({ every: '10s' }), async (ctx) => {
        const run = { member: id, ctx, endMs: null as number | null };
        seen.push(run);
        await c.time.sleep(30_000);
        run.endMs = c.time.now();
      }, { timeoutMs: 60_000, retries: 2, overlap: 'allow', ...options });
    }
    return seen;
  }

  it('aborts the run on the member running it, asked of another, records it cancelled on every member, retries nothing, and runs the next slot', async () => {
    const c = cluster(['a', 'b', 'c']);
    const runs = longJob(c, ['a', 'b', 'c']);
    await c.time.advanceTo(T0 + 12_000);
    expect(runs).toHaveLength(1);
    const [first] = runs;
    const asked = [...c.members.keys()].find((id) => id !== first!.member)!;
    const cancelled = c.members.get(asked)!.operations.cancel('long');
    await c.time.advanceTo(T0 + 12_100);
    await expect(cancelled).resolves.toEqual({ job: 'long', cancelled: [{ slot: new Date(T0 + 10_000), fencingToken: first!.ctx.fencingToken, running: [first!.member] }] });
    const reason: unknown = first!.ctx.signal.reason;
    expect(first!.ctx.signal.aborted).toBe(true);
    expect(reason).toBeInstanceOf(RunAbortedError);
    expect(reason).toMatchObject({ reason: 'cancelled', code: 'CRONRAFT_RUN_CANCELLED' });
    // The handler ignores its signal and goes on; the run is over for the record all the same.
    expect(first!.endMs).toBeNull();
    await c.time.advanceTo(T0 + 19_000);
    for (const id of c.members.keys()) {
      const claim = c.state(id).claims.get(claimKey('long', T0 + 10_000))!;
      expect(claim.outcomes.get(first!.member)).toMatchObject({ outcome: 'cancelled', token: first!.ctx.fencingToken });
      expect(claim.outcomes.get(first!.member)?.error).toMatch(/^cancelled: /);
      expect(claim.cancelled).toMatchObject({ byMember: asked, token: first!.ctx.fencingToken });
    }
    await c.time.advanceTo(T0 + 25_000);
    // No retry of the cancelled slot (its job allows 2), and the next slot ran.
    expect(runs.map((r) => r.ctx.slot.getTime())).toEqual([T0 + 10_000, T0 + 20_000]);
    expect(runs[1]!.ctx.signal.aborted).toBe(false);
    expect(c.state('c').claims.get(claimKey('long', T0 + 20_000))?.cancelled).toBeNull();
  });

  it('cancels only the slot named, every member’s run in mode all, and says when nothing was running', async () => {
    const c = cluster(['a', 'b']);
    const runs = longJob(c, ['a', 'b'], { mode: 'all' });
    await c.time.advanceTo(T0 + 21_000);
    expect(runs.map((r) => [r.member, r.ctx.slot.getTime()])).toEqual([
      ['a', T0 + 10_000],
      ['b', T0 + 10_000],
      ['a', T0 + 20_000],
      ['b', T0 + 20_000],
    ]);
    const one = c.members.get('a')!.operations.cancel('long', T0 + 20_000);
    await c.time.advanceTo(T0 + 21_100);
    await expect(one).resolves.toMatchObject({ cancelled: [{ slot: new Date(T0 + 20_000), running: ['a', 'b'] }] });
    expect(runs.map((r) => r.ctx.signal.aborted)).toEqual([false, false, true, true]);
    const none = c.members.get('b')!.operations.cancel('long', T0 + 20_000);
    await c.time.advanceTo(T0 + 21_200);
    await expect(none).resolves.toEqual({ job: 'long', cancelled: [] });
    const unknown = c.members.get('b')!.operations.cancel('nope').catch((error: unknown) => error);
    await c.time.advanceTo(T0 + 21_300);
    expect(await unknown).toBeInstanceOf(UnknownJobError);
  });

  it('ends the run of a member that learns of the cancel from a snapshot, not from its entry', async () => {
    const c = cluster(['a', 'b']);
    const runs = longJob(c, ['a', 'b']);
    await c.time.advanceTo(T0 + 12_000);
    const [first] = runs;
    const behind = c.members.get(first!.member)!;
    const other = [...c.members.keys()].find((id) => id !== first!.member)!;
    // The running member misses the entry (it is behind), then installs a snapshot that covers it.
    const apply = behind.apply.bind(behind);
    behind.apply = (index, command) => (command.type === 'cancel-runs' ? { ok: true } : apply(index, command));
    const cancelled = c.members.get(other)!.operations.cancel('long');
    await c.time.advanceTo(T0 + 12_100);
    await expect(cancelled).resolves.toMatchObject({ cancelled: [{ slot: new Date(T0 + 10_000) }] });
    expect(first!.ctx.signal.aborted).toBe(false);
    behind.restore(encodeSchedulerSnapshot(c.state(other)));
    expect(first!.ctx.signal.reason).toMatchObject({ reason: 'cancelled' });
    await c.time.advanceTo(T0 + 19_000);
    expect(c.state(other).claims.get(claimKey('long', T0 + 10_000))?.outcomes.get(first!.member)?.outcome).toBe('cancelled');
  });
});
