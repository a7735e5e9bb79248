import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { hasInstantWithin, nextInstantAfter } from '../../src/scheduler/next-instant.js';
import { parseSpec, type JobSpec } from '../../src/scheduler/spec.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

/** Specs of every kind but 'delay' (the planner asks those of the state, not of the spec). */
const specs: fc.Arbitrary<JobSpec> = fc.oneof(
  fc.integer({ min: 100, max: 3 * 86_400_000 }).map((everyMs) => parseSpec({ every: everyMs })),
  fc.integer({ min: -86_400_000, max: 86_400_000 }).map((offsetMs) => parseSpec({ at: new Date(T0 + offsetMs) })),
  fc.constantFrom('* * * * * *', '*/7 * * * *', '0 2 * * *', '30 1 * * 0', '0 0 29 2 *').map((cron) => parseSpec(cron)),
);

describe('hasInstantWithin, the planner\'s look at each job', () => {
  it('answers as nextInstantAfter held against the time', () => {
    fc.assert(
      fc.property(specs, fc.integer({ min: -86_400_000, max: 86_400_000 }), fc.integer({ min: -2 * 86_400_000, max: 2 * 86_400_000 }), fc.integer({ min: -1000, max: 4 * 86_400_000 }), (spec, anchorOffset, afterOffset, byAhead) => {
        const anchorMs = T0 + anchorOffset;
        const afterMs = T0 + afterOffset;
        const byMs = afterMs + byAhead;
        const next = nextInstantAfter(spec, anchorMs, afterMs);
        expect(hasInstantWithin(spec, anchorMs, afterMs, byMs)).toBe(next !== null && next <= byMs);
      }),
      { numRuns: 2000 },
    );
  });

  it('is exact at the edges of an `every` job\'s instant', () => {
    const spec = parseSpec({ every: '1h' });
    // The next instant after the anchor itself is an hour on; after an instant, the one after it.
    expect(hasInstantWithin(spec, T0, T0, T0 + 3_600_000)).toBe(true);
    expect(hasInstantWithin(spec, T0, T0, T0 + 3_599_999)).toBe(false);
    expect(hasInstantWithin(spec, T0, T0 + 3_600_000, T0 + 7_200_000)).toBe(true);
    expect(hasInstantWithin(spec, T0, T0 + 3_600_000, T0 + 7_199_999)).toBe(false);
    // Before the anchor, the first instant is still one interval after it.
    expect(hasInstantWithin(spec, T0, T0 - 10 * 3_600_000, T0 + 3_600_000)).toBe(true);
    expect(hasInstantWithin(spec, T0, T0 - 10 * 3_600_000, T0 + 3_599_999)).toBe(false);
  });
});
