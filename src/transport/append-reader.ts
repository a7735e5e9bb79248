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

import { CBOR_ARRAY, CBOR_BYTES, CBOR_TEXT, CBOR_UINT, TWO_POW_32 } from '../bytes/cbor-heads.js';
import { ENTRY_RECORD_FIELDS } from '../bytes/entry-records.js';

/** The fewest bytes an entry record takes: its head and five one-byte items. */
const MIN_ENTRY_BYTES = 1 + ENTRY_RECORD_FIELDS;

/** The frame's items: version, cluster, type, from, to, term, prevIndex, prevTerm, commit, entries. */
const APPEND_FRAME_ITEMS = 10;

/** Returned by a read that found something this reader leaves to cborg. */
const NOT_HANDLED = -1;

class Reader {
  pos = 0;
  readonly #bytes: Uint8Array;
  /** Views of the frame made when first needed: a frame of another type, turned away at its type code, needs neither. */
  #plain: Uint8Array | null = null;
  #latin1: Buffer | null = null;

  constructor(bytes: Uint8Array) {
    this.#bytes = bytes;
  }

  /** The argument of a head of major type `major` (CBOR_UINT and the like, in the top three bits) in its shortest form, as strict cborg requires; NOT_HANDLED otherwise. */
  head(major: number): number {
    const b = this.#bytes;
    const at = this.pos;
    if (at >= b.length) return NOT_HANDLED;
    const initial = b[at] as number;
    if ((initial & 0xe0) !== major) return NOT_HANDLED;
    const info = initial & 0x1f;
    if (info < 24) {
      this.pos = at + 1;
      return info;
    }
    const size = info === 24 ? 1 : info === 25 ? 2 : info === 26 ? 4 : info === 27 ? 8 : 0;
    if (size === 0 || at + 1 + size > b.length) return NOT_HANDLED;
    let n: number;
    if (size === 1) n = b[at + 1] as number;
    else if (size === 2) n = ((b[at + 1] as number) << 8) | (b[at + 2] as number);
    else if (size === 4) n = uint32(b, at + 1);
    else {
      const high = uint32(b, at + 1);
      // 2^53 and more is not a safe integer: cborg's call (it rejects it without BigInt).
      if (high >= 0x20_0000) return NOT_HANDLED;
      n = high * TWO_POW_32 + uint32(b, at + 5);
    }
    // Not the shortest form: strict cborg rejects it, so it gets to.
    const least = size === 1 ? 24 : size === 2 ? 0x100 : size === 4 ? 0x1_0000 : TWO_POW_32;
    if (n < least) return NOT_HANDLED;
    this.pos = at + 1 + size;
    return n;
  }

  /** A text string of ASCII characters; undefined for anything else. */
  ascii(): string | undefined {
    const start = this.skipAscii();
    return start === NOT_HANDLED ? undefined : this.text(start, this.pos);
  }

  /** Steps over a text string of ASCII characters and returns where its characters start; NOT_HANDLED for anything else. */
  skipAscii(): number {
    const length = this.head(CBOR_TEXT);
    if (length === NOT_HANDLED) return NOT_HANDLED;
    const start = this.pos;
    const end = start + length;
    if (end > this.#bytes.length) return NOT_HANDLED;
    for (let i = start; i < end; i++) if ((this.#bytes[i] as number) > 0x7f) return NOT_HANDLED;
    this.pos = end;
    return start;
  }

  /** The characters from `start` to `end`, found ASCII by skipAscii. */
  text(start: number, end: number): string {
    const b = this.#bytes;
    this.#latin1 ??= Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    return this.#latin1.toString('latin1', start, end);
  }

  /** A byte string, copied out of the frame as cborg copies it; undefined for anything else. */
  bytes(): Uint8Array | undefined {
    const length = this.head(CBOR_BYTES);
    if (length === NOT_HANDLED) return undefined;
    const start = this.pos;
    if (start + length > this.#bytes.length) return undefined;
    this.pos = start + length;
    // Frames arrive as Buffers. Entry data is sliced out of a plain Uint8Array view, as cborg
    // slices it: a plain Uint8Array of its own, where a Buffer's slice would be a Buffer.
    const b = this.#bytes;
    this.#plain ??= Buffer.isBuffer(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b;
    return this.#plain.slice(start, start + length);
  }

  get done(): boolean {
    return this.pos === this.#bytes.length;
  }
}

function uint32(b: Uint8Array, at: number): number {
  return (((b[at] as number) << 24) >>> 0) + (((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number));
}

/**
 * The value cborg's `decode` gives for `bytes` when they hold an append (type code `appendCode`)
 * in the form codec.ts encodes it in; undefined when they hold anything else, for cborg to
 * decode. `maxEntries` bounds the entries read here: past it, cborg decodes and codec.ts rejects.
 */
export function readAppendWire(bytes: Uint8Array, appendCode: number, maxEntries: number): unknown[] | undefined {
  // An array of fewer than 24 items has a head of one byte: a frame of another length (a
  // heartbeat, a vote) is turned away before a reader is made for it.
  if (bytes[0] !== (CBOR_ARRAY | APPEND_FRAME_ITEMS)) return undefined;
  const r = new Reader(bytes);
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
