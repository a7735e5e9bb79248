import { describe, expect, it } from 'vitest';
import type { FanoutApplyResult } from '../../src/fanout/state.js';
import type { FanoutCommand } from '../../src/fanout/command.js';
import { RateBuckets } from '../../src/fanout/planner.js';
import { StampClock } from '../../src/time/stamp-clock.js';
import { FanoutChecker } from '../../simulations/checkers/fanout.js';
import type { SimFanout } from '../../simulations/fanout.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const RATE = 10;
const FANOUT: SimFanout = { topics: [{ name: 't', options: { ratePerSecond: RATE }, runMs: [1, 1], failPermille: 0, hangPermille: 0, consumers: ['b'] }], emitEveryMs: 1000, maxEmit: 100 };

/**
 * A leader leasing a saturated topic with a rate every 100 ms of true time for 3 s, its
 * cluster time `clusterAt(true time)` read through a stamp clock, as the member reads it;
 * the violations the checker reports.
 */
function leaseFor3s(clusterAt: (trueMs: number) => number): string[] {
  const violations: string[] = [];
  const checker = new FanoutChecker((_t, kind, what) => violations.push(`${kind}: ${what}`), FANOUT, () => null);
  const apply = (t: number, index: number, command: FanoutCommand, result: FanoutApplyResult): void => checker.onApplied(t, 'a', index, 1, command, result);
  apply(0, 1, { type: 'emit', topic: 't', items: [], origin: null, atMs: T0 }, { ok: true, firstId: 1, count: 1000 });
  let trueMs = T0;
  const stamps = new StampClock({ now: () => clusterAt(trueMs) });
  const buckets = new RateBuckets();
  // The bucket fills during a quiet second: the first leases are a burst.
  buckets.take('t', RATE, T0 - 1000, 1);
  let index = 1;
  let nextId = 1;
  for (; trueMs <= T0 + 3000; trueMs += 100) {
    const nowMs = stamps.now();
    const n = buckets.take('t', RATE, nowMs, 100);
    if (n === 0) continue;
    const ids = Array.from({ length: n }, () => nextId++);
    apply(trueMs - T0, ++index, { type: 'lease', member: 'b', ids, atMs: nowMs }, { ok: true, leased: ids });
  }
  return violations;
}

describe('the fan-out checker’s rates', () => {
  it('does not take a leader whose time stepped back for one over its rate: held by its stamps, or put right past the hold', () => {
    // Held: the stamps, and the leader's rate buckets with them, do not go back.
    expect(leaseFor3s((t) => (t < T0 + 950 ? t : t - 700))).toEqual([]);
    // Past the hold, the stamps go back too: the checker's windows start again (before, the
    // leases of the second before the step and of the one after it counted as one second's).
    expect(leaseFor3s((t) => (t < T0 + 950 ? t : t - 2000))).toEqual([]);
  });

  it('still catches leases over the rate', () => {
    // Three items every 100 ms: thirty a second, past the rate and its burst.
    const violations: string[] = [];
    const checker = new FanoutChecker((_t, kind, what) => violations.push(`${kind}: ${what}`), FANOUT, () => null);
    checker.onApplied(0, 'a', 1, 1, { type: 'emit', topic: 't', items: [], origin: null, atMs: T0 }, { ok: true, firstId: 1, count: 1000 });
    let nextId = 1;
    for (let k = 0; k < 20; k++) {
      const ids = Array.from({ length: 3 }, () => nextId++);
      checker.onApplied(k * 100, 'a', k + 2, 1, { type: 'lease', member: 'b', ids, atMs: T0 + k * 100 }, { ok: true, leased: ids });
    }
    expect(violations.some((v) => v.startsWith('fanout-rate:'))).toBe(true);
  });
});
