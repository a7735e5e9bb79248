import { describe, expect, it } from 'vitest';
import { claimEndedAt, nextDelaySlot, plan, type PlanInput } from '../../src/scheduler/planner.js';
import { instantsBetween, parseSpec, specKey, type JobSpec } from '../../src/scheduler/spec.js';
import { claimKey } from '../../src/scheduler/records.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const policy = (retries = 0): JobPolicy => ({ retries, retryDelayMs: 1000, catchUp: { policy: 'latest' } });

function delayJob(spec: JobSpec, mode: 'one' | 'all' = 'one', retries = 0, handlers = ['a']): { s: SchedulerState; next: () => number } {
  const s = new SchedulerState();
  let index = 0;
  for (const member of handlers) s.apply(++index, { type: 'register', job: 'sync', spec, mode, policy: policy(retries), member, atMs: T0 });
  return { s, next: () => ++index };
}

function input(nowMs: number, members = ['a']): PlanInput {
  return { nowMs, lookaheadMs: 1000, members: new Map(members.map((id) => [id, { load: 0 }])), maxClaims: 100 };
}

const claims = (commands: SchedulerCommand[]): number[] => commands.flatMap((c) => (c.type === 'claim' ? [c.slotMs - T0] : []));

describe('fixed-delay specs', () => {
  it('parse milliseconds or durations, with an optional initial delay', () => {
    expect(parseSpec({ delayAfterCompletion: '10s' })).toEqual({ kind: 'delay', delayMs: 10_000, initialDelayMs: 0 });
    expect(parseSpec({ delayAfterCompletion: 1500, initialDelay: '2m' })).toEqual({ kind: 'delay', delayMs: 1500, initialDelayMs: 120_000 });
    expect(specKey(parseSpec({ delayAfterCompletion: '1s', initialDelay: 5 }))).toBe('delay 1000 after 5');
  });

  // Invalid fixed-delay specs are among the rejections in spec.test.ts.

  it('fix only the first instant from the spec: registration plus the initial delay', () => {
    const spec = parseSpec({ delayAfterCompletion: '1s', initialDelay: 500 });
    expect(instantsBetween(spec, T0, T0, T0 + 60_000, 10)).toEqual([T0 + 500]);
  });
});

describe('planning a fixed-delay job', () => {
  it('claims the first slot after the initial delay, then each next one only once the previous run ended', () => {
    const { s, next } = delayJob(parseSpec({ delayAfterCompletion: 2000, initialDelay: 1500 }));
    expect(claims(plan(s, input(T0)))).toEqual([]);
    const first = plan(s, input(T0 + 600));
    expect(first).toEqual([{ type: 'claim', job: 'sync', slotMs: T0 + 1500, assignees: ['a'], fromMs: T0 }]);
    for (const c of first) s.apply(next(), c);
    const token = s.claims.get(claimKey('sync', T0 + 1500))!.token;
    // Running, then started: nothing more is claimed, however late it gets.
    expect(plan(s, input(T0 + 1600))).toEqual([]);
    s.apply(next(), { type: 'started', job: 'sync', slotMs: T0 + 1500, token, member: 'a', atMs: T0 + 1500 });
    expect(plan(s, input(T0 + 30_000))).toEqual([]);
    // It ends at +31 s: the next slot is 2 s after, claimed within the look-ahead.
    s.apply(next(), { type: 'outcome', job: 'sync', slotMs: T0 + 1500, token, member: 'a', outcome: 'succeeded', atMs: T0 + 31_000 });
    expect(nextDelaySlot(s, s.jobs.get('sync')!)).toBe(T0 + 33_000);
    expect(plan(s, input(T0 + 31_500))).toEqual([]);
    expect(claims(plan(s, input(T0 + 32_000)))).toEqual([33_000]);
  });

  it('goes on once a claim that never ended is past the reassignment horizon (nothing will move or retry it)', () => {
    const { s, next } = delayJob(parseSpec({ delayAfterCompletion: 1000 }), 'one', 10);
    s.apply(next(), { type: 'claim', job: 'sync', slotMs: T0 + 10, assignees: ['a'] });
    const token = s.claims.get(claimKey('sync', T0 + 10))!.token;
    s.apply(next(), { type: 'outcome', job: 'sync', slotMs: T0 + 10, token, member: 'a', outcome: 'failed', atMs: T0 + 100 });
    const horizonMs = 10 * 60_000;
    // Retries are left: within the horizon, which counts from when the retry is due (the
    // failure, then its back-off of a second; from cluster version 3), the job waits for them.
    expect(plan(s, { ...input(T0 + 1100 + horizonMs), horizonMs, version: 3 })).toEqual([]);
    // Past it, the next slot follows the delay from now.
    const later = T0 + 1100 + horizonMs + 20;
    expect(claims(plan(s, { ...input(later), horizonMs, version: 3 }))).toEqual([later - T0 + 1000]);
    // Before version 3 the horizon counts from the slot's instant.
    expect(claims(plan(s, { ...input(T0 + horizonMs + 20), horizonMs }))).toEqual([horizonMs + 20 + 1000]);
  });

  it('with no initial delay, the first slot is right after the registration (never at the high-water mark)', () => {
    const { s } = delayJob(parseSpec({ delayAfterCompletion: 1000 }));
    expect(claims(plan(s, input(T0)))).toEqual([1]);
  });

  it('waits for the retries of a failed run, and goes on after the last one', () => {
    const { s, next } = delayJob(parseSpec({ delayAfterCompletion: 1000 }), 'one', 1, ['a', 'b']);
    s.apply(next(), { type: 'claim', job: 'sync', slotMs: T0 + 10, assignees: ['a'] });
    const claim = s.claims.get(claimKey('sync', T0 + 10))!;
    s.apply(next(), { type: 'outcome', job: 'sync', slotMs: T0 + 10, token: claim.token, member: 'a', outcome: 'failed', atMs: T0 + 100 });
    // One retry left: not over.
    expect(claimEndedAt(s, claim)).toBeNull();
    expect(claims(plan(s, input(T0 + 5000, ['a', 'b'])))).toEqual([]);
    const retry = next();
    s.apply(retry, { type: 'reassign', job: 'sync', slotMs: T0 + 10, fromToken: claim.token, assignees: ['b'], reason: 'retry' });
    s.apply(next(), { type: 'outcome', job: 'sync', slotMs: T0 + 10, token: retry, member: 'b', outcome: 'failed', atMs: T0 + 6000 });
    expect(claimEndedAt(s, claim)).toBe(T0 + 6000);
    expect(claims(plan(s, input(T0 + 6100, ['a', 'b'])))).toEqual([7000]);
  });

  it("runs a slot whose instant passed at once (catch-up does not apply: one slot is due at a time)", () => {
    const { s, next } = delayJob(parseSpec({ delayAfterCompletion: 1000 }));
    s.apply(next(), { type: 'claim', job: 'sync', slotMs: T0 + 10, assignees: ['a'] });
    const token = s.claims.get(claimKey('sync', T0 + 10))!.token;
    s.apply(next(), { type: 'outcome', job: 'sync', slotMs: T0 + 10, token, member: 'a', outcome: 'succeeded', atMs: T0 + 20 });
    // The leader was away for an hour: one claim, for the instant that passed, and no skip; it
    // says when it was made, from which its reassignment horizon counts.
    expect(plan(s, input(T0 + 3_600_000))).toEqual([{ type: 'claim', job: 'sync', slotMs: T0 + 1020, assignees: ['a'], fromMs: T0 + 10, atMs: T0 + 3_600_000 }]);
  });

  it("in mode 'all', waits for every reachable assignee's outcome and counts from the last", () => {
    const { s, next } = delayJob(parseSpec({ delayAfterCompletion: 1000 }), 'all', 0, ['a', 'b']);
    s.apply(next(), { type: 'claim', job: 'sync', slotMs: T0 + 10, assignees: ['a', 'b'] });
    const token = s.claims.get(claimKey('sync', T0 + 10))!.token;
    s.apply(next(), { type: 'outcome', job: 'sync', slotMs: T0 + 10, token, member: 'a', outcome: 'succeeded', atMs: T0 + 500 });
    expect(claims(plan(s, input(T0 + 5000, ['a', 'b'])))).toEqual([]);
    // b is unreachable: it will not report, so the run ended with a's outcome (its instant passed: claimed now).
    expect(claims(plan(s, input(T0 + 5000, ['a'])))).toEqual([1500]);
    s.apply(next(), { type: 'outcome', job: 'sync', slotMs: T0 + 10, token, member: 'b', outcome: 'failed', atMs: T0 + 900 });
    expect(nextDelaySlot(s, s.jobs.get('sync')!)).toBe(T0 + 1900);
  });

  it('a replaced run ends its slot when the replacement is recorded', () => {
    const { s, next } = delayJob(parseSpec({ delayAfterCompletion: 1000 }));
    s.apply(next(), { type: 'claim', job: 'sync', slotMs: T0 + 10, assignees: ['a'] });
    const token = s.claims.get(claimKey('sync', T0 + 10))!.token;
    s.apply(next(), { type: 'started', job: 'sync', slotMs: T0 + 10, token, member: 'a', atMs: T0 + 10 });
    s.apply(next(), { type: 'cancel', job: 'sync', slotMs: T0 + 10, token, bySlotMs: T0 + 20, atMs: T0 + 300 });
    expect(nextDelaySlot(s, s.jobs.get('sync')!)).toBe(T0 + 1300);
  });
});
