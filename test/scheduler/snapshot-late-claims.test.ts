import { describe, expect, it } from 'vitest';
import { CodecError } from '../../src/errors.js';
import { encodeSchedulerSnapshot, restoreSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { claimKey, type ClaimRecord } from '../../src/scheduler/records.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';
import { CLAIM_TIME_VERSION, FIRST_CLUSTER_VERSION, RETRY_COUNT_VERSION, SUPPORTED } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const policy: JobPolicy = { retries: 2, retryDelayMs: 1000, catchUp: { policy: 'latest' } };

/**
 * Four claims under `version`: 'late' claimed 5 s after its instant; 'moved' moved after its member was
 * lost, then retried after a failure, each move 2 s after the instant or so; 'retried' only retried
 * (by a hand-made move with no time); 'ahead' claimed ahead and never moved.
 */
function stateUnder(version: number): SchedulerState {
  const s = new SchedulerState();
  let index = 0;
  const apply = (command: SchedulerCommand): void => {
    expect(s.apply(++index, command, version).ok).toBe(true);
  };
  for (const job of ['late', 'moved', 'retried', 'ahead']) apply({ type: 'register', job, spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy, member: 'a', atMs: T0 });
  apply({ type: 'claim', job: 'late', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0, atMs: T0 + 6000 });
  apply({ type: 'claim', job: 'moved', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
  apply({ type: 'reassign', job: 'moved', slotMs: T0 + 1000, fromToken: index, assignees: ['b'], reason: 'assignee-lost', atMs: T0 + 3000 });
  apply({ type: 'outcome', job: 'moved', slotMs: T0 + 1000, token: index, member: 'b', outcome: 'failed', atMs: T0 + 3500 });
  // Moved again at a time before the last (a new leader's clock a little behind): the later one stays.
  apply({ type: 'reassign', job: 'moved', slotMs: T0 + 1000, fromToken: index - 1, assignees: ['a'], reason: 'retry', atMs: T0 + 2900 });
  apply({ type: 'claim', job: 'retried', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
  apply({ type: 'outcome', job: 'retried', slotMs: T0 + 1000, token: index, member: 'a', outcome: 'failed', atMs: T0 + 1500 });
  apply({ type: 'reassign', job: 'retried', slotMs: T0 + 1000, fromToken: index - 1, assignees: ['b'], reason: 'retry' });
  apply({ type: 'claim', job: 'ahead', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0, atMs: T0 + 200 });
  return s;
}

const claimOf = (s: SchedulerState, job: string): ClaimRecord => s.claims.get(claimKey(job, T0 + 1000))!;
const wireOf = (s: SchedulerState): unknown[][] => (JSON.parse(new TextDecoder().decode(encodeSchedulerSnapshot(s))) as unknown[][])[2] as unknown[][];

describe("a claim's time and retries in the scheduler's snapshot", () => {
  it(`are kept from cluster version ${Math.max(CLAIM_TIME_VERSION, RETRY_COUNT_VERSION)} on, written only where they say more than the claim's attempt, and read back`, () => {
    const s = stateUnder(SUPPORTED.stateMachine.max);
    expect(claimOf(s, 'late')).toMatchObject({ claimedAtMs: T0 + 6000, attempt: 1, retried: 0 });
    expect(claimOf(s, 'moved')).toMatchObject({ claimedAtMs: T0 + 3000, attempt: 3, retried: 1 });
    expect(claimOf(s, 'retried')).toMatchObject({ attempt: 2, retried: 1 });
    // Claimed ahead: the time is not kept.
    expect('claimedAtMs' in claimOf(s, 'ahead')).toBe(false);
    expect(wireOf(s).map((c) => c.length)).toEqual([11, 11, 8, 8]);
    expect(wireOf(s)[0]!.slice(8)).toEqual([false, T0 + 6000, 0]);
    expect(wireOf(s)[1]!.slice(8)).toEqual([false, T0 + 3000, 1]);
    expect('claimedAtMs' in claimOf(s, 'retried')).toBe(false);
    const restored = new SchedulerState();
    restoreSchedulerSnapshot(restored, encodeSchedulerSnapshot(s));
    expect(restored.claims).toStrictEqual(s.claims);
    expect(encodeSchedulerSnapshot(restored)).toEqual(encodeSchedulerSnapshot(s));
  });

  it('are not kept before those versions: every move counts, no time, and the bytes of version 1', () => {
    const s = stateUnder(FIRST_CLUSTER_VERSION);
    expect(claimOf(s, 'late')).toMatchObject({ attempt: 1, retried: 0 });
    expect('claimedAtMs' in claimOf(s, 'late')).toBe(false);
    expect(claimOf(s, 'moved')).toMatchObject({ attempt: 3, retried: 2 });
    expect('claimedAtMs' in claimOf(s, 'moved')).toBe(false);
    expect(wireOf(s).map((c) => c.length)).toEqual([8, 8, 8, 8]);
  });

  it('are not kept from a claim whose time is not a time after its instant: the claim applies without one, as on a member of cronraft 0.1.0', () => {
    for (const atMs of ['later', null, { x: 1 }, Number.POSITIVE_INFINITY, T0 + 1000, T0 + 999]) {
      const s = new SchedulerState();
      s.apply(1, { type: 'register', job: 'j', spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy, member: 'a', atMs: T0 }, CLAIM_TIME_VERSION);
      const claim = { type: 'claim', job: 'j', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0, atMs } as unknown as SchedulerCommand;
      expect(s.apply(2, claim, CLAIM_TIME_VERSION).ok).toBe(true);
      expect('claimedAtMs' in claimOf(s, 'j')).toBe(false);
      expect(s.jobs.get('j')!.highWaterMs).toBe(T0 + 1000);
    }
  });

  it('are not kept from a move whose time is not a time after its instant: the move applies without one', () => {
    for (const atMs of ['later', null, Number.NaN, T0 + 1000, T0 + 999]) {
      const s = new SchedulerState();
      s.apply(1, { type: 'register', job: 'j', spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy, member: 'a', atMs: T0 }, CLAIM_TIME_VERSION);
      s.apply(2, { type: 'claim', job: 'j', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 }, CLAIM_TIME_VERSION);
      const move = { type: 'reassign', job: 'j', slotMs: T0 + 1000, fromToken: 2, assignees: ['b'], reason: 'assignee-lost', atMs } as unknown as SchedulerCommand;
      expect(s.apply(3, move, CLAIM_TIME_VERSION).ok).toBe(true);
      expect(claimOf(s, 'j')).toMatchObject({ token: 3, assignees: ['b'] });
      expect('claimedAtMs' in claimOf(s, 'j')).toBe(false);
    }
  });

  it('keep a triggered claim so in the longer form', () => {
    const s = new SchedulerState();
    s.apply(1, { type: 'register', job: 'j', spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy, member: 'a', atMs: T0 }, CLAIM_TIME_VERSION);
    s.apply(2, { type: 'trigger', job: 'j', slotMs: T0 + 500, fromMs: T0, assignees: ['a'] }, CLAIM_TIME_VERSION);
    s.apply(3, { type: 'reassign', job: 'j', slotMs: T0 + 500, fromToken: 2, assignees: ['b'], reason: 'assignee-lost' }, CLAIM_TIME_VERSION);
    expect(wireOf(s)[0]!.slice(8)).toEqual([true, null, 0]);
    const restored = new SchedulerState();
    restoreSchedulerSnapshot(restored, encodeSchedulerSnapshot(s));
    expect(restored.claims).toStrictEqual(s.claims);
  });

  it.each<[string, (claim: unknown[]) => void]>([
    ['a claim of 10 fields', (c) => c.pop()],
    ['a triggered flag that is not a boolean', (c) => (c[8] = 1)],
    ['a time at or before the slot', (c) => (c[9] = T0 + 1000)],
    ['a time that is not a number', (c) => (c[9] = 'later')],
    ['more retries than moves', (c) => (c[10] = 1)],
    ['fractional retries', (c) => (c[10] = 0.5)],
    ['the longer form where the shorter says the same', (c) => ((c[9] = null), (c[10] = 0))],
  ])('refuses %s', (_, change) => {
    const s = stateUnder(SUPPORTED.stateMachine.max);
    const snapshot = JSON.parse(new TextDecoder().decode(encodeSchedulerSnapshot(s))) as unknown[][];
    change((snapshot[2] as unknown[][])[0]!);
    const target = new SchedulerState();
    expect(() => restoreSchedulerSnapshot(target, new TextEncoder().encode(JSON.stringify(snapshot)))).toThrow(CodecError);
    expect(target.claims.size).toBe(0);
  });
});
