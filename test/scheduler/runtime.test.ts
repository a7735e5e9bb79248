import { afterEach, describe, expect, it } from 'vitest';
import { cluster, Cluster, PLANNING, stopClusters, T0, track, VirtualTime } from '../fixtures/scheduler-cluster.js';
import { batchPayload, MAX_COMMANDS_PER_BATCH } from '../../src/runtime/command-batch.js';
import type { JobContext } from '../../src/runtime/scheduler/job-types.js';
import { MAX_REGISTRATIONS_IN_FLIGHT } from '../../src/runtime/scheduler/registrations.js';
import { SchedulerRuntime, type SchedulerRuntimeOptions } from '../../src/runtime/scheduler/scheduler-runtime.js';
import { parseSpec, type JobSpec } from '../../src/scheduler/spec.js';
import { encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { claimKey } from '../../src/scheduler/records.js';
import { MISSED, MISSED_REASONS, type JobPolicy, type SchedulerCommand } from '../../src/scheduler/command.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import type { Timers } from '../../src/time/clock.js';

afterEach(stopClusters);

describe('start records', () => {
  it('are proposed as the handler starts, without waiting for them, and show the run in progress everywhere', async () => {
    const c = cluster(['a', 'b'], 20);
    let seenAtStart: number | null = null;
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 500, {}, (ctx) => {
      // The handler starts before its start record commits.
      seenAtStart = c.state('a').claims.get(claimKey('sync', ctx.slot.getTime()))!.starts.size;
    });
    await c.time.advanceTo(T0 + 1000);
    expect(c.runs).toHaveLength(1);
    expect(c.runs[0]!.startMs).toBe(T0 + 1000);
    expect(seenAtStart).toBe(0);
    await c.time.advanceTo(T0 + 1100);
    for (const id of ['a', 'b']) {
      expect([...c.state(id).claimsInProgress('sync')].map((x) => x.slotMs)).toEqual([T0 + 1000]);
    }
    await c.time.advanceTo(T0 + 1600);
    expect(c.state('b').claimsInProgress('sync').size).toBe(0);
    expect(c.outcomes('sync')[0]).toEqual([1, 'succeeded']);
  });
});

describe('run records near slot instants', () => {
  /** When each record of `job` committed, as [type, outcome, ms after T0]. */
  const records = (c: Cluster, job: string): Array<[string, string | undefined, number]> =>
    c.log.flatMap((command, i) => ((command.type === 'started' || command.type === 'outcome') && command.job === job ? [[command.type, command.type === 'outcome' ? command.outcome : undefined, c.logAt[i]! - T0] as [string, string | undefined, number]] : []));

  it('wait until the slots around them fired: the start and outcome of a short run commit together, after the slot', async () => {
    const c = cluster(['a'], 5);
    c.schedule(['a'], 'sync', { every: '1s' }, 3);
    await c.time.advanceTo(T0 + 15);
    // Registered 15 ms later, its slots come 15 ms after sync's: sync's records wait for them too.
    c.schedule(['a'], 'other', { every: '1s' }, 3);
    await c.time.advanceTo(T0 + 1100);
    expect(c.runs.map((r) => [r.job, r.startMs - T0])).toEqual([
      ['sync', 1000],
      ['other', 1015],
    ]);
    // Held until 10 ms after the last slot near them (1025), committed 5 ms later, in one round.
    expect(records(c, 'sync')).toEqual([
      ['started', undefined, 1030],
      ['outcome', 'succeeded', 1030],
    ]);
    expect(records(c, 'other')).toEqual([
      ['started', undefined, 1030],
      ['outcome', 'succeeded', 1030],
    ]);
  });

  it('a long run records its start once the slot passed, long before its outcome', async () => {
    const c = cluster(['a'], 5);
    c.schedule(['a'], 'sync', { every: '1s' }, 300);
    await c.time.advanceTo(T0 + 1400);
    expect(records(c, 'sync')).toEqual([
      ['started', undefined, 1015],
      ['outcome', 'succeeded', 1305],
    ]);
  });

  it('an interrupted run is reported at once: the leader must move its slot', async () => {
    const c = cluster(['a', 'b'], 5);
    c.schedule(['b'], 'sync', { every: '1s' }, 3);
    await c.time.advanceTo(T0 + 500);
    // b drops its handler after its claim of slot 1000 was armed: at the instant, it reports the run interrupted.
    c.members.get('b')!.unschedule('sync');
    await c.time.advanceTo(T0 + 1100);
    expect(records(c, 'sync')[0]).toEqual(['outcome', 'interrupted', 1005]);
  });

  it('a member stopping gracefully sends the records it holds at once', async () => {
    const c = cluster(['a'], 5);
    c.schedule(['a'], 'sync', { every: '1s' }, 3);
    await c.time.advanceTo(T0 + 1001);
    expect(records(c, 'sync')).toEqual([]);
    const drained = c.members.get('a')!.handOver(1000, 0);
    await c.time.advanceTo(T0 + 1100);
    await drained;
    expect(records(c, 'sync')).toEqual([
      ['started', undefined, 1006],
      ['outcome', 'succeeded', 1008],
    ]);
  });
});

describe('overlap policies, across members', () => {
  it("'skip' (the default) records the slots that fire while a run is in progress as skipped, and never overlaps", async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 2500);
    await c.time.advanceTo(T0 + 8000);
    expect(c.maxOverlap('sync')).toBe(1);
    // Runs of slots 1 and 4 take 2.5 s each: slots 2, 3, 5 and 6 fire while one is in progress.
    expect(c.outcomes('sync').slice(0, 7)).toEqual([
      [1, 'succeeded'],
      [2, 'skipped'],
      [3, 'skipped'],
      [4, 'succeeded'],
      [5, 'skipped'],
      [6, 'skipped'],
      [7, undefined],
    ]);
    // Slots ran on both members: the skips came from the log's start records, not local knowledge alone.
    expect(new Set(c.runs.map((r) => r.member))).toEqual(new Set(['a', 'b']));
    expect(c.state('b').jobs.get('sync')!.skippedRuns).toBe(4);
    const skipped = c.claims('sync')[1]!;
    expect(skipped.outcomes.get(skipped.assignees[0]!)!.error).toMatch(/overlap/);
  });

  it("'skip' does not count a run on a member it is no longer connected to (killed mid-run, it will never report an end)", async () => {
    // The same job as above, but every member believes the others gone: only its own runs make
    // it skip, so runs on the two members overlap (connected, they never did) and fewer are skipped.
    const c = cluster(['a', 'b'], 5, { peerConnected: () => false });
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 2500);
    await c.time.advanceTo(T0 + 8000);
    expect(new Set(c.runs.map((r) => r.member))).toEqual(new Set(['a', 'b']));
    expect(c.maxOverlap('sync')).toBeGreaterThan(1);
    expect(c.state('a').jobs.get('sync')!.skippedRuns).toBeLessThan(4);
  });

  it('sees another member’s run only once its start record is applied: within a commit of its start, both run', async () => {
    // A commit takes longer than the interval: slot 2 fires on b before a's start of slot 1 is
    // applied there, so b cannot know. This is the replication lag the overlap policy lives with.
    const c = cluster(['a', 'b'], 150);
    c.schedule(['a', 'b'], 'sync', { every: 100 }, 1000);
    await c.time.advanceTo(T0 + 1500);
    const first = c.runs[0]!;
    const overlapping = c.runs.filter((r) => r.member !== first.member && r.startMs < first.endMs! && r.startMs > first.startMs);
    expect(overlapping.length).toBeGreaterThan(0);
    for (const r of overlapping) expect(r.startMs - first.startMs).toBeLessThan(2 * c.commitMs);
  });

  it("'skip' records why it skips one of the slots a failover moved to a member together", async () => {
    // Seed 42 (five members, three minutes): three slots, all past their instants, were moved to
    // one member at once. The first runs; the second waits behind it (late); the third is skipped
    // (at most one waits behind late runs), and the log says it was for the run that waits.
    const c = cluster(['a', 'b'], 5, { eligibleMembers: () => [] });
    c.schedule(['b'], 'sync', { every: '1s' }, 30);
    await c.time.advanceTo(T0 + 3050);
    expect(c.claims('sync')).toEqual([]);
    let from = T0;
    for (const slotS of [1, 2, 3]) {
      void c.propose({ type: 'claim', job: 'sync', slotMs: T0 + slotS * 1000, assignees: ['b'], fromMs: from });
      from = T0 + slotS * 1000;
    }
    await c.time.advanceTo(T0 + 3500);
    expect(c.runs.map((r) => (r.slotMs - T0) / 1000)).toEqual([1, 2]);
    expect(c.maxOverlap('sync')).toBe(1);
    expect(c.outcomes('sync')).toEqual([
      [1, 'succeeded'],
      [2, 'succeeded'],
      [3, 'skipped'],
    ]);
    const third = c.claims('sync')[2]!;
    expect(third.outcomes.get('b')!.error).toBe('overlap: a run of the job (slot 2026-01-01T00:00:02.000Z) was already waiting to run');
  });

  it("'allow' lets runs overlap", async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 2500, { overlap: 'allow' });
    await c.time.advanceTo(T0 + 6000);
    expect(c.maxOverlap('sync')).toBe(3);
    expect(c.outcomes('sync').slice(0, 3)).toEqual([
      [1, 'succeeded'],
      [2, 'succeeded'],
      [3, 'succeeded'],
    ]);
  });

  it("'queue' runs every slot, one at a time, in slot order", async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 1500, { overlap: 'queue' });
    await c.time.advanceTo(T0 + 6200);
    expect(c.maxOverlap('sync')).toBe(1);
    const slots = c.runs.map((r) => (r.slotMs - T0) / 1000);
    expect(slots).toEqual([1, 2, 3, 4]);
    // Each starts when the one before it ends.
    for (let i = 1; i < c.runs.length; i++) expect(c.runs[i]!.startMs).toBe(c.runs[i - 1]!.endMs);
    expect(c.outcomes('sync').filter(([, o]) => o === 'skipped')).toEqual([]);
  });

  it("'queue' records slots beyond its bound as skipped", async () => {
    const c = cluster(['a']);
    // One run takes 40 s, a slot fires every second: the queue fills up.
    c.schedule(['a'], 'sync', { every: '1s' }, 40_000, { overlap: 'queue', timeoutMs: 120_000 });
    await c.time.advanceTo(T0 + 30_000);
    const outcomes = c.outcomes('sync');
    // Slot 1 runs, slots 2 to 17 wait (16), the later ones are skipped.
    expect(outcomes.filter(([, o]) => o === 'skipped').map(([s]) => s)[0]).toBe(18);
    expect(outcomes.filter(([s, o]) => s <= 17 && o === undefined)).toHaveLength(17);
  });

  it("'replace' aborts the run in progress on another member and runs the new slot", async () => {
    const c = cluster(['a', 'b']);
    const aborted: Array<{ slotMs: number; reason: string }> = [];
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 60_000, { overlap: 'replace' }, (ctx) => {
      ctx.signal.addEventListener('abort', () => aborted.push({ slotMs: ctx.slot.getTime(), reason: String((ctx.signal.reason as Error).message) }));
    });
    await c.time.advanceTo(T0 + 3500);
    expect(c.maxOverlap('sync')).toBeLessThanOrEqual(2);
    expect(c.outcomes('sync').slice(0, 3)).toEqual([
      [1, 'replaced'],
      [2, 'replaced'],
      [3, undefined],
    ]);
    expect(aborted.map((a) => (a.slotMs - T0) / 1000)).toEqual([1, 2]);
    expect(aborted[0]!.reason).toMatch(/replaced by the run of slot/);
    // The replaced run ended within a commit round of the new one's start.
    const [first, second] = c.runs;
    expect(second!.startMs).toBe(T0 + 2000);
    expect(first!.endMs! - second!.startMs).toBeLessThanOrEqual(3 * c.commitMs);
    // A replaced slot is not moved or retried.
    expect(c.runs.filter((r) => r.slotMs === T0 + 1000)).toHaveLength(1);
  });

  it("'replace' ends the run of a member that learns of the replacement from a snapshot, not from its entry", async () => {
    const c = cluster(['a', 'b']);
    const signals: Array<{ member: string; slotMs: number; signal: AbortSignal }> = [];
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 60_000, { overlap: 'replace' }, (ctx, member) => void signals.push({ member, slotMs: ctx.slot.getTime(), signal: ctx.signal }));
    await c.time.advanceTo(T0 + 1500);
    const first = signals[0]!;
    expect(first.slotMs).toBe(T0 + 1000);
    // The member running slot 1 is behind: it misses the entry that replaces its run.
    const behind = c.members.get(first.member)!;
    const other = first.member === 'a' ? 'b' : 'a';
    const apply = behind.apply.bind(behind);
    behind.apply = (index, command) => (command.type === 'cancel' && command.slotMs === T0 + 1000 ? { ok: true } : apply(index, command));
    await c.time.advanceTo(T0 + 2500);
    expect(c.state(other).claims.get(claimKey('sync', T0 + 1000))?.cancelled?.token).toBe(c.state(other).claims.get(claimKey('sync', T0 + 1000))?.token);
    expect(first.signal.aborted).toBe(false);
    // Then it installs a snapshot that covers it: its run ends as the entry would have ended it.
    behind.apply = apply;
    behind.restore(encodeSchedulerSnapshot(c.state(other)));
    expect(first.signal.aborted).toBe(true);
    expect(first.signal.reason).toMatchObject({ reason: 'replaced' });
  });

  it("'replace' on one member aborts its own earlier run at once", async () => {
    const c = cluster(['a']);
    c.schedule(['a'], 'sync', { every: '1s' }, 60_000, { overlap: 'replace' });
    await c.time.advanceTo(T0 + 2500);
    expect(c.runs.map((r) => [(r.slotMs - T0) / 1000, r.endMs === null ? null : r.endMs - T0])).toEqual([
      [1, 2000],
      [2, null],
    ]);
    expect(c.outcomes('sync').slice(0, 2)).toEqual([
      [1, 'replaced'],
      [2, undefined],
    ]);
  });

  it("mode 'all' judges overlap per member", async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 1500, { mode: 'all' });
    await c.time.advanceTo(T0 + 4800);
    for (const id of ['a', 'b']) {
      const mine = c.runs.filter((r) => r.member === id).map((r) => (r.slotMs - T0) / 1000);
      expect(mine).toEqual([1, 3]);
    }
    const second = c.claims('sync')[1]!;
    expect([...second.outcomes.values()].map((o) => o.outcome)).toEqual(['skipped', 'skipped']);
  });
});

describe('claims past the reassignment horizon', () => {
  it('a slot nobody ran is recorded as missed, with its reason, and its assignee never runs it', async () => {
    // b alone has the job, and from T0 + 500 the leader cannot reach it (nor b learn the
    // cluster's time, so its fired slot waits): nobody can run the slot. Once the slot is past
    // the horizon, the leader records it as missed, and b, back later, drops it.
    let bAway = false;
    const c = new Cluster(['a', 'b'], 5, { reassignHorizonMs: 3000, eligibleMembers: () => (bAway ? ['a'] : ['a', 'b']) }, (id) => (id === 'b' ? { clockReady: () => !bAway } : {}));
    track(c);
    c.schedule(['b'], 'report', { at: T0 + 1000 }, 10);
    await c.time.advanceTo(T0 + 500);
    expect(c.claims('report').map((claim) => claim.assignees)).toEqual([['b']]);
    bAway = true;
    await c.time.advanceTo(T0 + 3900);
    expect(c.outcomes('report')).toEqual([[1, undefined]]);
    await c.time.advanceTo(T0 + 4200);
    const [claim] = c.claims('report');
    expect(claim!.outcomes.get('b')).toMatchObject({ outcome: MISSED, token: claim!.token, error: MISSED_REASONS.expired });
    bAway = false;
    await c.time.advanceTo(T0 + 6000);
    expect(c.runs).toEqual([]);
    expect(c.state('b').claims.get(claimKey('report', T0 + 1000))!.outcomes.get('b')!.outcome).toBe(MISSED);
  });
  it('a run whose member the leader lost is aborted when its slot is recorded missed', async () => {
    let bAway = false;
    const c = new Cluster(['a', 'b'], 5, { reassignHorizonMs: 3000, eligibleMembers: () => (bAway ? ['a'] : ['a', 'b']) });
    track(c);
    let reason: unknown = null;
    c.schedule(['b'], 'report', { at: T0 + 1000 }, 60_000, {}, (ctx) => ctx.signal.addEventListener('abort', () => (reason = ctx.signal.reason)));
    await c.time.advanceTo(T0 + 1500);
    expect(c.runs).toHaveLength(1);
    bAway = true;
    await c.time.advanceTo(T0 + 10_000);
    const run = c.runs[0]!;
    // The horizon counts from when the leader last saw b (1.5 s), its run going on.
    expect(run.endMs! - T0).toBeGreaterThan(4500);
    expect(run.endMs! - T0).toBeLessThan(4700);
    expect(reason).toMatchObject({ reason: 'reassigned', message: expect.stringContaining('recorded missed') });
    expect(c.outcomes('report')).toEqual([[1, MISSED]]);
  });
});

describe('priority and maxConcurrent', () => {
  it('runs at most maxConcurrent at once, higher priority first, first come first served within a priority', async () => {
    const c = cluster(['a'], 5, { maxConcurrent: 1 });
    c.schedule(['a'], 'low', { at: T0 + 1000 }, 100, { priority: 0 });
    c.schedule(['a'], 'high', { at: T0 + 1000 }, 100, { priority: 10 });
    c.schedule(['a'], 'mid-1', { at: T0 + 1000 }, 100, { priority: 5 });
    c.schedule(['a'], 'mid-2', { at: T0 + 1000 }, 100, { priority: 5 });
    await c.time.advanceTo(T0 + 2000);
    // All four fire at once; the first timer's run ('high', planned first by name) starts and
    // the others wait for the slot, then go by priority: mid-1 before mid-2 (they fired in that order).
    expect(c.runs.map((r) => [r.job, r.startMs - T0])).toEqual([
      ['high', 1000],
      ['mid-1', 1100],
      ['mid-2', 1200],
      ['low', 1300],
    ]);
  });

  it('a waiting run of low priority is not starved by a steady stream of higher ones', async () => {
    const c = cluster(['a'], 5, { maxConcurrent: 1 });
    // Ten high-priority jobs each due every second, each run taking 200 ms: two seconds of work
    // per second, so without aging the low one would never start.
    for (let i = 0; i < 10; i++) c.schedule(['a'], `high-${i}`, { every: '1s' }, 200, { priority: 3, overlap: 'allow' });
    c.schedule(['a'], 'low', { at: T0 + 1000 }, 200, { priority: 0 });
    await c.time.advanceTo(T0 + 20_000);
    const low = c.runs.find((r) => r.job === 'low');
    expect(low).toBeDefined();
    // It gains a level per second waited, so high runs that arrive 3 s or more after it rank
    // below it: only the 30 runs that arrived at 1, 2 and 3 s (6 s of work) go first.
    expect(low!.startMs).toBe(T0 + 7000);
    expect(c.runs.filter((r) => r.startMs < low!.startMs).every((r) => r.slotMs < T0 + 4000)).toBe(true);
  });

  it('drops runs still waiting for a run permit when the member stops gracefully, and lets the running one finish', async () => {
    const c = cluster(['a'], 5, { maxConcurrent: 1 });
    c.schedule(['a'], 'first', { at: T0 + 1000 }, 500);
    c.schedule(['a'], 'second', { at: T0 + 1000 }, 500);
    await c.time.advanceTo(T0 + 1100);
    expect(c.runs.map((r) => r.job)).toEqual(['first']);
    const drained = c.members.get('a')!.handOver(5000, 0);
    await c.time.advanceTo(T0 + 3000);
    await drained;
    expect(c.runs.map((r) => r.job)).toEqual(['first']);
    expect(c.outcomes('first')).toEqual([[1, 'succeeded']]);
    // Not run and not reported: the leader moves it once this member is gone.
    expect(c.outcomes('second')).toEqual([[1, undefined]]);
  });

  it('a waiting run whose slot moves to another member leaves the queue', async () => {
    const c = cluster(['a', 'b'], 5, { maxConcurrent: 1 });
    c.schedule(['a'], 'busy', { at: T0 + 1000 }, 5000);
    c.schedule(['a'], 'moved', { at: T0 + 1000 }, 100);
    await c.time.advanceTo(T0 + 1100);
    // Both fired on a; 'moved' waits behind 'busy'. Then b can run it too, and it moves there.
    expect(c.runs.map((r) => r.job)).toEqual(['busy']);
    c.schedule(['b'], 'moved', { at: T0 + 1000 }, 100);
    const claim = c.claims('moved')[0]!;
    expect(claim.assignees).toEqual(['a']);
    void c.propose({ type: 'reassign', job: 'moved', slotMs: claim.slotMs, fromToken: claim.token, assignees: ['b'], reason: 'assignee-lost' });
    await c.time.advanceTo(T0 + 7000);
    // Applied on b at 1105, after its instant: it runs after a read barrier (one commit).
    expect(c.runs.filter((r) => r.job === 'moved').map((r) => [r.member, r.startMs - T0])).toEqual([['b', 1110]]);
    expect(c.outcomes('moved')).toEqual([[1, 'succeeded']]);
  });

  it('rejects a bad maxConcurrent, naming it', () => {
    expect(() => cluster(['a'], 5, { maxConcurrent: 0 })).toThrow(expect.objectContaining({ option: 'maxConcurrent' }));
  });
});

describe('fixed delay', () => {
  it('starts each run the delay after the previous run ended, as committed', async () => {
    const c = cluster(['a', 'b'], 5);
    c.schedule(['a', 'b'], 'poll', { delayAfterCompletion: '1s', initialDelay: 500 }, 700);
    await c.time.advanceTo(T0 + 8000);
    expect(c.maxOverlap('poll')).toBe(1);
    expect(c.runs[0]!.startMs).toBe(T0 + 500);
    for (let i = 1; i < c.runs.length; i++) {
      const previous = c.runs[i - 1]!;
      // The slot is the committed end plus the delay (the end is the member's clock at the run's end).
      expect(c.runs[i]!.slotMs).toBe(previous.endMs! + 1000);
      expect(c.runs[i]!.startMs).toBe(c.runs[i]!.slotMs);
    }
    expect(c.runs.length).toBeGreaterThanOrEqual(4);
  });
});

describe("slot timers follow the cluster's time as it is corrected", () => {
  // Member b's view of the cluster's time: a minute behind until it syncs (its own clock).
  function skewed(): { c: Cluster; b: { offsetMs: number; synced: boolean } } {
    const b = { offsetMs: -60_000, synced: false };
    const time: { now: () => number } = { now: () => Number.NaN };
    const c: Cluster = new Cluster(['a', 'b'], 5, { eligibleMembers: () => ['b'] }, (id) =>
      id === 'b' ? { clock: { now: (): number => time.now() + b.offsetMs }, clockReady: () => b.synced } : {},
    );
    time.now = () => c.time.now();
    track(c);
    return { c, b };
  }

  it('brings forward a timer armed on a clock that was behind, once the clock is corrected', async () => {
    const { c, b } = skewed();
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 10);
    // The claim of T0+1s reaches b a little ahead: on b's clock it is a minute away.
    await c.time.advanceTo(T0 + 500);
    b.offsetMs = 0;
    b.synced = true;
    await c.time.advanceTo(T0 + 1200);
    const first = c.runs.find((r) => r.slotMs === T0 + 1000);
    expect(first).toMatchObject({ member: 'b' });
    // The next plan tick after the correction moved the timer to the true instant.
    expect(first!.startMs).toBe(T0 + 1000);
  });

  it("registers a job only once it has learned the cluster's time (the registration anchors its intervals)", async () => {
    const { c, b } = skewed();
    b.offsetMs = 60_000;
    c.schedule(['b'], 'sync', { every: '1s' }, 10);
    await c.time.advanceTo(T0 + 450);
    expect(c.log.filter((e) => e.type === 'register')).toEqual([]);
    b.offsetMs = 0;
    b.synced = true;
    await c.time.advanceTo(T0 + 2000);
    // Anchored at the next plan interval after the sync, by the cluster's time, not a minute ahead.
    expect(c.state().jobs.get('sync')?.anchorMs).toBe(T0 + 500);
    expect(c.runs.map((r) => r.slotMs - T0)).toEqual([1500]);
  });

  // Ahead by a minute, every slot looks due at once; ahead by more than the ten minutes past
  // which an applied claim is history (a member restarted with a bad clock, before it has
  // heard a leader), every claim it replays looks too old to run, though none is.
  for (const [ahead, offsetMs] of [
    ['a minute', 60_000],
    ['past the arm horizon', 11 * 60_000],
  ] as const) {
    it(`holds a fired slot while the member's clock, ${ahead} ahead, has not learned the cluster time, and runs it once it has`, async () => {
      const { c, b } = skewed();
      b.offsetMs = offsetMs;
      c.schedule(['a', 'b'], 'sync', { every: '1s' }, 10);
      await c.time.advanceTo(T0 + 900);
      expect(c.runs).toEqual([]);
      b.offsetMs = 0;
      b.synced = true;
      await c.time.advanceTo(T0 + 1100);
      expect(c.runs.map((r) => [r.member, r.slotMs - T0])).toEqual([['b', 1000]]);
      // Not early; late by the read barrier only (the claim looked late when it arrived).
      expect(c.runs[0]!.startMs - T0).toBeGreaterThanOrEqual(1000);
      expect(c.runs[0]!.startMs - T0).toBeLessThanOrEqual(1000 + c.commitMs);
    });
  }
  it("holds every slot that fired before the member learned the cluster's time on one timer, not a timer each", async () => {
    // b's clock is a minute ahead and unsynced: each claim it is given fires at once and waits.
    // Wake-ups over a second of waiting, with 2 jobs and with 12: a timer each looked every
    // 10 ms per held claim, about 100 wake-ups a second for each of the claims added.
    const wakeUps = async (jobs: number): Promise<{ c: Cluster; b: { offsetMs: number; synced: boolean }; fired: number; held: number }> => {
      const { c, b } = skewed();
      b.offsetMs = 60_000;
      for (let j = 0; j < jobs; j++) c.schedule(['a', 'b'], `job-${j}`, { every: '1s' }, 10);
      await c.time.advanceTo(T0 + 1500);
      const before = c.time.fired;
      await c.time.advanceTo(T0 + 2500);
      const held = [...c.state('b').claims.values()].filter((claim) => claim.assignees.includes('b')).length;
      return { c, b, fired: c.time.fired - before, held };
    };
    const few = await wakeUps(2);
    const many = await wakeUps(12);
    expect(many.held).toBeGreaterThanOrEqual(few.held + 10);
    expect(many.fired - few.fired).toBeLessThan(100);
    // Once b learns the cluster's time, each held slot runs once at most, and none of a job
    // unscheduled while its slots waited.
    const { c, b } = many;
    expect(c.runs.filter((r) => r.member === 'b')).toEqual([]);
    c.members.get('b')!.unschedule('job-0');
    b.offsetMs = 0;
    b.synced = true;
    await c.time.advanceTo(T0 + 4000);
    const onB = c.runs.filter((r) => r.member === 'b').map((r) => `${r.job}@${r.slotMs - T0}`);
    expect(onB.length).toBeGreaterThan(10);
    expect(new Set(onB).size).toBe(onB.length);
    expect(onB.filter((run) => run.startsWith('job-0@'))).toEqual([]);
  });
});

describe('a job scheduled again as a run of it ends', () => {
  for (const gapMs of [1, 3]) {
    it(`does not run the slot again (${gapMs} ms after the run, its outcome not yet committed)`, async () => {
      // A read barrier may complete before an entry proposed just ahead of it commits (its read
      // point is the leader's commit index when asked): here 1 ms, against 5 ms for a commit.
      // Unscheduling proposes the held outcome; the slot armed again passed the barrier before
      // it applied, and ran a second time.
      const c: Cluster = track(new Cluster(['a', 'b'], 5, {}, () => ({ barrier: () => c.time.sleep(1) })));
      c.schedule(['a', 'b'], 'sync', { every: '1s' }, 3);
      await c.time.advanceTo(T0 + 1000);
      const member = c.runs.find((r) => r.job === 'sync')!.member;
      await c.time.advanceTo(T0 + 1003 + gapMs);
      c.members.get(member)!.unschedule('sync');
      c.schedule([member], 'sync', { every: '1s' }, 3);
      await c.time.advanceTo(T0 + 1500);
      expect(c.runs.filter((r) => r.job === 'sync' && r.slotMs === T0 + 1000)).toHaveLength(1);
      expect(c.claims('sync')[0]!.outcomes.get(member)?.outcome).toBe('succeeded');
    });
  }
});

describe('registrations', () => {
  it('are proposed once per job and member until answered, however many plan intervals a commit takes', async () => {
    // A commit round longer than three plan intervals (a loaded cluster).
    const c = cluster(['a', 'b'], 350);
    c.schedule(['a', 'b'], 'sync', { every: '1h' }, 1);
    await c.time.advanceTo(T0 + 1000);
    expect(c.log.filter((e) => e.type === 'register').map((e) => (e.type === 'register' ? e.member : null))).toEqual(['a', 'b']);
  });

  /** One member whose proposals wait for the test to settle them: the registrations it has in flight. */
  function pending(): { runtime: SchedulerRuntime; time: VirtualTime; proposed: Array<{ readonly job: string; settle: (ok: boolean) => void }> } {
    const time = new VirtualTime();
    const proposed: Array<{ readonly job: string; settle: (ok: boolean) => void }> = [];
    const runtime = lone(time, {
      propose: (command) =>
        new Promise((resolve, reject) => {
          proposed.push({ job: command.type === 'register' ? command.job : '', settle: (ok) => (ok ? resolve(undefined) : reject(new Error('no leader'))) });
        }),
    });
    return { runtime, time, proposed };
  }

  /** One member alone, started, on `time`, a follower unless told otherwise. */
  function lone(time: VirtualTime, options: Partial<SchedulerRuntimeOptions>): SchedulerRuntime {
    const runtime = new SchedulerRuntime({
      self: 'a',
      clock: time,
      timers: time,
      propose: () => new Promise(() => undefined),
      barrier: () => Promise.resolve(),
      isLeader: () => false,
      holdsLease: () => true,
      eligibleMembers: () => ['a'],
      ...PLANNING,
      ...options,
    });
    runtime.start();
    runtimes.push(runtime);
    return runtime;
  }
  const runtimes: SchedulerRuntime[] = [];
  afterEach(() => {
    for (const r of runtimes.splice(0)) r.stop();
  });

  it('of many jobs scheduled at once are at most MAX_REGISTRATIONS_IN_FLIGHT in flight; the others go as those are answered', async () => {
    const { runtime, time, proposed } = pending();
    const jobs = MAX_REGISTRATIONS_IN_FLIGHT + 100;
    for (let i = 0; i < jobs; i++) runtime.schedule(`job${i}`, parseSpec({ every: '1h' }), () => undefined, {});
    // Proposed at the end of the turn, together.
    expect(proposed).toHaveLength(0);
    await Promise.resolve();
    expect(proposed).toHaveLength(MAX_REGISTRATIONS_IN_FLIGHT);
    for (const p of proposed.slice(0, 60)) p.settle(true);
    await time.advanceTo(T0 + 1);
    expect(proposed).toHaveLength(MAX_REGISTRATIONS_IN_FLIGHT + 60);
    // Each job once, in the order scheduled.
    expect(proposed.map((p) => p.job)).toEqual(Array.from({ length: MAX_REGISTRATIONS_IN_FLIGHT + 60 }, (_, i) => `job${i}`));
  });

  it('applied together have the leader plan once, at once, rather than set its plan timer again for each', async () => {
    const time = new VirtualTime();
    let timersSet = 0;
    const timers: Timers = {
      now: () => time.now(),
      setTimeout: (callback, delayMs) => {
        timersSet++;
        return time.setTimeout(callback, delayMs);
      },
      clearTimeout: (handle) => time.clearTimeout(handle),
    };
    const proposed: SchedulerCommand[] = [];
    const runtime = lone(time, {
      timers,
      isLeader: () => true,
      propose: (command) => {
        proposed.push(command);
        return new Promise(() => undefined);
      },
    });
    const spec = parseSpec({ every: '1s' });
    const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' as const } };
    const before = timersSet;
    for (let i = 0; i < 100; i++) runtime.apply(i + 1, { type: 'register', job: `job${i}`, spec, mode: 'one', policy, member: 'a', atMs: T0 });
    expect(timersSet - before).toBe(1);
    // That plan comes at once, and claims the first slot of every job.
    await time.advanceTo(T0);
    expect(proposed.filter((c) => c.type === 'claim')).toHaveLength(100);
  });

  it('that fail are proposed again on the next plan interval, not at once, and not before', async () => {
    const { runtime, time, proposed } = pending();
    for (let i = 0; i < 3; i++) runtime.schedule(`job${i}`, parseSpec({ every: '1h' }), () => undefined, {});
    await Promise.resolve();
    for (const p of proposed) p.settle(false);
    await time.advanceTo(T0 + 99);
    expect(proposed).toHaveLength(3);
    await time.advanceTo(T0 + 100);
    expect(proposed.map((p) => p.job)).toEqual(['job0', 'job1', 'job2', 'job0', 'job1', 'job2']);
    // Answered, they are never proposed again.
    for (const p of proposed.slice(3)) p.settle(true);
    await time.advanceTo(T0 + 1000);
    expect(proposed).toHaveLength(6);
  });
});

describe('registrations in batches (cluster version 2)', () => {
  const runtimes: SchedulerRuntime[] = [];
  afterEach(() => {
    for (const r of runtimes.splice(0)) r.stop();
  });

  /** One follower alone whose batches wait for the test to settle them; `batches` false: a cluster at version 1. */
  function batching(batches = true): { runtime: SchedulerRuntime; time: VirtualTime; proposed: Array<{ readonly jobs: string[]; readonly commands: readonly SchedulerCommand[]; settle: (ok: boolean) => void }> } {
    const time = new VirtualTime();
    const proposed: Array<{ readonly jobs: string[]; readonly commands: readonly SchedulerCommand[]; settle: (ok: boolean) => void }> = [];
    const wait = (jobs: string[], commands: readonly SchedulerCommand[]): Promise<unknown> =>
      new Promise((resolve, reject) => {
        proposed.push({ jobs, commands, settle: (ok) => (ok ? resolve(undefined) : reject(new Error('no leader'))) });
      });
    const runtime = new SchedulerRuntime({
      self: 'a',
      clock: time,
      timers: time,
      propose: (command) => wait([command.type === 'register' ? command.job : '?'], [command]),
      proposeBatch: (commands) => (batches ? wait(commands.map((c) => c.job), commands) : null),
      barrier: () => Promise.resolve(),
      isLeader: () => false,
      holdsLease: () => true,
      eligibleMembers: () => ['a'],
      ...PLANNING,
    });
    runtime.start();
    runtimes.push(runtime);
    return { runtime, time, proposed };
  }

  it('go as one entry per MAX_COMMANDS_PER_BATCH jobs scheduled in one turn, in order', async () => {
    const { runtime, proposed } = batching();
    const jobs = 2 * MAX_COMMANDS_PER_BATCH + 44;
    for (let i = 0; i < jobs; i++) runtime.schedule(`job${i}`, parseSpec({ every: '1h' }), () => undefined, {});
    await Promise.resolve();
    expect(proposed.map((p) => p.jobs.length)).toEqual([MAX_COMMANDS_PER_BATCH, MAX_COMMANDS_PER_BATCH, 44]);
    expect(proposed.flatMap((p) => p.jobs)).toEqual(Array.from({ length: jobs }, (_, i) => `job${i}`));
  });

  it('of jobs scheduled alike share their spec and policy, so that their batch writes them once, and are made at one time', async () => {
    const { runtime, proposed } = batching();
    for (let i = 0; i < 6; i++) runtime.schedule(`job${i}`, parseSpec(i % 3 === 2 ? '0 * * * *' : { every: '1h' }), () => undefined, i % 3 === 1 ? { retries: 2 } : {});
    await Promise.resolve();
    const commands = proposed[0]?.commands as ReadonlyArray<Extract<SchedulerCommand, { type: 'register' }>>;
    for (let i = 0; i < 3; i++) {
      expect(commands[i + 3]?.spec).toBe(commands[i]?.spec);
      expect(commands[i + 3]?.policy).toBe(commands[i]?.policy);
    }
    expect(new Set(commands.map((c) => c.atMs))).toEqual(new Set([T0]));
    const forms = (batchPayload(commands) as unknown[])[3] as Array<[JobSpec, unknown, JobPolicy]>;
    expect(forms.map(([spec, , policy]) => [spec.kind, policy.retries])).toEqual([
      ['every', 0],
      ['every', 2],
      ['cron', 0],
    ]);
  });

  it('go one by one while the cluster does not read batches', async () => {
    const { runtime, proposed } = batching(false);
    for (let i = 0; i < 3; i++) runtime.schedule(`job${i}`, parseSpec({ every: '1h' }), () => undefined, {});
    await Promise.resolve();
    expect(proposed.map((p) => p.jobs)).toEqual([['job0'], ['job1'], ['job2']]);
  });

  it('of a failed batch are proposed again on the next plan interval; answered ones never again', async () => {
    const { runtime, time, proposed } = batching();
    for (let i = 0; i < 3; i++) runtime.schedule(`job${i}`, parseSpec({ every: '1h' }), () => undefined, {});
    await Promise.resolve();
    proposed[0]?.settle(false);
    await time.advanceTo(T0 + 99);
    expect(proposed).toHaveLength(1);
    await time.advanceTo(T0 + 100);
    expect(proposed.map((p) => p.jobs)).toEqual([['job0', 'job1', 'job2'], ['job0', 'job1', 'job2']]);
    proposed[1]?.settle(true);
    await time.advanceTo(T0 + 1000);
    expect(proposed).toHaveLength(2);
  });
});

describe('restoring from a snapshot', () => {
  // No member plans: the log holds only what the test and the members' own reports put there.
  function quiet(): Cluster {
    const c = new Cluster(['a', 'b'], 5, { isLeader: () => false });
    track(c);
    return c;
  }

  /** A state in which slot T0+1s of `sync` is claimed by `assignees` under token 2 (or moved under 3). */
  function snapshotWith(assignees: readonly string[], movedTo?: readonly string[]): Uint8Array {
    const s = new SchedulerState();
    const spec = parseSpec({ every: '1s' });
    s.apply(1, { type: 'register', job: 'sync', spec, mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: 'b', atMs: T0 });
    s.apply(2, { type: 'claim', job: 'sync', slotMs: T0 + 1000, assignees, fromMs: T0 });
    if (movedTo !== undefined) s.apply(3, { type: 'reassign', job: 'sync', slotMs: T0 + 1000, fromToken: 2, assignees: movedTo, reason: 'assignee-lost' });
    return encodeSchedulerSnapshot(s);
  }

  /** b schedules `sync`, then restores a snapshot in which it holds the claim of T0+1s under token 2. */
  async function restoredOnB(onRun?: (ctx: JobContext) => void): Promise<{ c: Cluster; b: SchedulerRuntime }> {
    const c = quiet();
    c.schedule(['b'], 'sync', { every: '1s' }, 10, {}, onRun);
    await c.time.advanceTo(T0 + 100);
    const b = c.members.get('b')!;
    b.restore(snapshotWith(['b']));
    return { c, b };
  }

  it('arms the claims this member holds in it, which then run at their instant under their token', async () => {
    const tokens: number[] = [];
    const { c } = await restoredOnB((ctx) => tokens.push(ctx.fencingToken));
    await c.time.advanceTo(T0 + 1100);
    expect(c.runs.map((r) => [r.member, r.slotMs - T0, r.startMs - T0])).toEqual([['b', 1000, 1000]]);
    expect(tokens).toEqual([2]);
  });

  it('drops a run whose claim the snapshot shows moved to another member', async () => {
    const { c, b } = await restoredOnB();
    b.restore(snapshotWith(['b'], ['a']));
    await c.time.advanceTo(T0 + 1100);
    expect(c.runs).toEqual([]);
    expect(b.state.claims.get(claimKey('sync', T0 + 1000))?.token).toBe(3);
  });

  it('runs again, one after the other, the late runs that two members started before a crash and never ended', async () => {
    // a ran slot 1 s late and b ran slot 2 s, both starting at T0 + 2 s, and both crashed mid-run:
    // the log holds both starts without an outcome, each late next to the other.
    const s = new SchedulerState();
    const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' as const } };
    ['a', 'b'].forEach((member, i) => s.apply(i + 1, { type: 'register', job: 'sync', spec: parseSpec({ every: '1s' }), mode: 'one', policy, member, atMs: T0 }));
    s.apply(3, { type: 'claim', job: 'sync', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    s.apply(4, { type: 'claim', job: 'sync', slotMs: T0 + 2000, assignees: ['b'], fromMs: T0 + 1000 });
    s.apply(5, { type: 'started', job: 'sync', slotMs: T0 + 1000, token: 3, member: 'a', atMs: T0 + 2000 });
    s.apply(6, { type: 'started', job: 'sync', slotMs: T0 + 2000, token: 4, member: 'b', atMs: T0 + 2000 });
    const snapshot = encodeSchedulerSnapshot(s);
    // The restarted processes: their runs went with the crash, and they restore the log's state.
    const c = quiet();
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 10);
    await c.time.advanceTo(T0 + 2100);
    for (const m of c.members.values()) m.restore(snapshot);
    await c.time.advanceTo(T0 + 3000);
    // Each waited for the other's start until its timeout (60 s) before; now the one that comes
    // first in the log's order runs at once, and the other once it ended.
    const runs = c.runs.map((r) => ({ member: r.member, slot: r.slotMs - T0, start: r.startMs - T0, end: (r.endMs ?? Number.NaN) - T0 }));
    expect(runs.map((r) => [r.member, r.slot])).toEqual([
      ['a', 1000],
      ['b', 2000],
    ]);
    expect(runs[0]!.start).toBeLessThan(2200);
    expect(runs[1]!.start).toBeGreaterThanOrEqual(runs[0]!.end);
    expect(runs[1]!.start).toBeLessThan(2500);
  });

  it('arms the claims of the jobs scheduled after it in one look through the claims, not one per job', async () => {
    // A restart: the stored snapshot holds claims of many jobs for b, and the app schedules its
    // jobs after. Each schedule() looked through every claim for its job's: the product of the
    // jobs and the claims, for an app that schedules thousands of jobs at start.
    const s = new SchedulerState();
    const jobs = Array.from({ length: 50 }, (_, i) => `job${i}`);
    const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' as const } };
    jobs.forEach((job, i) => s.apply(2 * i + 1, { type: 'register', job, spec: parseSpec({ every: '1s' }), mode: 'one', policy, member: 'b', atMs: T0 }));
    jobs.forEach((job, i) => s.apply(2 * i + 2, { type: 'claim', job, slotMs: T0 + 1000, assignees: ['b'], fromMs: T0 }));
    const c = quiet();
    const b = c.members.get('b')!;
    b.restore(encodeSchedulerSnapshot(s));
    const claims = b.state.claims;
    const values = claims.values.bind(claims);
    let looks = 0;
    claims.values = () => {
      looks++;
      return values();
    };
    for (const job of jobs) c.schedule(['b'], job, { every: '1s' }, 10);
    await c.time.advanceTo(T0 + 100);
    expect(looks).toBe(1);
    // Armed on schedule(), each runs at its instant (not a barrier after it, as a claim armed late does).
    await c.time.advanceTo(T0 + 1100);
    expect(c.runs.map((r) => [r.job, r.startMs - T0])).toEqual(jobs.map((job) => [job, 1000]));
  });

  it('refuses bytes that are not a snapshot, keeping its state', async () => {
    const { c, b } = await restoredOnB();
    expect(() => b.restore(new Uint8Array([1, 2, 3]))).toThrow(/snapshot/i);
    await c.time.advanceTo(T0 + 1100);
    expect(c.runs.map((r) => r.slotMs - T0)).toEqual([1000]);
  });
});

describe('a graceful stop hands over', () => {
  /** Runs of `job` by slot offset in seconds, with the members that started them. */
  const runsBySlot = (c: Cluster, job: string): Map<number, string[]> => {
    const out = new Map<number, string[]>();
    for (const r of c.runs.filter((x) => x.job === job)) out.set((r.slotMs - T0) / 1000, [...(out.get((r.slotMs - T0) / 1000) ?? []), r.member]);
    return out;
  };

  it('its claims not yet run move at once, and its run in progress ends here, once', async () => {
    const c = cluster(['a', 'b', 'c']);
    c.schedule(['a', 'b', 'c'], 'sync', { every: '200ms' }, 50);
    await c.time.advanceTo(T0 + 2201);
    // A follower ('a' leads, and plans on after the others stop): 'b' runs the slot of 2200,
    // with its start still held back, and holds claims of later slots.
    const self = 'b';
    const stopping = c.members.get(self)!;
    expect(c.claims('sync').find((x) => x.slotMs === T0 + 2200)!.starts.size).toBe(0);
    expect(runsBySlot(c, 'sync').get(2.2)).toEqual([self]);
    expect(c.claims('sync').filter((x) => x.slotMs > T0 + 2200 && x.assignees[0] === self).length).toBeGreaterThan(0);
    let done = false;
    void stopping.handOver(1000, 250).then(() => (done = true));
    await c.time.advanceTo(T0 + 2500);
    expect(done).toBe(true);
    stopping.stop();
    expect(c.state().jobs.get('sync')!.handlers.has(self)).toBe(false);
    await c.time.advanceTo(T0 + 6000);
    // Every slot ran once; none on the stopping member after the one it was running.
    const runs = runsBySlot(c, 'sync');
    for (let slot = 1; slot <= 29; slot++) expect(runs.get(slot / 5), `slot ${slot / 5}`).toHaveLength(1);
    expect([...runs].filter(([slot, by]) => slot > 2.2 && by.includes(self))).toEqual([]);
    expect(c.claims('sync').find((x) => x.slotMs === T0 + 2200)!.outcomes.get(self)?.outcome).toBe('succeeded');
  });

  it('a run still going at the timeout is reported interrupted, and its slot moves at once', async () => {
    const c = cluster(['a', 'b']);
    const signals: AbortSignal[] = [];
    c.schedule(['a', 'b'], 'long', { at: T0 + 1000 }, 5000, {}, (ctx) => void signals.push(ctx.signal));
    await c.time.advanceTo(T0 + 1100);
    const self = c.claims('long')[0]!.assignees[0]!;
    let doneAt: number | null = null;
    void c.members.get(self)!.handOver(500, 250).then(() => (doneAt = c.time.now()));
    await c.time.advanceTo(T0 + 2000);
    // Aborted at the timeout, its outcome applied, and the slot already moved before the stop ends.
    expect(doneAt).not.toBeNull();
    expect(doneAt!).toBeLessThanOrEqual(T0 + 1100 + 500 + 250);
    c.members.get(self)!.stop();
    const claim = c.claims('long')[0]!;
    expect(claim.outcomes.get(self)?.outcome).toBe('interrupted');
    expect(claim.assignees).not.toEqual([self]);
    expect(c.runs.map((r) => r.member)).toEqual([self, claim.assignees[0]]);
    // Its handler learns why: the member is stopping (before: CRONRAFT_RUN_INTERRUPTED, which
    // says this member lost the leader).
    expect(signals[0]?.reason).toMatchObject({ code: 'CRONRAFT_RUN_STOPPING' });
  });

  it("a mode 'all' run still going at the timeout is aborted as the member stops, and reported interrupted", async () => {
    const c = cluster(['a', 'b']);
    const signals = new Map<string, AbortSignal>();
    c.schedule(['a', 'b'], 'long', { at: T0 + 1000 }, 5000, { mode: 'all' }, (ctx, member) => void signals.set(member, ctx.signal));
    await c.time.advanceTo(T0 + 1100);
    void c.members.get('a')!.handOver(500, 250);
    await c.time.advanceTo(T0 + 2000);
    c.members.get('a')!.stop();
    expect(signals.get('a')?.reason).toMatchObject({ code: 'CRONRAFT_RUN_STOPPING' });
    expect(signals.get('b')?.aborted).toBe(false);
    expect(c.claims('long')[0]!.outcomes.get('a')?.outcome).toBe('interrupted');
  });

  it('waits no longer than its bounds when no leader moves anything', async () => {
    const c = cluster(['a', 'b'], 5, { isLeader: () => false });
    c.schedule(['a', 'b'], 'sync', { every: '1s' }, 50);
    await c.time.advanceTo(T0 + 500);
    let doneAt: number | null = null;
    void c.members.get('b')!.handOver(400, 250).then(() => (doneAt = c.time.now()));
    await c.time.advanceTo(T0 + 5000);
    expect(doneAt).not.toBeNull();
    expect(doneAt!).toBeLessThanOrEqual(T0 + 500 + 400 + 250);
  });
});

describe('odd values thrown by a job handler', () => {
  it.each([
    ['an object of no prototype', (): never => {
      throw Object.create(null);
    }],
    ['a rejection with an object whose toString throws', async (): Promise<never> => {
      throw { toString: (): never => { throw new Error('no'); } };
    }],
  ])('%s is a failed run, recorded as one', async (_what, handler) => {
    const c = cluster(['a', 'b']);
    for (const id of ['a', 'b']) c.members.get(id)!.schedule('odd', parseSpec({ at: T0 + 1000 }), handler, {});
    await c.time.advanceTo(T0 + 2000);
    // Before: String() of it threw as the outcome was being recorded, and none was.
    const claim = c.claims('odd')[0]!;
    expect(claim.outcomes.get(claim.assignees[0]!)).toMatchObject({ outcome: 'failed', error: 'a value with no string form' });
  });
});

describe("a job's defaults, as the README lists them", () => {
  it("mode 'one', retries 0, retryDelayMs 1 s, overlap 'skip', catchUp 'latest', and a run aborted at a minute", async () => {
    const c = cluster(['a', 'b']);
    const signals: AbortSignal[] = [];
    c.schedule(['a', 'b'], 'plain', { at: T0 + 1000 }, 10 * 60_000, {}, (ctx) => void signals.push(ctx.signal));
    await c.time.advanceTo(T0 + 1000 + 60_000 - 1);
    expect(c.state().jobs.get('plain')).toMatchObject({ mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' }, overlap: 'skip' } });
    expect(signals).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(false);
    await c.time.advanceTo(T0 + 1000 + 60_000 + 1);
    expect(signals[0]?.reason).toMatchObject({ code: 'CRONRAFT_RUN_TIMEOUT' });
  });
});
