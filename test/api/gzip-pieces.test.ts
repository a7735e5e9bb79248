import { gunzipSync } from 'node:zlib';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { acceptsGzip, GZIP_MIN_BYTES, GZIP_STORED_BELOW, gzipPieces } from '../../src/http/gzip-pieces.js';

const concat = (pieces: readonly Uint8Array[]): Buffer => Buffer.concat(pieces.map((p) => Buffer.from(p.buffer, p.byteOffset, p.byteLength)));

describe('gzipPieces', () => {
  it('gives one gzip member that decompresses to the pieces, in order, whatever they hold, stored or compressed', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.uint8Array({ maxLength: 3000 }), fc.uint8Array({ minLength: GZIP_STORED_BELOW - 2, maxLength: GZIP_STORED_BELOW + 3000 })), { maxLength: 8 }), fc.uint8Array({ minLength: GZIP_MIN_BYTES, maxLength: GZIP_MIN_BYTES + 10 }), (pieces, long) => {
        const all = [...pieces, long];
        const zipped = gzipPieces(all);
        expect(zipped).not.toBeNull();
        expect(gunzipSync(concat(zipped!)).equals(concat(all))).toBe(true);
      }),
      { numRuns: 200 },
    );
  });

  it('compresses a piece once while it lives: an answer again reuses its bytes', () => {
    const block = new TextEncoder().encode(JSON.stringify(Array.from({ length: 400 }, (_, i) => ({ name: `job-${i}`, spec: 'every 1h' }))));
    const first = gzipPieces([block])!;
    const again = gzipPieces([new TextEncoder().encode('{"head":1,'), block])!;
    // Header, the piece, the final block, the trailer; then the new head's bytes before the same piece.
    expect(again[2]).toBe(first[1]);
    expect(block.byteLength).toBeGreaterThanOrEqual(GZIP_STORED_BELOW);
    expect(gunzipSync(concat(again)).toString()).toBe(`{"head":1,${new TextDecoder().decode(block)}`);
  });

  it('leaves short answers as they are', () => {
    expect(gzipPieces([new Uint8Array(GZIP_MIN_BYTES - 1)])).toBeNull();
    expect(gzipPieces([])).toBeNull();
  });
});

describe('acceptsGzip', () => {
  it('reads gzip named or * without q=0, and anything it does not understand as no', () => {
    for (const yes of ['gzip', 'gzip, deflate, br', 'br;q=1.0, GZIP;q=0.5', 'x-gzip', '*', 'br, *;q=0.1', 'identity;q=0, gzip'])
      expect(acceptsGzip(yes), yes).toBe(true);
    for (const no of [undefined, '', 'br', 'deflate', 'gzip;q=0', 'gzip;q=0.000', '*;q=0', 'gzip;q=0, *', 'gzipx', ';;;,,,', 'gzip;q=0.0, br'])
      expect(acceptsGzip(no), String(no)).toBe(false);
  });
});
