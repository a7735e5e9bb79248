import type { EmittedItem } from '../../fanout/command.js';
import { encodeEmitted, itemsOf } from '../../fanout/items.js';

/**
 * Items encoded in one turn of the event loop: an emit of many items, encoded all at once, held
 * the loop for as long as they all took; a turn at a time, the member goes on answering its
 * peers and firing its slots between the turns.
 */
export const ITEMS_ENCODED_PER_TURN = 1024;

/**
 * The items of an emit, encoded and checked, all before anything is proposed: one that does not
 * encode, or is too large, rejects with InvalidArgumentError and nothing of the call is kept.
 * ITEMS_ENCODED_PER_TURN at a time, waiting for `nextTurn` between them: the array is copied at
 * the call, and the values in it are read until this resolves.
 */
export async function encodeItems(items: readonly unknown[], key: ((item: unknown, index: number) => string | null) | undefined, nextTurn: () => Promise<void>): Promise<EmittedItem[]> {
  const list = itemsOf(items);
  const encoded: EmittedItem[] = [];
  for (let from = 0; from < list.length; from += ITEMS_ENCODED_PER_TURN) {
    if (from > 0) await nextTurn();
    const to = Math.min(list.length, from + ITEMS_ENCODED_PER_TURN);
    for (let i = from; i < to; i++) encoded.push(encodeEmitted(list[i], i, key));
  }
  return encoded;
}
