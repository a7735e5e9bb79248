import { MAX_FRAME_BYTES } from './constants.js';

/**
 * Length-prefixed framing on a byte stream: each frame is an unsigned LEB128 varint of its length
 * followed by that many bytes, the convention of libp2p protocols. It is written here rather than
 * taken from `@libp2p/utils` so that an oversized or endless length prefix is refused as soon as
 * its first bytes arrive, never buffered, and so that a large frame arriving in many chunks is
 * copied once rather than on every chunk.
 */

/** Thrown by FrameReader when a peer announces a frame larger than allowed; the stream should be closed. */
export class OversizedFrameError extends Error {
  /** `announcedBytes` is the length the prefix announced, or null when the prefix itself ran too long. */
  constructor(
    readonly announcedBytes: number | null,
    message = announcedBytes === null ? 'length prefix exceeds the frame size limit' : `announced frame of ${announcedBytes} bytes exceeds the limit`,
  ) {
    super(message);
    this.name = 'OversizedFrameError';
  }
}

/** How many bytes the varint prefix of `length` takes. */
export function prefixLength(length: number): number {
  let bytes = 1;
  while (length >= 0x80) {
    length = Math.floor(length / 0x80);
    bytes++;
  }
  return bytes;
}

/** Writes the varint prefix of `length` into `target` at `offset`; returns the offset after it. */
export function writePrefix(target: Uint8Array, offset: number, length: number): number {
  while (length >= 0x80) {
    target[offset++] = (length & 0x7f) | 0x80;
    length = Math.floor(length / 0x80);
  }
  target[offset++] = length;
  return offset;
}

/** Returns `frame` with its length prefix, in a new buffer. */
export function withPrefix(frame: Uint8Array): Uint8Array {
  const out = new Uint8Array(prefixLength(frame.length) + frame.length);
  out.set(frame, writePrefix(out, 0, frame.length));
  return out;
}

/**
 * Splits a byte stream into frames. Feed it chunks in order; it calls `onFrame` for each complete
 * frame (a view that is valid only during the call unless copied) and throws OversizedFrameError
 * when a prefix announces more than `maxFrameBytes`.
 */
export class FrameReader {
  readonly #maxFrameBytes: number;
  readonly #maxPrefixBytes: number;
  /** Unconsumed chunks, oldest first; the first may be a view past already consumed bytes. */
  #chunks: Uint8Array[] = [];
  #buffered = 0;
  /** The length of the frame being received, once its prefix is complete; -1 while reading a prefix. */
  #need = -1;

  constructor(maxFrameBytes: number = MAX_FRAME_BYTES) {
    this.#maxFrameBytes = maxFrameBytes;
    this.#maxPrefixBytes = prefixLength(maxFrameBytes);
  }

  /** Bytes held while waiting for the rest of a frame. */
  get buffered(): number {
    return this.#buffered;
  }

  push(chunk: Uint8Array, onFrame: (frame: Uint8Array) => void): void {
    if (chunk.length === 0) return;
    this.#chunks.push(chunk);
    this.#buffered += chunk.length;
    for (;;) {
      if (this.#need < 0) {
        const need = this.#readPrefix();
        if (need < 0) return;
        this.#need = need;
      }
      if (this.#buffered < this.#need) return;
      const frame = this.#take(this.#need);
      this.#need = -1;
      onFrame(frame);
    }
  }

  /** Consumes a complete prefix and returns the frame length, or -1 if more bytes are needed. */
  #readPrefix(): number {
    let value = 0;
    let scale = 1;
    let read = 0;
    for (const chunk of this.#chunks) {
      for (let i = 0; i < chunk.length; i++) {
        const byte = chunk[i] as number;
        value += (byte & 0x7f) * scale;
        scale *= 0x80;
        read++;
        if ((byte & 0x80) === 0) {
          if (value > this.#maxFrameBytes) throw new OversizedFrameError(value);
          this.#skip(read);
          return value;
        }
        if (read >= this.#maxPrefixBytes) throw new OversizedFrameError(null);
      }
    }
    return -1;
  }

  #skip(count: number): void {
    this.#buffered -= count;
    while (count > 0) {
      const first = this.#chunks[0] as Uint8Array;
      if (first.length <= count) {
        count -= first.length;
        this.#chunks.shift();
      } else {
        this.#chunks[0] = first.subarray(count);
        count = 0;
      }
    }
  }

  #take(length: number): Uint8Array {
    const first = this.#chunks[0];
    if (first !== undefined && first.length >= length) {
      // The common case: the whole frame sits in one chunk, so hand out a view without copying.
      const frame = first.subarray(0, length);
      this.#skip(length);
      return frame;
    }
    const frame = new Uint8Array(length);
    let offset = 0;
    while (offset < length) {
      const chunk = this.#chunks[0] as Uint8Array;
      const n = Math.min(chunk.length, length - offset);
      frame.set(chunk.subarray(0, n), offset);
      offset += n;
      this.#skip(n);
    }
    return frame;
  }
}
