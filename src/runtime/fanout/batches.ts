import { InvalidArgumentError, NotRunningError, TimeoutError } from '../../errors.js';
import type { FanoutState, SettledBatch } from '../../fanout/state.js';
import { optionsObject } from '../../option-checks.js';

/**
 * The batches this member emitted (issue 19), until each has settled: `emit` hands back a
 * Batch whose `settled()` resolves once every item of it succeeded or went to the dead letters,
 * with the counts. An emit of more than MAX_ITEMS_PER_EMIT items is several entries of the log,
 * one batch of the state each; the Batch sums them. What is tracked is bounded by the state's
 * own bound on unsettled items (every batch tracked holds at least one), and by
 * RECENT_SETTLED_KEPT for batches that settled before `track` saw them.
 */

/** How a batch ended: its items, those that succeeded, those that went to the dead letters. */
export interface BatchSummary {
  readonly topic: string;
  readonly count: number;
  readonly done: number;
  readonly dead: number;
}

/** What an emit hands back. */
export interface Batch {
  /** The index of its first entry in the log. */
  readonly id: number;
  readonly topic: string;
  /** Its items. */
  readonly count: number;
  /**
   * Resolves once every item succeeded or went to the dead letters.
   * @throws TimeoutError after `timeoutMs`; NotRunningError if the member stops first
   */
  settled(options?: { readonly timeoutMs?: number }): Promise<BatchSummary>;
}

/**
 * Settlements kept after they happened, for a batch whose emit is still being answered when it
 * settles (its items all ran before the last of its entries came back): the newest are kept.
 */
export const RECENT_SETTLED_KEPT = 1024;

/** An entry of a batch: its items, the id of the first. */
interface EntryItems {
  readonly count: number;
  readonly firstId: number;
}

/**
 * How the batch of `entry` (an emit entry at `index` of `topic`) settled, as far as a state
 * restored from a snapshot can say, once it holds the batch no longer: the items of it among the
 * topic's dead letters went dead, the others succeeded. (A dead letter emitted again, or
 * forgotten past the dead letters' bounds, the topic's count or the bytes of all, before the
 * snapshot, counts as done.)
 */
export function settledInSnapshot(state: FanoutState, topic: string, index: number, entry: EntryItems): SettledBatch {
  let dead = 0;
  const end = entry.firstId + entry.count;
  for (const letter of state.topics.get(topic)?.deadLetters ?? []) if (letter.id >= entry.firstId && letter.id < end) dead++;
  return { index, topic, total: entry.count, done: entry.count - dead, dead };
}

interface Tracked {
  readonly id: number;
  readonly topic: string;
  readonly count: number;
  /** Entries not settled yet, with their items. */
  readonly open: Map<number, EntryItems>;
  done: number;
  dead: number;
  readonly waiters: Array<{ resolve: (summary: BatchSummary) => void; reject: (error: Error) => void }>;
  summary: BatchSummary | null;
}

export class BatchTracker {
  /** Entry index → the batch it belongs to, for batches not yet settled. */
  readonly #byEntry = new Map<number, Tracked>();
  /** Entry index → its settlement, the newest RECENT_SETTLED_KEPT, in order. */
  readonly #recent = new Map<number, SettledBatch>();
  readonly #onSettled: (batch: Batch, summary: BatchSummary) => void;
  readonly #setTimeout: (fn: () => void, ms: number) => () => void;
  readonly #stuck: (topic: string) => string | null;
  #stopped = false;

  /**
   * `setTimeout` returns a function that cancels it. `onSettled`: a batch of this member's
   * settled. `stuck`: why a topic's items would not settle, if that is known (no member consumes
   * it), for the message of a wait that timed out: an emit to a topic nobody consumes is taken,
   * and its items wait, so the timeout alone told nothing of the cause.
   */
  constructor(setTimeout: (fn: () => void, ms: number) => () => void, onSettled: (batch: Batch, summary: BatchSummary) => void, stuck: (topic: string) => string | null = () => null) {
    this.#setTimeout = setTimeout;
    this.#onSettled = onSettled;
    this.#stuck = stuck;
  }

  /** Batches emitted here and not yet settled. */
  get open(): number {
    return new Set(this.#byEntry.values()).size;
  }

  /** Any member's batch (an entry of the log) settled, as applied here. */
  settled(batch: SettledBatch): void {
    const tracked = this.#byEntry.get(batch.index);
    if (tracked === undefined) {
      this.#recent.set(batch.index, batch);
      if (this.#recent.size > RECENT_SETTLED_KEPT) this.#recent.delete(this.#recent.keys().next().value as number);
      return;
    }
    this.#byEntry.delete(batch.index);
    this.#add(tracked, batch);
  }

  /** An emit's entries (index and items each), applied: the Batch the caller gets. */
  track(topic: string, entries: ReadonlyArray<{ readonly index: number; readonly count: number; readonly firstId: number }>): Batch {
    const tracked: Tracked = { id: entries[0]?.index ?? 0, topic, count: 0, open: new Map(), done: 0, dead: 0, waiters: [], summary: null };
    for (const entry of entries) {
      (tracked as { count: number }).count += entry.count;
      tracked.open.set(entry.index, { count: entry.count, firstId: entry.firstId });
      this.#byEntry.set(entry.index, tracked);
    }
    for (const entry of entries) {
      const early = this.#recent.get(entry.index);
      if (early === undefined) continue;
      this.#recent.delete(entry.index);
      this.#byEntry.delete(entry.index);
      this.#add(tracked, early);
    }
    // An emit of nothing (a requeue that found none of its ids) is settled as it is made.
    if (entries.length === 0) tracked.summary = { topic, count: 0, done: 0, dead: 0 };
    return {
      id: tracked.id,
      topic,
      count: tracked.count,
      settled: (options) => {
        let timeoutMs: number | undefined;
        try {
          timeoutMs = optionsObject(options, ['timeoutMs']).timeoutMs;
        } catch (error) {
          return Promise.reject(error as Error);
        }
        return this.#wait(tracked, timeoutMs);
      },
    };
  }

  /**
   * The state was replaced by a leader's snapshot: an entry tracked here that it no longer holds
   * as a batch settled in the entries the snapshot stands for, whose `done` never applied here.
   */
  restored(state: FanoutState): void {
    for (const [index, tracked] of [...this.#byEntry]) {
      const entry = tracked.open.get(index);
      if (state.batches.has(index) || entry === undefined) continue;
      this.#byEntry.delete(index);
      this.#add(tracked, settledInSnapshot(state, tracked.topic, index, entry));
    }
  }

  /** The member stops: whoever waits is told. */
  stop(): void {
    this.#stopped = true;
    const all = new Set(this.#byEntry.values());
    this.#byEntry.clear();
    for (const tracked of all) for (const w of tracked.waiters.splice(0)) w.reject(new NotRunningError('stopped'));
  }

  #add(tracked: Tracked, batch: SettledBatch): void {
    tracked.open.delete(batch.index);
    tracked.done += batch.done;
    tracked.dead += batch.dead;
    if (tracked.open.size > 0) return;
    const summary: BatchSummary = { topic: tracked.topic, count: tracked.count, done: tracked.done, dead: tracked.dead };
    tracked.summary = summary;
    for (const w of tracked.waiters.splice(0)) w.resolve(summary);
    this.#onSettled({ id: tracked.id, topic: tracked.topic, count: tracked.count, settled: () => Promise.resolve(summary) }, summary);
  }

  #wait(tracked: Tracked, timeoutMs: number | undefined): Promise<BatchSummary> {
    if (timeoutMs !== undefined && (!Number.isSafeInteger(timeoutMs) || timeoutMs < 0)) return Promise.reject(new InvalidArgumentError('timeoutMs', timeoutMs, 'a whole number of milliseconds, 0 or more'));
    if (tracked.summary !== null) return Promise.resolve(tracked.summary);
    if (this.#stopped) return Promise.reject(new NotRunningError('stopped'));
    return new Promise<BatchSummary>((resolve, reject) => {
      let cancel: (() => void) | null = null;
      const waiter = {
        resolve: (summary: BatchSummary): void => {
          cancel?.();
          resolve(summary);
        },
        reject: (error: Error): void => {
          cancel?.();
          reject(error);
        },
      };
      tracked.waiters.push(waiter);
      if (timeoutMs !== undefined) {
        cancel = this.#setTimeout(() => {
          const i = tracked.waiters.indexOf(waiter);
          if (i >= 0) tracked.waiters.splice(i, 1);
          const stuck = this.#stuck(tracked.topic);
          reject(new TimeoutError(`The batch ${tracked.id} of ${tracked.topic}${stuck === null ? '' : ` (${stuck})`}`, timeoutMs));
        }, timeoutMs);
      }
    });
  }
}
