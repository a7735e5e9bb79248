/**
 * The pieces, in order, in one new buffer of its own: not a view into Node's pool of small
 * buffers (as Buffer.concat may give), since the callers' results are kept long (snapshots).
 */
export function concatBytes(pieces: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const piece of pieces) length += piece.byteLength;
  const out = new Uint8Array(length);
  let at = 0;
  for (const piece of pieces) {
    out.set(piece, at);
    at += piece.byteLength;
  }
  return out;
}

/**
 * concatBytes a bounded number of bytes at a time, for a caller that lets other work run
 * between the steps: the buffer is made at once (untouched, it costs little), and filled by
 * `copy()`. Joining a large snapshot's pieces at once held the event loop for the copy and for
 * the faults of the fresh memory's pages, the longest step of the snapshot by far.
 */
export class StepwiseConcat {
  readonly #pieces: readonly Uint8Array[];
  readonly #out: Uint8Array;
  /** The piece being copied, and how much of it is. */
  #piece = 0;
  #offset = 0;
  #at = 0;

  constructor(pieces: readonly Uint8Array[]) {
    this.#pieces = pieces;
    let length = 0;
    for (const piece of pieces) length += piece.byteLength;
    this.#out = new Uint8Array(length);
  }

  /** Copies at most `maxBytes` more; the whole, once every byte is copied, else null. */
  copy(maxBytes: number): Uint8Array | null {
    let budget = maxBytes;
    while (this.#piece < this.#pieces.length) {
      const piece = this.#pieces[this.#piece] as Uint8Array;
      const n = Math.min(budget, piece.byteLength - this.#offset);
      this.#out.set(this.#offset === 0 && n === piece.byteLength ? piece : piece.subarray(this.#offset, this.#offset + n), this.#at);
      this.#at += n;
      this.#offset += n;
      budget -= n;
      if (this.#offset < piece.byteLength) return null;
      this.#piece++;
      this.#offset = 0;
    }
    return this.#out;
  }
}
