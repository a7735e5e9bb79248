import type { NodeId, SnapshotMessage } from '../raft/types.js';

/**
 * Bytes of snapshot data in one message: well under the transport's 4 MiB frame, so a chunk and
 * its header always fit, and small enough that one chunk does not hold a link for long.
 */
export const SNAPSHOT_CHUNK_BYTES = 1024 * 1024;

/**
 * The largest snapshot a member takes in, whole: well below the transport's bound on bytes
 * queued for one peer (64 MiB), so that a snapshot and the traffic beside it fit. The
 * scheduler's state at its bounds (10,000 jobs, 10,000 kept claims with their outcomes) stays
 * well below it; a peer announcing more is refused before anything is kept.
 */
export const MAX_SNAPSHOT_BYTES = 32 * 1024 * 1024;

/**
 * Splits a snapshot message into chunks of at most `chunkBytes`, in order. A snapshot that fits
 * in one goes as it is.
 */
export function splitSnapshot(m: SnapshotMessage, chunkBytes = SNAPSHOT_CHUNK_BYTES): SnapshotMessage[] {
  const { data } = m.snapshot;
  if (data.byteLength <= chunkBytes) return [m];
  const out: SnapshotMessage[] = [];
  for (let offset = 0; offset < data.byteLength; offset += chunkBytes) {
    const chunk = data.subarray(offset, Math.min(data.byteLength, offset + chunkBytes));
    out.push({ ...m, snapshot: { index: m.snapshot.index, term: m.snapshot.term, data: chunk }, chunk: { offset, total: data.byteLength } });
  }
  return out;
}

interface Assembly {
  readonly from: NodeId;
  readonly term: number;
  readonly index: number;
  readonly snapshotTerm: number;
  readonly total: number;
  /** The chunks received, by offset; a duplicate is recognised by its offset. */
  readonly chunks: Map<number, Uint8Array>;
  received: number;
}

/**
 * Joins the chunks of snapshots from the leader. They may arrive in any order and more than
 * once (a network that reorders and duplicates); a chunk that overlaps another of the same
 * snapshot, or whose bytes would pass the total, is dropped. One snapshot is gathered at a
 * time: the chunks of a newer one (a later term, or the same term and a later index) replace
 * it, and those of an older one are ignored, so a deposed leader's late chunks cannot undo the
 * current leader's. Memory is what was received, at most MAX_SNAPSHOT_BYTES: nothing is
 * allocated for bytes a peer only announced.
 */
export class SnapshotAssembler {
  #current: Assembly | null = null;
  /** Chunks dropped: of an older snapshot, duplicated, overlapping, or announcing too much. */
  dropped = 0;

  /** Takes a message; returns the whole snapshot message once its last chunk is in, else null. */
  add(m: SnapshotMessage): SnapshotMessage | null {
    const chunk = m.chunk;
    if (chunk === undefined) return m;
    const bytes = m.snapshot.data;
    if (chunk.total > MAX_SNAPSHOT_BYTES || chunk.offset + bytes.byteLength > chunk.total || bytes.byteLength === 0) return this.#drop();
    let a = this.#current;
    if (a === null || !sameSnapshot(a, m, chunk.total)) {
      if (a !== null && !newer(m, a)) return this.#drop();
      a = { from: m.from, term: m.term, index: m.snapshot.index, snapshotTerm: m.snapshot.term, total: chunk.total, chunks: new Map(), received: 0 };
      this.#current = a;
    }
    if (a.chunks.has(chunk.offset) || overlaps(a, chunk.offset, bytes.byteLength)) return this.#drop();
    a.chunks.set(chunk.offset, bytes);
    a.received += bytes.byteLength;
    if (a.received < a.total) return null;
    this.#current = null;
    const data = new Uint8Array(a.total);
    for (const [offset, part] of a.chunks) data.set(part, offset);
    return { type: 'snapshot', from: a.from, to: m.to, term: a.term, snapshot: { index: a.index, term: a.snapshotTerm, data } };
  }

  #drop(): null {
    this.dropped++;
    return null;
  }
}

function sameSnapshot(a: Assembly, m: SnapshotMessage, total: number): boolean {
  return a.from === m.from && a.term === m.term && a.index === m.snapshot.index && a.snapshotTerm === m.snapshot.term && a.total === total;
}

/** Whether `m` belongs to a later snapshot than the one being gathered. */
function newer(m: SnapshotMessage, a: Assembly): boolean {
  return m.term > a.term || (m.term === a.term && m.snapshot.index > a.index);
}

/**
 * Whether [offset, offset + length) overlaps a chunk already received. Chunks never overlap
 * when split by splitSnapshot; a sum of received bytes that could reach the total with
 * overlapping ones would join a corrupt snapshot. Linear in the chunks received, which the
 * snapshot's size bounds (and the checks after it are what make a snapshot safe to take in).
 */
function overlaps(a: Assembly, offset: number, length: number): boolean {
  for (const [start, part] of a.chunks) {
    if (offset < start + part.byteLength && start < offset + length) return true;
  }
  return false;
}
