import type { Clock } from './clock.js';

/**
 * How far back the cluster's time may step, at most, and a member's stamps still not go back
 * with it (StampClock). Clock sync steps it back a little now and then (under a millisecond on
 * loopback, about once in two seconds on one of three members), and more when a new leader's
 * estimate replaces the last; a stamp held this far ahead of the time delays or lengthens what
 * it stamps by as much at most (a triggered slot fires that much later, a lock is held that much
 * longer). A larger step is the time being put right, and stamps follow it.
 */
export const MAX_STAMP_HOLD_MS = 1000;

/**
 * The cluster's time for the stamps a member puts on what it proposes (a triggered slot's
 * instant, a cancel's time, a lock's, fan-out's), which never go back by less than
 * MAX_STAMP_HOLD_MS at once: it reads the latest time it read while the cluster's time is that
 * little behind it (steps that add up past the bound while it holds are followed). Stamps made
 * one after another on one member keep their order, as the state machine reads them: a second
 * trigger after a step back is not a slot before the first's (which `overlap: 'replace'` took
 * for the earlier one), a cancel right after a trigger covers its slot, and a lock taken again
 * after the member let it go is not refused as still held. Timers do not fire by it: a stamp
 * held ahead would fire a slot before its instant.
 */
export class StampClock implements Clock {
  readonly #time: Clock;
  readonly #holding: () => boolean;
  #latestMs = -Infinity;

  /**
   * `holding`: whether the time is the cluster's yet. Until a member has learned it, its
   * cluster time is its own wall clock, which may be far off: a stamp of it held past the sync
   * would be that far off for as long (a lock stamped early, say), so none is.
   */
  constructor(time: Clock, holding: () => boolean = () => true) {
    this.#time = time;
    this.#holding = holding;
  }

  now(): number {
    const ms = this.#time.now();
    if (!this.#holding()) {
      this.#latestMs = -Infinity;
      return ms;
    }
    if (ms < this.#latestMs && ms >= this.#latestMs - MAX_STAMP_HOLD_MS) return this.#latestMs;
    this.#latestMs = ms;
    return ms;
  }
}
