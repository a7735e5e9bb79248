/** The size of each chunk the arena carves copies from. */
export const ARENA_CHUNK_BYTES = 64 * 1024;

/**
 * Copies of more than this get a buffer of their own: a few of them would fill a chunk, and
 * one large value is cheap to allocate on its own compared with the many small ones the arena is
 * for.
 */
export const ARENA_MAX_COPY_BYTES = 4 * 1024;

/**
 * Copies small byte strings into shared chunks, for bytes that live as long as a log entry: the
 * data of each entry a leader appends to its log, which the log keeps until compaction.
 *
 * Why: a command is encoded (cborg) into either bytes with a backing store of their own,
 * allocated and freed one by one outside V8's heap, or a view into Node's pool of small buffers.
 * That pool is shared with every short-lived buffer of the process, so one long-kept entry keeps
 * a whole 8 KiB slab alive with it: a log of small commands held more than twice the memory of
 * its data in buffers, which this arena brings close to the data alone. A view into a chunk is
 * also cheaper to make than a small buffer of its own.
 *
 * A chunk stays alive while any view into it does. The log drops entries oldest first, and only
 * entries appended to the log are copied here (not proposals refused or forwarded), in the order
 * they are appended, so the chunks alive are those spanning the entries kept, plus the one being
 * filled.
 */
export class ByteArena {
  #chunk = new Uint8Array(0);
  #used = 0;

  /** A copy of `bytes` that shares no memory with it or with any other copy. */
  copy(bytes: Uint8Array): Uint8Array {
    const length = bytes.byteLength;
    if (length > ARENA_MAX_COPY_BYTES) return bytes.slice();
    if (this.#used + length > this.#chunk.byteLength) {
      this.#chunk = new Uint8Array(ARENA_CHUNK_BYTES);
      this.#used = 0;
    }
    const out = this.#chunk.subarray(this.#used, this.#used + length);
    out.set(bytes);
    this.#used += length;
    return out;
  }
}

/**
 * The arena for the data of entries a member appends to its log as leader (see
 * RaftConfig.keepData), one per process: the members of one process (tests, simulations) share
 * it, which only delays freeing a chunk until each has compacted past it. Entries a follower
 * receives, or reads from storage, need none: cborg gives their data an exact buffer of its own,
 * which shares nothing with short-lived bytes.
 */
export const logBytes = new ByteArena();

/** Copies the data of an entry this member appends as leader into `logBytes`. */
export function keepInLogArena(data: Uint8Array): Uint8Array {
  return logBytes.copy(data);
}
