import { decode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { MAX_TERM } from '../../src/raft/bounds.js';
import { EntryType, type Message } from '../../src/raft/types.js';
import { readAppendWire } from '../../src/transport/append-reader.js';
import { DECODE_OPTIONS } from '../../src/bytes/strict-cbor.js';
import { encodeFrame, TYPE_CODES } from '../../src/transport/codec.js';
import { MAX_ENTRIES_PER_MESSAGE } from '../../src/transport/constants.js';
import { editedBytes, readAsCborgDoes } from '../fixtures/edited-bytes.js';

const read = (bytes: Uint8Array): unknown[] | undefined => readAppendWire(bytes, TYPE_CODES.append, MAX_ENTRIES_PER_MESSAGE);

/** cborg's strict decoding of `bytes`, as decodeFrame does it; undefined where cborg throws. */
function cborg(bytes: Uint8Array): unknown {
  try {
    return decode(bytes, DECODE_OPTIONS);
  } catch {
    return undefined;
  }
}

const isAscii = (s: string): boolean => [...s].every((c) => c.charCodeAt(0) <= 0x7f);

// Strings an append holds: ids and pids, with heads of one and two bytes (MAX_PID_LENGTH and
// the other limits keep longer ones out of valid frames); half the frames hold ASCII only, control
// characters included (as members' frames do), the others may hold any character.
const asciiUnit = fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c));
const ascii = fc.oneof(fc.string({ unit: asciiUnit, maxLength: 30 }), fc.string({ maxLength: 120 }));
const anyText = fc.oneof(ascii, fc.string({ unit: 'binary', maxLength: 8 }));
// Terms and indexes up to the smaller bound the codec holds them to (heads of every size; the
// tests of heads below go up to 2^53).
const integer = fc.oneof(fc.nat({ max: 30 }), fc.nat({ max: 70_000 }), fc.nat({ max: 2 ** 33 }), fc.nat({ max: MAX_TERM }));
const data = fc.uint8Array({ maxLength: 300 });
const count = fc.oneof({ weight: 9, arbitrary: fc.nat({ max: 30 }) }, { weight: 1, arbitrary: fc.integer({ min: 250, max: 300 }) });
const prevIndex = fc.oneof(fc.nat({ max: 300 }), fc.nat({ max: 2 ** 40 }));

/** Append frames as encodeFrame writes them, with `ascii` telling whether every string is ASCII. */
function appendFrames(): fc.Arbitrary<{ frame: Uint8Array; ascii: boolean }> {
  const head = fc.boolean().chain((asciiOnly) => {
    const text = asciiOnly ? ascii : anyText;
    const id = text.filter((t) => t.length > 0);
    return fc.record({ clusterId: id, from: id, to: id, term: integer, prevIndex, prevTerm: integer, commit: integer, count, text: fc.constant(text) });
  });
  return head.chain(({ clusterId, count: n, text, ...rest }) =>
    fc.array(fc.record({ term: integer, type: fc.constantFrom(EntryType.Normal, EntryType.Noop), data, pid: text }), { minLength: n, maxLength: n }).map((items) => {
      const message: Message = { type: 'append', ...rest, entries: items.map((e, i) => ({ index: rest.prevIndex + 1 + i, ...e })) };
      const strings = [clusterId, rest.from, rest.to, ...items.map((e) => e.pid)];
      return { frame: encodeFrame({ clusterId, message }), ascii: strings.every(isAscii) };
    }),
  );
}
const appendFrame = appendFrames();

describe('readAppendWire', () => {
  it('reads every append whose strings are ASCII as cborg decodes it, and leaves the others to cborg', () => {
    let readHere = 0;
    fc.assert(
      fc.property(appendFrame, ({ frame, ascii }) => {
        const value = read(frame);
        if (!ascii) return value === undefined;
        expect(value).toEqual(cborg(frame));
        readHere++;
        return value !== undefined;
      }),
      { numRuns: 2_000 },
    );
    expect(readHere).toBeGreaterThan(500);
  });

  it('gives entry data that is a plain Uint8Array of its own, not a view of the frame, from a Buffer too', () => {
    const message: Message = { type: 'append', from: 'a', to: 'b', term: 1, prevIndex: 0, prevTerm: 0, commit: 0, entries: [{ index: 1, term: 1, type: EntryType.Normal, data: new Uint8Array([1, 2, 3]), pid: 'p' }] };
    const encoded = encodeFrame({ clusterId: 'c', message });
    // Frames arrive from the network as Buffers, within larger ones.
    const pooled = Buffer.concat([Buffer.from([9, 9]), encoded]).subarray(2);
    for (const frame of [encoded, pooled]) {
      const value = read(frame);
      expect(value).toEqual(cborg(frame));
      const data = ((value?.[9] as unknown[][])[0] as unknown[])[3] as Uint8Array;
      expect(data.constructor).toBe(Uint8Array);
      expect(data.buffer).not.toBe(frame.buffer);
      expect([...data]).toEqual([1, 2, 3]);
    }
  });

  it('on corrupted, cut or extended appends, gives what cborg gives or leaves them to it', () => {
    const edited = editedBytes(appendFrame.map(({ frame }) => frame), { maxEdits: 4, maxTail: 3 });
    const handled = readAsCborgDoes(edited, read, cborg, 5_000);
    // The fast path took part: some edits leave a readable append (in data, or past its end and cut).
    expect(handled).toBeGreaterThan(100);
  });

  it('leaves every other message type to cborg', () => {
    const message: Message = { type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 2, readCtx: 0 };
    expect(read(encodeFrame({ clusterId: 'c', message }))).toBeUndefined();
    const response: Message = { type: 'append-resp', from: 'a', to: 'b', term: 1, index: 2, reject: false, hintIndex: 0, hintTerm: 0 };
    expect(read(encodeFrame({ clusterId: 'c', message: response }))).toBeUndefined();
  });

  describe('heads', () => {
    // A frame whose every head is written by `heads`: the frame's array, its integers, the
    // cluster id's text, the entries' array, an entry's array, and its data's byte string.
    const frame = (h: { readonly top?: number[]; readonly int?: number[]; readonly text?: number[]; readonly entries?: number[]; readonly entry?: number[]; readonly data?: number[] }): Uint8Array =>
      new Uint8Array([
        ...(h.top ?? [0x8a]), 0x01, ...(h.text ?? [0x61]), 0x63, TYPE_CODES.append, 0x61, 0x61, 0x61, 0x62, ...(h.int ?? [0x07]), 0x00, 0x00, 0x00,
        ...(h.entries ?? [0x81]), ...(h.entry ?? [0x85]), 0x01, 0x01, 0x00, ...(h.data ?? [0x41]), 0x05, 0x61, 0x70,
      ]);
    const int = (major: number, n: number, size: 1 | 2 | 3 | 5 | 9): number[] => {
      const info = { 1: n, 2: 24, 3: 25, 5: 26, 9: 27 }[size];
      const out = [major | info];
      for (let i = size - 2; i >= 0; i--) out.push(Math.floor(n / 2 ** (8 * i)) % 256);
      return out;
    };

    it('reads the plain frame as cborg does', () => {
      expect(read(frame({}))).toEqual(cborg(frame({})));
      expect(read(frame({}))).toBeDefined();
    });

    it('reads integers at every change of head size, the largest safe one included, as cborg does', () => {
      for (const [n, size] of [[23, 1], [24, 2], [255, 2], [256, 3], [65_535, 3], [65_536, 5], [2 ** 32 - 1, 5], [2 ** 32, 9], [Number.MAX_SAFE_INTEGER, 9]] as const) {
        const bytes = frame({ int: int(0x00, n, size) });
        expect(read(bytes)).toEqual(cborg(bytes));
        expect((read(bytes) as unknown[])[5]).toBe(n);
      }
    });

    it('reads strings and byte strings at every change of head size as cborg does', () => {
      for (const length of [0, 23, 24, 255, 256, 65_535, 65_536]) {
        const message: Message = { type: 'append', from: 'a', to: 'b', term: 1, prevIndex: 0, prevTerm: 0, commit: 0, entries: [{ index: 1, term: 1, type: EntryType.Normal, data: new Uint8Array(length).fill(length & 0xff), pid: 'p'.repeat(Math.min(length, 300)) }] };
        const bytes = encodeFrame({ clusterId: 'c'.repeat(Math.min(length, 256) || 1), message });
        expect(read(bytes)).toEqual(cborg(bytes));
        expect(read(bytes)).toBeDefined();
      }
    });

    it('leaves to cborg, which rejects them, heads longer than they need be, of every kind', () => {
      const longer: Array<Parameters<typeof frame>[0]> = [];
      // The largest value each size holds, written one size up: the first value strict cborg rejects.
      for (const [n, size] of [[23, 2], [255, 3], [65_535, 5], [2 ** 32 - 1, 9]] as const) {
        longer.push({ int: int(0x00, n, size) }, { top: int(0x80, 10, size) }, { entries: int(0x80, 1, size) }, { entry: int(0x80, 5, size) });
        longer.push({ text: int(0x60, 1, size) }, { data: int(0x40, 1, size) });
      }
      for (const heads of longer) {
        const bytes = frame(heads);
        expect(cborg(bytes)).toBeUndefined();
        expect(read(bytes)).toBeUndefined();
      }
    });

    it('leaves to cborg what it decodes otherwise or rejects: 2^53, floats, negatives, other types, reserved heads, trailing or missing bytes', () => {
      const plain = frame({});
      const cases: Array<[Uint8Array, 'rejects' | 'decodes']> = [
        [frame({ int: int(0x00, 2 ** 53, 9) }), 'rejects'], // past the safe integers, and BigInt is off
        [frame({ int: [0xf9, 0x3e, 0x00] }), 'decodes'], // 1.5
        [frame({ int: [0x20] }), 'decodes'], // -1
        [frame({ int: [0xf6] }), 'decodes'], // null
        [frame({ int: [0x61, 0x37] }), 'decodes'], // '7'
        [frame({ int: [0x1c] }), 'rejects'], // reserved additional information
        [frame({ entries: [0x9f], data: [0x41] }), 'rejects'], // an indefinite-length array, unterminated
        [new Uint8Array([...plain, 0x00]), 'rejects'], // a byte after the value
        [plain.subarray(0, plain.length - 1), 'rejects'], // cut
        [frame({ entries: int(0x80, 8192, 3) }), 'rejects'], // more entries than the bytes left could hold
      ];
      for (const [bytes, what] of cases) {
        expect(read(bytes)).toBeUndefined();
        if (what === 'rejects') expect(cborg(bytes)).toBeUndefined();
        else expect(cborg(bytes)).toBeDefined();
      }
    });
  });
});
