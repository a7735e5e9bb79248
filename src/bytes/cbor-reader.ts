/**
 * A reader of CBOR for the hand-written decoders of the values read on every commit (an append's
 * frame: transport/append-reader.ts; a fan-out command's entry: runtime/fanout/entry-codec.ts).
 * It reads only what those values are written in: heads in their shortest form, ASCII text,
 * byte strings, null and float64. Each read of anything else says NOT_HANDLED (or undefined),
 * and its decoder leaves the whole value to cborg, so that it decides nothing cborg would decide
 * differently.
 */

import { CBOR_BYTES, CBOR_FLOAT64, CBOR_NULL, CBOR_TEXT, CBOR_UINT, TWO_POW_32 } from './cbor-heads.js';

/** Returned by a read that found something this reader leaves to cborg. */
export const NOT_HANDLED = -1;


/** Where a float64's eight bytes are copied to be read, big-endian as CBOR writes them: no view made per number. */
const float64Bytes = new Uint8Array(8);
const float64View = new DataView(float64Bytes.buffer);

export class CborReader {
  pos = 0;
  readonly #bytes: Uint8Array;
  /** Views of the bytes made when first needed: a value turned away at its first bytes needs neither. */
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

  /** A number written as an unsigned integer or a float64; NOT_HANDLED for anything else (a float64 that is NaN included, which cborg reads as NaN). */
  number(): number {
    const b = this.#bytes;
    const at = this.pos;
    if (b[at] !== CBOR_FLOAT64) return this.head(CBOR_UINT);
    if (at + 9 > b.length) return NOT_HANDLED;
    for (let i = 0; i < 8; i++) float64Bytes[i] = b[at + 1 + i] as number;
    const value = float64View.getFloat64(0);
    if (Number.isNaN(value)) return NOT_HANDLED;
    this.pos = at + 9;
    return value;
  }

  /** Steps over a null and says so; says false, and reads nothing, for anything else. */
  null(): boolean {
    if (this.#bytes[this.pos] !== CBOR_NULL) return false;
    this.pos++;
    return true;
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

  /** Steps over the ASCII text string `expected` (a map's key); false, for anything else. */
  key(expected: string): boolean {
    const b = this.#bytes;
    const at = this.pos;
    const length = expected.length;
    if (length >= 24 || b[at] !== (CBOR_TEXT | length) || at + 1 + length > b.length) return false;
    for (let i = 0; i < length; i++) if (b[at + 1 + i] !== expected.charCodeAt(i)) return false;
    this.pos = at + 1 + length;
    return true;
  }

  /** The characters from `start` to `end`, found ASCII by skipAscii. */
  text(start: number, end: number): string {
    const b = this.#bytes;
    this.#latin1 ??= Buffer.isBuffer(b) ? b : Buffer.from(b.buffer, b.byteOffset, b.byteLength);
    return this.#latin1.toString('latin1', start, end);
  }

  /** A byte string, copied out as cborg copies it; undefined for anything else. */
  bytes(): Uint8Array | undefined {
    const length = this.head(CBOR_BYTES);
    if (length === NOT_HANDLED) return undefined;
    const start = this.pos;
    if (start + length > this.#bytes.length) return undefined;
    this.pos = start + length;
    // Frames arrive as Buffers. Bytes are sliced out of a plain Uint8Array view, as cborg slices
    // them: a plain Uint8Array of its own, where a Buffer's slice would be a Buffer.
    const b = this.#bytes;
    this.#plain ??= Buffer.isBuffer(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b;
    return this.#plain.slice(start, start + length);
  }

  /** Bytes not read yet. */
  get left(): number {
    return this.#bytes.length - this.pos;
  }

  get done(): boolean {
    return this.pos === this.#bytes.length;
  }
}

function uint32(b: Uint8Array, at: number): number {
  return (((b[at] as number) << 24) >>> 0) + (((b[at + 1] as number) << 16) | ((b[at + 2] as number) << 8) | (b[at + 3] as number));
}
