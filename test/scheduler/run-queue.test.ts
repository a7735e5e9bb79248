import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { effectivePriority, PRIORITY_AGING_MS, RunQueue } from '../../src/scheduler/run-queue.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

describe('the run queue', () => {
  it('starts higher priorities first, first come first served within a priority', () => {
    const q = new RunQueue<string>();
    q.push('low-1', 0, T0);
    q.push('high-1', 5, T0 + 1);
    q.push('low-2', 0, T0 + 2);
    q.push('high-2', 5, T0 + 3);
    q.push('mid', 1, T0 + 3);
    expect(q.order()).toEqual(['high-1', 'high-2', 'mid', 'low-1', 'low-2']);
    expect([q.shift(), q.shift(), q.shift(), q.shift(), q.shift(), q.shift()]).toEqual(['high-1', 'high-2', 'mid', 'low-1', 'low-2', undefined]);
  });

  it('keeps arrival order for runs pushed at the same time with the same priority', () => {
    const q = new RunQueue<number>();
    for (let i = 0; i < 5; i++) q.push(i, 0, T0);
    expect(q.order()).toEqual([0, 1, 2, 3, 4]);
  });

  it('ages waiting runs: one level per aging step, so a long wait beats a higher priority', () => {
    const q = new RunQueue<string>();
    q.push('old-low', 0, T0);
    // Pushed 3 steps later with 2 levels more: the old one has gained 3.
    q.push('new-high', 2, T0 + 3 * PRIORITY_AGING_MS);
    expect(q.shift()).toBe('old-low');
    expect(effectivePriority(0, T0, T0 + 3 * PRIORITY_AGING_MS)).toBe(3);
  });

  it('removes a run that no longer waits', () => {
    const q = new RunQueue<string>();
    q.push('a', 0, T0);
    q.push('b', 0, T0);
    expect(q.remove('a')).toBe(true);
    expect(q.remove('a')).toBe(false);
    expect(q.size).toBe(1);
    expect(q.shift()).toBe('b');
  });

  it('starves no run: under a steady stream of higher-priority arrivals, a waiting run starts within a bounded number of starts', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 20 }), fc.integer({ min: 1, max: 5 }), fc.integer({ min: 50, max: 1000 }), (gap, perStep, stepMs) => {
        // One slot: every `stepMs` one run starts and `perStep` arrive with priority `gap` above
        // the waiting one's.
        const q = new RunQueue<string>();
        q.push('victim', 0, T0);
        let now = T0;
        for (let step = 0; step < 10_000; step++) {
          for (let i = 0; i < perStep; i++) q.push(`hi-${step}-${i}`, gap, now);
          if (q.shift() === 'victim') {
            // It waited no longer than the priority gap takes to age away, plus the runs that
            // arrived before that point (each step adds perStep, one starts per step).
            expect(now - T0).toBeLessThanOrEqual((gap * PRIORITY_AGING_MS + stepMs) * perStep);
            return;
          }
          now += stepMs;
        }
        throw new Error('the low-priority run never started');
      }),
      { numRuns: 100 },
    );
  });
});
