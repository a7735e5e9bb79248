import { encode } from 'cborg';
import { CBOR_ARRAY, CBOR_UINT, isHeadArgument, MAX_HEAD_BYTES, writeBytes, writeHead, writeText } from './cbor-heads.js';
import { concatBytes } from './concat-bytes.js';
import type { Entry } from '../raft/types.js';
import { writeSmall } from './small-cbor.js';

/** The fields of an entry record: index, term, type, data, pid. */
export const ENTRY_RECORD_FIELDS = 5;

/** At most the bytes a record's heads take: the array's, three integers' and those of data and pid. */
const ENTRY_RECORD_HEAD_BYTES = 1 + 5 * MAX_HEAD_BYTES;

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

/**
 * The records of a run of entries, CBOR-encoded one after another (a CBOR sequence, RFC 8742):
 * a leader's segment in storage is these bytes, and an append message's entries are an array
 * header followed by them (see codec.ts). Encodes afresh every time; a member encodes through
 * its EntryRecords, which keeps the last run.
 */
export function encodeEntryRecords(entries: readonly Entry[]): Uint8Array {
  return writeRecords(entries) ?? encodeWithCborg(entries);
}

/**
 * One member's encoder of entry records, shared by its storage and its transport, so the run a
 * leader appends is encoded once, not once for its own write and once more for each follower:
 * cborg's encoding of entries was over a third of a leader's allocation under load, mostly arrays
 * it builds for each integer and short string.
 *
 * The last run encoded is kept, and found again by its first and last entry and its length:
 * entries are never changed, and a log that replaces an entry replaces every entry after it, so
 * the same first and last entry objects over the same length are the same run. Keeping it pins
 * the one slab of Node's buffer pool it may sit in (see encodeSmall), until the next run. The
 * entries must not be changed once encoded, nor the bytes by anyone. A member's, not the
 * process's: members in one process (tests, the simulator) share nothing.
 */
export class EntryRecords {
  #last: EncodedRun | null = null;

  /** The records of `entries`, which holds at least one: the last run's bytes again if it is that run. */
  encode(entries: readonly Entry[]): Uint8Array {
    const first = entries[0] as Entry;
    const last = entries[entries.length - 1] as Entry;
    const run = this.#last;
    if (run !== null && run.first === first && run.last === last && run.length === entries.length) return run.bytes;
    const bytes = encodeEntryRecords(entries);
    this.#last = { first, last, length: entries.length, bytes };
    return bytes;
  }
}

/**
 * The records written head by head (cbor-heads.ts), the same bytes cborg writes; null if a
 * field is not what a record holds, for cborg to encode as it would or to throw as it would.
 */
function writeRecords(entries: readonly Entry[]): Uint8Array | null {
  let bound = 0;
  for (const entry of entries) {
    if (!isHeadArgument(entry.index) || !isHeadArgument(entry.term) || !isHeadArgument(entry.type)) return null;
    if (!(entry.data instanceof Uint8Array) || typeof entry.pid !== 'string') return null;
    bound += ENTRY_RECORD_HEAD_BYTES + entry.data.length + entry.pid.length * 3;
  }
  return writeSmall(bound, (out) => {
    let pos = 0;
    for (const entry of entries) {
      out[pos++] = CBOR_ARRAY | ENTRY_RECORD_FIELDS;
      pos = writeHead(out, pos, CBOR_UINT, entry.index);
      pos = writeHead(out, pos, CBOR_UINT, entry.term);
      pos = writeHead(out, pos, CBOR_UINT, entry.type);
      pos = writeBytes(out, pos, entry.data);
      pos = writeText(out, pos, entry.pid);
    }
    return pos;
  });
}

function encodeWithCborg(entries: readonly Entry[]): Uint8Array {
  return concatBytes(entries.map((entry) => encode(entryRecord(entry))));
}
