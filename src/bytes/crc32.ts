import * as zlib from 'node:zlib';

/** The CRC-32 table (reflected polynomial 0xedb88320, zlib's and gzip's), for Node releases without zlib.crc32. */
let table: Uint32Array | null = null;

function tableCrc32(data: Uint8Array): number {
  if (table === null) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) crc = (table[(crc ^ (data[i] as number)) & 0xff] as number) ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * The CRC-32 of `data` (zlib's): Node's own (zlib.crc32, from Node 20.15 and 22.2) where there
 * is one, else the same sum from a table, so that every release of Node 20 reads what another wrote.
 */
export const crc32: (data: Uint8Array) => number = typeof (zlib as { crc32?: unknown }).crc32 === 'function' ? (data) => zlib.crc32(data) >>> 0 : tableCrc32;

/** The table's sum, for a test that holds Node's to it. */
export const crc32ByTable = tableCrc32;
