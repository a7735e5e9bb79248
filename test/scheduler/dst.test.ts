import fc from 'fast-check';
import { CronExpressionParser } from 'cron-parser';
import { describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { instantsBetween, lastInstantBetween, lastInstantsBetween, parseSpec, specKey, type DstPolicy, type JobSpec } from '../../src/scheduler/spec.js';

// Daylight-saving policies of cron specs, against the tz database Node ships (Intl).

const H = 3_600_000;
const D = 24 * H;
const at = (iso: string): number => Date.parse(iso);
const iso = (ms: number): string => new Date(ms).toISOString();

const formats = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset at `ms`, in minutes, straight from Intl. */
function offsetMinutes(tz: string, ms: number): number {
  let format = formats.get(tz);
  if (format === undefined) {
    format = new Intl.DateTimeFormat('en-US', { timeZone: tz, timeZoneName: 'longOffset' });
    formats.set(tz, format);
  }
  const parts = format.formatToParts(ms);
  const name = parts.find((p) => p.type === 'timeZoneName')?.value ?? '';
  const m = /GMT(?:([+-])(\d\d):(\d\d))?/.exec(name);
  if (m === null) throw new Error(`no offset in ${name}`);
  return m[1] === undefined ? 0 : (m[1] === '-' ? -1 : 1) * (Number(m[2]) * 60 + Number(m[3]));
}

const POLICIES: DstPolicy[] = [
  { gap: 'shift', overlap: 'once' },
  { gap: 'shift', overlap: 'twice' },
  { gap: 'skip', overlap: 'once' },
  { gap: 'skip', overlap: 'twice' },
];

function spec(cron: string, tz: string, dst?: Partial<DstPolicy>): JobSpec {
  return parseSpec({ cron, tz, ...(dst === undefined ? {} : { dst }) });
}

/** Backward, one at a time, as the planner asks for its latest missed slot. */
function backwardOneByOne(s: JobSpec, afterMs: number, untilMs: number): number[] {
  const out: number[] = [];
  for (let t = lastInstantBetween(s, 0, afterMs, untilMs); t !== null; t = lastInstantBetween(s, 0, afterMs, t - 1)) out.push(t);
  return out.reverse();
}

/**
 * One zone's transitions in 2026, with a spec naming a wall time in its gap and one in its
 * overlap, and the instants each policy gives: the day before, the transition day, the day after.
 */
interface ZoneCase {
  readonly tz: string;
  readonly gap: { readonly atMs: number; readonly beforeMin: number; readonly afterMin: number; readonly cron: string; readonly dayBefore: string; readonly shifted: string; readonly dayAfter: string };
  readonly overlap: { readonly atMs: number; readonly beforeMin: number; readonly afterMin: number; readonly cron: string; readonly dayBefore: string; readonly first: string; readonly second: string; readonly dayAfter: string };
}

const ZONES: ZoneCase[] = [
  {
    // 02:00 CET -> 03:00 CEST; 03:00 CEST -> 02:00 CET.
    tz: 'Europe/Paris',
    gap: { atMs: at('2026-03-29T01:00:00Z'), beforeMin: 60, afterMin: 120, cron: '0 30 2 * * *', dayBefore: '2026-03-28T01:30:00.000Z', shifted: '2026-03-29T01:00:00.000Z', dayAfter: '2026-03-30T00:30:00.000Z' },
    overlap: { atMs: at('2026-10-25T01:00:00Z'), beforeMin: 120, afterMin: 60, cron: '0 30 2 * * *', dayBefore: '2026-10-24T00:30:00.000Z', first: '2026-10-25T00:30:00.000Z', second: '2026-10-25T01:30:00.000Z', dayAfter: '2026-10-26T01:30:00.000Z' },
  },
  {
    // 02:00 EST -> 03:00 EDT; 02:00 EDT -> 01:00 EST.
    tz: 'America/New_York',
    gap: { atMs: at('2026-03-08T07:00:00Z'), beforeMin: -300, afterMin: -240, cron: '30 2 * * *', dayBefore: '2026-03-07T07:30:00.000Z', shifted: '2026-03-08T07:00:00.000Z', dayAfter: '2026-03-09T06:30:00.000Z' },
    overlap: { atMs: at('2026-11-01T06:00:00Z'), beforeMin: -240, afterMin: -300, cron: '30 1 * * *', dayBefore: '2026-10-31T05:30:00.000Z', first: '2026-11-01T05:30:00.000Z', second: '2026-11-01T06:30:00.000Z', dayAfter: '2026-11-02T06:30:00.000Z' },
  },
  {
    // Half-hour daylight saving: 02:00 +10:30 -> 02:30 +11; 02:00 +11 -> 01:30 +10:30.
    tz: 'Australia/Lord_Howe',
    gap: { atMs: at('2026-10-03T15:30:00Z'), beforeMin: 630, afterMin: 660, cron: '15 2 * * *', dayBefore: '2026-10-02T15:45:00.000Z', shifted: '2026-10-03T15:30:00.000Z', dayAfter: '2026-10-04T15:15:00.000Z' },
    overlap: { atMs: at('2026-04-04T15:00:00Z'), beforeMin: 660, afterMin: 630, cron: '45 1 * * *', dayBefore: '2026-04-03T14:45:00.000Z', first: '2026-04-04T14:45:00.000Z', second: '2026-04-04T15:15:00.000Z', dayAfter: '2026-04-05T15:15:00.000Z' },
  },
];

describe('the dst option', () => {
  it('defaults to shift and once, which the replicated form leaves out', () => {
    const plain = { kind: 'cron', expression: '30 2 * * *', tz: 'Europe/Paris' };
    expect(spec('30 2 * * *', 'Europe/Paris')).toEqual(plain);
    expect(spec('30 2 * * *', 'Europe/Paris', {})).toEqual(plain);
    expect(spec('30 2 * * *', 'Europe/Paris', { gap: 'shift', overlap: 'once' })).toEqual(plain);
    expect(spec('30 2 * * *', 'Europe/Paris', { gap: 'skip' })).toEqual({ ...plain, dst: { gap: 'skip', overlap: 'once' } });
    expect(spec('30 2 * * *', 'Europe/Paris', { overlap: 'twice' })).toEqual({ ...plain, dst: { gap: 'shift', overlap: 'twice' } });
  });

  it('is part of the spec key, so members registering different policies conflict', () => {
    const key = (dst?: Partial<DstPolicy>): string => specKey(spec('30 2 * * *', 'Europe/Paris', dst));
    expect(key()).toBe('cron 30 2 * * * Europe/Paris');
    expect(key({ gap: 'shift' })).toBe(key());
    expect(new Set(POLICIES.map((p) => key(p))).size).toBe(4);
    // A spec from the log without `dst` (written before policies existed) has the defaults.
    expect(specKey({ kind: 'cron', expression: '30 2 * * *', tz: 'Europe/Paris', dst: { gap: 'shift', overlap: 'once' } })).toBe(key());
  });

  it.each([
    [{ gap: 'later' }, 'spec.dst.gap'],
    [{ gap: null }, 'spec.dst.gap'],
    [{ overlap: 'thrice' }, 'spec.dst.overlap'],
    [{ overlap: true }, 'spec.dst.overlap'],
    [{ gapp: 'skip' }, 'spec.dst.gapp'],
    ['skip', 'spec.dst'],
    [null, 'spec.dst'],
    [['shift', 'once'], 'spec.dst'],
  ])('rejects dst %j, naming %s', (dst, option) => {
    let error: unknown;
    try {
      parseSpec({ cron: '30 2 * * *', tz: 'Europe/Paris', dst } as never);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ option });
  });
});

describe.each(ZONES)('$tz', (z) => {
  it('has the transitions these cases assume, in the zone data Node ships', () => {
    expect(offsetMinutes(z.tz, z.gap.atMs - 1000)).toBe(z.gap.beforeMin);
    expect(offsetMinutes(z.tz, z.gap.atMs)).toBe(z.gap.afterMin);
    expect(offsetMinutes(z.tz, z.overlap.atMs - 1000)).toBe(z.overlap.beforeMin);
    expect(offsetMinutes(z.tz, z.overlap.atMs)).toBe(z.overlap.afterMin);
  });

  describe.each(POLICIES)('gap $gap, overlap $overlap', (policy) => {
    const enumerations: [string, (s: JobSpec, a: number, b: number) => number[]][] = [
      ['forward', (s, a, b) => instantsBetween(s, 0, a, b, 100)],
      ['backward', (s, a, b) => lastInstantsBetween(s, 0, a, b, 100)],
      ['backward, one at a time', backwardOneByOne],
    ];

    it.each(enumerations)('gap, %s', (_name, enumerate) => {
      const s = spec(z.gap.cron, z.tz, policy);
      const expected = [z.gap.dayBefore, ...(policy.gap === 'shift' ? [z.gap.shifted] : []), z.gap.dayAfter];
      expect(enumerate(s, z.gap.atMs - 1.5 * D, z.gap.atMs + 1.5 * D).map(iso)).toEqual(expected);
    });

    it.each(enumerations)('overlap, %s', (_name, enumerate) => {
      const s = spec(z.overlap.cron, z.tz, policy);
      const expected = [z.overlap.dayBefore, z.overlap.first, ...(policy.overlap === 'twice' ? [z.overlap.second] : []), z.overlap.dayAfter];
      expect(enumerate(s, z.overlap.atMs - 1.5 * D, z.overlap.atMs + 1.5 * D).map(iso)).toEqual(expected);
    });

    it('claims each instant once when windows end inside the gap or the overlap', () => {
      for (const [cron, t0] of [
        [z.gap.cron, z.gap.atMs],
        [z.overlap.cron, z.overlap.atMs],
      ] as const) {
        const s = spec(cron, z.tz, policy);
        const whole = instantsBetween(s, 0, t0 - D, t0 + D, 100);
        // The planner's high-water mark: each call starts after the last instant claimed.
        const claimed: number[] = [];
        let high = t0 - D;
        for (let until = t0 - D + 15 * 60_000; until <= t0 + D; until += 15 * 60_000) {
          const got = instantsBetween(s, 0, high, until, 100);
          claimed.push(...got);
          if (got.length > 0) high = got[got.length - 1] as number;
        }
        expect(claimed.map(iso)).toEqual(whole.map(iso));
      }
    });
  });
});

describe('specs that fire every hour or more often (wall-clock semantics)', () => {
  const paris = (cron: string, dst?: Partial<DstPolicy>): JobSpec => spec(cron, 'Europe/Paris', dst);

  it('in the overlap: once runs each wall time at its first occurrence only; twice keeps the real-time rhythm', () => {
    const from = at('2026-10-24T22:30:00Z');
    const until = at('2026-10-25T03:30:00Z');
    expect(instantsBetween(paris('0 * * * *'), 0, from, until, 100).map(iso)).toEqual([
      '2026-10-24T23:00:00.000Z', // 01:00 CEST
      '2026-10-25T00:00:00.000Z', // 02:00 CEST
      '2026-10-25T02:00:00.000Z', // 03:00 CET: 02:00 CET is a repeat
      '2026-10-25T03:00:00.000Z',
    ]);
    expect(instantsBetween(paris('0 * * * *', { overlap: 'twice' }), 0, from, until, 100).map(iso)).toEqual([
      '2026-10-24T23:00:00.000Z',
      '2026-10-25T00:00:00.000Z',
      '2026-10-25T01:00:00.000Z', // 02:00 CET
      '2026-10-25T02:00:00.000Z',
      '2026-10-25T03:00:00.000Z',
    ]);
    const quarter = instantsBetween(paris('*/15 * * * *'), 0, at('2026-10-25T00:30:00Z'), at('2026-10-25T02:15:00Z'), 100).map(iso);
    expect(quarter).toEqual(['2026-10-25T00:45:00.000Z', '2026-10-25T02:00:00.000Z', '2026-10-25T02:15:00.000Z']);
    const everyQuarter = instantsBetween(paris('*/15 * * * *', { overlap: 'twice' }), 0, at('2026-10-25T00:30:00Z'), at('2026-10-25T02:15:00Z'), 100);
    expect(everyQuarter).toHaveLength(7);
    expect(everyQuarter.every((t, i) => i === 0 || t - (everyQuarter[i - 1] as number) === 15 * 60_000)).toBe(true);
  });

  it('in the gap: shift and skip agree where the spec names the transition time itself', () => {
    const from = at('2026-03-28T23:30:00Z');
    const until = at('2026-03-29T02:30:00Z');
    for (const gap of ['shift', 'skip'] as const) {
      expect(instantsBetween(paris('0 * * * *', { gap }), 0, from, until, 100).map(iso)).toEqual(['2026-03-29T00:00:00.000Z', '2026-03-29T01:00:00.000Z', '2026-03-29T02:00:00.000Z']);
      expect(instantsBetween(paris('*/15 * * * *', { gap }), 0, at('2026-03-29T00:30:00Z'), at('2026-03-29T01:15:00Z'), 100).map(iso)).toEqual([
        '2026-03-29T00:45:00.000Z', // 01:45 CET
        '2026-03-29T01:00:00.000Z', // 03:00 CEST, once: 02:00-02:45 never happened
        '2026-03-29T01:15:00.000Z',
      ]);
    }
    // Several wall times of one gap run once, at its end.
    expect(instantsBetween(paris('0,20,40 2 * * *'), 0, from, until, 100).map(iso)).toEqual(['2026-03-29T01:00:00.000Z']);
  });

  it('in a half-hour gap, shift runs the missing hour at its end', () => {
    const lordHowe = (gap: DstPolicy['gap']): string[] => instantsBetween(spec('0 * * * *', 'Australia/Lord_Howe', { gap }), 0, at('2026-10-03T14:00:00Z'), at('2026-10-03T16:30:00Z'), 100).map(iso);
    expect(lordHowe('shift')).toEqual(['2026-10-03T14:30:00.000Z', '2026-10-03T15:30:00.000Z', '2026-10-03T16:00:00.000Z']);
    expect(lordHowe('skip')).toEqual(['2026-10-03T14:30:00.000Z', '2026-10-03T16:00:00.000Z']);
  });
});

describe('zones and days without a transition', () => {
  it('are unaffected by the policy', () => {
    for (const policy of POLICIES) {
      expect(instantsBetween(spec('30 2 * * *', 'Asia/Tokyo', policy), 0, at('2026-03-27T00:00:00Z'), at('2026-03-30T00:00:00Z'), 10).map(iso)).toEqual([
        '2026-03-27T17:30:00.000Z',
        '2026-03-28T17:30:00.000Z',
        '2026-03-29T17:30:00.000Z',
      ]);
      expect(lastInstantsBetween(spec('*/10 * * * * *', 'UTC', policy), 0, at('2026-03-29T00:00:00Z'), at('2026-03-29T00:00:35Z'), 2).map(iso)).toEqual(['2026-03-29T00:00:20.000Z', '2026-03-29T00:00:30.000Z']);
    }
  });

  it('finds a rare instant far back or ahead, across many transitions', () => {
    // 02:30 on 29 March: in Paris's gap in 2026, an ordinary time in 2027 and 2021.
    const s = spec('30 2 29 3 *', 'Europe/Paris', { gap: 'skip' });
    expect(instantsBetween(s, 0, at('2024-01-01T00:00:00Z'), at('2028-01-01T00:00:00Z'), 10).map(iso)).toEqual([
      '2024-03-29T01:30:00.000Z',
      '2025-03-29T01:30:00.000Z',
      '2027-03-29T00:30:00.000Z',
    ]);
    expect(lastInstantBetween(s, 0, at('2020-01-01T00:00:00Z'), at('2027-03-01T00:00:00Z'))).toBe(at('2025-03-29T01:30:00Z'));
    expect(lastInstantBetween(spec('30 2 29 3 *', 'Europe/Paris'), 0, at('2020-01-01T00:00:00Z'), at('2027-03-01T00:00:00Z'))).toBe(at('2026-03-29T01:00:00Z'));
    expect(lastInstantBetween(s, 0, at('2025-04-01T00:00:00Z'), at('2027-03-01T00:00:00Z'))).toBeNull();
  });
});

// Random windows around real transitions: the enumeration is one set of instants, whatever the
// window, direction or bound; and that set is what the policy says, checked minute by minute
// against Intl.

const TRANSITIONS: [string, number][] = [
  ['Europe/Paris', at('2026-03-29T01:00:00Z')],
  ['Europe/Paris', at('2026-10-25T01:00:00Z')],
  ['America/New_York', at('2026-03-08T07:00:00Z')],
  ['America/New_York', at('2026-11-01T06:00:00Z')],
  ['Australia/Lord_Howe', at('2026-10-03T15:30:00Z')],
  ['Australia/Lord_Howe', at('2026-04-04T15:00:00Z')],
  ['Asia/Tokyo', at('2026-03-29T01:00:00Z')],
];
const EXPRESSIONS = ['30 2 * * *', '30 1 * * *', '15 2 * * *', '45 1 * * *', '0 * * * *', '*/15 * * * *', '0,30 1-3 * * *', '10-50/20 2 * * *', '0 3 * * *', '59 1 * * *'];

const windows = fc.record({
  transition: fc.constantFrom(...TRANSITIONS),
  cron: fc.constantFrom(...EXPRESSIONS),
  policy: fc.constantFrom(...POLICIES),
  // Minute-aligned offsets from the transition, and an odd millisecond now and then.
  a: fc.integer({ min: -36 * 60, max: 36 * 60 }),
  b: fc.integer({ min: -36 * 60, max: 36 * 60 }),
  c: fc.integer({ min: -36 * 60, max: 36 * 60 }),
  jitter: fc.constantFrom(0, 0, 0, 1, 999, 59_999),
});

/** The instants, minute by minute from Intl: wall times the expression names, under the policy. */
function oracle(cron: string, tz: string, policy: DstPolicy, afterMs: number, untilMs: number): number[] {
  const expression = CronExpressionParser.parse(cron, { tz: 'UTC' });
  const wall = (t: number): number => t + offsetMinutes(tz, t) * 60_000;
  const out = new Set<number>();
  const first = Math.ceil((afterMs + 1) / 60_000) * 60_000;
  let before = offsetMinutes(tz, first - 60_000);
  for (let t = first; t <= untilMs; t += 60_000) {
    const now = offsetMinutes(tz, t);
    const w = t + now * 60_000;
    if (expression.includesDate(new Date(w))) {
      // A repeat: the same wall time was shown before the clocks went back.
      const repeat = [30, 60, 120].some((m) => wall(t - m * 60_000) === w);
      if (!repeat || policy.overlap === 'twice') out.add(t);
    }
    if (now > before && policy.gap === 'shift') {
      // The clocks jumped forward at t: wall times in [t + before, t + now) never happened.
      for (let m = before; m < now; m++) if (expression.includesDate(new Date(t + m * 60_000))) out.add(t);
    }
    before = now;
  }
  return [...out].sort((x, y) => x - y);
}

describe('properties', () => {
  it('forward over (a, c] is forward over (a, b] and (b, c], backward reversed, the oracle, and bounded prefixes and suffixes', () => {
    fc.assert(
      fc.property(windows, ({ transition: [tz, t0], cron, policy, a, b, c, jitter }) => {
        const [x, y, z] = [a, b, c].sort((p, q) => p - q) as [number, number, number];
        const A = t0 + x * 60_000 + jitter;
        const C = t0 + z * 60_000 - jitter;
        const B = Math.min(Math.max(t0 + y * 60_000, A), C);
        const s = spec(cron, tz, policy);
        const all = instantsBetween(s, 0, A, C, 1000);
        expect(all.every((t, i) => t > A && t <= C && (i === 0 || t > (all[i - 1] as number)))).toBe(true);
        expect([...instantsBetween(s, 0, A, B, 1000), ...instantsBetween(s, 0, B, C, 1000)]).toEqual(all);
        expect(lastInstantsBetween(s, 0, A, C, 1000)).toEqual(all);
        expect(lastInstantBetween(s, 0, A, C)).toBe(all.length > 0 ? all[all.length - 1] : null);
        const k = Math.max(1, Math.floor(all.length / 2));
        expect(instantsBetween(s, 0, A, C, k)).toEqual(all.slice(0, k));
        expect(lastInstantsBetween(s, 0, A, C, k)).toEqual(all.slice(all.length - k));
        expect(all).toEqual(oracle(cron, tz, policy, A, C));
      }),
      { numRuns: 100 },
    );
  });

  it('long windows with rare instants: forward, split and backward agree', () => {
    const rare = ['30 2 29 3 *', '30 2 25 10 *', '30 2 8 3 *', '30 1 1 11 *', '0 0 1 * *', '0 2 * * 0'];
    fc.assert(
      fc.property(
        fc.constantFrom(...TRANSITIONS),
        fc.constantFrom(...rare),
        fc.constantFrom(...POLICIES),
        fc.array(fc.integer({ min: -800 * D, max: 800 * D }), { minLength: 3, maxLength: 3 }),
        ([tz, t0], cron, policy, points) => {
          const [A, B, C] = points.map((p) => t0 + p).sort((p, q) => p - q) as [number, number, number];
          const s = spec(cron, tz, policy);
          const all = instantsBetween(s, 0, A, C, 10_000);
          expect([...instantsBetween(s, 0, A, B, 10_000), ...instantsBetween(s, 0, B, C, 10_000)]).toEqual(all);
          expect(lastInstantsBetween(s, 0, A, C, 10_000)).toEqual(all);
          expect(lastInstantBetween(s, 0, A, C)).toBe(all.length > 0 ? all[all.length - 1] : null);
        },
      ),
      { numRuns: 40 },
    );
  });
});
