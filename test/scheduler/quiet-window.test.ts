import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { quietAt, type QuietWindow } from '../../src/scheduler/quiet-window.js';

const W: QuietWindow = { beforeMs: 10, afterMs: 10 };

/** Quiet at `t`: every instant is more than `beforeMs` ahead of it, or at least `afterMs` behind. */
const quiet = (t: number, instants: readonly number[]): boolean => instants.every((at) => at - W.beforeMs > t || t >= at + W.afterMs);

describe('quietAt', () => {
  it('is now when no instant is near', () => {
    expect(quietAt(1000, [], 100, W)).toBe(1000);
    expect(quietAt(1000, [500, 1011, 5000], 100, W)).toBe(1000);
  });

  it('waits until the window after an instant that is near has passed', () => {
    // Due in 5 ms: bookkeeping waits until 10 ms after it.
    expect(quietAt(1000, [1005], 100, W)).toBe(1015);
    // Fired 4 ms ago: 6 ms more.
    expect(quietAt(1000, [996], 100, W)).toBe(1006);
  });

  it('waits through instants whose windows overlap, in any order, and stops at a gap', () => {
    expect(quietAt(1000, [1030, 1005, 1012, 1005, 1100], 200, W)).toBe(1040);
    // 1051 starts its window at 1041, after the quiet moment 1040.
    expect(quietAt(1000, [1051, 1005, 1030, 1012], 200, W)).toBe(1040);
  });

  it('never waits past the limit', () => {
    expect(quietAt(1000, [1005, 1020, 1035, 1050, 1065], 30, W)).toBe(1030);
    expect(quietAt(1000, [1005], 0, W)).toBe(1000);
  });

  it('returns the first quiet moment within the limit (property)', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1000 }), fc.array(fc.integer({ min: 0, max: 1300 }), { maxLength: 30 }), fc.integer({ min: 0, max: 200 }), (now, instants, limit) => {
        const t = quietAt(now, instants, limit, W);
        expect(t).toBeGreaterThanOrEqual(now);
        expect(t).toBeLessThanOrEqual(now + limit);
        if (t < now + limit) expect(quiet(t, instants)).toBe(true);
        // Nothing earlier is quiet (instants are whole milliseconds, so whole steps suffice).
        for (let s = now; s < t; s++) expect(quiet(s, instants)).toBe(false);
      }),
    );
  });
});
