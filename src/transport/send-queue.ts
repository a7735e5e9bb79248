/**
 * A bounded FIFO of encoded frames for one peer, bounded both in frames and in bytes. When full it
 * drops the oldest frames: for Raft the newest message is the most useful one (it carries the
 * latest term, commit index and log position), while a stale heartbeat or vote is worthless and a
 * stale append is retransmitted by the leader anyway. Backed by a ring buffer so that dropping the
 * oldest frame and taking the next one are O(1).
 */
export class SendQueue {
  readonly #maxFrames: number;
  readonly #maxBytes: number;
  readonly #slots: (Uint8Array | undefined)[];
  #head = 0;
  #size = 0;
  #bytes = 0;

  constructor(maxFrames: number, maxBytes: number) {
    this.#maxFrames = maxFrames;
    this.#maxBytes = maxBytes;
    this.#slots = new Array<Uint8Array | undefined>(maxFrames).fill(undefined);
  }

  get size(): number {
    return this.#size;
  }

  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Appends `frame`, dropping the oldest frames to make room; returns how many frames were dropped.
   * A frame larger than the whole byte bound is itself dropped (and counted) instead.
   */
  push(frame: Uint8Array): number {
    if (frame.length > this.#maxBytes) return 1;
    let dropped = 0;
    while (this.#size > 0 && (this.#size >= this.#maxFrames || this.#bytes + frame.length > this.#maxBytes)) {
      this.shift();
      dropped++;
    }
    this.#slots[(this.#head + this.#size) % this.#maxFrames] = frame;
    this.#size++;
    this.#bytes += frame.length;
    return dropped;
  }

  /** The frame `offset` places from the front, without removing it. */
  peek(offset = 0): Uint8Array | undefined {
    return offset < this.#size ? this.#slots[(this.#head + offset) % this.#maxFrames] : undefined;
  }

  shift(): Uint8Array | undefined {
    if (this.#size === 0) return undefined;
    const frame = this.#slots[this.#head];
    this.#slots[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.#maxFrames;
    this.#size--;
    this.#bytes -= frame?.length ?? 0;
    return frame;
  }

  /** Empties the queue; returns how many frames it held. */
  clear(): number {
    const size = this.#size;
    this.#slots.fill(undefined);
    this.#head = 0;
    this.#size = 0;
    this.#bytes = 0;
    return size;
  }
}
