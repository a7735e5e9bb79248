import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it, vi } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { instantsBetween, lastInstantBetween, lastInstantsBetween, parseSpec, specKey } from '../../src/scheduler/spec.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('job specs', () => {
  it('parses cron strings (5 or 6 fields, macros), time zones, intervals and one-shots', () => {
    expect(parseSpec('*/5 * * * *')).toEqual({ kind: 'cron', expression: '*/5 * * * *', tz: 'UTC' });
    expect(parseSpec('*/10 * * * * *')).toMatchObject({ kind: 'cron' });
    expect(parseSpec('@hourly')).toMatchObject({ kind: 'cron', expression: '@hourly' });
    expect(parseSpec('0 9 * * THU')).toMatchObject({ kind: 'cron' });
    expect(parseSpec('0 9 * MAR,AUG SAT#2')).toMatchObject({ kind: 'cron' });
    expect(parseSpec({ cron: '0 9 * * *', tz: 'Europe/Paris' })).toEqual({ kind: 'cron', expression: '0 9 * * *', tz: 'Europe/Paris' });
    expect(parseSpec({ every: '10s' })).toEqual({ kind: 'every', everyMs: 10_000 });
    expect(parseSpec({ every: 1500 })).toEqual({ kind: 'every', everyMs: 1500 });
    expect(parseSpec({ at: new Date(T0) })).toEqual({ kind: 'at', atMs: T0 });
  });

  it.each([
    ['61 * * * *', 'spec'],
    // Before: filled in from the left, '0 2 * *' (02:00 daily, a field dropped) fired every
    // minute of the 2nd of each month.
    ['0 2 * *', 'spec'],
    ['5 * *', 'spec'],
    [{ cron: '* * * *' }, 'spec'],
    ['0 0 0 1 1 * 2030', 'spec'],
    // Before: the parser drew H at random on each parse, so members (and each plan) computed
    // other instants: 'H * * * * *' ran 29 slots in 10 minutes.
    ['H * * * * *', 'spec'],
    ['0 H(0-5) * * *', 'spec'],
    ['0 0 H/6 * * *', 'spec'],
    [{ cron: '* * * * *', tz: 'Mars/Olympus' }, 'spec.tz'],
    [{ every: '10 parsecs' }, 'spec.every'],
    [{ every: 5 }, 'spec.every'],
    [{ at: new Date('nonsense') }, 'spec.at'],
    [42, 'spec'],
    [{ delayAfterCompletion: 10 }, 'spec.delayAfterCompletion'],
    [{ delayAfterCompletion: 'soon' }, 'spec.delayAfterCompletion'],
    [{ delayAfterCompletion: 1000, initialDelay: -1 }, 'spec.initialDelay'],
    [{ delayAfterCompletion: 1000, initialDelay: 'later' }, 'spec.initialDelay'],
  ])('rejects %j, naming %s', (input, option) => {
    let error: unknown;
    try {
      parseSpec(input as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ option });
  });

  it('computes cron instants with seconds, strictly after the start', () => {
    expect(instantsBetween(parseSpec('*/10 * * * * *'), T0, T0, T0 + 30_000, 100)).toEqual([T0 + 10_000, T0 + 20_000, T0 + 30_000]);
  });

  it('anchors fixed intervals at the registration, whatever the clock reading', () => {
    const anchor = T0 + 123;
    const spec = parseSpec({ every: '1s' });
    expect(instantsBetween(spec, anchor, anchor + 2500, anchor + 5000, 10)).toEqual([anchor + 3000, anchor + 4000, anchor + 5000]);
    expect(lastInstantBetween(spec, anchor, anchor, anchor + 4999)).toBe(anchor + 4000);
  });

  it('follows real zone data: 02:30 New York on the spring-forward day runs at 03:00, the end of the gap (dst.test.ts has the rest)', () => {
    const spec = parseSpec({ cron: '30 2 * * *', tz: 'America/New_York' });
    const from = Date.parse('2026-03-07T12:00:00Z');
    const [first, second] = instantsBetween(spec, from, from, from + 2 * 86_400_000, 2);
    expect(new Date(first!).toISOString()).toBe('2026-03-08T07:00:00.000Z');
    expect(new Date(second!).toISOString()).toBe('2026-03-09T06:30:00.000Z');
  });

  it('parses an expression once for every call that steps through its instants, each call from its own start', () => {
    const parse = vi.spyOn(CronExpressionParser, 'parse');
    try {
      // An expression no other test uses, so that none parsed it before.
      const spec = parseSpec('7,37 * * * * *');
      parse.mockClear();
      const first = instantsBetween(spec, T0, T0, T0 + 60_000, 10);
      const again = instantsBetween(spec, T0, T0 + 7_000, T0 + 120_000, 10);
      const back = lastInstantBetween(spec, T0, T0, T0 + 59_000);
      expect(first).toEqual([T0 + 7_000, T0 + 37_000]);
      expect(again).toEqual([T0 + 37_000, T0 + 67_000, T0 + 97_000]);
      expect(back).toBe(T0 + 37_000);
      // Once, or not at all where a test run before in this process parsed it (the memo lasts the process).
      expect(parse.mock.calls.length).toBeLessThanOrEqual(1);
    } finally {
      parse.mockRestore();
    }
  });

  it('bounds what one call computes', () => {
    expect(instantsBetween(parseSpec('* * * * * *'), T0, T0, T0 + 86_400_000, 50)).toHaveLength(50);
  });

  it('gives the same key to the same spec', () => {
    expect(specKey(parseSpec({ every: '1s' }))).toBe(specKey(parseSpec({ every: 1000 })));
    expect(specKey(parseSpec('* * * * *'))).not.toBe(specKey(parseSpec({ cron: '* * * * *', tz: 'Asia/Tokyo' })));
  });
});

describe('instants counted backwards', () => {
  it('gives the last ones before a time, oldest first, for intervals and cron', () => {
    expect(lastInstantsBetween(parseSpec({ every: '1s' }), T0, T0, T0 + 10_500, 3)).toEqual([T0 + 8000, T0 + 9000, T0 + 10_000]);
    expect(lastInstantsBetween(parseSpec({ every: '1s' }), T0, T0 + 9500, T0 + 10_500, 3)).toEqual([T0 + 10_000]);
    expect(lastInstantsBetween(parseSpec('*/10 * * * * *'), T0, T0, T0 + 35_000, 2)).toEqual([T0 + 20_000, T0 + 30_000]);
  });
});
