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
 * command of every entry this member proposes, which the in-memory log keeps until compaction.
 *
 * Why: cborg's `encode` returns, depending on the size, either bytes with a backing store of
 * their own (allocated and freed one by one outside V8's heap), or a view into Node's pool of
 * small buffers. That pool is shared with every short-lived buffer of the process, so one
 * long-kept entry keeps a whole 8 KiB slab alive with it. Measured with one member, 5,000
 * entries kept: 2.7 MB of buffers for 200-byte commands and 11.8 MB for 1,000-byte ones, against
 * 1.2 and 5.2 MB from this arena (the data alone is 1.0 and 5.0 MB). A view into a chunk is also
 * cheaper to make than a buffer of its own (0.06 µs against 0.4–1.3 µs, scratch benchmark).
 *
 * A chunk stays alive while any view into it does. The log drops entries oldest first, and the
 * arena fills chunks in the order entries arrive, so the chunks alive are about those spanning
 * the entries kept, plus the one being filled.
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
 * The arena for commands proposed to the log (see encodeCommand), one per process: the members
 * of one process (tests, simulations) share it, which only delays freeing a chunk until each has
 * compacted past it. Entries decoded from frames or read from storage need none: cborg gives their
 * data an exact buffer of its own, which shares nothing with short-lived bytes.
 */
export const logBytes = new ByteArena();
