/** Wall-clock time in milliseconds since the epoch; injected so simulations can skew or freeze it. */
export interface Clock {
  now(): number;
}

/** A handle returned by `Timers.setTimeout`. */
export type TimerHandle = unknown;

/** Timers, injected so that a simulation can run the runtime on virtual time. */
export interface Timers {
  setTimeout(callback: () => void, delayMs: number): TimerHandle;
  clearTimeout(handle: TimerHandle): void;
}

export const systemClock: Clock = {
  now: () => Date.now(),
};

export const systemTimers: Timers = {
  setTimeout(callback, delayMs) {
    const handle = setTimeout(callback, delayMs);
    // A member's timers must not keep the process alive once the app lets go of it.
    handle.unref();
    return handle;
  },
  clearTimeout(handle) {
    clearTimeout(handle as NodeJS.Timeout);
  },
};
