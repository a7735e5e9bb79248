import { encode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EntryType } from '../../src/raft/types.js';
import { encodeSmall, SMALL_CBOR_SCRATCH_BYTES } from '../../src/bytes/small-cbor.js';
import { decodeSegment, encodeSegment } from '../../src/storage/level-codec.js';

// What the log and its commands hold: integers, strings, byte strings, null, arrays and maps.
const cborValue = fc.letrec((tie) => ({
  value: fc.oneof(
    { depthSize: 'small' },
    fc.maxSafeNat(),
    fc.integer({ min: -1_000_000, max: 1_000_000 }),
    fc.string(),
    fc.uint8Array({ maxLength: 200 }),
    fc.constant(null),
    fc.boolean(),
    fc.array(tie('value'), { maxLength: 5 }),
    fc.dictionary(fc.string({ maxLength: 8 }), tie('value'), { maxKeys: 4 }),
  ),
})).value;

describe('encodeSmall', () => {
  it('gives the bytes cborg encode gives, as a plain Uint8Array', () => {
    fc.assert(
      fc.property(cborValue, (value) => {
        const bytes = encodeSmall(value);
        expect(bytes.constructor).toBe(Uint8Array);
        expect(Buffer.from(bytes).equals(Buffer.from(encode(value)))).toBe(true);
      }),
    );
  });

  it('gives each result bytes of its own: a later encoding does not change an earlier one', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.maxSafeNat(), fc.uint8Array({ maxLength: 300 })), { minLength: 2, maxLength: 20 }), (values) => {
        const results = values.map((v) => encodeSmall(v));
        values.forEach((v, i) => expect(Buffer.from(results[i] as Uint8Array).equals(Buffer.from(encode(v)))).toBe(true));
      }),
    );
  });

  it('encodes a value larger than its scratch buffer the same way', () => {
    const data = new Uint8Array(SMALL_CBOR_SCRATCH_BYTES + 10).fill(7);
    const value = [1, 2, data, 'pid'];
    expect(Buffer.from(encodeSmall(value)).equals(Buffer.from(encode(value)))).toBe(true);
    // And the scratch buffer is still usable after the failed attempt.
    expect(Buffer.from(encodeSmall([3, 'x'])).equals(Buffer.from(encode([3, 'x'])))).toBe(true);
  });

  it('throws what cborg throws for a value it cannot encode', () => {
    const bad = [1, Symbol('no')];
    let message = '';
    try {
      encode(bad);
    } catch (error) {
      message = (error as Error).message;
    }
    expect(message).toMatch(/unsupported type/);
    expect(() => encodeSmall(bad)).toThrow(message);
  });

  it('stores entries of every size in a segment as cborg encodes them, within its scratch buffer and past it', () => {
    for (const size of [0, 63, 64, 200, SMALL_CBOR_SCRATCH_BYTES - 100, SMALL_CBOR_SCRATCH_BYTES - 40, SMALL_CBOR_SCRATCH_BYTES + 5]) {
      const entry = { index: 7, term: 2, type: EntryType.Normal, data: new Uint8Array(size).fill(3), pid: 'b00t.1z' };
      const bytes = encodeSegment([entry]);
      expect(Buffer.from(bytes).equals(Buffer.from(encode([7, 2, EntryType.Normal, entry.data, 'b00t.1z'])))).toBe(true);
      expect(decodeSegment(bytes)).toEqual([entry]);
    }
  });
});
