/** Wall-clock time in milliseconds since the epoch; injected so simulations can skew or freeze it. */
export interface Clock {
  now(): number;
}

/** A handle returned by `Timers.setTimeout`. */
export type TimerHandle = unknown;

/**
 * Timers, injected so that a simulation can run the runtime on virtual time. Their time base,
 * `now()`, is monotonic: durations (leases, silences, deadlines) are measured on it, so a wall
 * clock stepped by NTP or by hand cannot stretch or cut them.
 */
export interface Timers {
  /** Milliseconds on a monotonic clock (any origin): only differences mean anything. */
  now(): number;
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
};

/** systemTimers' handle of a timer of no delay (setImmediate's), told apart from setTimeout's. */
class Immediate {
  constructor(readonly immediate: NodeJS.Immediate) {}
}

/**
 * The longest delay Node's setTimeout keeps: it runs a longer one after 1 ms (with a warning).
 * A job's `timeoutMs` of 2^31 ms, meant as "no timeout", aborted every run at once.
 */
export const MAX_TIMER_DELAY_MS = 2 ** 31 - 1;

/** systemTimers' handle of a timer longer than MAX_TIMER_DELAY_MS: set again in steps until its time comes. */
class LongTimer {
  step: NodeJS.Timeout | null = null;
}

export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout(callback, delayMs) {
    // A timer of no delay runs once this turn's I/O callbacks have (setImmediate): Node's
    // setTimeout waits a millisecond at least, which a follower told a commit a turn later, or
    // work that yields between its parts, waited each time. (NaN too: Node's would be 1 ms.)
    // A member's timers must not keep the process alive once the app lets go of it (unref).
    if (!(delayMs > 0)) return new Immediate(setImmediate(callback).unref());
    if (delayMs <= MAX_TIMER_DELAY_MS) return setTimeout(callback, delayMs).unref();
    const long = new LongTimer();
    const dueAt = performance.now() + delayMs;
    const step = (): void => {
      const left = dueAt - performance.now();
      if (left <= 0) {
        long.step = null;
        callback();
        return;
      }
      long.step = setTimeout(step, Math.min(left, MAX_TIMER_DELAY_MS)).unref();
    };
    step();
    return long;
  },
  clearTimeout(handle) {
    if (handle instanceof Immediate) clearImmediate(handle.immediate);
    else if (handle instanceof LongTimer) {
      if (handle.step !== null) clearTimeout(handle.step);
      handle.step = null;
    } else clearTimeout(handle as NodeJS.Timeout);
  },
};

/** Resolves on a later turn of the event loop (a timer of no delay): long work yields there, between its parts, to what waits. */
export function nextTurn(timers: Timers): Promise<void> {
  return new Promise((resolve) => timers.setTimeout(resolve, 0));
}
