import type { Clock } from '../src/time/clock.js';
import { SIM_EPOCH_MS, type SimScheduler } from './scheduler.js';

/**
 * One member's wall clock in a simulation: true time plus an offset, a drift in parts per
 * million, and possibly frozen. Only what the member reads from `now()` is wrong; its timers
 * run on true time, as Node's timers run on a monotonic clock whatever the wall clock does.
 */
export class SimClock implements Clock {
  readonly #scheduler: SimScheduler;
  #offsetMs = 0;
  #driftPpm = 0;
  /** True time at which the drift last changed: drift accumulates from there. */
  #driftSinceT = 0;
  /** The reading a frozen clock keeps returning, or null. */
  #frozenAt: number | null = null;

  constructor(scheduler: SimScheduler) {
    this.#scheduler = scheduler;
  }

  now(): number {
    if (this.#frozenAt !== null) return this.#frozenAt;
    return SIM_EPOCH_MS + this.#scheduler.nowMs + this.offsetMs;
  }

  /** How far ahead of true time this clock reads now (negative: behind). */
  get offsetMs(): number {
    if (this.#frozenAt !== null) return this.#frozenAt - SIM_EPOCH_MS - this.#scheduler.nowMs;
    return this.#offsetMs + ((this.#scheduler.nowMs - this.#driftSinceT) * this.#driftPpm) / 1e6;
  }

  /** Steps the clock (an NTP step, a VM resumed, an operator's mistake). */
  jump(byMs: number): void {
    this.#settleDrift();
    this.#offsetMs += byMs;
  }

  setDrift(ppm: number): void {
    this.#settleDrift();
    this.#driftPpm = ppm;
  }

  freeze(): void {
    this.#frozenAt ??= this.now();
  }

  /** The frozen clock runs again from where it stopped: it is now behind by the time it was frozen. */
  unfreeze(): void {
    if (this.#frozenAt === null) return;
    const reading = this.#frozenAt;
    this.#frozenAt = null;
    this.#offsetMs = reading - SIM_EPOCH_MS - this.#scheduler.nowMs;
    this.#driftSinceT = this.#scheduler.nowMs;
  }

  /** Back to true time (the liveness phase), keeping nothing of the faults. */
  reset(): void {
    this.#frozenAt = null;
    this.#offsetMs = 0;
    this.#driftPpm = 0;
    this.#driftSinceT = this.#scheduler.nowMs;
  }

  #settleDrift(): void {
    this.#offsetMs = this.offsetMs;
    this.#driftSinceT = this.#scheduler.nowMs;
  }
}
