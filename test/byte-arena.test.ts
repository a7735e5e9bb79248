import { encode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ARENA_CHUNK_BYTES, ARENA_MAX_COPY_BYTES, ByteArena } from '../src/byte-arena.js';
import { decodeCommand, encodeCommand } from '../src/runtime/commands.js';
import { SMALL_CBOR_SCRATCH_BYTES } from '../src/small-cbor.js';

const same = (a: Uint8Array, b: Uint8Array): boolean => Buffer.from(a).equals(Buffer.from(b));

describe('ByteArena', () => {
  it('gives copies equal to their source that share memory with nothing else', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: ARENA_MAX_COPY_BYTES + 50 }), { minLength: 1, maxLength: 40 }), (sources) => {
        const arena = new ByteArena();
        const copies = sources.map((s) => arena.copy(s));
        const expected = sources.map((s) => Uint8Array.from(s));
        // Writing over every source and every other copy leaves each copy as it was made.
        for (const s of sources) s.fill(0xee);
        copies.forEach((c, i) => expect(same(c, expected[i] as Uint8Array)).toBe(true));
        copies.forEach((c, i) => {
          for (const other of copies) if (other !== c) other.fill(0xdd);
          expect(same(c, expected[i] as Uint8Array)).toBe(true);
          copies.forEach((restored, j) => restored.set(expected[j] as Uint8Array));
        });
      }),
    );
  });

  it('carves small copies out of one shared chunk, and starts a new chunk when one is full', () => {
    const arena = new ByteArena();
    const a = arena.copy(new Uint8Array(100).fill(1));
    const b = arena.copy(new Uint8Array(100).fill(2));
    expect(a.buffer).toBe(b.buffer);
    expect(a.buffer.byteLength).toBe(ARENA_CHUNK_BYTES);
    const filler = ARENA_CHUNK_BYTES - 200 - 10;
    const c = arena.copy(new Uint8Array(filler).subarray(0, Math.min(filler, ARENA_MAX_COPY_BYTES)));
    expect(c.buffer).toBe(a.buffer);
    // Fill the rest of the chunk, then one more copy must go to a new chunk.
    let last = c;
    while (last.buffer === a.buffer) last = arena.copy(new Uint8Array(ARENA_MAX_COPY_BYTES).fill(9));
    expect(last.buffer.byteLength).toBe(ARENA_CHUNK_BYTES);
    expect(same(a, new Uint8Array(100).fill(1))).toBe(true);
    expect(same(b, new Uint8Array(100).fill(2))).toBe(true);
  });

  it('gives a copy larger than ARENA_MAX_COPY_BYTES an exact buffer of its own', () => {
    const arena = new ByteArena();
    const big = arena.copy(new Uint8Array(ARENA_MAX_COPY_BYTES + 1).fill(4));
    expect(big.buffer.byteLength).toBe(ARENA_MAX_COPY_BYTES + 1);
    expect(big.byteOffset).toBe(0);
    expect(arena.copy(new Uint8Array(0)).byteLength).toBe(0);
  });
});

describe('encodeCommand', () => {
  it('gives the bytes cborg encode gives, outside Node’s pool of small buffers', () => {
    // Sizes around every boundary: cborg's own chunk for byte strings of 64 and more, the
    // arena's largest copy, and the scratch buffer that encoding goes through.
    for (const size of [0, 60, 64, 200, 1_000, ARENA_MAX_COPY_BYTES - 10, ARENA_MAX_COPY_BYTES + 10, SMALL_CBOR_SCRATCH_BYTES + 10]) {
      const data = new Uint8Array(size).fill(size & 0xff);
      const bytes = encodeCommand({ kind: 'user', data });
      expect(same(bytes, encode([0, data]))).toBe(true);
      expect(decodeCommand(bytes)).toEqual({ kind: 'user', data });
      // Node's pool hands out slices of 8 KiB slabs: a long-kept entry must not hold one.
      expect(bytes.buffer.byteLength === Buffer.poolSize && bytes.byteLength < Buffer.poolSize).toBe(false);
      expect(bytes.buffer.byteLength === ARENA_CHUNK_BYTES || bytes.buffer.byteLength === bytes.byteLength).toBe(true);
    }
  });

  it('keeps each command intact however many follow it', () => {
    const commands = Array.from({ length: 2_000 }, (_, i) => encodeCommand({ kind: 'user', data: new Uint8Array(i % 300).fill(i & 0xff) }));
    commands.forEach((bytes, i) => expect(same(bytes, encode([0, new Uint8Array(i % 300).fill(i & 0xff)]))).toBe(true));
  });
});
