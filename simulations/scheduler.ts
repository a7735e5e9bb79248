import type { Clock, TimerHandle, Timers } from '../src/time/clock.js';

interface Event {
  readonly atMs: number;
  readonly seq: number;
  readonly run: () => void;
  cancelled: boolean;
}

/**
 * Virtual time: a queue of events ordered by (time, order of scheduling). Nothing here reads
 * the real clock, so a run is the same every time for the same seed. The queue is a binary
 * heap; ties break by scheduling order, which keeps runs deterministic.
 */
export class SimScheduler {
  #nowMs = 0;
  #seq = 0;
  readonly #heap: Event[] = [];

  get nowMs(): number {
    return this.#nowMs;
  }

  get pending(): number {
    return this.#heap.length;
  }

  at(atMs: number, run: () => void): Event {
    const event: Event = { atMs: Math.max(atMs, this.#nowMs), seq: this.#seq++, run, cancelled: false };
    this.#push(event);
    return event;
  }

  after(delayMs: number, run: () => void): Event {
    return this.at(this.#nowMs + Math.max(0, delayMs), run);
  }

  /** The time of the next event not cancelled, or null when none is left. */
  nextAt(): number | null {
    while (this.#heap[0]?.cancelled === true) this.#pop();
    return this.#heap[0]?.atMs ?? null;
  }

  /** Runs the next event, advancing time to it. Returns false when none is left before `untilMs`. */
  step(untilMs: number): boolean {
    for (;;) {
      const next = this.#heap[0];
      if (next === undefined || next.atMs > untilMs) return false;
      this.#pop();
      if (next.cancelled) continue;
      this.#nowMs = next.atMs;
      next.run();
      return true;
    }
  }

  /** Timers for code under test: virtual, cancellable. */
  timers(): Timers {
    return {
      now: () => this.#nowMs,
      setTimeout: (callback: () => void, delayMs: number): TimerHandle => this.after(delayMs, callback),
      clearTimeout: (handle: TimerHandle): void => {
        (handle as Event).cancelled = true;
      },
    };
  }

  /** A clock reading virtual time plus an offset (a member's skew), in epoch-like milliseconds. */
  clock(offsetMs: () => number = () => 0): Clock {
    return { now: () => SIM_EPOCH_MS + this.#nowMs + offsetMs() };
  }

  #less(a: Event, b: Event): boolean {
    return a.atMs < b.atMs || (a.atMs === b.atMs && a.seq < b.seq);
  }

  #push(event: Event): void {
    const h = this.#heap;
    h.push(event);
    let i = h.length - 1;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (!this.#less(h[i] as Event, h[parent] as Event)) break;
      [h[i], h[parent]] = [h[parent] as Event, h[i] as Event];
      i = parent;
    }
  }

  #pop(): void {
    const h = this.#heap;
    const last = h.pop() as Event;
    if (h.length === 0) return;
    h[0] = last;
    let i = 0;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let m = i;
      if (l < h.length && this.#less(h[l] as Event, h[m] as Event)) m = l;
      if (r < h.length && this.#less(h[r] as Event, h[m] as Event)) m = r;
      if (m === i) return;
      [h[i], h[m]] = [h[m] as Event, h[i] as Event];
      i = m;
    }
  }
}

/** Virtual time 0 is this instant (2026-01-01), so clocks read plausible dates. */
export const SIM_EPOCH_MS = Date.UTC(2026, 0, 1);

/** Lets every promise continuation queued so far run, so async code settles between events. */
export async function drainMicrotasks(): Promise<void> {
  for (let i = 0; i < 16; i++) await null;
}
