import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCommand, encodeCommand, isUserCommand } from '../../src/runtime/commands.js';
import { isSchedulerCommand } from '../../src/scheduler/command-shape.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';

const policy: JobPolicy = { retries: 2, retryDelayMs: 1000, catchUp: { policy: 'all', windowMs: 60_000, maxSlots: 3 }, overlap: 'queue' };
const good: SchedulerCommand[] = [
  { type: 'register', job: 'j', spec: { kind: 'cron', expression: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'skip', overlap: 'twice' } }, mode: 'one', policy, member: 'a', atMs: 1.5 },
  { type: 'register', job: 'j', spec: { kind: 'delay', delayMs: 10, initialDelayMs: 0 }, mode: 'all', policy: { retries: 0, retryDelayMs: 0, catchUp: { policy: 'latest' } }, member: 'a', atMs: 1 },
  { type: 'unregister', job: 'j', member: 'a' },
  { type: 'claim', job: 'j', slotMs: 5, assignees: ['a', 'b'], fromMs: 1 },
  { type: 'claim', job: 'j', slotMs: 5, assignees: [] },
  { type: 'reassign', job: 'j', slotMs: 5, fromToken: 3, assignees: ['b'], reason: 'retry' },
  { type: 'started', job: 'j', slotMs: 5, token: 3, member: 'a', atMs: 6 },
  { type: 'cancel', job: 'j', slotMs: 5, token: 3, bySlotMs: 10, atMs: 10 },
  { type: 'outcome', job: 'j', slotMs: 5, token: 3, member: 'a', outcome: 'failed', atMs: 7, error: 'boom' },
  { type: 'lock', name: 'n', member: 'a', atMs: 1, untilMs: 2 },
  { type: 'unlock', name: 'n', token: 4, untilMs: 2 },
  { type: 'skip', job: 'j', throughMs: 9, fromMs: 5, count: 1 },
  { type: 'expire', job: 'j', slotMs: 5, fromToken: 3, reason: 'expired', atMs: 600_005 },
  { type: 'claim', job: 'j', slotMs: 5, assignees: ['a'], fromMs: 1, atMs: 9 },
];

/** Each good command with one field broken: a value the state could not snapshot, or of the wrong type. */
const bad: Array<[string, unknown]> = [
  ['an unknown type', { type: 'explode' }],
  ['no job', { ...good[2], job: undefined }],
  ['a NaN time', { ...good[3], slotMs: Number.NaN }],
  ['an infinite time', { ...good[6], atMs: Number.POSITIVE_INFINITY }],
  ['an assignee that is not a string', { ...good[3], assignees: ['a', 7] }],
  ['a fractional token', { ...good[6], token: 3.5 }],
  ['a negative token', { ...good[10], token: -1 }],
  ['an interval of 0', { ...good[0], spec: { kind: 'every', everyMs: 0 } }],
  ['an unknown spec kind', { ...good[0], spec: { kind: 'sometimes' } }],
  ['half a DST policy', { ...good[0], spec: { kind: 'cron', expression: '* * * * *', tz: 'UTC', dst: { gap: 'skip' } } }],
  ['an unknown overlap policy', { ...good[0], policy: { ...policy, overlap: 'ignore' } }],
  ['a catch-up window without its slots', { ...good[0], policy: { ...policy, catchUp: { policy: 'all', windowMs: 1 } } }],
  ['an unknown reassign reason', { ...good[5], reason: 'whim' }],
  ['an error that is not a string', { ...good[8], error: 42 }],
  ['a fractional count', { ...good[11], count: 0.5 }],
  ['an unknown missed reason', { ...good[12], reason: 'toString' }],
  ['an expiry without its token', { ...good[12], fromToken: undefined }],
  ['an array', [good[2]]],
];

describe('scheduler commands read from the log', () => {
  it.each(good.map((c) => [c.type, c] as const))('takes a well-formed %s', (_type, command) => {
    expect(isSchedulerCommand(command)).toBe(true);
    expect(decodeCommand(encodeCommand({ kind: 'scheduler', command }))).toEqual({ kind: 'scheduler', command });
  });

  it.each(bad)('skips a command with %s', (_what, command) => {
    expect(isSchedulerCommand(command)).toBe(false);
    expect(decodeCommand(encodeCommand({ kind: 'scheduler', command: command as SchedulerCommand }))).toBeNull();
  });

  it('takes fields it does not know, which a newer member may add', () => {
    expect(isSchedulerCommand({ ...good[3], hint: 'new' })).toBe(true);
  });

  it("takes a claim or a move whose time is not a time, as a member of cronraft 0.1.0 reads past it (the state keeps no such time)", () => {
    const move = good.find((command) => command.type === 'reassign')!;
    for (const atMs of ['late', null, { x: 1 }, Number.NaN]) {
      expect(isSchedulerCommand({ ...good[13], atMs })).toBe(true);
      expect(isSchedulerCommand({ ...move, atMs })).toBe(true);
    }
  });

  it('tells an application entry from a scheduler command by its first two bytes', () => {
    for (const command of good) expect(isUserCommand(encodeCommand({ kind: 'scheduler', command }))).toBe(false);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (data) => {
        const bytes = encodeCommand({ kind: 'user', data });
        expect(isUserCommand(bytes)).toBe(true);
        expect(decodeCommand(bytes)).toEqual({ kind: 'user', data });
      }),
    );
    expect(isUserCommand(new Uint8Array(0))).toBe(false);
    expect(isUserCommand(Uint8Array.of(0x82))).toBe(false);
  });
});
