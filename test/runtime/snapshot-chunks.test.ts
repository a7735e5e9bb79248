import { describe, expect, it } from 'vitest';
import type { SnapshotChunk } from '../../src/transport/envelope.js';
import { MAX_SNAPSHOT_CHUNKS, SNAPSHOT_ASSEMBLY_IDLE_MS, SnapshotAssembler, splitSnapshot } from '../../src/runtime/snapshot-chunks.js';
import { MAX_SNAPSHOT_BYTES } from '../../src/transport/constants.js';
import { decodeFrame, encodeFrame } from '../../src/transport/codec.js';

const data = Uint8Array.from({ length: 10_000 }, (_, i) => i % 251);
const whole: SnapshotChunk = { type: 'snapshot', from: 'a', to: 'b', term: 3, snapshot: { index: 40, term: 2, data } };

describe('snapshots in chunks', () => {
  it('split into in-order chunks that travel through the codec and join back to the same snapshot', () => {
    const chunks = splitSnapshot(whole, 3000);
    expect(chunks.map((c) => [c.chunk?.offset, c.snapshot.data.byteLength])).toEqual([
      [0, 3000],
      [3000, 3000],
      [6000, 3000],
      [9000, 1000],
    ]);
    const assembler = new SnapshotAssembler();
    const joined = chunks.map((c) => assembler.add(decodeFrame(encodeFrame({ clusterId: 'c', message: c })).message as SnapshotChunk, 0));
    expect(joined.slice(0, 3)).toEqual([null, null, null]);
    expect(joined[3]).toEqual(whole);
  });

  it('sends a snapshot that fits as it is', () => {
    expect(splitSnapshot(whole, 10_000)).toEqual([whole]);
    expect(new SnapshotAssembler().add(whole, 0)).toBe(whole);
  });

  it('joins chunks that arrive out of order and more than once', () => {
    const chunks = splitSnapshot(whole, 3000);
    const assembler = new SnapshotAssembler();
    const arrivals = [chunks[2], chunks[0], chunks[2], chunks[3], chunks[0]];
    expect(arrivals.map((c) => assembler.add(c!, 0))).toEqual([null, null, null, null, null]);
    expect(assembler.dropped).toBe(2);
    // Duplicates are a network's doing, not a faulty peer's.
    expect(assembler.invalid).toBe(0);
    expect(assembler.add(chunks[1]!, 0)).toEqual(whole);
  });

  it('completes when a lost chunk comes again with the next sending', () => {
    const chunks = splitSnapshot(whole, 3000);
    const assembler = new SnapshotAssembler();
    for (const c of [chunks[0], chunks[1], chunks[3]]) expect(assembler.add(c!, 0)).toBeNull();
    const resent = chunks.map((c) => assembler.add(c, 0));
    expect(resent.filter((r) => r !== null)).toEqual([whole]);
  });

  it("takes a newer snapshot's chunks over an older one's, and ignores an older one's late chunks", () => {
    const assembler = new SnapshotAssembler();
    const old = splitSnapshot(whole, 3000);
    assembler.add(old[0]!, 0);
    const newer = splitSnapshot({ ...whole, term: 4, snapshot: { index: 50, term: 4, data } }, 3000);
    assembler.add(newer[0]!, 0);
    // The deposed leader's chunks still in flight do not disturb the new one.
    for (const c of old.slice(1)) expect(assembler.add(c, 0)).toBeNull();
    const out = newer.slice(1).map((c) => assembler.add(c, 0));
    expect(out.at(-1)?.snapshot).toEqual({ index: 50, term: 4, data });
    expect(assembler.dropped).toBe(old.length - 1);
    expect(assembler.invalid).toBe(0);
  });

  it('drops a chunk that overlaps one already received', () => {
    const assembler = new SnapshotAssembler();
    const base = { ...whole, snapshot: { ...whole.snapshot, data: new Uint8Array(100) } };
    expect(assembler.add({ ...base, chunk: { offset: 0, total: 150 } }, 0)).toBeNull();
    expect(assembler.add({ ...base, snapshot: { ...base.snapshot, data: new Uint8Array(60) }, chunk: { offset: 90, total: 150 } }, 0)).toBeNull();
    // At the same offset as a chunk received, but longer: not a duplicate.
    expect(assembler.add({ ...base, snapshot: { ...base.snapshot, data: new Uint8Array(110) }, chunk: { offset: 0, total: 150 } }, 0)).toBeNull();
    expect(assembler.dropped).toBe(2);
    expect(assembler.invalid).toBe(2);
  });

  it('refuses a snapshot announced larger than MAX_SNAPSHOT_BYTES, keeping nothing', () => {
    const assembler = new SnapshotAssembler();
    const huge: SnapshotChunk = { ...whole, snapshot: { ...whole.snapshot, data: new Uint8Array(10) }, chunk: { offset: 0, total: MAX_SNAPSHOT_BYTES + 1 } };
    expect(assembler.add(huge, 0)).toBeNull();
    expect(assembler.dropped).toBe(1);
    expect(assembler.invalid).toBe(1);
  });

  it('the codec refuses a chunk that overruns its announced total', () => {
    const bad: SnapshotChunk = { ...whole, snapshot: { ...whole.snapshot, data: new Uint8Array(10) }, chunk: { offset: 95, total: 100 } };
    expect(() => decodeFrame(encodeFrame({ clusterId: 'c', message: bad }))).toThrow(/overruns/);
  });

  it('drops a chunk that overlaps either neighbour, wherever it falls among many', () => {
    const assembler = new SnapshotAssembler();
    const total = 100 * 10;
    const piece = (offset: number, length: number): SnapshotChunk => ({ ...whole, snapshot: { ...whole.snapshot, data: new Uint8Array(length) }, chunk: { offset, total } });
    // Every other slot of 10 bytes, out of order.
    for (const slot of [8, 2, 6, 0, 4, 98, 50]) expect(assembler.add(piece(slot * 10, 10), 0)).toBeNull();
    expect(assembler.dropped).toBe(0);
    // Into the end of the chunk before, into the start of the chunk after, over a whole one.
    for (const [offset, length] of [[65, 10], [55, 10], [15, 20], [975, 10]]) assembler.add(piece(offset as number, length as number), 0);
    expect(assembler.dropped).toBe(4);
    expect(assembler.invalid).toBe(4);
    // Exactly in a gap: taken.
    expect(assembler.add(piece(10, 10), 0)).toBeNull();
    expect(assembler.dropped).toBe(4);
    expect(assembler.heldBytes).toBe(80);
  });

  it(`gathers at most MAX_SNAPSHOT_CHUNKS chunks, and splits a snapshot into no more than that`, () => {
    const assembler = new SnapshotAssembler();
    const total = MAX_SNAPSHOT_CHUNKS + 10;
    const byte = (offset: number): SnapshotChunk => ({ ...whole, snapshot: { ...whole.snapshot, data: new Uint8Array(1) }, chunk: { offset, total } });
    for (let offset = 0; offset < MAX_SNAPSHOT_CHUNKS; offset++) assembler.add(byte(offset), 0);
    expect(assembler.dropped).toBe(0);
    expect(assembler.add(byte(MAX_SNAPSHOT_CHUNKS), 0)).toBeNull();
    expect(assembler.dropped).toBe(1);
    expect(assembler.invalid).toBe(1);
    expect(assembler.heldBytes).toBe(MAX_SNAPSHOT_CHUNKS);

    const big: SnapshotChunk = { ...whole, snapshot: { ...whole.snapshot, data: new Uint8Array(MAX_SNAPSHOT_CHUNKS * 3 + 1) } };
    const chunks = splitSnapshot(big, 1);
    expect(chunks.length).toBeLessThanOrEqual(MAX_SNAPSHOT_CHUNKS);
    const joiner = new SnapshotAssembler();
    expect(chunks.map((c) => joiner.add(c, 0)).at(-1)).toEqual(big);
  });

  it('drops a snapshot partly received once no chunk of it came for SNAPSHOT_ASSEMBLY_IDLE_MS', () => {
    const chunks = splitSnapshot(whole, 3000);
    const assembler = new SnapshotAssembler();
    assembler.add(chunks[0]!, 1000);
    assembler.add(chunks[1]!, 2000);
    assembler.expire(2000 + SNAPSHOT_ASSEMBLY_IDLE_MS - 1);
    expect(assembler.heldBytes).toBe(6000);
    assembler.expire(2000 + SNAPSHOT_ASSEMBLY_IDLE_MS);
    expect(assembler.heldBytes).toBe(0);
    expect(assembler.expired).toBe(1);
    // The rest alone no longer completes it; the whole set, sent again, does.
    const later = 2000 + SNAPSHOT_ASSEMBLY_IDLE_MS;
    expect([chunks[2], chunks[3]].map((c) => assembler.add(c!, later))).toEqual([null, null]);
    expect(chunks.map((c) => assembler.add(c, later)).filter((r) => r !== null)).toEqual([whole]);
  });
});
