import { describe, expect, it } from 'vitest';
import { decideOverlap, LATE_RUN_MS, MAX_QUEUED_RUNS_PER_JOB, runsInProgress } from '../../src/scheduler/overlap.js';
import { plan, planReassignments, type PlanInput } from '../../src/scheduler/planner.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { claimKey, runsOf } from '../../src/scheduler/records.js';
import { policyKey, type JobPolicy, type OverlapPolicy, type SchedulerCommand } from '../../src/scheduler/command.js';
import { SchedulerState } from '../../src/scheduler/state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const every = parseSpec({ every: '1s' });

function policy(overlap?: OverlapPolicy, retries = 0): JobPolicy {
  return { retries, retryDelayMs: 100, catchUp: { policy: 'latest' }, ...(overlap === undefined ? {} : { overlap }) };
}

/** A job with handlers on a and b, and a log index counter. */
function setup(overlap?: OverlapPolicy, retries = 0, maxClaimsKept?: number): { s: SchedulerState; next: () => number; apply: (c: SchedulerCommand) => ReturnType<SchedulerState['apply']> } {
  const s = new SchedulerState(maxClaimsKept === undefined ? {} : { maxClaimsKept });
  let index = 0;
  const apply = (c: SchedulerCommand): ReturnType<SchedulerState['apply']> => s.apply(++index, c);
  for (const member of ['a', 'b']) apply({ type: 'register', job: 'sync', spec: every, mode: 'one', policy: policy(overlap, retries), member, atMs: T0 });
  return { s, next: () => index + 1, apply };
}

const claim = (slotS: number, member = 'a'): SchedulerCommand => ({ type: 'claim', job: 'sync', slotMs: T0 + slotS * 1000, assignees: [member] });
const started = (slotS: number, token: number, member = 'a', atMs = T0 + slotS * 1000): SchedulerCommand => ({ type: 'started', job: 'sync', slotMs: T0 + slotS * 1000, token, member, atMs });
const outcome = (slotS: number, token: number, result: 'succeeded' | 'skipped' | 'replaced' | 'failed', member = 'a'): SchedulerCommand => ({
  type: 'outcome',
  job: 'sync',
  slotMs: T0 + slotS * 1000,
  token,
  member,
  outcome: result,
  atMs: T0 + slotS * 1000 + 500,
});

describe('start records', () => {
  it('mark a run in progress under its token until its outcome', () => {
    const { s, apply, next } = setup();
    const token = next();
    apply(claim(1));
    expect(s.claimsInProgress('sync').size).toBe(0);
    expect(apply(started(1, token))).toMatchObject({ ok: true });
    expect(runsInProgress(s, 'sync', { nowMs: T0 + 1500, timeoutMs: 60_000 })).toEqual([{ job: 'sync', slotMs: T0 + 1000, token, member: 'a', startedAtMs: T0 + 1000 }]);
    // A repeat is refused; so is a start under another token.
    expect(apply(started(1, token))).toEqual({ ok: false, reason: 'duplicate-slot' });
    expect(apply(started(1, token - 1))).toEqual({ ok: false, reason: 'stale-token' });
    apply(outcome(1, token, 'succeeded'));
    expect(s.claimsInProgress('sync').size).toBe(0);
    expect(runsOf(s.claims.get(claimKey('sync', T0 + 1000))!)).toEqual([]);
  });

  it('applied after the outcome (a retried report) do not make the run look in progress again', () => {
    const { s, apply, next } = setup();
    const token = next();
    apply(claim(1));
    apply(outcome(1, token, 'succeeded'));
    expect(apply(started(1, token))).toEqual({ ok: false, reason: 'ended' });
    expect(s.claimsInProgress('sync').size).toBe(0);
  });

  it('under an old token stop counting once the slot moves', () => {
    const { s, apply, next } = setup();
    const token = next();
    apply(claim(1));
    apply(started(1, token));
    apply({ type: 'reassign', job: 'sync', slotMs: T0 + 1000, fromToken: token, assignees: ['b'], reason: 'assignee-lost' });
    expect(s.claimsInProgress('sync').size).toBe(0);
  });

  it('are left out once older than the timeout, and for the asking member or slot', () => {
    const { s, apply, next } = setup();
    const token = next();
    apply(claim(1));
    apply(started(1, token, 'a', T0 + 1000));
    expect(runsInProgress(s, 'sync', { nowMs: T0 + 1999, timeoutMs: 1000 })).toHaveLength(1);
    expect(runsInProgress(s, 'sync', { nowMs: T0 + 2000, timeoutMs: 1000 })).toHaveLength(0);
    expect(runsInProgress(s, 'sync', { nowMs: T0 + 1500, timeoutMs: 1000, exceptMember: 'a' })).toHaveLength(0);
    expect(runsInProgress(s, 'sync', { nowMs: T0 + 1500, timeoutMs: 1000, exceptSlotMs: T0 + 1000 })).toHaveLength(0);
  });

  it('are forgotten with their claim, so the index stays bounded', () => {
    const { s, apply, next } = setup(undefined, 0, 2);
    for (let i = 1; i <= 5; i++) {
      const token = next();
      apply(claim(i));
      apply(started(i, token));
    }
    expect([...s.claimsInProgress('sync')].map((c) => c.slotMs - T0)).toEqual([4000, 5000]);
  });
});

describe('replacing a run (cancel)', () => {
  it('applies to the current token of a run that has not ended, once', () => {
    const { s, apply, next } = setup('replace');
    const token = next();
    apply(claim(1));
    apply(started(1, token));
    const cancel: SchedulerCommand = { type: 'cancel', job: 'sync', slotMs: T0 + 1000, token, bySlotMs: T0 + 2000, atMs: T0 + 2000 };
    expect(apply({ ...cancel, token: token + 1 } as SchedulerCommand)).toEqual({ ok: false, reason: 'stale-token' });
    expect(apply(cancel)).toMatchObject({ ok: true, claim: { cancelled: { token, bySlotMs: T0 + 2000 } } });
    expect(apply(cancel)).toEqual({ ok: false, reason: 'duplicate-slot' });
    // No longer in progress, whatever its member reports later.
    expect(s.claimsInProgress('sync').size).toBe(0);
  });

  it('is refused for a run that already ended', () => {
    const { apply, next } = setup('replace');
    const token = next();
    apply(claim(1));
    apply(outcome(1, token, 'succeeded'));
    expect(apply({ type: 'cancel', job: 'sync', slotMs: T0 + 1000, token, bySlotMs: T0 + 2000, atMs: T0 + 2000 })).toEqual({ ok: false, reason: 'ended' });
  });

  it('ends the slot: a move planned before it is refused, and none is planned after', () => {
    const { s, apply, next } = setup('replace', 3);
    const token = next();
    apply(claim(1));
    apply(started(1, token));
    const move = planReassignments(s, { nowMs: T0 + 1500, eligible: new Set(['b']), horizonMs: 60_000, maxCommands: 10 });
    expect(move).toHaveLength(1);
    apply({ type: 'cancel', job: 'sync', slotMs: T0 + 1000, token, bySlotMs: T0 + 2000, atMs: T0 + 2000 });
    expect(apply(move[0]!)).toEqual({ ok: false, reason: 'ended' });
    expect(planReassignments(s, { nowMs: T0 + 1500, eligible: new Set(['b']), horizonMs: 60_000, maxCommands: 10 })).toEqual([]);
  });
});

describe('skipped and replaced outcomes', () => {
  it('are never retried, and skipped ones are counted on the job', () => {
    const { s, apply, next } = setup('skip', 3);
    let token = next();
    apply(claim(1));
    apply(outcome(1, token, 'skipped'));
    token = next();
    apply(claim(2));
    apply(outcome(2, token, 'replaced'));
    expect(planReassignments(s, { nowMs: T0 + 60_000, eligible: new Set(['a', 'b']), horizonMs: 600_000, maxCommands: 10 })).toEqual([]);
    expect(s.jobs.get('sync')!.skippedRuns).toBe(1);
    expect(s.claims.get(claimKey('sync', T0 + 1000))!.outcomes.get('a')!.outcome).toBe('skipped');
  });
});

describe('the overlap policy, replicated with the job', () => {
  it("defaults to 'skip', also for registrations written before overlap policies existed", () => {
    const { s } = setup();
    expect(s.jobs.get('sync')!.policy.overlap).toBe('skip');
    expect(policyKey(policy())).toBe(policyKey(policy('skip')));
    expect(policyKey(policy('queue'))).toBe('retries 0 delay 100 catch-up latest overlap queue');
  });

  it('makes a member that registers another policy a conflict', () => {
    const { s, apply } = setup('queue');
    expect(apply({ type: 'register', job: 'sync', spec: every, mode: 'one', policy: policy('allow'), member: 'c', atMs: T0 })).toEqual({ ok: false, reason: 'spec-conflict' });
    expect(s.jobs.get('sync')!.conflicts.get('c')).toContain('overlap allow');
  });
});

describe('deciding what a firing slot does', () => {
  const at = (s: number): { slotMs: number } => ({ slotMs: T0 + s * 1000 });

  it('runs when nothing else of the job is in progress, whatever the policy', () => {
    for (const p of ['skip', 'allow', 'queue', 'replace'] as const) expect(decideOverlap(p, T0 + 2000, [], 0)).toEqual({ action: 'run', replace: [] });
  });

  it("'queue' also waits, with nothing in progress, while an earlier slot of the job has not ended on another member, up to its bound; the others do not look", () => {
    const earlier = (): boolean => true;
    expect(decideOverlap('queue', T0 + 2000, [], 0, undefined, undefined, earlier)).toEqual({ action: 'wait' });
    expect(decideOverlap('queue', T0 + 2000, [], MAX_QUEUED_RUNS_PER_JOB, undefined, undefined, earlier)).toMatchObject({ action: 'skip', reason: expect.stringContaining('queued') });
    for (const p of ['skip', 'allow', 'replace'] as const) expect(decideOverlap(p, T0 + 2000, [], 0, undefined, undefined, earlier)).toEqual({ action: 'run', replace: [] });
  });

  it("'skip' skips, 'allow' runs, 'queue' waits up to its bound, 'replace' replaces earlier runs", () => {
    const others = [at(1)];
    expect(decideOverlap('skip', T0 + 2000, [{ slotMs: T0 + 1000, startedAtMs: T0 + 1000 }], 0)).toMatchObject({ action: 'skip', reason: expect.stringContaining('still in progress') });
    expect(decideOverlap('allow', T0 + 2000, others, 0)).toEqual({ action: 'run', replace: [] });
    expect(decideOverlap('queue', T0 + 2000, others, MAX_QUEUED_RUNS_PER_JOB - 1)).toEqual({ action: 'wait' });
    expect(decideOverlap('queue', T0 + 2000, others, MAX_QUEUED_RUNS_PER_JOB)).toMatchObject({ action: 'skip', reason: expect.stringContaining('queued') });
    expect(decideOverlap('replace', T0 + 2000, others, 0)).toEqual({ action: 'run', replace: others });
  });

  it("'skip' waits, rather than skips, for runs that are all late: a retry, or a slot a failover moved", () => {
    // Began after this slot's instant (moved together with it), or well after its own (a retry).
    const afterThis = { slotMs: T0 + 1000, startedAtMs: T0 + 2300 };
    const retry = { slotMs: T0 + 1000, startedAtMs: T0 + 1000 + LATE_RUN_MS + 1 };
    expect(decideOverlap('skip', T0 + 2000, [afterThis], 0)).toEqual({ action: 'wait' });
    expect(decideOverlap('skip', T0 + 2000, [retry, afterThis], 0)).toEqual({ action: 'wait' });
    expect(decideOverlap('skip', T0 + 2000, [retry], MAX_QUEUED_RUNS_PER_JOB)).toMatchObject({ action: 'skip', reason: expect.stringContaining('queued') });
    // One run on schedule (started at its instant, or within LATE_RUN_MS), or one not started yet, is enough to skip.
    const onTime = { slotMs: T0 + 1000, startedAtMs: T0 + 1000 + LATE_RUN_MS };
    expect(decideOverlap('skip', T0 + 2000, [retry, onTime], 0)).toMatchObject({ action: 'skip' });
    expect(decideOverlap('skip', T0 + 2000, [retry, at(1)], 0)).toMatchObject({ action: 'skip', reason: expect.stringContaining('already waiting to run') });
  });

  it("'skip' names, in the reason, the run that waits when that is why it skips", () => {
    // Seed 42 (five members, three minutes): a failover moved the slots at 1 s, 2 s and 3 s to
    // one member at once; the first ran, the second waited behind it, and the third was
    // skipped "for a run in progress" that had not started. At most one slot waits behind late
    // runs: the third is skipped, and its reason says it was for a run that waits.
    const running = { slotMs: T0 + 1000, startedAtMs: T0 + 3080 };
    const waiting = at(2);
    const decision = decideOverlap('skip', T0 + 3000, [running, waiting], 1);
    expect(decision).toEqual({ action: 'skip', reason: 'overlap: a run of the job (slot 2026-01-01T00:00:02.000Z) was already waiting to run' });
    expect(decideOverlap('skip', T0 + 3000, [running], 0)).toEqual({ action: 'wait' });
  });

  it("'skip' skips, rather than waits, when an earlier slot waits behind the late runs on another member; it asks which only then", () => {
    const late = { slotMs: T0 + 1000, startedAtMs: T0 + 3080 };
    let asked = 0;
    const elsewhere = (): number[] => {
      asked++;
      return [T0 + 2000];
    };
    expect(decideOverlap('skip', T0 + 4000, [late], 0, undefined, elsewhere)).toEqual({ action: 'skip', reason: 'overlap: a run of the job (slot 2026-01-01T00:00:02.000Z) was already waiting to run on another member' });
    expect(decideOverlap('skip', T0 + 4000, [late], 0, undefined, () => [])).toEqual({ action: 'wait' });
    // Not asked with no other run, with one on schedule, nor under another policy.
    expect(decideOverlap('skip', T0 + 4000, [], 0, undefined, elsewhere)).toEqual({ action: 'run', replace: [] });
    expect(decideOverlap('skip', T0 + 4000, [{ slotMs: T0 + 3000, startedAtMs: T0 + 3000 }], 0, undefined, elsewhere)).toMatchObject({ action: 'skip' });
    expect(decideOverlap('queue', T0 + 4000, [late], 0, undefined, elsewhere)).toEqual({ action: 'wait' });
    expect(asked).toBe(1);
  });

  it("'replace' skips a slot older than a run in progress (a late retry does not replace newer work)", () => {
    expect(decideOverlap('replace', T0 + 2000, [at(1), at(3)], 0)).toMatchObject({ action: 'skip', reason: expect.stringContaining('later slot') });
  });
});

describe("planning a 'queue' job", () => {
  const input = (nowMs: number, members = ['a', 'b']): PlanInput => ({ nowMs, lookaheadMs: 2500, members: new Map(members.map((id) => [id, { load: 0 }])), maxClaims: 100 });

  it('gives its slots to the member of its latest unfinished run, so that one local queue keeps them in order', () => {
    const { s, apply } = setup('queue');
    const first = plan(s, input(T0 + 100));
    // Within one plan, slots follow the first one.
    expect(first.map((c) => (c.type === 'claim' ? c.assignees : []))).toEqual([['a'], ['a']]);
    for (const c of first) apply(c);
    expect(plan(s, input(T0 + 1100)).map((c) => (c.type === 'claim' ? c.assignees : []))).toEqual([['a']]);
  });

  it('balances again once the latest run ended, or its member may not take work', () => {
    const { s, apply, next } = setup('queue');
    apply({ type: 'register', job: 'other', spec: every, mode: 'one', policy: policy(), member: 'a', atMs: T0 });
    const token = next();
    apply(claim(1));
    // Another job's load on a: without the queue, b is less loaded.
    s.assigned.set('a', 10);
    expect(plan(s, { ...input(T0 + 100, ['b']), lookaheadMs: 1000 }).find((c) => c.type === 'claim' && c.job === 'sync')).toBeUndefined();
    expect(plan(s, { ...input(T0 + 1100), members: new Map([['a', { load: 10 }], ['b', { load: 0 }]]) }).filter((c) => c.type === 'claim' && c.job === 'sync').map((c) => (c.type === 'claim' ? c.assignees : []))).toEqual([['a'], ['a']]);
    apply(outcome(1, token, 'succeeded'));
    const after = plan(s, { ...input(T0 + 1100), members: new Map([['a', { load: 10 }], ['b', { load: 0 }]]) }).filter((c) => c.type === 'claim' && c.job === 'sync');
    expect(after.map((c) => (c.type === 'claim' ? c.assignees : []))).toEqual([['b'], ['b']]);
  });
});
