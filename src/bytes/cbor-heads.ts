/**
 * CBOR's heads (RFC 8949, section 3), written straight into a buffer, for the two shapes the
 * commit path encodes on every proposal: an entry's record (entry-records.ts) and a user's
 * command (runtime/commands.ts); and the head an append's records are spliced after (codec.ts).
 * cborg stays the codec: everything else is encoded by it, every message is decoded by it, and
 * the tests check these writers byte for byte against it.
 *
 * Why: cborg builds an array for each integer of 24 or more, an array of char codes for each
 * short string and an iterator for each array it encodes. Encoding the records of 64 entries and
 * their commands that way was over a quarter of a leader's allocation under load (measured with
 * a sampling heap profile), and the scavenges it caused a good part of its GC time.
 */

/** Major types, shifted into a head's top three bits. */
export const CBOR_UINT = 0x00;
export const CBOR_BYTES = 0x40;
export const CBOR_TEXT = 0x60;
export const CBOR_ARRAY = 0x80;
export const CBOR_MAP = 0xa0;
/** CBOR's null, and the initial byte of a float64 (major type 7, additional information 27). */
export const CBOR_NULL = 0xf6;
export const CBOR_FLOAT64 = 0xfb;

/** The most bytes a head takes: the initial byte and an eight-byte argument. */
export const MAX_HEAD_BYTES = 9;

/** 2^32: arguments from here on take a head's eight-byte form. */
export const TWO_POW_32 = 0x1_0000_0000;

/**
 * Writes the head of major type `major` with argument `n` at `pos`, in the shortest form as
 * cborg does, and returns the position after it. `n` must be a safe non-negative integer, and
 * `out` must have MAX_HEAD_BYTES from `pos`.
 */
export function writeHead(out: Uint8Array, pos: number, major: number, n: number): number {
  if (n < 24) {
    out[pos] = major | n;
    return pos + 1;
  }
  if (n < 0x100) {
    out[pos] = major | 24;
    out[pos + 1] = n;
    return pos + 2;
  }
  if (n < 0x1_0000) {
    out[pos] = major | 25;
    out[pos + 1] = n >>> 8;
    out[pos + 2] = n & 0xff;
    return pos + 3;
  }
  if (n < TWO_POW_32) {
    out[pos] = major | 26;
    writeUint32(out, pos + 1, n);
    return pos + 5;
  }
  out[pos] = major | 27;
  writeUint32(out, pos + 1, Math.floor(n / TWO_POW_32));
  writeUint32(out, pos + 5, n >>> 0);
  return pos + 9;
}

/** The bytes writeHead takes for argument `n`. */
export function headBytes(n: number): number {
  if (n < 24) return 1;
  if (n < 0x100) return 2;
  if (n < 0x1_0000) return 3;
  return n < TWO_POW_32 ? 5 : 9;
}

function writeUint32(out: Uint8Array, pos: number, n: number): void {
  out[pos] = n >>> 24;
  out[pos + 1] = (n >>> 16) & 0xff;
  out[pos + 2] = (n >>> 8) & 0xff;
  out[pos + 3] = n & 0xff;
}

/** The head of a CBOR array of `length` items, as cborg writes it. */
export function arrayHeader(length: number): Uint8Array {
  const out = new Uint8Array(headBytes(length));
  writeHead(out, 0, CBOR_ARRAY, length);
  return out;
}

/** Whether `n` fits a head's argument: a safe non-negative integer. */
export function isHeadArgument(n: unknown): n is number {
  return Number.isSafeInteger(n) && (n as number) >= 0;
}

/**
 * Whether writeNumber writes `n` in the bytes cborg writes for it: a safe non-negative integer
 * (a head), or a finite number that is no safe integer and that no float32 holds (a float64, as
 * the cluster's time in milliseconds mostly is). cborg writes the others in forms not written
 * here: a negative safe integer as one (major type 1), and the smallest float (16 or 32 bits)
 * that holds a number exactly.
 */
export function isWritableNumber(n: number): boolean {
  return isHeadArgument(n) || (!Number.isSafeInteger(n) && Number.isFinite(n) && Math.fround(n) !== n);
}

/** Where a float64 is written before its bytes are copied out, big-endian as CBOR writes it. */
const float64Bytes = new Uint8Array(8);
const float64View = new DataView(float64Bytes.buffer);

/** Writes `n`, which isWritableNumber must have said yes to, at `pos`, and returns the position after it; `out` must have MAX_HEAD_BYTES from `pos`. */
export function writeNumber(out: Uint8Array, pos: number, n: number): number {
  if (isHeadArgument(n)) return writeHead(out, pos, CBOR_UINT, n);
  float64View.setFloat64(0, n);
  out[pos] = CBOR_FLOAT64;
  out.set(float64Bytes, pos + 1);
  return pos + 9;
}

const textEncoder = new TextEncoder();

/**
 * Writes `text` as a CBOR text string at `pos` and returns the position after it. `out` must have
 * MAX_HEAD_BYTES + 3 bytes per UTF-16 unit of `text` from `pos`. Unpaired surrogates become
 * U+FFFD, as cborg writes them.
 */
export function writeText(out: Uint8Array, pos: number, text: string): number {
  const length = text.length;
  // ASCII, the usual case (a proposal's id), is copied char by char: no view, no encoder call.
  let ascii = true;
  for (let i = 0; i < length; i++) {
    if (text.charCodeAt(i) > 0x7f) {
      ascii = false;
      break;
    }
  }
  if (!ascii) {
    const utf8 = textEncoder.encode(text);
    const at = writeHead(out, pos, CBOR_TEXT, utf8.length);
    out.set(utf8, at);
    return at + utf8.length;
  }
  const at = writeHead(out, pos, CBOR_TEXT, length);
  for (let i = 0; i < length; i++) out[at + i] = text.charCodeAt(i);
  return at + length;
}

/** Writes `bytes` as a CBOR byte string at `pos` and returns the position after it. */
export function writeBytes(out: Uint8Array, pos: number, bytes: Uint8Array): number {
  const at = writeHead(out, pos, CBOR_BYTES, bytes.length);
  out.set(bytes, at);
  return at + bytes.length;
}
