import { BackpressureError } from '../../errors.js';
import { MAX_ITEMS_PER_EMIT, type EmittedItem } from '../../fanout/command.js';
import type { FanoutApplyResult } from '../../fanout/state.js';

/**
 * Entries of one emit proposed and not yet applied, at most. One at a time, a large emit
 * proposed each entry once the one before was applied, so that it took a commit round per
 * MAX_ITEMS_PER_EMIT items, and in the fan-out bench most of the time from the first emit to the
 * last item done was the emit. With a few in flight, the leader replicates and syncs an entry
 * while the one before commits. Few, so that one emit holds a small part of the member's pending
 * proposals (maxPendingProposals) and of what its peers' queues carry at once.
 */
export const EMIT_ENTRIES_IN_FLIGHT = 4;

/** An entry of an emit, applied: where it is in the log and how many items it holds. */
export interface EmittedEntry {
  readonly index: number;
  readonly count: number;
}

/** Proposes one entry of items; resolves with its index and fan-out's apply result once applied here. */
export type ProposeEntry = (items: readonly EmittedItem[]) => Promise<{ readonly index: number; readonly result: unknown }>;

/**
 * Proposes `items` in entries of MAX_ITEMS_PER_EMIT, in their order, at most
 * EMIT_ENTRIES_IN_FLIGHT at once, and resolves with the entries once all are applied. The
 * entries are proposed from this member in order and a proposal is never proposed again (a
 * forward whose leader changed fails, runtime/pending-requests.ts), so the entries of one emit
 * that are applied are in the log in the order of their items. When an entry fails, none more is
 * proposed; once those in flight are settled, it rejects with the first error, or, when the
 * topic refused an entry as too full, with BackpressureError naming the items kept.
 *
 * Entries in flight together may be kept or not each on its own (one lost on the way to the
 * leader, or refused, and the next applied), so a failed emit may keep items after some it did
 * not keep. An emit with keys goes one entry at a time: it keeps the entries before the one that
 * failed, and an app that emits again what was not kept keeps each key's items in their order.
 * @throws BackpressureError, and what `propose` throws
 */
export async function proposeEntries(topic: string, items: readonly EmittedItem[], propose: ProposeEntry): Promise<EmittedEntry[]> {
  const count = Math.ceil(items.length / MAX_ITEMS_PER_EMIT);
  const inFlight = items.some((item) => item.key !== null) ? 1 : EMIT_ENTRIES_IN_FLIGHT;
  const entries: EmittedEntry[] = [];
  let next = 0;
  // What stopped the emit (the first failure, or the first refusal), set by the proposers below.
  const stop: { failed: { readonly error: unknown } | null; refused: string | null } = { failed: null, refused: null };
  const proposeInTurn = async (): Promise<void> => {
    while (stop.failed === null && stop.refused === null && next < count) {
      const k = next++;
      const chunk = items.slice(k * MAX_ITEMS_PER_EMIT, (k + 1) * MAX_ITEMS_PER_EMIT);
      try {
        const { index, result } = await propose(chunk);
        const applied = result as FanoutApplyResult;
        if (!applied.ok) {
          stop.refused ??= applied.reason;
          continue;
        }
        entries[k] = { index, count: chunk.length };
      } catch (error) {
        stop.failed ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, proposeInTurn));
  if (stop.failed !== null) throw stop.failed.error;
  if (stop.refused !== null) throw new BackpressureError(`The topic ${topic} holds too many unsettled items (${stop.refused})${keptText(entries, count)}`);
  return entries;
}

/** The items of the entries applied (of `count`), by their places in the emit as ranges: `; 2048 items of this emit were kept: the items at 0-1023, 3072-4095`, or nothing. */
function keptText(entries: readonly (EmittedEntry | undefined)[], count: number): string {
  const kept = entries.reduce((sum, entry) => sum + (entry?.count ?? 0), 0);
  if (kept === 0) return '';
  const ranges: string[] = [];
  for (let k = 0; k < count; k++) {
    if (entries[k] === undefined) continue;
    let last = k;
    while (last + 1 < count && entries[last + 1] !== undefined) last++;
    ranges.push(`${k * MAX_ITEMS_PER_EMIT}-${last * MAX_ITEMS_PER_EMIT + (entries[last] as EmittedEntry).count - 1}`);
    k = last;
  }
  return `; ${kept} items of this emit were kept: the items at ${ranges.join(', ')}`;
}
