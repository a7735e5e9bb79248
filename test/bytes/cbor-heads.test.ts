import { encode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { arrayHeader, CBOR_BYTES, CBOR_UINT, headBytes, MAX_HEAD_BYTES, writeBytes, writeHead, writeText } from '../../src/bytes/cbor-heads.js';
import { encodeEntryRecords } from '../../src/bytes/entry-records.js';
import { EntryType, type Entry } from '../../src/raft/types.js';
import { decodeCommand, encodeCommand } from '../../src/runtime/commands.js';
import { SMALL_CBOR_SCRATCH_BYTES } from '../../src/bytes/small-cbor.js';
import { sameBytes } from '../fixtures/bytes.js';


/** Every argument where a head changes size, and its neighbours. */
const BOUNDARIES = [0, 1, 23, 24, 25, 0xff, 0x100, 0x101, 0xffff, 0x1_0000, 0x1_0001, 0xffff_ffff, 0x1_0000_0000, 0x1_0000_0001, Number.MAX_SAFE_INTEGER];

function head(major: number, n: number): Uint8Array {
  const out = new Uint8Array(MAX_HEAD_BYTES + 1).fill(0xee);
  const end = writeHead(out, 0, major, n);
  expect(end).toBe(headBytes(n));
  // Nothing past the head is touched.
  expect(out[end]).toBe(0xee);
  return out.subarray(0, end);
}

/** The records of `entries` as cborg encodes them, one after another. */
const cborgRecords = (entries: readonly Entry[]): Buffer => Buffer.concat(entries.map((e) => encode([e.index, e.term, e.type, e.data, e.pid])));

describe('writeHead', () => {
  it('writes an integer as cborg does, at every change of size and at random', () => {
    for (const n of BOUNDARIES) expect(sameBytes(head(CBOR_UINT, n), encode(n))).toBe(true);
    fc.assert(fc.property(fc.maxSafeNat(), (n) => sameBytes(head(CBOR_UINT, n), encode(n))), { numRuns: 2_000 });
  });

  it("writes a byte string's and an array's head as cborg does", () => {
    for (const n of [0, 23, 24, 255, 256, 0xffff, 0x1_0000]) {
      const bytes = new Uint8Array(n);
      const out = new Uint8Array(MAX_HEAD_BYTES + n);
      expect(sameBytes(out.subarray(0, writeBytes(out, 0, bytes)), encode(bytes))).toBe(true);
      expect(sameBytes(head(CBOR_BYTES, n), encode(bytes).subarray(0, headBytes(n)))).toBe(true);
      const array = new Array<number>(n).fill(0);
      expect(sameBytes(arrayHeader(n), encode(array).subarray(0, headBytes(n)))).toBe(true);
    }
  });
});

describe('writeText', () => {
  const written = (text: string): Uint8Array => {
    const out = new Uint8Array(MAX_HEAD_BYTES + text.length * 3);
    return out.subarray(0, writeText(out, 0, text));
  };

  it('writes any string as cborg does, unpaired surrogates included', () => {
    // cborg writes strings of fewer than 24 units with its own loop and longer ones with Buffer.
    const lone = ['\uD800', 'a\uDC00b', '\uDBFF', `${'x'.repeat(30)}\uD800`, `\uDC00${'é'.repeat(30)}`];
    for (const text of ['', 'a', '1f2e3d4c.1a', 'é', '€', '😀', '\uDBFF\uDFFF', 'x'.repeat(24), 'é'.repeat(200), ...lone]) {
      expect(sameBytes(written(text), encode(text))).toBe(true);
    }
    // Any UTF-16 units, unpaired surrogates included (fast-check's 'binary' unit leaves them out).
    const unit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
    fc.assert(fc.property(fc.string({ unit, maxLength: 80 }), (text) => sameBytes(written(text), encode(text))), { numRuns: 2_000 });
    fc.assert(fc.property(fc.string({ unit: 'binary', maxLength: 80 }), (text) => sameBytes(written(text), encode(text))), { numRuns: 1_000 });
    fc.assert(fc.property(fc.string({ unit: 'grapheme', maxLength: 80 }), (text) => sameBytes(written(text), encode(text))), { numRuns: 1_000 });
  });
});

describe('encodeEntryRecords', () => {
  const entry = fc.record({
    index: fc.maxSafeNat(),
    term: fc.maxSafeNat(),
    type: fc.constantFrom(EntryType.Normal, EntryType.Noop),
    data: fc.uint8Array({ maxLength: 300 }),
    pid: fc.oneof(fc.constant(''), fc.string({ maxLength: 30 }), fc.string({ unit: 'binary', maxLength: 30 })),
  });

  it('gives the bytes cborg gives for each record, one after another', () => {
    fc.assert(
      fc.property(fc.array(entry, { minLength: 1, maxLength: 40 }), (entries) => sameBytes(encodeEntryRecords(entries), cborgRecords(entries))),
      { numRuns: 1_000 },
    );
  });

  it('writes a run larger than the scratch buffer into a buffer of its own', () => {
    const data = new Uint8Array(4_000).fill(7);
    const entries: Entry[] = Array.from({ length: Math.ceil((2 * SMALL_CBOR_SCRATCH_BYTES) / data.length) }, (_, i) => ({ index: 1_000 + i, term: 3, type: EntryType.Normal, data, pid: `p.${i}` }));
    const bytes = encodeEntryRecords(entries);
    expect(bytes.length).toBeGreaterThan(SMALL_CBOR_SCRATCH_BYTES);
    expect(sameBytes(bytes, cborgRecords(entries))).toBe(true);
  });

  it('fits the largest records in the bound it computes: nine-byte integers and pids of three bytes per unit', () => {
    const max = Number.MAX_SAFE_INTEGER;
    for (const count of [1, 1_000, 3_000]) {
      const entries: Entry[] = Array.from({ length: count }, (_, i) => ({ index: max - i, term: max, type: EntryType.Noop, data: new Uint8Array(0), pid: '€'.repeat(7) }));
      expect(sameBytes(encodeEntryRecords(entries), cborgRecords(entries))).toBe(true);
    }
  });

  it('leaves a record it cannot write to cborg, which encodes or rejects it as before', () => {
    const ok: Entry = { index: 5, term: 1, type: EntryType.Normal, data: new Uint8Array([1]), pid: 'p' };
    // Fields no entry holds: cborg encodes a negative, fractional or unsafe number, and a string.
    const odd = [{ index: -1 }, { term: 1.5 }, { index: 2 ** 60 }, { type: 2 ** 53 }, { data: 'text' }, { pid: 7 }];
    for (const fields of odd) {
      const entries = [ok, { ...ok, ...fields } as unknown as Entry];
      expect(sameBytes(encodeEntryRecords(entries), cborgRecords(entries))).toBe(true);
    }
    expect(() => encodeEntryRecords([{ ...ok, pid: Symbol('no') as unknown as string }])).toThrow(/unsupported type/);
  });
});

describe('encodeCommand, for a user', () => {
  it('gives the bytes cborg gives for [0, data], at every change of head size', () => {
    for (const size of [0, 23, 24, 255, 256, 0xffff, 0x1_0000, SMALL_CBOR_SCRATCH_BYTES + 10]) {
      const data = new Uint8Array(size).fill(size & 0xff);
      const bytes = encodeCommand({ kind: 'user', data });
      expect(sameBytes(bytes, encode([0, data]))).toBe(true);
      expect(bytes.constructor).toBe(Uint8Array);
      expect(decodeCommand(bytes)).toEqual({ kind: 'user', data });
    }
    fc.assert(fc.property(fc.uint8Array({ maxLength: 600 }), (data) => sameBytes(encodeCommand({ kind: 'user', data }), encode([0, data]))), { numRuns: 500 });
  });
});
