import * as zlib from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { crc32Combine } from '../../src/bytes/crc32-combine.js';

const crc32 = (zlib as { crc32?: (data: Uint8Array, value?: number) => number }).crc32;

describe.skipIf(crc32 === undefined)('crc32Combine', () => {
  it("gives zlib's CRC-32 of two byte strings one after the other, from each one's", () => {
    const crc = crc32 as (data: Uint8Array, value?: number) => number;
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 5000 }), fc.uint8Array({ maxLength: 5000 }), (a, b) => {
        const joined = new Uint8Array([...a, ...b]);
        expect(crc32Combine(crc(a), crc(b), b.length)).toBe(crc(joined));
      }),
      { numRuns: 300 },
    );
  });

  it('takes lengths beyond 2^32 (the powers of x repeat, the length is not cut to 32 bits)', () => {
    // Appending 2^32 + 3 bytes of B whose CRC is 0 is the same as multiplying by x^(8(2^32+3)); checked
    // against the same done in two steps of 2^31 + 1 and 2^31 + 2 bytes.
    const a = 0x12345678;
    const once = crc32Combine(a, 0, 2 ** 32 + 3);
    const twice = crc32Combine(crc32Combine(a, 0, 2 ** 31 + 1), 0, 2 ** 31 + 2);
    expect(once).toBe(twice);
    expect(once).not.toBe(crc32Combine(a, 0, 3));
  });
});
