/** The snapshot's own encoding (UTF-8 JSON), to craft what its encoder would never write. */
const encode = (value: unknown): Uint8Array => new TextEncoder().encode(JSON.stringify(value));
const decode = (bytes: Uint8Array): unknown => JSON.parse(new TextDecoder().decode(bytes));
const text = (json: string): Uint8Array => new TextEncoder().encode(json);
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CodecError } from '../../src/errors.js';
import { encodeSchedulerSnapshot, restoreSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { claimKey } from '../../src/scheduler/records.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const policy: JobPolicy = { retries: 1, retryDelayMs: 1000, catchUp: { policy: 'latest' } };

/**
 * A snapshot with one of everything: a conflict, runs in progress in two jobs, a settled, a
 * failed (open) and a cancelled claim, locks. Positions in its claims: report@1000 0,
 * sync@1000 1, report@2000 2 (settled), report@3000 3 (failed: open), sync@2000 4 (cancelled);
 * so open is [0, 1, 3] and inProgress [0, 1].
 */
function source(): SchedulerState {
  const s = new SchedulerState();
  const commands: SchedulerCommand[] = [
    { type: 'register', job: 'report', spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy, member: 'a', atMs: T0 },
    { type: 'register', job: 'sync', spec: { kind: 'cron', expression: '* * * * *', tz: 'UTC' }, mode: 'one', policy: { ...policy, overlap: 'replace' }, member: 'a', atMs: T0 },
    { type: 'register', job: 'sync', spec: { kind: 'every', everyMs: 5000 }, mode: 'one', policy, member: 'b', atMs: T0 },
    { type: 'claim', job: 'report', slotMs: T0 + 1000, assignees: ['a'] },
    { type: 'started', job: 'report', slotMs: T0 + 1000, token: 4, member: 'a', atMs: T0 + 1000 },
    { type: 'claim', job: 'sync', slotMs: T0 + 1000, assignees: ['b'] },
    { type: 'started', job: 'sync', slotMs: T0 + 1000, token: 6, member: 'b', atMs: T0 + 1000 },
    { type: 'claim', job: 'report', slotMs: T0 + 2000, assignees: ['a'] },
    { type: 'outcome', job: 'report', slotMs: T0 + 2000, token: 8, member: 'a', outcome: 'succeeded', atMs: T0 + 2001 },
    { type: 'claim', job: 'report', slotMs: T0 + 3000, assignees: ['b'] },
    { type: 'outcome', job: 'report', slotMs: T0 + 3000, token: 10, member: 'b', outcome: 'failed', atMs: T0 + 3001, error: 'boom' },
    { type: 'claim', job: 'sync', slotMs: T0 + 2000, assignees: ['a'] },
    { type: 'cancel', job: 'sync', slotMs: T0 + 2000, token: 12, bySlotMs: T0 + 3000, atMs: T0 + 2500 },
    { type: 'lock', name: 'x', member: 'a', atMs: T0, untilMs: T0 + 100 },
    { type: 'lock', name: 'y', member: 'b', atMs: T0, untilMs: T0 + 200 },
  ];
  // All apply, but for the third: b's other spec is a conflict.
  commands.forEach((command, i) => expect(s.apply(i + 1, command).ok).toBe(i !== 2));
  expect([...s.openClaims()].map((c) => c.slotMs)).toEqual([T0 + 1000, T0 + 1000, T0 + 3000]);
  return s;
}

/** A state that already holds something else: a failed restore must leave all of it. */
function target(): SchedulerState {
  const s = new SchedulerState();
  s.apply(1, { type: 'register', job: 'other', spec: { kind: 'at', atMs: T0 + 50 }, mode: 'all', policy, member: 'c', atMs: T0 });
  s.apply(2, { type: 'claim', job: 'other', slotMs: T0 + 50, assignees: ['c'] });
  s.apply(3, { type: 'started', job: 'other', slotMs: T0 + 50, token: 2, member: 'c', atMs: T0 + 50 });
  s.apply(4, { type: 'lock', name: 'z', member: 'c', atMs: T0, untilMs: T0 + 100 });
  return s;
}

const valid = encodeSchedulerSnapshot(source());
type Wire = unknown[];
/** The valid snapshot as plain arrays, to break one part of. */
const wire = (): Wire => decode(valid) as Wire;
const at = (w: Wire, ...path: number[]): Wire => path.reduce<Wire>((v, i) => v[i] as Wire, w);

/** Restoring `bytes` throws CodecError and leaves the state exactly as it was. */
function expectRefused(bytes: Uint8Array, state = target()): void {
  const before = encodeSchedulerSnapshot(state);
  const open = [...state.openClaims()];
  const running = [...state.claimsInProgress('other')];
  let thrown: unknown;
  try {
    restoreSchedulerSnapshot(state, bytes);
  } catch (error) {
    thrown = error;
  }
  expect(thrown).toBeInstanceOf(CodecError);
  expect((thrown as CodecError).code).toBe('CRONRAFT_MALFORMED_MESSAGE');
  expect(encodeSchedulerSnapshot(state)).toEqual(before);
  expect([...state.openClaims()]).toEqual(open);
  expect([...state.claimsInProgress('other')]).toEqual(running);
}

/** Restores `bytes` into `s` and returns true, or checks that it threw CodecError leaving `s` as it was and returns false. */
function restoresOrRefuses(s: SchedulerState, bytes: Uint8Array): boolean {
  const before = encodeSchedulerSnapshot(s);
  try {
    restoreSchedulerSnapshot(s, bytes);
    return true;
  } catch (error) {
    expect(error).toBeInstanceOf(CodecError);
    expect(encodeSchedulerSnapshot(s)).toEqual(before);
    return false;
  }
}

function broken(change: (w: Wire) => void): Uint8Array {
  const w = wire();
  change(w);
  return encode(w);
}

describe('restoring an untrusted scheduler snapshot', () => {
  it('restores the valid snapshot into the same state (the baseline of the cases below)', () => {
    const s = target();
    restoreSchedulerSnapshot(s, valid);
    expect(encodeSchedulerSnapshot(s)).toEqual(valid);
    expect(s.jobs.has('other')).toBe(false);
    expect(s.claimsInProgress('other').size).toBe(0);
  });

  it('refuses every truncation', () => {
    for (let length = 0; length < valid.length; length++) expectRefused(valid.subarray(0, length));
  });

  it('refuses trailing bytes, and input that is not bytes', () => {
    expectRefused(Uint8Array.from([...valid, 0]));
    expectRefused('snapshot' as unknown as Uint8Array);
  });

  it('refuses other versions and top-level shapes', () => {
    expectRefused(broken((w) => (w[0] = 2)));
    expectRefused(broken((w) => (w[0] = '1')));
    expectRefused(encode([]));
    expectRefused(encode({ version: 1 }));
    expectRefused(encode(null));
    expectRefused(broken((w) => w.push([])));
    expectRefused(broken((w) => w.pop()));
  });

  it.each<[string, (w: Wire) => void]>([
    ['jobs not an array', (w) => (w[1] = {})],
    ['a job with a field missing', (w) => at(w, 1, 0).pop()],
    ['a job name that is not a string', (w) => (at(w, 1, 0)[0] = 7)],
    ['a job twice', (w) => at(w, 1).push(at(w, 1, 0))],
    ['an unknown mode', (w) => (at(w, 1, 0)[2] = 'some')],
    ['an unknown spec kind', (w) => (at(w, 1, 0)[1] = ['hourly', 1])],
    ['an interval of 0', (w) => (at(w, 1, 0)[1] = ['every', 0])],
    ['an interval as a string', (w) => (at(w, 1, 0)[1] = ['every', '1000'])],
    ['a cron spec with half a DST policy', (w) => (at(w, 1, 1)[1] = ['cron', '* * * * *', 'UTC', 'skip'])],
    ['an unknown DST gap policy', (w) => (at(w, 1, 1)[1] = ['cron', '* * * * *', 'UTC', 'jump', 'once'])],
    ['a delay spec without its initial delay', (w) => (at(w, 1, 0)[1] = ['delay', 1000])],
    ['a catch-up window without its slots', (w) => (at(w, 1, 0, 3)[2] = ['all', 1000])],
    ['an unknown catch-up policy', (w) => (at(w, 1, 0, 3)[2] = ['some'])],
    ['an unknown overlap policy', (w) => (at(w, 1, 0, 3)[3] = 'never')],
    ['fractional retries', (w) => (at(w, 1, 0, 3)[0] = 1.5)],
    ['a handler twice', (w) => at(w, 1, 0, 5).push('a')],
    ['a conflict that is not a pair', (w) => (at(w, 1, 1, 6)[0] = ['b'])],
    ['negative missed slots', (w) => (at(w, 1, 0)[8] = -1)],
    ['a claim of an unknown job', (w) => (at(w, 2, 0)[0] = 'nope')],
    ['a claim twice', (w) => at(w, 2).push(at(w, 2, 2))],
    ['a claim with a negative token', (w) => (at(w, 2, 0)[2] = -1)],
    ['a claim with attempt 0', (w) => (at(w, 2, 0)[4] = 0)],
    ['an assignee that is not a string', (w) => (at(w, 2, 0)[3] = [null])],
    ['an outcome with fields missing', (w) => at(w, 2, 3, 5, 0).splice(1, 3)],
    ['an outcome error that is not a string', (w) => (at(w, 2, 3, 5, 0)[4] = 42)],
    ['two outcomes from one member', (w) => at(w, 2, 3, 5).push(at(w, 2, 3, 5, 0))],
    ['a start with a string time', (w) => (at(w, 2, 0, 6, 0)[1] = 'now')],
    ['a cancellation with a field missing', (w) => at(w, 2, 4, 7).pop()],
    ['a cancellation that is not an array', (w) => (at(w, 2, 4)[7] = true)],
    ['a lock twice', (w) => at(w, 3).push(at(w, 3, 0))],
    ['a lock expiry that is not a number', (w) => (at(w, 3, 0)[3] = '2026')],
    ['a fractional assignment count', (w) => (at(w, 4, 0)[1] = 1.5)],
    ['a member counted twice', (w) => at(w, 4).push(at(w, 4, 0))],
    ['an open claim position out of range', (w) => (w[5] = [0, 1, 5])],
    ['an open claim twice', (w) => (w[5] = [0, 1, 1, 3])],
    ['a settled claim listed as open', (w) => (w[5] = [0, 1, 2, 3])],
    ['an open claim left out', (w) => (w[5] = [0, 1])],
    ['a run in progress left out', (w) => (w[6] = [0])],
    ['a claim without a run listed as in progress', (w) => (w[6] = [0, 1, 3])],
    ['runs in progress not grouped in job order', (w) => (w[6] = [1, 0])],
  ])('refuses %s', (_, change) => {
    expectRefused(broken(change));
  });

  it('takes another order of the same open claims: the order is history, only membership is checked', () => {
    const s = target();
    restoreSchedulerSnapshot(s, broken((w) => (w[5] = [3, 1, 0])));
    expect([...s.openClaims()].map((c) => claimKey(c.job, c.slotMs))).toEqual([claimKey('report', T0 + 3000), claimKey('sync', T0 + 1000), claimKey('report', T0 + 1000)]);
  });

  it('refuses values the state never holds: NaN, Infinity, undefined (null in JSON), integers past 2^53, objects, invalid UTF-8', () => {
    expectRefused(broken((w) => (at(w, 1, 0)[4] = Number.NaN)));
    expectRefused(broken((w) => (at(w, 1, 0)[4] = Number.POSITIVE_INFINITY)));
    expectRefused(broken((w) => (at(w, 1, 0)[4] = undefined)));
    const token = at(wire(), 2, 0)[2] as number;
    const json = new TextDecoder().decode(valid);
    expectRefused(text(json.replace(`,${token},`, `,${2 ** 60},`)));
    expectRefused(text(`{"0":${json}}`));
    expectRefused(broken((w) => (at(w, 1, 0)[0] = { name: 'report' })));
    // A lone continuation byte inside the first job's name.
    const bytes = Uint8Array.from(valid);
    bytes[json.indexOf('report') + 1] = 0x80;
    expectRefused(bytes);
  });

  it('refuses absurd nesting without overflowing into another error', () => {
    const depth = 200_000;
    expectRefused(text(`${'['.repeat(depth)}1${']'.repeat(depth)}`));
  });

  it('refuses a snapshot larger than the state restoring it may keep', () => {
    expectRefused(valid, new SchedulerState({ maxClaimsKept: 4 }));
    expectRefused(valid, new SchedulerState({ maxJobs: 1 }));
    expectRefused(valid, new SchedulerState({ maxLocks: 1 }));
    const fits = new SchedulerState({ maxClaimsKept: 5, maxJobs: 2, maxLocks: 2 });
    restoreSchedulerSnapshot(fits, valid);
    expect(encodeSchedulerSnapshot(fits)).toEqual(valid);
  });

  it('on garbled bytes, either restores or throws CodecError and leaves the state as it was', () => {
    const edits = fc.array(fc.tuple(fc.nat({ max: valid.length - 1 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(edits, (changes) => {
        const bytes = Uint8Array.from(valid);
        for (const [i, byte] of changes) bytes[i] = byte;
        const s = target();
        if (!restoresOrRefuses(s, bytes)) return;
        // Still a valid snapshot (a changed time, say): the state is a whole one, which
        // snapshots and restores as any other.
        const again = encodeSchedulerSnapshot(s);
        const copy = new SchedulerState();
        restoreSchedulerSnapshot(copy, again);
        expect(encodeSchedulerSnapshot(copy)).toEqual(again);
      }),
      { numRuns: 500 },
    );
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
        restoresOrRefuses(target(), bytes);
      }),
      { numRuns: 500 },
    );
  });
});
