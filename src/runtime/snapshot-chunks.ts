import { sameConfiguration } from '../raft/configuration.js';
import type { Configuration, NodeId, SnapshotMessage, SnapshotMeta } from '../raft/types.js';
import type { SnapshotChunk } from '../transport/envelope.js';
import { MAX_SNAPSHOT_BYTES } from '../transport/constants.js';

/**
 * Bytes of snapshot data in one message: well under the transport's 4 MiB frame, so a chunk and
 * its header always fit, and small enough that one chunk does not hold a link for long.
 */
export const SNAPSHOT_CHUNK_BYTES = 1024 * 1024;

/**
 * The most chunks one snapshot is gathered from (at the largest snapshot, 8 KiB a chunk on
 * average). Each chunk held costs memory of its own, and taking one in costs time linear in the
 * chunks held (their ordered offsets are kept in an array), so a peer sending a snapshot a byte
 * at a time must not be able to make a member keep millions of them. The sender makes its
 * chunks larger when a snapshot would need more.
 */
export const MAX_SNAPSHOT_CHUNKS = 4096;

/**
 * A snapshot partly received is dropped once no chunk of it came for this long: its leader
 * died or moved on (to entries, or to a newer snapshot, whose chunks would replace it anyway),
 * and what was gathered, up to MAX_SNAPSHOT_BYTES, should not be held for nothing.
 */
export const SNAPSHOT_ASSEMBLY_IDLE_MS = 30_000;

/**
 * Splits a snapshot message into chunks of at most `chunkBytes` (more when that would make more
 * than MAX_SNAPSHOT_CHUNKS), in order. A snapshot that fits in one goes as it is.
 */
export function splitSnapshot(m: SnapshotMessage, chunkBytes = SNAPSHOT_CHUNK_BYTES): SnapshotChunk[] {
  const { data } = m.snapshot;
  if (data.byteLength <= chunkBytes) return [m];
  const size = Math.max(chunkBytes, Math.ceil(data.byteLength / MAX_SNAPSHOT_CHUNKS));
  const out: SnapshotChunk[] = [];
  for (let offset = 0; offset < data.byteLength; offset += size) {
    const chunk = data.subarray(offset, Math.min(data.byteLength, offset + size));
    // Every chunk carries the configuration (a few ids): whichever arrives first starts the assembly.
    out.push({ ...m, snapshot: { ...withConf(m.snapshot.index, m.snapshot.term, m.snapshot.conf), data: chunk }, chunk: { offset, total: data.byteLength } });
  }
  return out;
}

interface Assembly {
  readonly from: NodeId;
  readonly term: number;
  readonly index: number;
  readonly snapshotTerm: number;
  readonly conf: Configuration | undefined;
  readonly total: number;
  /** The chunks received, by offset; a duplicate is recognised by its offset. */
  readonly chunks: Map<number, Uint8Array>;
  /** The offsets of `chunks`, in order: what the overlap check searches. */
  readonly starts: number[];
  received: number;
  /** When its last chunk came (the caller's monotonic milliseconds). */
  lastChunkAt: number;
}

/**
 * Joins the chunks of snapshots from the leader. They may arrive in any order and more than
 * once (a network that reorders and duplicates); a chunk that overlaps another of the same
 * snapshot, or whose bytes would pass the total, is dropped. One snapshot is gathered at a
 * time: the chunks of a newer one (a later term, or the same term and a later index) replace
 * it, and those of an older one are ignored, so a deposed leader's late chunks cannot undo the
 * current leader's. Memory is what was received, at most MAX_SNAPSHOT_BYTES in at most
 * MAX_SNAPSHOT_CHUNKS chunks: nothing is allocated for bytes a peer only announced, and a
 * snapshot left unfinished is dropped after SNAPSHOT_ASSEMBLY_IDLE_MS (see `expire`).
 */
export class SnapshotAssembler {
  #current: Assembly | null = null;
  /** Chunks dropped: of an older snapshot, duplicated, or `invalid`. */
  dropped = 0;
  /**
   * Of the chunks dropped, those no honest leader sends: empty, past their total, overlapping
   * another, one too many, or announcing too much. (A network that duplicates and reorders
   * makes honest chunks arrive twice, or after a newer snapshot's: those are only `dropped`.)
   */
  invalid = 0;
  /** Snapshots partly received and dropped for want of their next chunk. */
  expired = 0;

  /**
   * Takes a message that arrived at `now` (monotonic milliseconds); returns the whole snapshot
   * message once its last chunk is in, else null.
   */
  add(m: SnapshotChunk, now: number): SnapshotMessage | null {
    const chunk = m.chunk;
    if (chunk === undefined) return m;
    const bytes = m.snapshot.data;
    if (chunk.total > MAX_SNAPSHOT_BYTES || chunk.offset + bytes.byteLength > chunk.total || bytes.byteLength === 0) return this.#drop(true);
    let a = this.#current;
    if (a === null || !sameSnapshot(a, m, chunk.total)) {
      if (a !== null && !newer(m, a)) return this.#drop(false);
      a = { from: m.from, term: m.term, index: m.snapshot.index, snapshotTerm: m.snapshot.term, conf: m.snapshot.conf, total: chunk.total, chunks: new Map(), starts: [], received: 0, lastChunkAt: now };
      this.#current = a;
    }
    if (a.chunks.has(chunk.offset)) return this.#drop(a.chunks.get(chunk.offset)?.byteLength !== bytes.byteLength);
    if (a.chunks.size >= MAX_SNAPSHOT_CHUNKS) return this.#drop(true);
    const at = firstStartAfter(a.starts, chunk.offset);
    if (overlapsNeighbours(a, at, chunk.offset, bytes.byteLength)) return this.#drop(true);
    a.starts.splice(at, 0, chunk.offset);
    a.chunks.set(chunk.offset, bytes);
    a.received += bytes.byteLength;
    a.lastChunkAt = now;
    if (a.received < a.total) return null;
    this.#current = null;
    const data = new Uint8Array(a.total);
    for (const [offset, part] of a.chunks) data.set(part, offset);
    return { type: 'snapshot', from: a.from, to: m.to, term: a.term, snapshot: { ...withConf(a.index, a.snapshotTerm, a.conf), data } };
  }

  /** Drops a snapshot partly received whose last chunk came SNAPSHOT_ASSEMBLY_IDLE_MS or more before `now`. */
  expire(now: number): void {
    if (this.#current !== null && now - this.#current.lastChunkAt >= SNAPSHOT_ASSEMBLY_IDLE_MS) {
      this.#current = null;
      this.expired++;
    }
  }

  /** Bytes of the snapshot being gathered, received so far. */
  get heldBytes(): number {
    return this.#current?.received ?? 0;
  }

  #drop(invalid: boolean): null {
    this.dropped++;
    if (invalid) this.invalid++;
    return null;
  }
}

function sameSnapshot(a: Assembly, m: SnapshotMessage, total: number): boolean {
  return a.from === m.from && a.term === m.term && a.index === m.snapshot.index && a.snapshotTerm === m.snapshot.term && a.total === total && sameConf(a.conf, m.snapshot.conf);
}

/** A snapshot's meta, with `conf` only when it has one (a snapshot of protocol 1 has none). */
function withConf(index: number, term: number, conf: Configuration | undefined): SnapshotMeta {
  return conf === undefined ? { index, term } : { index, term, conf };
}

function sameConf(a: Configuration | undefined, b: Configuration | undefined): boolean {
  return a === undefined || b === undefined ? a === b : sameConfiguration(a, b);
}

/** Whether `m` belongs to a later snapshot than the one being gathered. */
function newer(m: SnapshotMessage, a: Assembly): boolean {
  return m.term > a.term || (m.term === a.term && m.snapshot.index > a.index);
}

/** The position in the ordered `starts` of the first offset greater than `offset`. */
function firstStartAfter(starts: readonly number[], offset: number): number {
  let lo = 0;
  let hi = starts.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((starts[mid] as number) <= offset) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * Whether [offset, offset + length) overlaps a chunk already received: the one starting before
 * it (ending past its start) or the one starting after it (starting before its end). Chunks
 * never overlap when split by splitSnapshot; a sum of received bytes that could reach the total
 * with overlapping ones would join a corrupt snapshot. Received chunks never overlap one
 * another, so the two neighbours in offset order are the only ones to check.
 */
function overlapsNeighbours(a: Assembly, at: number, offset: number, length: number): boolean {
  const before = a.starts[at - 1];
  if (before !== undefined && before + (a.chunks.get(before) as Uint8Array).byteLength > offset) return true;
  const after = a.starts[at];
  return after !== undefined && after < offset + length;
}
