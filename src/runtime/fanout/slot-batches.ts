import type { EmitOrigin } from '../../fanout/command.js';
import type { SettledBatch } from '../../fanout/state.js';

/**
 * What the slots of jobs emitted (`ctx.emit`), for `history()`: per slot, its batches and their
 * items, and how many settled, done or dead. Kept by every member from the commands it applies,
 * so it covers what this member applied since it started (a batch emitted before a snapshot it
 * restored counts from the snapshot on: its emit is not applied again), bounded to the newest
 * MAX_SLOTS_WITH_BATCHES slots.
 */

/** Slots whose batches are kept, the newest. */
export const MAX_SLOTS_WITH_BATCHES = 1000;

/** A slot's batches as history() shows them. */
export interface SlotBatches {
  readonly batches: number;
  readonly items: number;
  /** Batches not yet settled. */
  readonly open: number;
  readonly done: number;
  readonly dead: number;
}

interface Tally {
  batches: number;
  items: number;
  open: number;
  done: number;
  dead: number;
}

export class SlotBatchTally {
  readonly #bySlot = new Map<string, Tally>();
  /** Open batches (emit index) of slots kept: bounded by the state's unsettled batches. */
  readonly #slotOf = new Map<number, string>();

  /** An emit of `count` items from `origin`'s slot applied at `index`. */
  emitted(index: number, origin: EmitOrigin, count: number): void {
    const key = keyOf(origin.job, origin.slotMs);
    let tally = this.#bySlot.get(key);
    if (tally === undefined) {
      tally = { batches: 0, items: 0, open: 0, done: 0, dead: 0 };
      this.#bySlot.set(key, tally);
      if (this.#bySlot.size > MAX_SLOTS_WITH_BATCHES) this.#forget(this.#bySlot.keys().next().value as string);
    }
    tally.batches++;
    tally.items += count;
    tally.open++;
    this.#slotOf.set(index, key);
  }

  /** A batch settled (any, of a slot or not). */
  settled(batch: SettledBatch): void {
    const key = this.#slotOf.get(batch.index);
    if (key === undefined) return;
    this.#slotOf.delete(batch.index);
    const tally = this.#bySlot.get(key);
    if (tally === undefined) return;
    tally.open--;
    tally.done += batch.done;
    tally.dead += batch.dead;
  }

  of(job: string, slotMs: number): SlotBatches | null {
    const tally = this.#bySlot.get(keyOf(job, slotMs));
    return tally === undefined ? null : { ...tally };
  }

  #forget(key: string): void {
    this.#bySlot.delete(key);
    for (const [index, slot] of this.#slotOf) if (slot === key) this.#slotOf.delete(index);
  }
}

function keyOf(job: string, slotMs: number): string {
  return `${job}\n${slotMs}`;
}
