import { decode, encode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EntryType, type Message } from '../src/raft/types.js';
import { readAppendWire } from '../src/transport/append-reader.js';
import { DECODE_OPTIONS, encodeFrame, TYPE_CODES } from '../src/transport/codec.js';
import { MAX_ENTRIES_PER_MESSAGE } from '../src/transport/constants.js';

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

// Strings an append holds: ids and pids, of every length class cborg has; half the frames hold
// ASCII only (as members' frames do), the others may hold any character.
const ascii = fc.string({ maxLength: 40 });
const anyText = fc.oneof(ascii, fc.string({ unit: 'binary', maxLength: 8 }));
const integer = fc.oneof(fc.nat({ max: 30 }), fc.nat({ max: 70_000 }), fc.maxSafeNat());
const appendFrame = fc
  .boolean()
  .chain((asciiOnly) => {
    const text = asciiOnly ? ascii : anyText;
    const id = text.filter((s) => s.length > 0);
    return fc.record({ clusterId: id, from: id, to: id, term: integer, prevIndex: fc.oneof(fc.nat({ max: 300 }), fc.nat({ max: 2 ** 40 })), prevTerm: integer, commit: integer, count: fc.nat({ max: 30 }), text: fc.constant(text) });
  })
  .chain(({ clusterId, count, text, ...rest }) =>
    fc
      .array(fc.record({ term: integer, type: fc.constantFrom(EntryType.Normal, EntryType.Noop), data: fc.uint8Array({ maxLength: 300 }), pid: text }), { minLength: count, maxLength: count })
      .map((items) => {
        const message: Message = { type: 'append', ...rest, entries: items.map((e, i) => ({ index: rest.prevIndex + 1 + i, ...e })) };
        const strings = [clusterId, rest.from, rest.to, ...items.map((e) => e.pid)];
        return { frame: encodeFrame({ clusterId, message }), ascii: strings.every(isAscii) };
      }),
  );

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
    const edited = appendFrame.chain(({ frame }) =>
      fc.tuple(
        fc.constant(frame),
        fc.array(fc.tuple(fc.nat({ max: frame.length - 1 }), fc.nat({ max: 255 })), { maxLength: 4 }),
        fc.oneof(fc.constant(frame.length), fc.nat({ max: frame.length })),
        fc.uint8Array({ maxLength: 3 }),
      ),
    );
    let handled = 0;
    fc.assert(
      fc.property(edited, ([frame, edits, cut, tail]) => {
        const bad = new Uint8Array([...frame.subarray(0, cut), ...tail]);
        for (const [at, value] of edits) if (at < bad.length) bad[at] = value;
        const value = read(bad);
        if (value === undefined) return;
        handled++;
        expect(value).toEqual(cborg(bad));
      }),
      { numRuns: 5_000 },
    );
    // The fast path took part: some edits leave a readable append (in data, or past its end and cut).
    expect(handled).toBeGreaterThan(100);
  });

  it('leaves every other message type to cborg', () => {
    const message: Message = { type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 2, readCtx: 0 };
    expect(read(encodeFrame({ clusterId: 'c', message }))).toBeUndefined();
    const response: Message = { type: 'append-resp', from: 'a', to: 'b', term: 1, index: 2, reject: false, hintIndex: 0, hintTerm: 0 };
    expect(read(encodeFrame({ clusterId: 'c', message: response }))).toBeUndefined();
  });

  it('leaves to cborg what strict cborg rejects or decodes otherwise: long heads, indefinite lengths, big integers, other types', () => {
    const entry = (term: unknown): unknown[] => [1, term, 0, new Uint8Array([5]), 'p'];
    const frame = (term: unknown, raw?: (bytes: Uint8Array) => Uint8Array): Uint8Array => {
      const bytes = encode([1, 'c', TYPE_CODES.append, 'a', 'b', 1, 0, 0, 0, [entry(term)]]);
      return raw === undefined ? bytes : raw(bytes);
    };
    // The plain frame is read here, and its term 7 is the one-byte head 0x07 at a known place.
    expect(read(frame(7))).toEqual(cborg(frame(7)));
    const at = frame(7).lastIndexOf(0x07);
    const splice = (head: number[]) => (bytes: Uint8Array): Uint8Array => new Uint8Array([...bytes.subarray(0, at), ...head, ...bytes.subarray(at + 1)]);
    const cases = [
      frame(7, splice([0x18, 0x07])), // 7 in two bytes: not the shortest form
      frame(7, splice([0x19, 0x00, 0x07])),
      frame(7, splice([0x1a, 0, 0, 0, 0x07])),
      frame(7, splice([0x1b, 0, 0, 0, 0, 0, 0, 0, 0x07])),
      frame(7, splice([0x1b, 0x00, 0x20, 0, 0, 0, 0, 0, 0])), // 2^53: past the safe integers
      frame(7, splice([0x1c])), // reserved additional information
      frame(1.5), // a float
      frame(-1), // a negative integer
      frame(null),
      frame('7'),
      frame(7, (b) => new Uint8Array([...b, 0x00])), // a byte after the value
      frame(7, (b) => b.subarray(0, b.length - 1)), // cut
    ];
    for (const bytes of cases) expect(read(bytes)).toBeUndefined();
    // An indefinite-length entries array, which strict cborg refuses.
    const plain = frame(7);
    const entriesHead = plain.indexOf(0x81, 10);
    const indefinite = new Uint8Array([...plain.subarray(0, entriesHead), 0x9f, ...plain.subarray(entriesHead + 1), 0xff]);
    expect(read(indefinite)).toBeUndefined();
    expect(cborg(indefinite)).toBeUndefined();
  });
});
