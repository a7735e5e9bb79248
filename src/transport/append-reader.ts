/**
 * Reads the frame of an append with entries, the one frame a follower reads on every commit, in
 * one pass over its bytes: the value cborg's `decode` would give for it, for codec.ts to validate
 * as it validates every frame. Anything not in the exact shape an append is encoded in (by
 * codec.ts and cbor-heads.ts) is left to cborg, by returning undefined: another type of message,
 * a non-ASCII string, an integer past 2^53, a head cborg's strict mode would reject, trailing
 * bytes. So this reader decides nothing cborg would decide differently; the tests check it
 * against cborg on valid and corrupted frames alike. (One difference no caller can see: cborg
 * gives one shared empty Uint8Array for every empty byte string, this reader a new one each.)
 *
 * Why: cborg builds a token per value and each short string a character at a time. For the 64
 * entries of an append that was about half of a follower's allocation under load (measured with
 * a sampling heap profile) and about a tenth of its main thread's busy time. A/B in alternating
 * windows of one run: 25,109 against 24,341 commits/s with 64 proposers.
 */

import { CBOR_ARRAY, CBOR_UINT } from '../bytes/cbor-heads.js';
import { CborReader, NOT_HANDLED } from '../bytes/cbor-reader.js';
import { ENTRY_RECORD_FIELDS } from '../bytes/entry-records.js';

/** The fewest bytes an entry record takes: its head and five one-byte items. */
const MIN_ENTRY_BYTES = 1 + ENTRY_RECORD_FIELDS;

/** The frame's items: version, cluster, type, from, to, term, prevIndex, prevTerm, commit, entries. */
const APPEND_FRAME_ITEMS = 10;

/**
 * The value cborg's `decode` gives for `bytes` when they hold an append (type code `appendCode`)
 * in the form codec.ts encodes it in; undefined when they hold anything else, for cborg to
 * decode. `maxEntries` bounds the entries read here: past it, cborg decodes and codec.ts rejects.
 */
export function readAppendWire(bytes: Uint8Array, appendCode: number, maxEntries: number): unknown[] | undefined {
  // An array of fewer than 24 items has a head of one byte: a frame of another length (a
  // heartbeat, a vote) is turned away before a reader is made for it.
  if (bytes[0] !== (CBOR_ARRAY | APPEND_FRAME_ITEMS)) return undefined;
  const r = new CborReader(bytes);
  r.pos = 1;
  const version = r.head(CBOR_UINT);
  const clusterStart = r.skipAscii();
  const clusterEnd = r.pos;
  const code = r.head(CBOR_UINT);
  // Most frames turned away here (responses, heartbeats) cost no string and no view.
  if (version === NOT_HANDLED || clusterStart === NOT_HANDLED || code !== appendCode) return undefined;
  const clusterId = r.text(clusterStart, clusterEnd);
  const from = r.ascii();
  const to = r.ascii();
  const term = r.head(CBOR_UINT);
  const prevIndex = r.head(CBOR_UINT);
  const prevTerm = r.head(CBOR_UINT);
  const commit = r.head(CBOR_UINT);
  if (from === undefined || to === undefined || term === NOT_HANDLED || prevIndex === NOT_HANDLED || prevTerm === NOT_HANDLED || commit === NOT_HANDLED) return undefined;
  const count = r.head(CBOR_ARRAY);
  // A count the bytes left cannot hold is cborg's to reject, before an array is made for it.
  if (count === NOT_HANDLED || count > maxEntries || count * MIN_ENTRY_BYTES > bytes.length - r.pos) return undefined;
  const entries = new Array<unknown[]>(count);
  for (let i = 0; i < count; i++) {
    if (r.head(CBOR_ARRAY) !== ENTRY_RECORD_FIELDS) return undefined;
    const index = r.head(CBOR_UINT);
    const entryTerm = r.head(CBOR_UINT);
    const type = r.head(CBOR_UINT);
    const data = r.bytes();
    const pid = r.ascii();
    if (index === NOT_HANDLED || entryTerm === NOT_HANDLED || type === NOT_HANDLED || data === undefined || pid === undefined) return undefined;
    entries[i] = [index, entryTerm, type, data, pid];
  }
  // cborg rejects bytes after the value.
  if (!r.done) return undefined;
  return [version, clusterId, code, from, to, term, prevIndex, prevTerm, commit, entries];
}
