import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { ARENA_CHUNK_BYTES, ARENA_MAX_COPY_BYTES, ByteArena } from '../../src/bytes/byte-arena.js';
import { encodeCommand } from '../../src/runtime/commands.js';
import { COMPACTION_DEFAULTS } from '../../src/runtime/compaction.js';
import { raftSettingsFor } from '../../src/runtime/member-settings.js';
import { sameBytes } from '../fixtures/bytes.js';


describe('ByteArena', () => {
  it('gives copies equal to their source that share memory with nothing else', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: ARENA_MAX_COPY_BYTES + 50 }), { minLength: 1, maxLength: 40 }), (sources) => {
        const arena = new ByteArena();
        const copies = sources.map((s) => arena.copy(s));
        const expected = sources.map((s) => Uint8Array.from(s));
        // Writing over every source and every other copy leaves each copy as it was made.
        for (const s of sources) s.fill(0xee);
        copies.forEach((c, i) => expect(sameBytes(c, expected[i] as Uint8Array)).toBe(true));
        copies.forEach((c, i) => {
          for (const other of copies) if (other !== c) other.fill(0xdd);
          expect(sameBytes(c, expected[i] as Uint8Array)).toBe(true);
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
    // Fill the rest of the chunk with the largest copies it takes: one of them must start a new one.
    let last = b;
    let copies = 0;
    while (last.buffer === a.buffer) {
      last = arena.copy(new Uint8Array(ARENA_MAX_COPY_BYTES).fill(9));
      copies++;
    }
    expect(copies).toBe(Math.floor((ARENA_CHUNK_BYTES - 200) / ARENA_MAX_COPY_BYTES) + 1);
    expect(last.buffer.byteLength).toBe(ARENA_CHUNK_BYTES);
    expect(last.byteOffset).toBe(0);
    expect(sameBytes(a, new Uint8Array(100).fill(1))).toBe(true);
    expect(sameBytes(b, new Uint8Array(100).fill(2))).toBe(true);
  });

  it('gives a copy larger than ARENA_MAX_COPY_BYTES an exact buffer of its own', () => {
    const arena = new ByteArena();
    const big = arena.copy(new Uint8Array(ARENA_MAX_COPY_BYTES + 1).fill(4));
    expect(big.buffer.byteLength).toBe(ARENA_MAX_COPY_BYTES + 1);
    expect(big.byteOffset).toBe(0);
    expect(arena.copy(new Uint8Array(0)).byteLength).toBe(0);
  });
});

describe('the data of entries a leader appends', () => {
  it('is kept in the arena for log data, outside Node’s pool of small buffers', () => {
    const { keepData } = raftSettingsFor(COMPACTION_DEFAULTS);
    // Commands of sizes around every boundary: cborg's own chunk for byte strings of 64 and
    // more, and the arena's largest copy. encodeCommand's short-lived bytes may be pooled.
    for (const size of [0, 60, 64, 200, 1_000, ARENA_MAX_COPY_BYTES - 10, ARENA_MAX_COPY_BYTES + 10]) {
      const command = encodeCommand({ kind: 'user', data: new Uint8Array(size).fill(size & 0xff) });
      const kept = keepData?.(command) ?? command;
      expect(sameBytes(kept, command)).toBe(true);
      expect(kept.buffer).not.toBe(command.buffer);
      expect(kept.buffer.byteLength === ARENA_CHUNK_BYTES || kept.buffer.byteLength === kept.byteLength).toBe(true);
    }
  });
});
