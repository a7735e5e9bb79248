import fc from 'fast-check';
import { crc32 as zlibCrc32 } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { crc32, crc32ByTable } from '../../src/bytes/crc32.js';

describe('CRC-32', () => {
  it('is zlib’s: the check value of "123456789", and the table’s sum equals Node’s on any bytes', () => {
    expect(crc32(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32ByTable(new TextEncoder().encode('123456789'))).toBe(0xcbf43926);
    expect(crc32(new Uint8Array(0))).toBe(0);
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 300 }), (bytes) => {
        expect(crc32ByTable(bytes)).toBe(zlibCrc32(bytes) >>> 0);
        expect(crc32(bytes)).toBe(zlibCrc32(bytes) >>> 0);
      }),
    );
  });
});
