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

export const systemTimers: Timers = {
  now: () => performance.now(),
  setTimeout(callback, delayMs) {
    // A timer of no delay runs once this turn's I/O callbacks have (setImmediate): Node's
    // setTimeout waits a millisecond at least, which a follower told a commit a turn later, or
    // work that yields between its parts, waited each time.
    // A member's timers must not keep the process alive once the app lets go of it (unref).
    if (delayMs <= 0) return new Immediate(setImmediate(callback).unref());
    return setTimeout(callback, delayMs).unref();
  },
  clearTimeout(handle) {
    if (handle instanceof Immediate) clearImmediate(handle.immediate);
    else clearTimeout(handle as NodeJS.Timeout);
  },
};

/** Resolves on a later turn of the event loop (a timer of no delay): long work yields there, between its parts, to what waits. */
export function nextTurn(timers: Timers): Promise<void> {
  return new Promise((resolve) => timers.setTimeout(resolve, 0));
}
