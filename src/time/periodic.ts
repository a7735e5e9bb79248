import type { TimerHandle, Timers } from './clock.js';

/**
 * Runs `look` every `intervalMs` on `timers`, from one interval after start() until stop(): the
 * timer of the leader's keepers (version, binding, membership), each of which looks at the
 * state on every tick and proposes at most one change.
 */
export class Periodic {
  readonly #timers: Timers;
  readonly #intervalMs: number;
  readonly #look: () => void;
  #timer: TimerHandle | null = null;

  constructor(timers: Timers, intervalMs: number, look: () => void) {
    this.#timers = timers;
    this.#intervalMs = intervalMs;
    this.#look = look;
  }

  /** Between start() and stop(). */
  get running(): boolean {
    return this.#timer !== null;
  }

  start(): void {
    const tick = (): void => {
      this.#look();
      this.#timer = this.#timers.setTimeout(tick, this.#intervalMs);
    };
    this.#timer = this.#timers.setTimeout(tick, this.#intervalMs);
  }

  stop(): void {
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer);
    this.#timer = null;
  }
}
