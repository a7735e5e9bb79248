import type { TimerHandle, Timers } from '../../time/clock.js';

/**
 * Bound on how long a run's start or outcome is held back before it is proposed, whatever
 * slots are near: the lag other members see a run with (overlap across members, retries, a
 * fixed-delay job's next slot) grows by at most this.
 */
export const MAX_RECORD_DELAY_MS = 100;

/** Bound on records held at once; the one that reaches it sends them all. */
export const MAX_HELD_RECORDS = 4096;

export interface RecordBatcherOptions<T> {
  readonly timers: Timers;
  /**
   * Milliseconds from now until records may go without delaying a slot (0: now), at most
   * `limitMs` (see quiet-window.ts).
   */
  readonly msUntilQuiet: (limitMs: number) => number;
  /** Sends one record. All records held are sent in one turn, so that one commit round carries them. */
  readonly send: (record: T) => void;
}

/**
 * Holds the records of runs (a start, an outcome) while slot instants are near, then sends
 * them together. A slot's own start is always near its instant, so the start and outcome of a
 * short run usually go in one commit round instead of two, after the slots around it fired
 * rather than among them.
 */
export class RecordBatcher<T> {
  readonly #o: RecordBatcherOptions<T>;
  #held: T[] = [];
  /** When the oldest held record was held, on the timers' monotonic time base. */
  #oldestAt = 0;
  #timer: TimerHandle | null = null;

  constructor(options: RecordBatcherOptions<T>) {
    this.#o = options;
  }

  /** Records held and not yet sent. */
  get size(): number {
    return this.#held.length;
  }

  /** Holds `record` until slots are not near (sent at once if they are not now), for at most MAX_RECORD_DELAY_MS. */
  hold(record: T): void {
    if (this.#held.length === 0) this.#oldestAt = this.#o.timers.now();
    this.#held.push(record);
    if (this.#held.length >= MAX_HELD_RECORDS) this.flush();
    else if (this.#timer === null) this.#wait();
  }

  /** Sends every record held, now. */
  flush(): void {
    if (this.#timer !== null) this.#o.timers.clearTimeout(this.#timer);
    this.#timer = null;
    const held = this.#held;
    this.#held = [];
    for (const record of held) this.#o.send(record);
  }

  #wait(): void {
    const left = MAX_RECORD_DELAY_MS - (this.#o.timers.now() - this.#oldestAt);
    const delayMs = left <= 0 ? 0 : Math.min(left, this.#o.msUntilQuiet(left));
    // Under a millisecond is now: timers round to whole ones, and a wait that short spares no slot.
    if (delayMs < 1) {
      this.flush();
      return;
    }
    // Slots may have been claimed meanwhile: when the timer fires, it looks again.
    this.#timer = this.#o.timers.setTimeout(() => {
      this.#timer = null;
      if (this.#held.length > 0) this.#wait();
    }, delayMs);
  }
}
