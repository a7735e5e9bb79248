import { encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { CodecError } from '../../src/errors.js';
import { decodeEntry, encodeCommand } from '../../src/runtime/commands.js';
import { isOperationCommand, isSchedulerCommand } from '../../src/scheduler/command-shape.js';
import type { OperationCommand, SchedulerCommand } from '../../src/scheduler/command.js';
import { planTrigger } from '../../src/scheduler/operations.js';
import { plan } from '../../src/scheduler/planner.js';
import { claimKey } from '../../src/scheduler/records.js';
import { decodeSchedulerSnapshot, encodeSchedulerSnapshot, restoreSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { OPERATIONS_VERSION, SUPPORTED } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } } as const;
const register = (member: string, job = 'report', mode: 'one' | 'all' = 'one'): SchedulerCommand => ({ type: 'register', job, spec: { kind: 'every', everyMs: 60_000 }, mode, policy, member, atMs: T0 });
const members = new Map([
  ['a', { load: 0 }],
  ['b', { load: 0 }],
]);

function withJob(mode: 'one' | 'all' = 'one'): SchedulerState {
  const s = new SchedulerState();
  s.apply(1, register('a', 'report', mode));
  s.apply(2, register('b', 'report', mode));
  return s;
}

describe('pause and resume', () => {
  it('set and clear the job’s paused flag, alike however often they are applied', () => {
    const s = withJob();
    expect(s.apply(3, { type: 'pause', job: 'report', atMs: T0 })).toEqual({ ok: true });
    expect(s.apply(4, { type: 'pause', job: 'report', atMs: T0 })).toEqual({ ok: true });
    expect(s.jobs.get('report')?.paused).toBe(true);
    expect(s.apply(5, { type: 'resume', job: 'report', atMs: T0 })).toEqual({ ok: true });
    expect(s.jobs.get('report')?.paused).toBe(false);
    expect(s.apply(6, { type: 'pause', job: 'nope', atMs: T0 })).toEqual({ ok: false, reason: 'unknown-job' });
  });

  it('leave the planner claiming the paused job’s slots, so that each has its record and none is missed', () => {
    const s = withJob();
    s.apply(3, { type: 'pause', job: 'report', atMs: T0 });
    const commands = plan(s, { nowMs: T0 + 60_000, lookaheadMs: 1000, members, maxClaims: 10 });
    expect(commands).toEqual([{ type: 'claim', job: 'report', slotMs: T0 + 60_000, assignees: ['a'], fromMs: T0 }]);
  });
});

describe('trigger', () => {
  it('claims an extra slot now, marked triggered, under the entry’s index, past the mark when no scheduled instant lies before it', () => {
    const s = withJob();
    const p = planTrigger(s, s.jobs.get('report')!, T0 + 10_000, new Set(['a', 'b']));
    expect(p).toEqual({ command: { type: 'trigger', job: 'report', slotMs: T0 + 10_000, fromMs: T0, assignees: ['a'] } });
    if (p === 'wait') throw new Error('unreachable');
    expect(s.apply(3, p.command)).toMatchObject({ ok: true, claim: { token: 3, slotMs: T0 + 10_000, trigger: true, assignees: ['a'] } });
    // The mark moved to the triggered slot: the next scheduled slot is still claimed, after it.
    expect(s.jobs.get('report')?.highWaterMs).toBe(T0 + 10_000);
    expect(plan(s, { nowMs: T0 + 60_000, lookaheadMs: 0, members, maxClaims: 10 })).toEqual([{ type: 'claim', job: 'report', slotMs: T0 + 60_000, assignees: ['a'], fromMs: T0 + 10_000 }]);
    // The same instant again is refused: one claim per key.
    expect(s.apply(4, { ...p.command, fromMs: T0 + 10_000 })).toEqual({ ok: false, reason: 'duplicate-slot' });
  });

  it('waits while a scheduled slot is due and not claimed yet, rather than jump the mark over it', () => {
    const s = withJob();
    expect(planTrigger(s, s.jobs.get('report')!, T0 + 61_000, new Set(['a']))).toBe('wait');
    s.apply(3, { type: 'claim', job: 'report', slotMs: T0 + 60_000, assignees: ['a'], fromMs: T0 });
    expect(planTrigger(s, s.jobs.get('report')!, T0 + 61_000, new Set(['a']))).not.toBe('wait');
  });

  it('takes a slot before the mark without moving it (the leader claims ahead), never a key a claim holds', () => {
    const s = withJob();
    s.apply(3, { type: 'claim', job: 'report', slotMs: T0 + 60_000, assignees: ['a'], fromMs: T0 });
    const t: OperationCommand = { type: 'trigger', job: 'report', slotMs: T0 + 59_000, fromMs: T0 + 60_000, assignees: ['b'] };
    expect(s.apply(4, t)).toMatchObject({ ok: true, claim: { trigger: true } });
    expect(s.jobs.get('report')?.highWaterMs).toBe(T0 + 60_000);
    expect(planTrigger(s, s.jobs.get('report')!, T0 + 60_000, new Set(['a']))).toBe('wait');
    // A proposer that saw a mark this state never had is refused.
    expect(s.apply(5, { ...t, slotMs: T0 + 59_500, fromMs: T0 + 70_000 })).toEqual({ ok: false, reason: 'stale-token' });
    // A proposer that saw an older mark is not: the instants it checked include those after the newer one.
    expect(s.apply(6, { ...t, slotMs: T0 + 59_600, fromMs: T0 })).toMatchObject({ ok: true });
  });

  it('assigns by the job’s mode: every reachable handler in mode all, the least assigned in mode one', () => {
    const all = withJob('all');
    expect(planTrigger(all, all.jobs.get('report')!, T0 + 1, new Set(['a', 'b']))).toMatchObject({ command: { assignees: ['a', 'b'] } });
    expect(planTrigger(all, all.jobs.get('report')!, T0 + 1, new Set(['b']))).toMatchObject({ command: { assignees: ['b'] } });
    const one = withJob();
    one.apply(3, { type: 'claim', job: 'report', slotMs: T0 + 60_000, assignees: ['a'], fromMs: T0 });
    expect(planTrigger(one, one.jobs.get('report')!, T0 + 1, new Set(['a', 'b']))).toMatchObject({ command: { assignees: ['b'] } });
  });
});

describe('the operations in the log', () => {
  const pause: OperationCommand = { type: 'pause', job: 'report', atMs: T0 };
  const trigger: OperationCommand = { type: 'trigger', job: 'report', slotMs: T0 + 1, fromMs: T0, assignees: ['a'] };

  it('are entries of cluster version 3, skipped alike while it is not active', () => {
    for (const command of [pause, { type: 'resume', job: 'report', atMs: T0 } as const, trigger]) {
      const bytes = encodeCommand({ kind: 'scheduler', command });
      expect(decodeEntry(bytes, OPERATIONS_VERSION, SUPPORTED)).toEqual({ kind: 'scheduler', command });
      expect(decodeEntry(bytes, OPERATIONS_VERSION - 1, SUPPORTED)).toEqual({ kind: 'skip', reason: 'inactive' });
    }
  });

  it('are malformed in the form of version 1, and when a field is bad', () => {
    expect(isSchedulerCommand(pause)).toBe(false);
    expect(decodeEntry(encode([1, pause]), OPERATIONS_VERSION, SUPPORTED)).toEqual({ kind: 'skip', reason: 'malformed' });
    for (const bad of [
      { ...pause, job: 7 },
      { ...pause, atMs: Number.NaN },
      { ...trigger, slotMs: 'now' },
      { ...trigger, fromMs: undefined },
      { ...trigger, assignees: [1] },
      { type: 'claim', job: 'report', slotMs: 1, assignees: [] },
    ]) {
      expect(isOperationCommand(bad)).toBe(false);
      expect(decodeEntry(encode([1, bad, OPERATIONS_VERSION]), OPERATIONS_VERSION, SUPPORTED)).toEqual({ kind: 'skip', reason: 'malformed' });
    }
  });
});

describe('the snapshot of paused jobs and triggered claims', () => {
  function source(): SchedulerState {
    const s = withJob();
    s.apply(3, register('a', 'other'));
    s.apply(4, { type: 'pause', job: 'report', atMs: T0 });
    s.apply(5, { type: 'trigger', job: 'report', slotMs: T0 + 5, fromMs: T0, assignees: ['a'] });
    s.apply(6, { type: 'claim', job: 'report', slotMs: T0 + 60_000, assignees: ['b'], fromMs: T0 + 5 });
    return s;
  }

  it('round-trips both, and writes the bytes of before for a state with neither', () => {
    const s = source();
    const bytes = encodeSchedulerSnapshot(s);
    const copy = new SchedulerState();
    restoreSchedulerSnapshot(copy, bytes);
    expect(copy.jobs.get('report')?.paused).toBe(true);
    expect(copy.jobs.get('other')?.paused).toBe(false);
    expect(copy.claims.get(claimKey('report', T0 + 5))?.trigger).toBe(true);
    expect(copy.claims.get(claimKey('report', T0 + 60_000))?.trigger).toBeUndefined();
    expect(encodeSchedulerSnapshot(copy)).toEqual(bytes);
    const plain = withJob();
    const wire = JSON.parse(new TextDecoder().decode(encodeSchedulerSnapshot(plain))) as unknown[][][];
    expect(wire[1]?.[0]).toHaveLength(10);
  });

  it('refuses a paused or triggered field that is not true, and a field past it', () => {
    const wire = JSON.parse(new TextDecoder().decode(encodeSchedulerSnapshot(source()))) as unknown[][][];
    const bad = (edit: (w: unknown[][][]) => void): Uint8Array => {
      const w = structuredClone(wire);
      edit(w);
      return new TextEncoder().encode(JSON.stringify(w));
    };
    const cases: Array<[string, Uint8Array]> = [
      ['paused: expected true', bad((w) => (w[1]![0]![10] = false))],
      ['paused: expected true', bad((w) => (w[1]![0]![10] = 1))],
      ['expected 10 or 11 fields, got 12', bad((w) => w[1]![0]!.push(true))],
      ['trigger: expected true', bad((w) => (w[2]![0]![8] = 'yes'))],
      ['expected 8, 9 or 11 fields, got 10', bad((w) => w[2]![0]!.push(true))],
    ];
    for (const [message, bytes] of cases) {
      expect(() => decodeSchedulerSnapshot(bytes)).toThrow(CodecError);
      expect(() => decodeSchedulerSnapshot(bytes)).toThrow(message);
    }
  });
});

describe('cancel-runs', () => {
  const cancel = (atMs: number, slotMs?: number, job = 'report'): OperationCommand => ({ type: 'cancel-runs', job, ...(slotMs === undefined ? {} : { slotMs }), member: 'b', atMs });

  /** Slots at T0 + 10, 20 and 30 s claimed for a (mode one), the first ended, the second started. */
  function running(): SchedulerState {
    const s = withJob();
    s.apply(3, { type: 'claim', job: 'report', slotMs: T0 + 10_000, assignees: ['a'], fromMs: T0 });
    s.apply(4, { type: 'claim', job: 'report', slotMs: T0 + 20_000, assignees: ['a'], fromMs: T0 + 10_000 });
    s.apply(5, { type: 'claim', job: 'report', slotMs: T0 + 30_000, assignees: ['a'], fromMs: T0 + 20_000 });
    s.apply(6, { type: 'started', job: 'report', slotMs: T0 + 10_000, token: 3, member: 'a', atMs: T0 + 10_000 });
    s.apply(7, { type: 'outcome', job: 'report', slotMs: T0 + 10_000, token: 3, member: 'a', outcome: 'succeeded', atMs: T0 + 11_000 });
    s.apply(8, { type: 'started', job: 'report', slotMs: T0 + 20_000, token: 4, member: 'a', atMs: T0 + 20_000 });
    return s;
  }

  it('marks the due slots whose runs have not ended, under their tokens, and leaves ended ones and those claimed ahead alone', () => {
    const s = running();
    const result = s.apply(9, cancel(T0 + 25_000));
    expect(result).toMatchObject({ ok: true, cancelled: [{ slotMs: T0 + 20_000, token: 4 }] });
    expect(s.claims.get(claimKey('report', T0 + 20_000))?.cancelled).toEqual({ token: 4, atMs: T0 + 25_000, byMember: 'b' });
    // Ended (T0 + 10 s) and claimed ahead (T0 + 30 s, not due when asked): untouched.
    expect(s.claims.get(claimKey('report', T0 + 10_000))?.cancelled).toBeNull();
    expect(s.claims.get(claimKey('report', T0 + 30_000))?.cancelled).toBeNull();
    // Its run is no longer in progress, and the slot is not open: never moved or retried.
    expect(s.claimsInProgress('report').size).toBe(0);
    expect([...s.openClaims()].map((c) => c.slotMs)).toEqual([T0 + 30_000]);
    expect(s.apply(10, { type: 'reassign', job: 'report', slotMs: T0 + 20_000, fromToken: 4, assignees: ['b'], reason: 'assignee-lost' })).toEqual({ ok: false, reason: 'ended' });
    expect(s.apply(11, { type: 'expire', job: 'report', slotMs: T0 + 20_000, fromToken: 4, reason: 'expired', atMs: T0 + 26_000 })).toEqual({ ok: false, reason: 'ended' });
    // The member's outcome still records how the run ended.
    expect(s.apply(12, { type: 'outcome', job: 'report', slotMs: T0 + 20_000, token: 4, member: 'a', outcome: 'cancelled', atMs: T0 + 25_001 })).toMatchObject({ ok: true });
    // Asked again, nothing is running: it says so, and is no error.
    expect(s.apply(13, cancel(T0 + 26_000))).toEqual({ ok: true, cancelled: [] });
  });

  it('cancels only the slot named, a slot whose run has not started (or whose start is not applied yet), and refuses an unknown job', () => {
    const s = running();
    s.apply(9, { type: 'trigger', job: 'report', slotMs: T0 + 21_000, fromMs: T0 + 30_000, assignees: ['b'] });
    expect(s.apply(10, cancel(T0 + 25_000, T0 + 30_000))).toEqual({ ok: true, cancelled: [] });
    expect(s.apply(11, cancel(T0 + 25_000, T0 + 10_000))).toEqual({ ok: true, cancelled: [] });
    expect(s.apply(12, cancel(T0 + 25_000, T0 + 21_000))).toMatchObject({ ok: true, cancelled: [{ slotMs: T0 + 21_000, token: 9 }] });
    expect(s.claims.get(claimKey('report', T0 + 20_000))?.cancelled).toBeNull();
    expect(s.apply(13, cancel(T0 + 25_000, undefined, 'nope'))).toEqual({ ok: false, reason: 'unknown-job' });
    expect(s.apply(14, cancel(T0 + 25_000, T0 + 5, 'other'))).toEqual({ ok: false, reason: 'unknown-job' });
  });

  it('matches a slot named to the millisecond (a triggered instant may have a fraction), and a run in progress whatever the asker’s clock says', () => {
    const s = running();
    s.apply(9, { type: 'trigger', job: 'report', slotMs: T0 + 21_000.75, fromMs: T0 + 30_000, assignees: ['b'] });
    s.apply(10, { type: 'started', job: 'report', slotMs: T0 + 21_000.75, token: 9, member: 'b', atMs: T0 + 21_001 });
    expect(s.apply(11, cancel(T0 + 25_000, T0 + 21_001))).toEqual({ ok: true, cancelled: [] });
    expect(s.apply(12, cancel(T0 + 25_000, T0 + 21_000))).toMatchObject({ ok: true, cancelled: [{ slotMs: T0 + 21_000.75, token: 9 }] });
    // Asked of a member whose clock is behind the one that started the run: the start in the log decides.
    expect(s.apply(13, cancel(T0 + 19_000))).toMatchObject({ ok: true, cancelled: [{ slotMs: T0 + 20_000, token: 4 }] });
    expect(s.claims.get(claimKey('report', T0 + 30_000))?.cancelled).toBeNull();
  });

  it('cancels every member’s run of a mode all slot, but not a slot claimed after it', () => {
    const s = withJob('all');
    s.apply(3, { type: 'claim', job: 'report', slotMs: T0 + 10_000, assignees: ['a', 'b'], fromMs: T0 });
    s.apply(4, { type: 'started', job: 'report', slotMs: T0 + 10_000, token: 3, member: 'a', atMs: T0 + 10_000 });
    s.apply(5, { type: 'started', job: 'report', slotMs: T0 + 10_000, token: 3, member: 'b', atMs: T0 + 10_000 });
    expect(s.apply(6, cancel(T0 + 12_000))).toMatchObject({ ok: true, cancelled: [{ slotMs: T0 + 10_000 }] });
    expect(s.claimsInProgress('report').size).toBe(0);
    // A slot claimed after the cancel, even one whose instant was before it, runs.
    s.apply(7, { type: 'trigger', job: 'report', slotMs: T0 + 11_000, fromMs: T0 + 10_000, assignees: ['a', 'b'] });
    s.apply(8, { type: 'started', job: 'report', slotMs: T0 + 11_000, token: 7, member: 'a', atMs: T0 + 12_500 });
    expect(s.claims.get(claimKey('report', T0 + 11_000))?.cancelled).toBeNull();
    expect(s.claimsInProgress('report').size).toBe(1);
  });

  it('does not reach a slot whose failure waits for its retry: that is no run in progress', () => {
    const s = new SchedulerState();
    s.apply(1, { ...register('a'), policy: { ...policy, retries: 2 } } as SchedulerCommand);
    s.apply(2, { type: 'claim', job: 'report', slotMs: T0 + 10_000, assignees: ['a'], fromMs: T0 });
    s.apply(3, { type: 'outcome', job: 'report', slotMs: T0 + 10_000, token: 2, member: 'a', outcome: 'failed', atMs: T0 + 10_500 });
    expect(s.apply(4, cancel(T0 + 11_000))).toEqual({ ok: true, cancelled: [] });
  });

  it('is an entry of cluster version 3, checked field by field', () => {
    for (const command of [cancel(T0), cancel(T0, T0 - 5)]) {
      const bytes = encodeCommand({ kind: 'scheduler', command });
      expect(decodeEntry(bytes, OPERATIONS_VERSION, SUPPORTED)).toEqual({ kind: 'scheduler', command });
      expect(decodeEntry(bytes, OPERATIONS_VERSION - 1, SUPPORTED)).toEqual({ kind: 'skip', reason: 'inactive' });
      expect(isSchedulerCommand(command)).toBe(false);
    }
    for (const bad of [
      { ...cancel(T0), job: 1 },
      { ...cancel(T0), slotMs: '2026' },
      { ...cancel(T0), member: undefined },
      { ...cancel(T0), atMs: Number.POSITIVE_INFINITY },
    ]) {
      expect(isOperationCommand(bad)).toBe(false);
      expect(decodeEntry(encode([1, bad, OPERATIONS_VERSION]), OPERATIONS_VERSION, SUPPORTED)).toEqual({ kind: 'skip', reason: 'malformed' });
    }
  });

  it('leaves its mark in the snapshot (who asked and when), told apart from a replacement, and a member restored from it agrees', () => {
    const s = running();
    s.apply(9, { type: 'cancel', job: 'report', slotMs: T0 + 10_000, token: 3, bySlotMs: T0 + 20_000, atMs: T0 + 20_000 });
    s.apply(10, cancel(T0 + 25_000));
    const bytes = encodeSchedulerSnapshot(s);
    const copy = new SchedulerState();
    restoreSchedulerSnapshot(copy, bytes);
    expect(copy.claims.get(claimKey('report', T0 + 20_000))?.cancelled).toEqual({ token: 4, atMs: T0 + 25_000, byMember: 'b' });
    expect(encodeSchedulerSnapshot(copy)).toEqual(bytes);
    expect(copy.claimsInProgress('report').size).toBe(0);
    expect(copy.apply(11, cancel(T0 + 26_000))).toEqual({ ok: true, cancelled: [] });
    const wire = JSON.parse(new TextDecoder().decode(bytes)) as unknown[][][];
    expect(wire[2]![1]![7]).toEqual([4, null, T0 + 25_000, 'b']);
    const bad = (edit: (w: unknown[][][]) => void): Uint8Array => {
      const w = structuredClone(wire);
      edit(w);
      return new TextEncoder().encode(JSON.stringify(w));
    };
    for (const [message, bytes] of [
      ['expected null', bad((w) => ((w[2]![1]![7] as unknown[])[1] = 5))],
      ['byMember', bad((w) => ((w[2]![1]![7] as unknown[])[3] = 5))],
      ['expected 3 fields, got 5', bad((w) => (w[2]![1]![7] as unknown[]).push('x'))],
    ] as const) {
      expect(() => decodeSchedulerSnapshot(bytes)).toThrow(CodecError);
      expect(() => decodeSchedulerSnapshot(bytes)).toThrow(message);
    }
  });
});
