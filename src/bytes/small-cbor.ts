import { encode, encodeInto } from 'cborg';

/**
 * The size of the scratch buffer encodeSmall and writeSmall write into. A value encodeSmall
 * cannot fit there goes through cborg's `encode` instead, the same bytes, after the failed
 * attempt; a writer whose bound is larger writes into a buffer of its own (see writeSmall).
 */
export const SMALL_CBOR_SCRATCH_BYTES = 64 * 1024;

const scratch = new Uint8Array(SMALL_CBOR_SCRATCH_BYTES);

/**
 * CBOR-encodes a small value the way cborg's `encode` does, at a fraction of its cost: for a
 * scheduler command (the shapes encoded on every proposal are written by cbor-heads.ts).
 *
 * Why: `encode` writes a byte string of 64 bytes or more as a chunk of its own and joins the
 * chunks at the end, and its result may get a backing store of its own, which V8 allocates and
 * frees outside its heap, at several times the cost of the copy below. Here cborg encodes into one reused buffer (`encodeInto`, the same encoder),
 * and the result is copied into Node's pool of small buffers, where an allocation is a slice of
 * a shared slab.
 *
 * That slab stays alive as long as any slice of it does: use this for bytes that are soon done
 * with (a write to storage, a pending proposal's command), not for bytes kept for long (see
 * ByteArena). The result is always a plain Uint8Array (a view of the pooled Buffer). Not
 * reentrant, and need not be: encoding runs to completion synchronously.
 */
export function encodeSmall(value: unknown): Uint8Array {
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

/** The first `written` bytes of the scratch buffer, in Node's pool of small buffers when they fit one. */
function copyOut(written: number): Uint8Array {
  const out = pooledBytes(written);
  out.set(scratch.subarray(0, written));
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
