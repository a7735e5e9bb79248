import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_FRAME_BYTES } from '../../src/transport/constants.js';
import { FrameReader, OversizedFrameError, prefixLength, withPrefix } from '../../src/transport/framing.js';
import { SendQueue } from '../../src/transport/send-queue.js';

function readAll(chunks: Uint8Array[], reader = new FrameReader()): Uint8Array[] {
  const frames: Uint8Array[] = [];
  // Frames are views valid only during the callback: copy them, as a consumer that keeps them must.
  for (const chunk of chunks) reader.push(chunk, (frame) => frames.push(frame.slice()));
  return frames;
}

function concat(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.length;
  }
  return out;
}

describe('length prefix', () => {
  it.each([
    [0, [0x00]],
    [1, [0x01]],
    [127, [0x7f]],
    [128, [0x80, 0x01]],
    [300, [0xac, 0x02]],
    [16383, [0xff, 0x7f]],
    [16384, [0x80, 0x80, 0x01]],
  ])('writes %i as an unsigned varint', (length, prefix) => {
    const framed = withPrefix(new Uint8Array(length));
    expect(Array.from(framed.subarray(0, prefix.length))).toEqual(prefix);
    expect(framed.length).toBe(prefix.length + length);
    expect(prefixLength(length)).toBe(prefix.length);
  });

  it('needs four bytes at most for the largest frame', () => {
    expect(prefixLength(MAX_FRAME_BYTES)).toBe(4);
  });
});

describe('FrameReader', () => {
  it('splits several frames from one chunk', () => {
    const frames = [new Uint8Array([1]), new Uint8Array(0), new Uint8Array(300).fill(7)];
    expect(readAll([concat(frames.map(withPrefix))])).toEqual(frames);
  });

  it('reassembles frames split at every byte', () => {
    const frames = [new Uint8Array(200).fill(1), new Uint8Array([2, 3])];
    const stream = concat(frames.map(withPrefix));
    const bytes = Array.from(stream, (b) => new Uint8Array([b]));
    expect(readAll(bytes)).toEqual(frames);
  });

  it('reassembles arbitrary frames however the stream is cut', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 400 }), { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 10 }), (frames, cuts) => {
        const stream = concat(frames.map(withPrefix));
        const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
        const chunks: Uint8Array[] = [];
        let last = 0;
        for (const point of [...points, stream.length]) {
          chunks.push(stream.subarray(last, point));
          last = point;
        }
        expect(readAll(chunks)).toEqual(frames);
      }),
    );
  });

  it('refuses an oversized length as soon as the prefix arrives, without waiting for the body', () => {
    const reader = new FrameReader(1000);
    const prefix = withPrefix(new Uint8Array(1001)).subarray(0, 2);
    expect(() => reader.push(prefix, () => undefined)).toThrow(OversizedFrameError);
    expect(reader.buffered).toBeLessThanOrEqual(2);
  });

  it('refuses a prefix that never ends', () => {
    const reader = new FrameReader();
    expect(() => reader.push(new Uint8Array([0xff, 0xff, 0xff]), () => undefined)).not.toThrow();
    expect(() => reader.push(new Uint8Array([0xff]), () => undefined)).toThrow(OversizedFrameError);
  });

  it('accepts a frame of exactly the limit', () => {
    const frame = new Uint8Array(MAX_FRAME_BYTES).fill(3);
    const framed = withPrefix(frame);
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < framed.length; i += 65536) chunks.push(framed.subarray(i, i + 65536));
    const got = readAll(chunks);
    expect(got).toHaveLength(1);
    expect(got[0]?.length).toBe(MAX_FRAME_BYTES);
  });
});

describe('SendQueue', () => {
  const frame = (n: number, size = 1): Uint8Array => new Uint8Array(size).fill(n);

  it('is first in, first out across the ring boundary', () => {
    const queue = new SendQueue(3, 100);
    const out: number[] = [];
    for (let i = 0; i < 10; i++) {
      expect(queue.push(frame(i))).toBe(0);
      out.push(queue.shift()?.[0] ?? -1);
    }
    expect(out).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    expect(queue.size).toBe(0);
  });

  it('drops the oldest frames beyond its frame bound', () => {
    const queue = new SendQueue(3, 100);
    expect([1, 2, 3, 4, 5].map((n) => queue.push(frame(n)))).toEqual([0, 0, 0, 1, 1]);
    expect([queue.shift()?.[0], queue.shift()?.[0], queue.shift()?.[0], queue.shift()]).toEqual([3, 4, 5, undefined]);
  });

  it('drops the oldest frames beyond its byte bound', () => {
    const queue = new SendQueue(100, 10);
    queue.push(frame(1, 4));
    queue.push(frame(2, 4));
    expect(queue.push(frame(3, 6))).toBe(1);
    expect(queue.bytes).toBe(10);
    expect(queue.peek()?.[0]).toBe(2);
    expect(queue.peek(1)?.[0]).toBe(3);
    expect(queue.peek(2)).toBeUndefined();
  });

  it('drops a frame larger than the byte bound itself', () => {
    const queue = new SendQueue(100, 10);
    queue.push(frame(1, 4));
    expect(queue.push(frame(2, 11))).toBe(1);
    expect(queue.size).toBe(1);
    expect(queue.peek()?.[0]).toBe(1);
  });

  it('clears', () => {
    const queue = new SendQueue(4, 100);
    queue.push(frame(1));
    queue.push(frame(2));
    expect(queue.clear()).toBe(2);
    expect([queue.size, queue.bytes, queue.shift()]).toEqual([0, 0, undefined]);
  });
});
