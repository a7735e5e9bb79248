/**
 * A waiting run's priority rises by one level for every this many milliseconds it waits, so a
 * run of low priority is overtaken only by runs at most (difference of priorities) x this
 * later than itself, and never starves.
 */
export const PRIORITY_AGING_MS = 1000;

/** Bound on runs waiting on one member for a free run permit (maxConcurrent). */
export const MAX_WAITING_RUNS = 10_000;

interface Entry<T> {
  readonly item: T;
  /** Effective priority, scaled by the aging step and shifted by a constant: see `push`. */
  readonly key: number;
  readonly seq: number;
}

/**
 * Runs waiting for a free run permit on a member: higher priority first, first come first served
 * within a priority, and aging so that none starves. Pure: the caller gives every time.
 *
 * A run's effective priority at time `now` is `priority + (now - enqueuedAt) / agingMs`. For two
 * waiting runs the difference of their effective priorities does not change with `now`, so the
 * order is fixed when they are pushed: by `priority * agingMs - enqueuedAt` (exact in integers),
 * then by arrival.
 */
export class RunQueue<T> {
  readonly #entries: Array<Entry<T>> = [];
  readonly #agingMs: number;
  #seq = 0;

  constructor(agingMs: number = PRIORITY_AGING_MS) {
    this.#agingMs = agingMs;
  }

  get size(): number {
    return this.#entries.length;
  }

  push(item: T, priority: number, enqueuedAtMs: number): void {
    this.#entries.push({ item, key: priority * this.#agingMs - enqueuedAtMs, seq: this.#seq++ });
  }

  /** Removes and returns the run to start next, or undefined if none waits. */
  shift(): T | undefined {
    // A linear scan: the queue is bounded (MAX_WAITING_RUNS) and is read once per run started.
    let best = -1;
    for (let i = 0; i < this.#entries.length; i++) {
      const e = this.#entries[i] as Entry<T>;
      const b = this.#entries[best];
      if (b === undefined || e.key > b.key || (e.key === b.key && e.seq < b.seq)) best = i;
    }
    if (best < 0) return undefined;
    return this.#entries.splice(best, 1)[0]?.item;
  }

  /** Removes a run that no longer waits (its claim moved, or the member stops). */
  remove(item: T): boolean {
    const i = this.#entries.findIndex((e) => e.item === item);
    if (i < 0) return false;
    this.#entries.splice(i, 1);
    return true;
  }

  /** The items in the order they would start. */
  order(): T[] {
    return [...this.#entries].sort((a, b) => b.key - a.key || a.seq - b.seq).map((e) => e.item);
  }
}

/** A waiting run's effective priority at `nowMs` (for inspection; the queue orders by it). */
export function effectivePriority(priority: number, enqueuedAtMs: number, nowMs: number, agingMs: number = PRIORITY_AGING_MS): number {
  return priority + Math.max(0, nowMs - enqueuedAtMs) / agingMs;
}
