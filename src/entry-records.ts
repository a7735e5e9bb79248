import type { Entry } from './raft/types.js';
import { encodeSmallSequence } from './small-cbor.js';

/** At most the bytes an entry record takes besides its data and pid: its header and integers. */
const ENTRY_RECORD_OVERHEAD_BYTES = 40;

/**
 * The record of a log entry, as storage writes it and an append message carries it:
 * [index, term, type, data, pid].
 */
export function entryRecord(entry: Entry): unknown[] {
  return [entry.index, entry.term, entry.type, entry.data, entry.pid];
}

interface EncodedRun {
  readonly first: Entry;
  readonly last: Entry;
  readonly length: number;
  readonly bytes: Uint8Array;
}

let lastRun: EncodedRun | null = null;

/**
 * The records of a run of entries, CBOR-encoded one after another (a CBOR sequence, RFC 8742):
 * a leader's segment in storage is these bytes, and an append message's entries are an array
 * header followed by them (see codec.ts). So the run a leader appends is encoded once, not once
 * for its own write and once more for each follower: measured here, cborg's encoding of entries
 * was over a third of a leader's allocation under load, mostly arrays it builds for each integer
 * and short string.
 *
 * The last run encoded is kept, and found again by its first and last entry and its length:
 * entries are never changed, and a log that replaces an entry replaces every entry after it, so
 * the same first and last entry objects over the same length are the same run. Keeping it pins
 * the one slab of Node's buffer pool it may sit in (see encodeSmall), until the next run. The
 * entries must not be changed once encoded, nor the bytes by anyone. `entries` holds at least one.
 */
export function encodeEntryRecords(entries: readonly Entry[]): Uint8Array {
  const first = entries[0] as Entry;
  const last = entries[entries.length - 1] as Entry;
  const run = lastRun;
  if (run !== null && run.first === first && run.last === last && run.length === entries.length) return run.bytes;
  // An upper bound, so that a run too large for encodeSmall's scratch buffer skips it.
  let knownBytes = 0;
  for (const entry of entries) knownBytes += entry.data.byteLength + entry.pid.length * 3 + ENTRY_RECORD_OVERHEAD_BYTES;
  const bytes = encodeSmallSequence(entries.map(entryRecord), knownBytes);
  lastRun = { first, last, length: entries.length, bytes };
  return bytes;
}
