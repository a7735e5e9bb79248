import type { DeadLetter, ItemRecord } from './records.js';

/**
 * What an unsettled item's record takes in a snapshot of fan-out's state (state-snapshot.ts)
 * beyond its data and its text, at most: its numbers (id, batch, counts, times: a CBOR number is
 * at most 9 bytes), its topic's place, the heads of its arrays, strings and bytes, and its id in
 * its topic's ready set.
 */
export const ITEM_RECORD_BYTES = 96;

/** What an emit's batch record takes in a snapshot, at most (its index, topic's place and three counts, and its head). */
export const BATCH_RECORD_BYTES = 32;

/** What a dead letter's record takes in a snapshot beyond its data and its text, at most. */
export const DEAD_LETTER_RECORD_BYTES = 64;

/** The most UTF-8 bytes a string may take: 3 for each UTF-16 code unit (a pair of two takes 4, counted 6). */
export function textBytes(text: string | null | undefined): number {
  return text === null || text === undefined ? 0 : 3 * text.length;
}

/**
 * What an unsettled item's record takes in a snapshot, at most: its data, its key, its origin's
 * job, its last error, the member of its lease, and the rest (ITEM_RECORD_BYTES). The state
 * bounds their sum, with its batches' (FANOUT_DEFAULTS.maxUnsettledBytes), so that fan-out's part
 * of a member's snapshot stays within what a follower takes in (MAX_SNAPSHOT_BYTES).
 */
export function itemBytes(item: Pick<ItemRecord, 'data' | 'key' | 'origin' | 'lastError' | 'phase'>): number {
  const member = item.phase.kind === 'leased' ? item.phase.member : null;
  return item.data.byteLength + textBytes(item.key) + textBytes(item.origin?.job) + textBytes(item.lastError) + textBytes(member) + ITEM_RECORD_BYTES;
}

/** What a dead letter's record takes in a snapshot, at most (as itemBytes; FANOUT_DEFAULTS.maxDeadLetterBytes bounds their sum). */
export function deadLetterBytes(letter: DeadLetter): number {
  return letter.data.byteLength + textBytes(letter.key) + textBytes(letter.origin?.job) + textBytes(letter.error) + DEAD_LETTER_RECORD_BYTES;
}

/**
 * The longest start of `text` whose UTF-8 takes at most `maxBytes` by textBytes' count (whole:
 * a pair of surrogates is not cut), or null when none of it fits: an error kept within what is
 * left of the state's bound.
 */
export function textWithin(text: string, maxBytes: number): string | null {
  if (textBytes(text) <= maxBytes) return text;
  let length = Math.floor(Math.max(0, maxBytes) / 3);
  const last = text.charCodeAt(length - 1);
  if (length > 0 && last >= 0xd800 && last <= 0xdbff) length--;
  return length === 0 ? null : text.slice(0, length);
}
