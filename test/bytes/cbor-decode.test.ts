import { decode as cborgDecode, encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { decode, decodeFirst } from '../../src/bytes/cbor-decode.js';

describe('cbor-decode', () => {
  it('gives back every text string as encoded, with a leading U+FEFF that cborg alone drops', () => {
    const long = `\ufeff${'y'.repeat(300)}`;
    const values = ['\ufeffx', '\ufeff', '\ufeff\ufeffx', 'a\ufeffb', long, { '\ufeffk': '\ufeffv', k: ['\ufeff', 1, Uint8Array.of(0xef, 0xbb, 0xbf)] }];
    // What this module is for: cborg's own decode changes them.
    expect(cborgDecode(encode('\ufeffx'))).toBe('x');
    for (const value of values) expect(decode(encode(value))).toEqual(value);
    const [first, rest] = decodeFirst(Uint8Array.from([...encode('\ufeffa'), ...encode('b')]));
    expect(first).toBe('\ufeffa');
    expect(decode(rest)).toBe('b');
  });

  it('decodes as cborg does otherwise: its defaults, the options given, and byte strings copied out of a Buffer', () => {
    const sample = { n: -3, big: 2n ** 63n, f: 1.5, u: undefined, b: Uint8Array.of(1, 2), a: [null, true, 'ascii'] };
    expect(decode(encode(sample))).toEqual(cborgDecode(encode(sample)));
    expect(() => decode(encode({ u: undefined }), { allowUndefined: false })).toThrow(/undefined/);
    // Indefinite-length arrays are allowed by default, as cborg allows them.
    expect(decode(Uint8Array.of(0x9f, 0x01, 0xff))).toEqual([1]);
    const buffer = Buffer.from(encode(Uint8Array.of(7, 8)));
    const bytes = decode(buffer) as Uint8Array;
    bytes[0] = 9;
    expect([...buffer.subarray(-2)]).toEqual([7, 8]);
  });

  it('puts back no U+FEFF for the bytes after an empty or short string, nor changes the token cborg shares for the empty one', () => {
    // An empty string, then the bytes of U+FEFF as a byte string: it stays empty.
    expect(decode(Uint8Array.from([0x82, 0x60, 0x43, 0xef, 0xbb, 0xbf]))).toEqual(['', Uint8Array.of(0xef, 0xbb, 0xbf)]);
    expect(decode(encode(['', 'ab']))).toEqual(['', 'ab']);
    expect(decode(encode(''))).toBe('');
  });
});
