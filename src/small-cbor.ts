import { encode, encodeInto } from 'cborg';
import { headBytes } from './cbor-heads.js';
import { concatBytes } from './concat-bytes.js';

/**
 * The size of the scratch buffer encodeSmall writes into. A value whose encoding does not fit
 * goes through cborg's `encode` instead, the same bytes, after the failed attempt: callers that
 * can tell a large value beforehand say so, and skip the attempt (see encodeSmall's `knownBytes`).
 */
export const SMALL_CBOR_SCRATCH_BYTES = 64 * 1024;

/** Byte strings of more than this, in total, make a value too large for encodeSmall to be worth trying. */
export const SMALL_CBOR_MAX_BYTES_HINT = SMALL_CBOR_SCRATCH_BYTES - 1024;

const scratch = new Uint8Array(SMALL_CBOR_SCRATCH_BYTES);

/**
 * CBOR-encodes a small value the way cborg's `encode` does, at a fraction of its cost: for a log
 * entry on its way to storage, which every member encodes for each entry it stores, and for a
 * proposed command.
 *
 * Why: `encode` writes a byte string of 64 bytes or more as a chunk of its own and joins the
 * chunks at the end, and its result may get a backing store of its own, which V8 allocates and
 * frees outside its heap. Measured on Node 20 here: 1.6 µs against 0.5 µs for a stored entry
 * holding 80 bytes. Here cborg encodes into one reused buffer (`encodeInto`, the same encoder),
 * and the result is copied into Node's pool of small buffers, where an allocation is a slice of
 * a shared slab.
 *
 * That slab stays alive as long as any slice of it does: use this for bytes that are soon done
 * with (a write to storage, a pending proposal's command), not for bytes kept for long (see
 * ByteArena). The result is always a plain Uint8Array (a view of the pooled Buffer). Not
 * reentrant, and need not be: encoding runs to completion synchronously.
 *
 * `knownBytes`: bytes the caller knows the value holds in byte strings and strings (3 per UTF-16
 * unit at most); above SMALL_CBOR_MAX_BYTES_HINT the value goes to `encode` at once.
 */
export function encodeSmall(value: unknown, knownBytes = 0): Uint8Array {
  if (knownBytes > SMALL_CBOR_MAX_BYTES_HINT) return encode(value);
  let written: number;
  try {
    written = encodeInto(value, scratch).written;
  } catch {
    // Too large for the scratch buffer, or not encodable at all: `encode` gives the same bytes,
    // or throws the same error the caller would have seen before.
    return encode(value);
  }
  return copyOut(written);
}

/**
 * CBOR-encodes values one after another, a CBOR sequence (RFC 8742), as encodeSmall encodes one:
 * into the scratch buffer, then one copy. For the segment a save writes (see level-layout.ts):
 * one value for all its entries rather than one per entry.
 *
 * CBOR writes an array as its header and then its items, so the sequence is the array's
 * encoding without its header: one call to the encoder, rather than one per value, each with
 * its own setup and view of the buffer (measured here: 17 µs against 46 µs for the records of 64 log entries).
 */
export function encodeSmallSequence(values: readonly unknown[], knownBytes = 0): Uint8Array {
  // More values than that could not fit the scratch buffer, a byte each at least.
  if (knownBytes <= SMALL_CBOR_MAX_BYTES_HINT && values.length < SMALL_CBOR_SCRATCH_BYTES) {
    try {
      const written = encodeInto(values, scratch).written;
      return copyOut(written, headBytes(values.length));
    } catch {
      // Too large for the scratch buffer: one encoding per value, joined, as below.
    }
  }
  return concatBytes(values.map((value) => encode(value)));
}

/** Bytes `from` to `written` of the scratch buffer, in Node's pool of small buffers when they fit one. */
function copyOut(written: number, from = 0): Uint8Array {
  const out = pooledBytes(written - from);
  out.set(scratch.subarray(from, written));
  return out;
}

/**
 * `length` bytes, not zeroed, in Node's pool of small buffers when they fit one (see encodeSmall
 * for what that means for their lifetime), as a plain Uint8Array.
 */
export function pooledBytes(length: number): Uint8Array {
  const out = Buffer.allocUnsafe(length);
  return new Uint8Array(out.buffer, out.byteOffset, length);
}

/**
 * What `write` writes from the start of a buffer of at least `bound` bytes, up to the position it
 * returns, copied out as encodeSmall's result is: for a writer of CBOR's heads (cbor-heads.ts)
 * that knows a bound of its output. Past the scratch buffer's size it writes into a buffer of
 * its own, of which the result is a view.
 */
export function writeSmall(bound: number, write: (out: Uint8Array) => number): Uint8Array {
  if (bound > SMALL_CBOR_SCRATCH_BYTES) {
    const out = new Uint8Array(bound);
    return out.subarray(0, write(out));
  }
  return copyOut(write(scratch));
}
