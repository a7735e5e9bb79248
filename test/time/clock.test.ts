import { stat } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { MAX_TIMER_DELAY_MS, systemTimers } from '../../src/time/clock.js';

/** Runs `fn` in an I/O callback, where Node runs setImmediate's callbacks before any timer's. */
const inIoCallback = (fn: () => void): Promise<void> => new Promise((resolve) => stat('.', () => resolve(fn())));

describe('the system timers', () => {
  it('run a timer of no delay once this turn’s I/O is done, not after a millisecond, and clear either kind', async () => {
    const order: string[] = [];
    let done!: () => void;
    const finished = new Promise<void>((resolve) => (done = resolve));
    await inIoCallback(() => {
      // A timer of a millisecond set first: with Node's setTimeout for both, it would fire first.
      setTimeout(() => order.push('1 ms'), 1);
      systemTimers.setTimeout(() => order.push('no delay'), 0);
      systemTimers.clearTimeout(systemTimers.setTimeout(() => order.push('cleared, no delay'), 0));
      systemTimers.clearTimeout(systemTimers.setTimeout(() => order.push('cleared, 1 ms'), 1));
      // Timers of one duration set in one turn fire in the order they were set: by this one's, a
      // cleared one would have.
      setTimeout(() => {
        order.push('last');
        done();
      }, 1);
    });
    await finished;
    expect(order).toEqual(['no delay', '1 ms', 'last']);
  });

  it('keep a delay past what Node keeps (MAX_TIMER_DELAY_MS), where Node runs it after a millisecond, and clear it', async () => {
    const fired: string[] = [];
    const long = systemTimers.setTimeout(() => fired.push('2^31 ms'), MAX_TIMER_DELAY_MS + 1);
    const longer = systemTimers.setTimeout(() => fired.push('2^40 ms'), 2 ** 40);
    const nan = systemTimers.setTimeout(() => fired.push('NaN: at once'), Number.NaN);
    // Node's setTimeout would have run both after 1 ms: five timers of 1 ms later, neither fired.
    for (let i = 0; i < 5; i++) await new Promise<void>((resolve) => setTimeout(resolve, 1));
    expect(fired).toEqual(['NaN: at once']);
    systemTimers.clearTimeout(long);
    systemTimers.clearTimeout(longer);
    systemTimers.clearTimeout(nan);
  });
});
