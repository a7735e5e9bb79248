import { decode } from 'cborg';
import { concatBytes } from '../bytes/concat-bytes.js';

/**
 * A member's snapshot: what its state machine holds, which today is the scheduler's state.
 * CBOR `[version, scheduler]`, versioned apart from the scheduler's own encoding so that state
 * of another kind can join it later without a guess at what old bytes mean.
 */
export const MEMBER_SNAPSHOT_VERSION = 1;

/**
 * The scheduler's part may come in pieces (see schedulerSnapshotSteps), joined here into the one
 * buffer: the CBOR head is written by hand, as cborg would (the shortest form of the length),
 * rather than have cborg copy a large byte string once more, which held the loop for as long.
 */
export function encodeMemberSnapshot(scheduler: Uint8Array | readonly Uint8Array[]): Uint8Array {
  return concatBytes(memberSnapshotPieces(scheduler instanceof Uint8Array ? [scheduler] : scheduler));
}

/** The pieces of a member snapshot that together are encodeMemberSnapshot's bytes, for a caller that joins them itself. */
export function memberSnapshotPieces(scheduler: readonly Uint8Array[]): Uint8Array[] {
  let length = 0;
  for (const piece of scheduler) length += piece.byteLength;
  // An array of two (0x82), the version (an unsigned integer below 24 is its own head), then the
  // byte string's head and its bytes.
  return [Uint8Array.of(0x82, MEMBER_SNAPSHOT_VERSION), byteStringHeadFor(length), ...scheduler];
}

/** CBOR major type 2 (byte string) with its length in the shortest form, as RFC 8949 section 4.2.1 requires. */
function byteStringHeadFor(length: number): Uint8Array {
  const MAJOR_BYTES = 0x40;
  if (length < 24) return Uint8Array.of(MAJOR_BYTES | length);
  if (length < 0x100) return Uint8Array.of(MAJOR_BYTES | 24, length);
  if (length < 0x10000) return Uint8Array.of(MAJOR_BYTES | 25, length >>> 8, length & 0xff);
  if (length < 0x100000000) return Uint8Array.of(MAJOR_BYTES | 26, length >>> 24, (length >>> 16) & 0xff, (length >>> 8) & 0xff, length & 0xff);
  throw new RangeError(`A snapshot of ${length} bytes is past what a member snapshot holds (4 GiB)`);
}

/** The scheduler's part of a member snapshot, or null when the bytes are not one this version reads. */
export function decodeMemberSnapshot(data: Uint8Array): Uint8Array | null {
  let value: unknown;
  try {
    value = decode(data, { strict: true, allowUndefined: false, useMaps: false, tags: [] });
  } catch {
    return null;
  }
  if (!Array.isArray(value) || value.length !== 2 || value[0] !== MEMBER_SNAPSHOT_VERSION || !(value[1] instanceof Uint8Array)) return null;
  return value[1];
}
