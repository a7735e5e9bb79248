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

/**
 * Bytes of items (their data, and their keys at three bytes a character) one entry of an emit
 * holds at most, besides MAX_ITEMS_PER_EMIT items: an entry is replicated whole, and sixty-five
 * items of 64 KiB passed what one message of the transport holds (an entry past the leader's
 * bound is refused, raft/config.ts maxEntryBytes; this keeps every entry, its envelope and
 * its keys well below it).
 */
export const MAX_EMIT_ENTRY_BYTES = 1024 * 1024;

/** Where each entry's items start in `items`, in order, and then `items.length`: at most MAX_ITEMS_PER_EMIT items and MAX_EMIT_ENTRY_BYTES to an entry, at least one item. */
export function entryBounds(items: readonly EmittedItem[]): number[] {
  const bounds = [0];
  let count = 0;
  let bytes = 0;
  items.forEach((item, i) => {
    const size = item.data.byteLength + 3 * (item.key?.length ?? 0);
    if (count > 0 && (count === MAX_ITEMS_PER_EMIT || bytes + size > MAX_EMIT_ENTRY_BYTES)) {
      bounds.push(i);
      count = 0;
      bytes = 0;
    }
    count++;
    bytes += size;
  });
  bounds.push(items.length);
  return bounds;
}

/** An entry of an emit, applied: where it is in the log, how many items it holds, and the id of its first (the others follow it). */
export interface EmittedEntry {
  readonly index: number;
  readonly count: number;
  readonly firstId: number;
}

/** Proposes one entry of items; resolves with its index and fan-out's apply result once applied here. */
export type ProposeEntry = (items: readonly EmittedItem[]) => Promise<{ readonly index: number; readonly result: unknown }>;

/**
 * Proposes `items` in entries (entryBounds), in their order, at most
 * EMIT_ENTRIES_IN_FLIGHT at once, and resolves with the entries once all are applied. The
 * entries are proposed from this member in order and a proposal is never proposed again (a
 * forward whose leader changed fails, runtime/pending-requests.ts), so the entries of one emit
 * that are applied are in the log in the order of their items. When an entry fails, none more is
 * proposed; once those in flight are settled, it rejects with the first error, or, when the
 * topic refused an entry as too full, with BackpressureError naming the items kept. Once
 * `stopped` gives an error (a slot's run that emits aborted or ended), none more is proposed
 * either, and it rejects with that error once those in flight are settled.
 *
 * Entries in flight together may be kept or not each on its own (one lost on the way to the
 * leader, or refused, and the next applied), so a failed emit may keep items after some it did
 * not keep. An emit with keys goes one entry at a time: it keeps the entries before the one that
 * failed, and an app that emits again what was not kept keeps each key's items in their order.
 * @throws BackpressureError, and what `propose` throws
 */
export async function proposeEntries(
  topic: string,
  items: readonly EmittedItem[],
  propose: ProposeEntry,
  fullness: (count: number) => string = () => `the topic ${topic} holds too many unsettled items`,
  stopped: () => Error | null = () => null,
): Promise<EmittedEntry[]> {
  const bounds = entryBounds(items);
  const count = bounds.length - 1;
  const inFlight = items.some((item) => item.key !== null) ? 1 : EMIT_ENTRIES_IN_FLIGHT;
  const entries: EmittedEntry[] = [];
  let next = 0;
  // What stopped the emit (the first failure, or the first refusal), set by the proposers below.
  const stop: { failed: { readonly error: unknown } | null; refused: string | null; refusedCount: number } = { failed: null, refused: null, refusedCount: 0 };
  const proposeInTurn = async (): Promise<void> => {
    while (stop.failed === null && stop.refused === null && next < count) {
      // A slot's run that aborted or ended proposes no more of its emit (ctx.emit).
      const why = stopped();
      if (why !== null) {
        stop.failed ??= { error: why };
        break;
      }
      const k = next++;
      const chunk = items.slice(bounds[k], bounds[k + 1]);
      try {
        const { index, result } = await propose(chunk);
        const applied = result as FanoutApplyResult;
        if (!applied.ok) {
          if (stop.refused === null) {
            stop.refused = applied.reason;
            stop.refusedCount = chunk.length;
          }
          continue;
        }
        entries[k] = { index, count: chunk.length, firstId: applied.firstId ?? 0 };
      } catch (error) {
        stop.failed ??= { error };
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(inFlight, count) }, proposeInTurn));
  if (stop.failed !== null) throw stop.failed.error;
  const kept = keptRanges(entries, bounds);
  if (stop.refused === 'too-many-topics') throw new BackpressureError(`The cluster holds as many topics as it may (their number or their bytes), and ${topic} is not among them${keptText(kept)}`, kept);
  if (stop.refused !== null) throw new BackpressureError(`The emit to ${topic} was refused (${stop.refused}): ${fullness(stop.refusedCount)}${keptText(kept)}`, kept);
  return entries;
}

/** The items of the entries applied (of those `bounds` makes), by their places in the emit, as ranges `[first, last]`. */
function keptRanges(entries: readonly (EmittedEntry | undefined)[], bounds: readonly number[]): Array<readonly [number, number]> {
  const count = bounds.length - 1;
  const ranges: Array<readonly [number, number]> = [];
  for (let k = 0; k < count; k++) {
    if (entries[k] === undefined) continue;
    let last = k;
    while (last + 1 < count && entries[last + 1] !== undefined) last++;
    ranges.push([bounds[k] as number, (bounds[last + 1] as number) - 1]);
    k = last;
  }
  return ranges;
}

/** The kept ranges as the error's message says them: `; 2048 items of this emit were kept: the items at 0-1023, 3072-4095`, or nothing. */
function keptText(ranges: ReadonlyArray<readonly [number, number]>): string {
  if (ranges.length === 0) return '';
  const kept = ranges.reduce((sum, [first, last]) => sum + last - first + 1, 0);
  return `; ${kept} items of this emit were kept: the items at ${ranges.map(([first, last]) => `${first}-${last}`).join(', ')}`;
}
