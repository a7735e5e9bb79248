import type { EmitOrigin } from '../../fanout/command.js';
import type { FanoutState, SettledBatch } from '../../fanout/state.js';
import { settledInSnapshot } from './batches.js';

/**
 * What the slots of jobs emitted (`ctx.emit`), for `history()`: per slot, its batches and their
 * items, and how many settled, done or dead. Kept by every member from the commands it applies,
 * so it covers what this member applied since it started (a batch emitted before a snapshot it
 * restored counts from the snapshot on: its emit is not applied again; one open when a leader's
 * snapshot came settles as the snapshot shows, see settledInSnapshot), bounded to the newest
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

/** An open batch of a slot kept: the slot, and the emit's topic and items. */
interface OpenBatch {
  readonly slot: string;
  readonly topic: string;
  readonly count: number;
  readonly firstId: number;
}

export class SlotBatchTally {
  readonly #bySlot = new Map<string, Tally>();
  /** Open batches (emit index) of slots kept: bounded by the state's unsettled batches. */
  readonly #slotOf = new Map<number, OpenBatch>();

  /** An emit of `emit.count` items (the first `emit.firstId`) to `emit.topic` from `origin`'s slot, applied at `index`. */
  emitted(index: number, origin: EmitOrigin, emit: { readonly topic: string; readonly count: number; readonly firstId: number }): void {
    const count = emit.count;
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
    this.#slotOf.set(index, { slot: key, topic: emit.topic, count, firstId: emit.firstId });
  }

  /** A batch settled (any, of a slot or not). */
  settled(batch: SettledBatch): void {
    const open = this.#slotOf.get(batch.index);
    if (open === undefined) return;
    this.#slotOf.delete(batch.index);
    const tally = this.#bySlot.get(open.slot);
    if (tally === undefined) return;
    tally.open--;
    tally.done += batch.done;
    tally.dead += batch.dead;
  }

  of(job: string, slotMs: number): SlotBatches | null {
    const tally = this.#bySlot.get(keyOf(job, slotMs));
    return tally === undefined ? null : { ...tally };
  }

  /** The state was replaced by a leader's snapshot: the open batches it no longer holds settled meanwhile (see settledInSnapshot). */
  restored(state: FanoutState): void {
    for (const [index, open] of [...this.#slotOf]) if (!state.batches.has(index)) this.settled(settledInSnapshot(state, open.topic, index, open));
  }

  #forget(key: string): void {
    this.#bySlot.delete(key);
    for (const [index, open] of this.#slotOf) if (open.slot === key) this.#slotOf.delete(index);
  }
}

function keyOf(job: string, slotMs: number): string {
  return `${job}\n${slotMs}`;
}
