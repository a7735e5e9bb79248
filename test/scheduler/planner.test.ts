import { describe, expect, it } from 'vitest';
import { plan, planReassignments, type CatchUp, type PlanInput } from '../../src/scheduler/planner.js';
import { MAX_INSTANTS_PER_CALL, parseSpec, type JobSpec } from '../../src/scheduler/spec.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { claimKey } from '../../src/scheduler/records.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function policy(catchUp: CatchUp = { policy: 'latest' }, retries = 0): JobPolicy {
  return { retries, retryDelayMs: 1000, catchUp };
}

function stateWith(mode: 'one' | 'all' = 'one', handlers = ['a', 'b'], jobPolicy = policy()): SchedulerState {
  const s = new SchedulerState();
  let index = 0;
  for (const member of handlers) s.apply(++index, { type: 'register', job: 'tick', spec: parseSpec({ every: '1s' }), mode, policy: jobPolicy, member, atMs: T0 });
  return s;
}

function input(nowMs: number, members = ['a', 'b']): PlanInput {
  return { nowMs, lookaheadMs: 1500, members: new Map(members.map((id) => [id, { load: 0 }])), maxClaims: 100 };
}

describe('the planner', () => {
  it('claims the slots due within the look-ahead, balancing them over members with a handler', () => {
    expect(plan(stateWith(), input(T0 + 100))).toEqual([{ type: 'claim', job: 'tick', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 }]);
    const wide = plan(stateWith(), { ...input(T0 + 100), lookaheadMs: 3000 });
    // Each claim applies only from the mark the one before it leaves (a chain).
    expect(wide.map((c) => (c.type === 'claim' ? [c.slotMs - T0, c.assignees[0], (c.fromMs ?? 0) - T0] : null))).toEqual([
      [1000, 'a', 0],
      [2000, 'b', 1000],
      [3000, 'a', 2000],
    ]);
  });

  it("mode 'all' assigns every member with a handler", () => {
    const commands = plan(stateWith('all'), input(T0 + 100));
    expect(commands).toEqual([{ type: 'claim', job: 'tick', slotMs: T0 + 1000, assignees: ['a', 'b'], fromMs: T0 }]);
  });

  it('assigns nobody without a handler, and only members that may take work', () => {
    expect(plan(stateWith('one', ['c']), input(T0 + 100))).toEqual([]);
    const commands = plan(stateWith(), input(T0 + 100, ['b']));
    expect(commands.map((c) => (c.type === 'claim' ? c.assignees : []))).toEqual([['b']]);
  });

  it("after an outage, 'latest' runs the most recent missed slot once and skips the rest as missed", () => {
    const commands = plan(stateWith(), input(T0 + 10_500));
    expect(commands[0]).toEqual({ type: 'skip', job: 'tick', throughMs: T0 + 9999, fromMs: T0, count: 9 });
    expect(commands.slice(1).map((c) => (c.type === 'claim' ? c.slotMs - T0 : null))).toEqual([10_000, 11_000, 12_000]);
  });

  it("'none' skips every missed slot; 'all' runs those within the window, up to its bound", () => {
    const none = plan(stateWith('one', ['a', 'b'], policy({ policy: 'none' })), input(T0 + 10_500));
    expect(none[0]).toEqual({ type: 'skip', job: 'tick', throughMs: T0 + 10_000, fromMs: T0, count: 10 });
    expect(none.slice(1).map((c) => (c.type === 'claim' ? c.slotMs - T0 : null))).toEqual([11_000, 12_000]);
    const all = plan(stateWith('one', ['a', 'b'], policy({ policy: 'all', windowMs: 3000, maxSlots: 2 })), input(T0 + 10_500));
    expect(all[0]).toEqual({ type: 'skip', job: 'tick', throughMs: T0 + 8999, fromMs: T0, count: 8 });
    expect(all.slice(1).map((c) => (c.type === 'claim' ? c.slotMs - T0 : null))).toEqual([9000, 10_000, 11_000, 12_000]);
  });

  it('counts every missed slot of an interval, however many (two hours of a job every second), and those of a cron spec up to its bound', () => {
    // 7,200: the slots after the registration through the one skipped last. They were counted
    // up to 1,000 (found by the helper attacking time: a forward step of the time, or an outage).
    const none = plan(stateWith('one', ['a', 'b'], policy({ policy: 'none' })), input(T0 + 7_200_500));
    expect(none[0]).toEqual({ type: 'skip', job: 'tick', throughMs: T0 + 7_200_000, fromMs: T0, count: 7200 });
    const cron = new SchedulerState();
    cron.apply(1, { type: 'register', job: 'cron', spec: parseSpec('* * * * * *'), mode: 'one', policy: policy({ policy: 'none' }), member: 'a', atMs: T0 });
    expect(plan(cron, input(T0 + 7_200_500))[0]).toMatchObject({ type: 'skip', count: 1000 });
  });

  it('plans nothing twice: once claims apply, the next plan moves on', () => {
    const s = stateWith();
    let index = 10;
    for (const c of plan(s, input(T0 + 100))) s.apply(++index, c);
    expect(plan(s, input(T0 + 100))).toEqual([]);
    const later = plan(s, input(T0 + 600));
    expect(later.map((c) => (c.type === 'claim' ? c.slotMs - T0 : null))).toEqual([2000]);
  });
});

describe('the cost of a plan', () => {
  /** A cron spec that counts the reads of its fields other than its kind: each is work on the job. */
  function countedSpec(reads: { n: number }): JobSpec {
    return new Proxy(parseSpec({ cron: '0 0 * * *', tz: 'Europe/Paris' }), {
      get(target, key, receiver) {
        if (key !== 'kind') reads.n++;
        return Reflect.get(target, key, receiver) as unknown;
      },
    });
  }

  it('is a look-up per job with nothing due, however many jobs (past 4,096, where the memo of next instants used to start over)', () => {
    const s = new SchedulerState();
    const reads = Array.from({ length: 5000 }, () => ({ n: 0 }));
    // Registered one after the other: each its own anchor, and its own next instant to remember.
    reads.forEach((r, i) => s.apply(i + 1, { type: 'register', job: `job${i}`, spec: countedSpec(r), mode: 'one', policy: policy(), member: 'a', atMs: T0 + i }));
    const at = (nowMs: number): PlanInput => ({ ...input(nowMs, ['a']), lookaheadMs: 1000 });
    expect(plan(s, at(T0 + 1000))).toEqual([]);
    for (const r of reads) r.n = 0;
    expect(plan(s, at(T0 + 1100))).toEqual([]);
    expect(reads.filter((r) => r.n > 0)).toHaveLength(0);
    // A job whose mark moves is asked again; the others are not.
    s.apply(5001, { type: 'skip', job: 'job7', throughMs: T0 + 500, fromMs: T0 + 7, count: 0 });
    expect(plan(s, at(T0 + 1200))).toEqual([]);
    expect(reads.flatMap((r, i) => (r.n > 0 ? [i] : []))).toEqual([7]);
  });
});

describe('reassignments', () => {
  const reassignInput = (nowMs: number, eligible: string[]): Parameters<typeof planReassignments>[1] => ({
    nowMs,
    eligible: new Set(eligible),
    horizonMs: 60_000,
    maxCommands: 10,
  });
  const claimed = (retries = 0): SchedulerState => {
    const s = stateWith('one', ['a', 'b'], policy({ policy: 'latest' }, retries));
    s.apply(10, { type: 'claim', job: 'tick', slotMs: T0 + 1000, assignees: ['a'] });
    return s;
  };

  it('moves a claim whose assignee is unreachable and reported nothing', () => {
    expect(planReassignments(claimed(), reassignInput(T0 + 900, ['a', 'b']))).toEqual([]);
    expect(planReassignments(claimed(), reassignInput(T0 + 900, ['b']))).toEqual([
      { type: 'reassign', job: 'tick', slotMs: T0 + 1000, fromToken: 10, assignees: ['b'], reason: 'assignee-lost', atMs: T0 + 900 },
    ]);
  });

  it('leaves a claim with an assignee that still holds its claims, though it may be given no new work, and moves it to an eligible member only', () => {
    // 'a' keeps its claims (reachable within its lease) but gets no new work (say, its clock is
    // not measured yet): the claim stays; once 'a' holds nothing, it moves to 'b', not to 'a'.
    expect(planReassignments(claimed(), { ...reassignInput(T0 + 900, ['b']), holding: new Set(['a', 'b']) })).toEqual([]);
    expect(planReassignments(claimed(), { ...reassignInput(T0 + 900, ['b']), holding: new Set(['b']) })).toEqual([
      { type: 'reassign', job: 'tick', slotMs: T0 + 1000, fromToken: 10, assignees: ['b'], reason: 'assignee-lost', atMs: T0 + 900 },
    ]);
  });

  it('moves at once a claim whose assignee unregistered the job and started no run under it', () => {
    const s = claimed();
    s.apply(11, { type: 'unregister', job: 'tick', member: 'a' });
    // 'a' is still reachable (it is stopping gracefully): the claim moves all the same.
    expect(planReassignments(s, reassignInput(T0 + 900, ['a', 'b']))).toEqual([
      { type: 'reassign', job: 'tick', slotMs: T0 + 1000, fromToken: 10, assignees: ['b'], reason: 'assignee-lost', atMs: T0 + 900 },
    ]);
  });

  it('leaves a released claim whose run started under its token, and one nobody else handles', () => {
    const started = claimed();
    started.apply(11, { type: 'started', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', atMs: T0 + 1000 });
    started.apply(12, { type: 'unregister', job: 'tick', member: 'a' });
    expect(planReassignments(started, reassignInput(T0 + 1100, ['a', 'b']))).toEqual([]);
    const alone = claimed();
    alone.apply(11, { type: 'unregister', job: 'tick', member: 'b' });
    alone.apply(12, { type: 'unregister', job: 'tick', member: 'a' });
    expect(planReassignments(alone, reassignInput(T0 + 900, ['a', 'b']))).toEqual([]);
  });

  it('retries a failed run on another member after the back-off, as many times as the job allows', () => {
    const fail = (s: SchedulerState): SchedulerState => {
      s.apply(11, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'failed', atMs: T0 + 1100 });
      return s;
    };
    expect(planReassignments(fail(claimed(0)), reassignInput(T0 + 1500, ['a', 'b']))).toEqual([]);
    const s = fail(claimed(1));
    expect(planReassignments(s, reassignInput(T0 + 1500, ['a', 'b']))).toEqual([]);
    expect(planReassignments(s, reassignInput(T0 + 2100, ['a', 'b']))).toEqual([
      { type: 'reassign', job: 'tick', slotMs: T0 + 1000, fromToken: 10, assignees: ['b'], reason: 'retry', atMs: T0 + 2100 },
    ]);
    s.apply(12, { type: 'reassign', job: 'tick', slotMs: T0 + 1000, fromToken: 10, assignees: ['b'], reason: 'retry' });
    s.apply(13, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 12, member: 'b', outcome: 'failed', atMs: T0 + 2200 });
    // Attempt 2 failed and only one retry was allowed.
    expect(planReassignments(s, reassignInput(T0 + 9000, ['a', 'b']))).toEqual([]);
  });

  it("leaves succeeded runs and mode 'all' alone", () => {
    const s = claimed(3);
    s.apply(11, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'succeeded', atMs: T0 + 1100 });
    expect(planReassignments(s, reassignInput(T0 + 5000, ['b']))).toEqual([]);
    const all = stateWith('all');
    all.apply(10, { type: 'claim', job: 'tick', slotMs: T0 + 1000, assignees: ['a', 'b'] });
    expect(planReassignments(all, reassignInput(T0 + 900, ['b']))).toEqual([]);
  });
});

describe('claims past the horizon', () => {
  const pastHorizon = (eligible: string[]): Parameters<typeof planReassignments>[1] => ({ nowMs: T0 + 100_000, eligible: new Set(eligible), horizonMs: 10_000, maxCommands: 10 });
  const claimed = (): SchedulerState => {
    const s = stateWith('one', ['a', 'b']);
    s.apply(10, { type: 'claim', job: 'tick', slotMs: T0 + 1000, assignees: ['a'] });
    return s;
  };
  const expire: SchedulerCommand = { type: 'expire', job: 'tick', slotMs: T0 + 1000, fromToken: 10, reason: 'expired', atMs: T0 + 100_000 };

  it('are never moved: one with no outcome and no run is recorded as missed, wherever its assignee is', () => {
    // Seen by nobody for ten minutes: its single-handler member was down all along, say.
    expect(planReassignments(claimed(), pastHorizon(['b']))).toEqual([expire]);
    expect(planReassignments(claimed(), pastHorizon(['a', 'b']))).toEqual([expire]);
    const s = claimed();
    s.apply(11, planReassignments(s, pastHorizon(['b']))[0]!);
    expect(planReassignments(s, pastHorizon(['b']))).toEqual([]);
  });

  it('keep a run in progress on a member that may take work (a long run), and their outcomes', () => {
    const s = claimed();
    s.apply(11, { type: 'started', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', atMs: T0 + 1000 });
    expect(planReassignments(s, pastHorizon(['a', 'b']))).toEqual([]);
    // Its member lost, the run will never report: the slot is missed.
    expect(planReassignments(s, pastHorizon(['b']))).toEqual([expire]);
    s.apply(12, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'failed', atMs: T0 + 1100 });
    expect(planReassignments(s, pastHorizon(['b']))).toEqual([]);
  });

  it('count a run in progress from when the leader last saw its member hold its claims, if later', () => {
    const s = claimed();
    s.apply(11, { type: 'started', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', atMs: T0 + 1000 });
    // 'a' was seen 5 s ago, its run still going: it is moved, not recorded missed (from version 3).
    expect(planReassignments(s, { ...pastHorizon(['b']), heldAtMs: new Map([['a', T0 + 95_000]]), version: 3 })).toEqual([
      { type: 'reassign', job: 'tick', slotMs: T0 + 1000, fromToken: 10, assignees: ['b'], reason: 'assignee-lost', atMs: T0 + 100_000 },
    ]);
    // Seen longer ago than the horizon: missed.
    expect(planReassignments(s, { ...pastHorizon(['b']), heldAtMs: new Map([['a', T0 + 80_000]]), version: 3 })).toEqual([expire]);
    // A claim whose run never started is not counted from its member: nothing of it runs.
    expect(planReassignments(claimed(), { ...pastHorizon(['b']), heldAtMs: new Map([['a', T0 + 95_000]]), version: 3 })).toEqual([expire]);
    // Before version 3 the horizon counts from the instant alone, as members of earlier releases arm claims.
    expect(planReassignments(s, { ...pastHorizon(['b']), heldAtMs: new Map([['a', T0 + 95_000]]), version: 2 })).toEqual([expire]);
  });

  // Found by the simulator once it drew short horizons: a run interrupted (its member lost its
  // lease) that no move ran before the horizon kept `interrupted` for good, a slot with no final outcome.
  it('record a run interrupted and never moved as missed, from cluster version 3', () => {
    const interrupted = (version: number): SchedulerState => {
      const s = claimed();
      s.apply(11, { type: 'started', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', atMs: T0 + 1000 }, version);
      s.apply(12, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'interrupted', atMs: T0 + 1100 }, version);
      return s;
    };
    // Before the horizon it moves, if anyone may take it.
    expect(planReassignments(interrupted(3), { ...pastHorizon(['b']), nowMs: T0 + 5000, version: 3 })).toMatchObject([{ type: 'reassign', reason: 'assignee-lost' }]);
    const s = interrupted(3);
    expect(planReassignments(s, { ...pastHorizon(['a', 'b']), version: 3 })).toEqual([expire]);
    expect(s.apply(13, expire, 3)).toMatchObject({ ok: true });
    const claim = s.claims.get(claimKey('tick', T0 + 1000));
    expect(claim?.token).toBe(13);
    expect(claim?.outcomes.get('a')).toMatchObject({ outcome: 'missed', token: 13 });
    expect(s.openClaims().has(claim!)).toBe(false);
    expect(planReassignments(s, { ...pastHorizon(['a', 'b']), version: 3 })).toEqual([]);
    // A cluster of an earlier version keeps the outcome, as cronraft 0.1.0 does: no member proposes nor applies the expiry.
    const old = interrupted(2);
    expect(planReassignments(old, { ...pastHorizon(['a', 'b']), version: 2 })).toEqual([]);
    expect(planReassignments(old, pastHorizon(['a', 'b']))).toEqual([]);
    expect(old.apply(13, expire, 2)).toEqual({ ok: false, reason: 'ended' });
    expect(old.claims.get(claimKey('tick', T0 + 1000))?.outcomes.get('a')).toMatchObject({ outcome: 'interrupted', token: 10 });
    // Any other outcome is final at every version.
    const failed = claimed();
    failed.apply(11, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'failed', atMs: T0 + 1100 }, 3);
    expect(planReassignments(failed, { ...pastHorizon(['a', 'b']), version: 3 })).toEqual([]);
    expect(failed.apply(12, expire, 3)).toEqual({ ok: false, reason: 'ended' });
  });
});

describe('catch-up over a long outage', () => {
  it("'all' runs at most maxSlots, the latest, however long the window", () => {
    const s = new SchedulerState();
    const allOfLastHour = policy({ policy: 'all', windowMs: 3_600_000, maxSlots: 5 });
    s.apply(1, { type: 'register', job: 'tick', spec: parseSpec({ every: 100 }), mode: 'one', policy: allOfLastHour, member: 'a', atMs: T0 });
    const commands = plan(s, { nowMs: T0 + 3_600_000 + 50, lookaheadMs: 0, members: new Map([['a', { load: 0 }]]), maxClaims: 100 });
    const claims = commands.filter((c) => c.type === 'claim').map((c) => (c.type === 'claim' ? c.slotMs - T0 : 0));
    expect(claims).toEqual([3_599_600, 3_599_700, 3_599_800, 3_599_900, 3_600_000]);
    expect(commands[0]).toMatchObject({ type: 'skip', throughMs: T0 + 3_599_599 });
  });

  it("'all' keeps at most MAX_INSTANTS_PER_CALL slots of a catch-up, whatever maxSlots says (README, catch-up)", () => {
    const s = new SchedulerState();
    const everything = policy({ policy: 'all', windowMs: 1e9, maxSlots: 1e9 });
    s.apply(1, { type: 'register', job: 'tick', spec: parseSpec({ every: 100 }), mode: 'one', policy: everything, member: 'a', atMs: T0 });
    const nowMs = T0 + 86_400_000 + 50;
    const commands = plan(s, { nowMs, lookaheadMs: 0, members: new Map([['a', { load: 0 }]]), maxClaims: 1e9 });
    const claims = commands.filter((c) => c.type === 'claim');
    expect(claims).toHaveLength(MAX_INSTANTS_PER_CALL);
    expect(claims.at(-1)).toMatchObject({ slotMs: T0 + 86_400_000 });
    // The slots before them are dropped, counted as missed.
    expect(commands[0]).toMatchObject({ type: 'skip', count: 864_000 - MAX_INSTANTS_PER_CALL });
  });
});

describe('the planner, for a job whose next slot is more than a year ahead', () => {
  // Before, the next instant was looked for within a year of the high-water mark, which only a
  // claim moves: these jobs never ran, and state() showed no next slot.
  const DAY = 86_400_000;
  const claimed = (spec: JobSpec, nowMs: number): number[] => {
    const s = new SchedulerState();
    s.apply(1, { type: 'register', job: 'far', spec, mode: 'one', policy: policy(), member: 'a', atMs: T0 });
    return plan(s, input(nowMs, ['a'])).flatMap((c) => (c.type === 'claim' ? [c.slotMs] : []));
  };

  it("claims an { every } slot 400 days after the anchor, and an { at } slot 400 days ahead, as they come due", () => {
    expect(claimed(parseSpec({ every: '400d' }), T0 + 400 * DAY - 500)).toEqual([T0 + 400 * DAY]);
    expect(claimed(parseSpec({ at: new Date(T0 + 400 * DAY) }), T0 + 400 * DAY - 500)).toEqual([T0 + 400 * DAY]);
    // Not before the look-ahead reaches them.
    expect(claimed(parseSpec({ every: '400d' }), T0 + 399 * DAY)).toEqual([]);
  });

  it('claims a 29 February cron slot more than a year after the registration', () => {
    const leapDay = Date.parse('2028-02-29T12:00:00Z');
    expect(claimed(parseSpec({ cron: '0 0 12 29 2 *', tz: 'UTC' }), leapDay - 500)).toEqual([leapDay]);
  });
});
