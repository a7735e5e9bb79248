// The one place that imports cborg's decoders (eslint.config.js): every other decodes through it.
// eslint-disable-next-line no-restricted-imports
import { decode as cborgDecode, decodeFirst as cborgDecodeFirst, Token, Tokenizer, Type, type DecodeOptions } from 'cborg';

/**
 * cborg's decoding, with each text string as it was encoded. cborg decodes a text string with a
 * TextDecoder of the default settings, which drops a leading U+FEFF (a byte order mark): a string
 * that starts with one came back without it. A topic '\ufeffx' became 'x' in the log, its items
 * ran on x's consumer and its own never ran; a job, a lock or a key so named became another's,
 * and an error recorded lost it. (An item's value is JSON text in a byte string, never touched.)
 * The log's entries are read so only from EXACT_TEXT_VERSION on (commands.ts decodeEntry).
 */

/** cborg's defaults, which its decoders read from the tokenizer's options (decode.js). */
const CBORG_DEFAULTS: DecodeOptions = { strict: false, allowIndefinite: true, allowUndefined: true, allowBigInt: true };

/** The bytes of U+FEFF in UTF-8. */
const BOM = [0xef, 0xbb, 0xbf] as const;

/** UTF-8 as written, a leading U+FEFF kept, and a malformed sequence made U+FFFD as cborg's decoder makes it. */
const exactText = new TextDecoder('utf-8', { ignoreBOM: true });

/**
 * cborg's tokenizer, whose text strings that start with U+FEFF are decoded again here, with the
 * leading U+FEFF kept: decoded anew rather than the character put back, so that a cborg (or a
 * runtime's TextDecoder) that keeps it does not get two.
 */
class TextKeepingTokenizer extends Tokenizer {
  override next(): Token {
    const start = this.pos();
    const token = super.next();
    if (token.type !== Type.string) return token;
    const head = headLength(this.data[start] as number);
    const end = start + (token.encodedLength ?? 0);
    if (end - (start + head) < BOM.length || !startsWithBom(this.data, start + head)) return token;
    // A new token: cborg hands out shared ones for some values (the empty string's, say).
    return new Token(Type.string, exactText.decode(this.data.subarray(start + head, end)), token.encodedLength);
  }
}

/** The length of a CBOR head whose first byte is `first`: its argument follows in 0, 1, 2, 4 or 8 bytes. */
function headLength(first: number): number {
  const info = first & 0x1f;
  return info < 24 ? 1 : info === 24 ? 2 : info === 25 ? 3 : info === 26 ? 5 : 9;
}

function startsWithBom(data: Uint8Array, at: number): boolean {
  return data[at] === BOM[0] && data[at + 1] === BOM[1] && data[at + 2] === BOM[2];
}

/**
 * Per options object a caller passes (most pass one constant), cborg's defaults merged with it
 * for the tokenizer, and the options handed to cborg, whose tokenizer is set anew for each call:
 * cborg copies the options as a call begins, so one object serves every call. Merged afresh on
 * each call, they were a measurable part of a leader's work under fan-out's load.
 */
const prepared = new WeakMap<DecodeOptions, { readonly merged: DecodeOptions; readonly call: DecodeOptions }>();
const NO_OPTIONS: DecodeOptions = {};

function withTokenizer(data: Uint8Array, given: DecodeOptions | null | undefined): DecodeOptions {
  const options = given ?? NO_OPTIONS;
  let p = prepared.get(options);
  if (p === undefined) {
    const merged = { ...CBORG_DEFAULTS, ...options };
    p = { merged, call: { ...merged } };
    prepared.set(options, p);
  }
  // As cborg reads a Buffer: as a plain Uint8Array, whose slice() copies (a Buffer's shares).
  const bytes = Object.getPrototypeOf(data) === Uint8Array.prototype ? data : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  p.call.tokenizer = new TextKeepingTokenizer(bytes, p.merged);
  return p.call;
}

/** cborg's decode, every text string as it was encoded. */
export function decode(data: Uint8Array, options?: DecodeOptions): unknown {
  // No byte 0xEF, no U+FEFF to keep: cborg alone, without a tokenizer of this module's (most
  // frames, a heartbeat's and an answer's, whose decoding the tokenizer made slower).
  if (data.indexOf(BOM[0]) === -1) return cborgDecode(data, options ?? undefined);
  const call = withTokenizer(data, options);
  try {
    return cborgDecode(data, call);
  } finally {
    // Not kept until the next call with these options: the tokenizer holds the bytes decoded.
    call.tokenizer = undefined;
  }
}

/**
 * cborg's own decode, which drops a leading U+FEFF from each text string: how cronraft 0.1.0
 * reads the log, and so how every member reads the entries applied under a cluster version
 * before EXACT_TEXT_VERSION (commands.ts decodeEntry), so that the members of both releases
 * read one log alike.
 */
export function decodeDroppingLeadingBom(data: Uint8Array): unknown {
  return cborgDecode(data);
}

/** cborg's decodeFirst, every text string as it was encoded. */
export function decodeFirst(data: Uint8Array, options?: DecodeOptions): [unknown, Uint8Array] {
  if (data.indexOf(BOM[0]) === -1) return cborgDecodeFirst(data, options ?? undefined) as [unknown, Uint8Array];
  const call = withTokenizer(data, options);
  try {
    return cborgDecodeFirst(data, call) as [unknown, Uint8Array];
  } finally {
    call.tokenizer = undefined;
  }
}
