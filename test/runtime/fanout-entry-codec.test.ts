import { decode, encode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { FanoutCommand } from '../../src/fanout/command.js';
import { decodeEntry, encodeCommand, KIND_FANOUT } from '../../src/runtime/commands.js';
import { readFanoutEntry, writeFanoutEntry } from '../../src/runtime/fanout/entry-codec.js';
import { FANOUT_VERSION, SUPPORTED } from '../../src/version/versions.js';
import { editedBytes, readAsCborgDoes } from '../fixtures/edited-bytes.js';


/** cborg's decoding of `bytes`, as decodeEntry does it; undefined where cborg throws. */
function cborg(bytes: Uint8Array): unknown {
  try {
    return decode(bytes);
  } catch {
    return undefined;
  }
}

const isAscii = (s: string): boolean => [...s].every((c) => c.charCodeAt(0) <= 0x7f);

// Strings: ASCII (as topics, member ids and most errors are), or any, lone surrogates included.
const asciiUnit = fc.integer({ min: 0, max: 0x7f }).map((c) => String.fromCharCode(c));
const text = fc.oneof({ weight: 3, arbitrary: fc.string({ unit: asciiUnit, minLength: 1, maxLength: 40 }) }, { weight: 1, arbitrary: fc.string({ unit: 'binary', minLength: 1, maxLength: 12 }) });
const longText = fc.oneof(text, fc.string({ unit: asciiUnit, minLength: 24, maxLength: 300 }));
// Counts at every head size up to 2^53, and times of every kind: the cluster's (fractional),
// whole, negative, and those a float32 or float16 holds (which cborg writes smaller).
const count = fc.oneof(fc.nat({ max: 30 }), fc.nat({ max: 70_000 }), fc.nat({ max: 2 ** 33 }), fc.constant(Number.MAX_SAFE_INTEGER));
const time = fc.oneof(
  { weight: 4, arbitrary: fc.double({ min: 1.6e12, max: 1.9e12, noNaN: true }) },
  { weight: 2, arbitrary: fc.nat() },
  { weight: 1, arbitrary: fc.constantFrom(1.5, -3, -0.25, 2 ** 60, 0.1, -0, -16_777_217, 2 ** 53 + 2) },
  // Negative integers past what a float32 holds: cborg writes them as integers (an instant before 1970 of a slot `{ at }`).
  { weight: 1, arbitrary: fc.integer({ min: -(2 ** 45), max: -(2 ** 24) }) },
);
const origin = fc.option(fc.record({ job: text, slotMs: time }), { nil: null });

const done = fc.record({ type: fc.constant('done' as const), member: text, outcomes: fc.array(fc.record({ id: count, token: count, error: fc.option(longText, { nil: null }) }), { maxLength: 40 }), atMs: time });
const lease = fc.tuple(fc.record({ type: fc.constant('lease' as const), member: text, ids: fc.array(count, { maxLength: 40 }), atMs: time }), fc.option(text, { nil: undefined })).map(([l, topic]) => (topic === undefined ? l : { ...l, topic }));
const emit = fc.record({ type: fc.constant('emit' as const), topic: text, items: fc.array(fc.record({ data: fc.uint8Array({ maxLength: 300 }), key: fc.option(text, { nil: null }) }), { minLength: 1, maxLength: 40 }), origin, atMs: time });
/** The commands written and read by hand. */
type ItemCommand = Extract<FanoutCommand, { type: 'done' | 'lease' | 'emit' }>;
const command: fc.Arbitrary<ItemCommand> = fc.oneof(done, lease, emit);

/** Whether writeFanoutEntry writes `n` (else cborg does): a safe non-negative integer, or a number that is no safe integer and that no float32 holds. */
const writable = (n: number): boolean => (Number.isSafeInteger(n) && n >= 0) || (!Number.isSafeInteger(n) && Math.fround(n) !== n);

/** Whether every number of `c` is one writeFanoutEntry writes, and every string ASCII (which readFanoutEntry reads). */
function handledHere(c: ItemCommand): { write: boolean; read: boolean } {
  const strings: string[] = [];
  let write = writable(c.atMs);
  if (c.type === 'done') strings.push(c.member, ...c.outcomes.flatMap((o) => (o.error === null ? [] : [o.error])));
  if (c.type === 'lease') strings.push(c.member, ...(c.topic === undefined ? [] : [c.topic]));
  if (c.type === 'emit') {
    strings.push(c.topic, ...c.items.flatMap((i) => (i.key === null ? [] : [i.key])), ...(c.origin === null ? [] : [c.origin.job]));
    if (c.origin !== null) write &&= writable(c.origin.slotMs);
  }
  return { write, read: write && strings.every(isAscii) };
}

describe('fan-out entries written and read by hand', () => {
  it('writes the bytes cborg writes for every emit, lease and done whose numbers it writes, and leaves the others to it', () => {
    let written = 0;
    fc.assert(
      fc.property(command, (c) => {
        const bytes = writeFanoutEntry(KIND_FANOUT, c, FANOUT_VERSION);
        if (!handledHere(c).write) return bytes === null;
        expect(bytes).not.toBeNull();
        expect(Buffer.from(bytes as Uint8Array).equals(Buffer.from(encode([KIND_FANOUT, c, FANOUT_VERSION])))).toBe(true);
        written++;
        return true;
      }),
      { numRuns: 3_000 },
    );
    expect(written).toBeGreaterThan(1_500);
  });

  it('reads every such entry whose strings are ASCII as cborg decodes it, and leaves the others to cborg', () => {
    let read = 0;
    fc.assert(
      fc.property(command, (c) => {
        const bytes = encode([KIND_FANOUT, c, FANOUT_VERSION]);
        const value = readFanoutEntry(bytes);
        if (!handledHere(c).read) return value === undefined;
        expect(value).toEqual(cborg(bytes));
        read++;
        return true;
      }),
      { numRuns: 3_000 },
    );
    expect(read).toBeGreaterThan(600);
  });

  it('on corrupted, cut or extended entries, gives what cborg gives or leaves them to it', () => {
    const edited = editedBytes(command.map((c) => encode([KIND_FANOUT, c, FANOUT_VERSION])), { maxEdits: 2, wholeWeight: 3, maxTail: 3 });
    const handled = readAsCborgDoes(edited, readFanoutEntry, cborg, 5_000);
    // The reader took part: some edits leave a readable entry (in data, or past its end and cut).
    expect(handled).toBeGreaterThan(100);
  });

  it('gives item data that is a plain Uint8Array of its own, not a view of the entry, from a Buffer too', () => {
    const c: FanoutCommand = { type: 'emit', topic: 't', items: [{ data: new Uint8Array([1, 2, 3]), key: null }], origin: null, atMs: 1.5e12 + 0.25 };
    const entry = writeFanoutEntry(KIND_FANOUT, c, FANOUT_VERSION) as Uint8Array;
    const pooled = Buffer.concat([Buffer.from([9]), entry]).subarray(1);
    for (const bytes of [entry, pooled]) {
      const data = (readFanoutEntry(bytes)?.[1] as Extract<FanoutCommand, { type: 'emit' }>).items[0]?.data as Uint8Array;
      expect(data.constructor).toBe(Uint8Array);
      expect(data.buffer).not.toBe(bytes.buffer);
      expect([...data]).toEqual([1, 2, 3]);
    }
  });

  it('leaves the other commands to cborg', () => {
    const others: FanoutCommand[] = [
      { type: 'consume', topic: 't', member: 'm', settings: { parallelism: 1, retries: 0, timeoutMs: 1, backoffMs: 0, ratePerSecond: null, maxPending: null } },
      { type: 'unconsume', topic: 't', member: 'm' },
      { type: 'reclaim', leases: [{ id: 1, token: 2 }], atMs: 5 },
      { type: 'requeue', topic: 't', ids: [1], atMs: 5 },
      { type: 'drop', topic: 't', ids: [1], atMs: 5 },
    ];
    for (const c of others) {
      expect(writeFanoutEntry(KIND_FANOUT, c, FANOUT_VERSION)).toBeNull();
      expect(readFanoutEntry(encode([KIND_FANOUT, c, FANOUT_VERSION]))).toBeUndefined();
    }
    // A lease whose topic key is there with no value: cborg writes CBOR's undefined for it.
    expect(writeFanoutEntry(KIND_FANOUT, { type: 'lease', member: 'm', ids: [1], atMs: 5, topic: undefined }, FANOUT_VERSION)).toBeNull();
  });

  it('turns away a count of items that the bytes left cannot hold, before it makes anything for it', () => {
    const entry = encode([KIND_FANOUT, { type: 'done', member: 'm', outcomes: [], atMs: 5 }, FANOUT_VERSION]);
    // The outcomes' empty array (0x80) becomes an array of 2^32 - 1 items.
    const at = entry.indexOf(0x80, 10);
    const huge = new Uint8Array([...entry.subarray(0, at), 0x9a, 0xff, 0xff, 0xff, 0xff, ...entry.subarray(at + 1)]);
    expect(readFanoutEntry(huge)).toBeUndefined();
    expect(cborg(huge)).toBeUndefined();
  });

  it('decodeEntry gives back the command encodeCommand wrote, by hand and through cborg alike', () => {
    fc.assert(
      fc.property(command, (c) => {
        const decoded = decodeEntry(encodeCommand({ kind: 'fanout', command: c }), FANOUT_VERSION, SUPPORTED);
        expect(decoded).toEqual(decodeEntry(encode([KIND_FANOUT, c, FANOUT_VERSION]), FANOUT_VERSION, SUPPORTED));
        // (Lone surrogates come back as U+FFFD, and -0 as 0, either way.)
        if (handledHere(c).read && !Object.is(c.atMs, -0) && !(c.type === 'emit' && Object.is(c.origin?.slotMs, -0))) expect(decoded).toEqual({ kind: 'fanout', command: c });
      }),
      { numRuns: 500 },
    );
  });
});
