import { encode } from 'cborg';
import { decode } from '../bytes/cbor-decode.js';
import { concatBytes } from '../bytes/concat-bytes.js';

/**
 * A member's snapshot: what its state machine holds, the scheduler's state and the cluster's
 * own (its version, what each member reads: ClusterVersionState). CBOR `[2, scheduler,
 * cluster]`, the scheduler's part a byte string, the cluster's a CBOR value. Format 3,
 * `[3, scheduler, cluster, fanout]`, adds fan-out's state (a byte string, state-snapshot.ts of
 * src/fanout/), written only once cluster version 3 (FANOUT_VERSION) is in force, so that no
 * member that reads format 2 alone ever meets it. Format 1, `[1, scheduler]`, was written before
 * the cluster's state existed (cronraft 0.1.0), and is read as the first cluster version with
 * no member announced. 0.1.0 reads format 1 only.
 */
export const MEMBER_SNAPSHOT_VERSION = 2;
const FORMAT_WITHOUT_CLUSTER = 1;
const FORMAT_WITH_FANOUT = 3;

/** A member snapshot's parts: `cluster` is null in a snapshot of format 1, `fanout` in one before format 3. */
export interface MemberSnapshotParts {
  readonly scheduler: Uint8Array;
  readonly cluster: unknown;
  readonly fanout: Uint8Array | null;
}

/**
 * The scheduler's part may come in pieces (see schedulerSnapshotSteps), joined here into the one
 * buffer: the CBOR head is written by hand, as cborg would (the shortest form of the length),
 * rather than have cborg copy a large byte string once more, which held the loop for as long.
 */
export function encodeMemberSnapshot(scheduler: Uint8Array | readonly Uint8Array[], cluster: Uint8Array, fanout: Uint8Array | null = null): Uint8Array {
  return concatBytes(memberSnapshotPieces(scheduler instanceof Uint8Array ? [scheduler] : scheduler, cluster, fanout === null ? null : [fanout]));
}

/**
 * The pieces of a member snapshot that together are encodeMemberSnapshot's bytes, for a caller
 * that joins them itself. `cluster`: the cluster's state, CBOR-encoded (encodeClusterPart).
 */
export function memberSnapshotPieces(scheduler: readonly Uint8Array[], cluster: Uint8Array, fanout: readonly Uint8Array[] | null = null): Uint8Array[] {
  const length = lengthOf(scheduler);
  // An array of three (0x83), the version (an unsigned integer below 24 is its own head), then
  // the byte string's head and its bytes, then the cluster's value; of four (0x84) with fan-out's
  // byte string after it.
  if (fanout === null) return [Uint8Array.of(0x83, MEMBER_SNAPSHOT_VERSION), byteStringHeadFor(length), ...scheduler, cluster];
  return [Uint8Array.of(0x84, FORMAT_WITH_FANOUT), byteStringHeadFor(length), ...scheduler, cluster, byteStringHeadFor(lengthOf(fanout)), ...fanout];
}

function lengthOf(pieces: readonly Uint8Array[]): number {
  let length = 0;
  for (const piece of pieces) length += piece.byteLength;
  return length;
}

/** The cluster's part of a member snapshot (ClusterVersionState.save's value), encoded. */
export function encodeClusterPart(saved: unknown): Uint8Array {
  return encode(saved);
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

/** A member snapshot's parts, or null when the bytes are not a member snapshot of a format this release reads. */
export function decodeMemberSnapshot(data: Uint8Array): MemberSnapshotParts | null {
  let value: unknown;
  try {
    value = decode(data, { strict: true, allowUndefined: false, useMaps: false, tags: [] });
  } catch {
    return null;
  }
  if (!Array.isArray(value) || !(value[1] instanceof Uint8Array)) return null;
  if (value.length === 2 && value[0] === FORMAT_WITHOUT_CLUSTER) return { scheduler: value[1], cluster: null, fanout: null };
  if (value.length === 3 && value[0] === MEMBER_SNAPSHOT_VERSION && value[2] !== null) return { scheduler: value[1], cluster: value[2], fanout: null };
  if (value.length === 4 && value[0] === FORMAT_WITH_FANOUT && value[2] !== null && value[3] instanceof Uint8Array) return { scheduler: value[1], cluster: value[2], fanout: value[3] };
  return null;
}
