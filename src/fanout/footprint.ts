import type { DeadLetter, ItemRecord } from './records.js';

/** Encodes an error's start within what is left of the state's bound (textWithin). */
const cutter = new TextEncoder();

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

/** What a topic's record takes in a snapshot beyond its name and consumers, at most: its heads, its six counts (9 bytes each) and the heads of its lists. */
export const TOPIC_RECORD_BYTES = 80;

/** What a consumer's record takes in its topic's list beyond its member's name, at most: its head and six numbers (9 bytes each) and its name's head. */
export const CONSUMER_RECORD_BYTES = 64;

/** What a topic's record takes in a snapshot, at most, before any consumer (FANOUT_DEFAULTS.maxTopicBytes bounds the sum with its consumers'). */
export function topicBytes(name: string): number {
  return TOPIC_RECORD_BYTES + textBytes(name);
}

/** What `member`'s consumer record takes in its topic's list, at most. */
export function consumerBytes(member: string): number {
  return CONSUMER_RECORD_BYTES + textBytes(member);
}

/**
 * The UTF-8 bytes of a string as CBOR holds it, exactly (a lone surrogate is U+FFFD, 3 bytes, as
 * Node's encoder writes it too). Counted rather than bounded by 3 a code unit: names are mostly
 * ASCII, and three times their length made an emit of 100,000 small items from a slot take a
 * fifth more of the state's bound than the snapshot does.
 */
export function textBytes(text: string | null | undefined): number {
  return text === null || text === undefined ? 0 : Buffer.byteLength(text, 'utf8');
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
  // The encoder writes whole characters only, a pair of surrogates whole, as many as fit.
  const { read } = cutter.encodeInto(text, new Uint8Array(Math.max(0, Math.floor(maxBytes))));
  return read === 0 ? null : text.slice(0, read);
}
