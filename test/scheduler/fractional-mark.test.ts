import { describe, expect, it } from 'vitest';
import { plan } from '../../src/scheduler/planner.js';
import { instantsBetween, lastInstantBetween, lastInstantsBetween, parseSpec } from '../../src/scheduler/spec.js';
import { SchedulerState } from '../../src/scheduler/state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const everySecond = parseSpec('* * * * * *');

/**
 * A high-water mark need not be a whole millisecond: a registration's `atMs` is stamped from a
 * member's reading of the cluster's time (a take-over's mark counts from it). Simulator seed 5147
 * (three members, four minutes) had a deploy's take-over mark its cron job at 0.15 ms before an
 * instant: the backward walk started a millisecond after the mark, past the instant, and the
 * planner neither claimed that slot nor counted it missed (`accounting`).
 */
describe('a cron spec after a mark that is not a whole millisecond', () => {
  const mark = T0 + 1999.85;

  it('has its instant less than a millisecond after the mark, walked forward or back', () => {
    expect(instantsBetween(everySecond, mark - 1, mark, T0 + 4000, 2)).toEqual([T0 + 2000, T0 + 3000]);
    expect(lastInstantBetween(everySecond, mark - 1, mark, T0 + 2020.87)).toBe(T0 + 2000);
    expect(lastInstantsBetween(everySecond, mark - 1, mark, T0 + 3500, 5)).toEqual([T0 + 2000, T0 + 3000]);
    // Never the instant at or before the mark.
    expect(lastInstantBetween(everySecond, mark - 1, T0 + 2000.5, T0 + 2900)).toBeNull();
    expect(instantsBetween(everySecond, mark - 1, T0 + 2000.5, T0 + 3000, 5)).toEqual([T0 + 3000]);
  });

  it('is planned: the slot that passed 20 ms ago is caught up, then the next', () => {
    const state = new SchedulerState();
    state.apply(1, { type: 'register', job: 'tick', spec: everySecond, mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: 'a', atMs: mark });
    const commands = plan(state, { nowMs: T0 + 2020.87, lookaheadMs: 1000, members: new Map([['a', { load: 0 }]]), maxClaims: 10 });
    expect(commands.map((c) => (c.type === 'claim' ? c.slotMs - T0 : c.type))).toEqual([2000, 3000]);
  });
});
