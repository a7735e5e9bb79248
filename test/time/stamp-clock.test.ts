import { describe, expect, it } from 'vitest';
import { MAX_STAMP_HOLD_MS, StampClock } from '../../src/time/stamp-clock.js';

describe('the stamp clock', () => {
  it('reads the time as it moves on, holds it through a step back within MAX_STAMP_HOLD_MS, and follows a larger one', () => {
    let now = 1000;
    const stamps = new StampClock({ now: () => now });
    expect(stamps.now()).toBe(1000);
    now = 1000.4;
    expect(stamps.now()).toBe(1000.4);
    // A step back under a millisecond (clock sync), and one of a few hundred (a new leader's estimate): held.
    now = 1000.1;
    expect(stamps.now()).toBe(1000.4);
    now = 1000.4 - MAX_STAMP_HOLD_MS;
    expect(stamps.now()).toBe(1000.4);
    // Once the time passes the stamp held, it is read again.
    now = 1000.5;
    expect(stamps.now()).toBe(1000.5);
    // A step back further than the bound is the time put right: stamps follow it, and hold from there.
    now = 1000.5 - MAX_STAMP_HOLD_MS - 1;
    expect(stamps.now()).toBe(now);
    const put = now;
    now -= 3;
    expect(stamps.now()).toBe(put);
  });

  it('holds nothing read before the time is the cluster’s: a wall clock far off is not held past the sync', () => {
    let now = 5000;
    let synced = false;
    const stamps = new StampClock({ now: () => now }, () => synced);
    expect(stamps.now()).toBe(5000);
    // Synced: the cluster's time is 800 ms behind the wall clock read before.
    synced = true;
    now = 4200;
    expect(stamps.now()).toBe(4200);
    now = 4199.5;
    expect(stamps.now()).toBe(4200);
  });
});
