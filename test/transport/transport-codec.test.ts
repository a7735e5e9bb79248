import { decode, encode, Tagged } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CodecError } from '../../src/errors.js';
import type { Entry, Message, SnapshotMessage } from '../../src/raft/types.js';
import type { SnapshotChunk, WireMessage } from '../../src/transport/envelope.js';
import { encodeConfChange, MAX_PEER_ID_LENGTH } from '../../src/raft/conf-change.js';
import { SnapshotAssembler, splitSnapshot } from '../../src/runtime/snapshot-chunks.js';
import { EntryType, messageTypes } from '../../src/raft/types.js';
import { messageExamples } from '../fixtures/message-examples.js';
import { encodeEntryRecords, EntryRecords } from '../../src/bytes/entry-records.js';
import { arrayHeader } from '../../src/bytes/cbor-heads.js';
import { MAX_INDEX, MAX_READ_CTX, MAX_TERM } from '../../src/raft/bounds.js';
import { RAFT_DEFAULTS } from '../../src/raft/config.js';
import { readAppendWire } from '../../src/transport/append-reader.js';
import { atProtocol, decodeFrame, encodeFrame, PROTOCOL_2_TYPES, TYPE_CODES } from '../../src/transport/codec.js';
import {
  CONF_FRAME_FORMAT_VERSION,
  FRAME_FORMAT_VERSION,
  MAX_CLOCK_STAMP_MS,
  MAX_CLUSTER_ID_LENGTH,
  MAX_ENTRIES_PER_MESSAGE,
  MAX_FRAME_BYTES,
  MAX_ID_LENGTH,
  MAX_PID_LENGTH,
  MAX_PROPOSALS_PER_MESSAGE,
  MAX_SNAPSHOT_BYTES,
} from '../../src/transport/constants.js';

const base = { from: '127.0.0.1:7001', to: '127.0.0.1:7002', term: 7 };
const bytes = (...values: number[]): Uint8Array => new Uint8Array(values);

const examples = messageExamples(base);

/** Encodes an arbitrary value as CBOR, for crafting frames the encoder would refuse to write. */
const raw = (value: unknown): Uint8Array => encode(value);
const header = (code: number, ...fields: unknown[]): unknown[] => [FRAME_FORMAT_VERSION, 'c', code, 'a', 'b', 1, ...fields];

function expectCodecError(run: () => unknown, text?: string | RegExp): void {
  let caught: unknown;
  try {
    run();
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(CodecError);
  expect((caught as CodecError).code).toBe('CRONRAFT_MALFORMED_MESSAGE');
  if (text !== undefined) expect((caught as CodecError).message).toMatch(text);
}

describe('frame codec', () => {
  it('has an example of every message type', () => {
    expect(Object.keys(examples).sort()).toEqual([...messageTypes].sort());
  });

  it.each(messageTypes)('round-trips a %s message', (type) => {
    const message = examples[type];
    const decoded = decodeFrame(encodeFrame({ clusterId: 'cluster-1', message }, undefined, PROTOCOL_2_TYPES.has(type) ? 2 : 1));
    expect(decoded).toEqual({ clusterId: 'cluster-1', message });
  });

  describe('clock stamps on heartbeats', () => {
    const t = 1_767_225_600_123;
    const stamped: WireMessage[] = [
      { ...examples.heartbeat, type: 'heartbeat', commit: 12, readCtx: 3, clock: { sentAt: t } },
      { type: 'heartbeat', ...base, commit: 12, readCtx: 0, clock: { sentAt: t + 0.25, estimate: { offsetMs: -60_000.5, rttMs: 3.75, clusterOffsetMs: 12 } } },
      { type: 'heartbeat-resp', ...base, readCtx: 3, clock: { echo: 1_234.625, receivedAt: 98_765.5, sentAt: 98_766.25, wallOffset: t - 98_766.25 } },
    ];

    it.each(stamped.map((m, i) => [i, m] as const))('round-trip (%i)', (_i, message) => {
      expect(decodeFrame(encodeFrame({ clusterId: 'c', message })).message).toEqual(message);
    });

    it('leave frames without a stamp as they were, and old frames decode with no clock', () => {
      expect(encodeFrame({ clusterId: 'c', message: examples.heartbeat })).toEqual(raw([FRAME_FORMAT_VERSION, 'c', 7, base.from, base.to, 7, 12, 3]));
      const old = decodeFrame(raw(header(7, 4, 0))).message;
      expect(old).toEqual({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 4, readCtx: 0 });
      expect('clock' in old).toBe(false);
      expect('clock' in decodeFrame(raw(header(8, 0))).message).toBe(false);
    });

    it('keep a stamped heartbeat small', () => {
      expect(encodeFrame({ clusterId: 'c', message: stamped[1] as Message }).length).toBeLessThan(90);
      expect(encodeFrame({ clusterId: 'c', message: stamped[2] as Message }).length).toBeLessThan(90);
    });

    it.each<[string, unknown]>([
      ['a stamp on a vote', header(3, 1, 1, false, [1])],
      ['a stamp on an append', header(5, 0, 0, 0, [], [1])],
      ['two stamps', header(7, 1, 2, [1], [1])],
      ['a stamp that is not an array', header(7, 1, 2, 1)],
      ['a null stamp', header(7, 1, 2, null)],
      ['an empty stamp', header(7, 1, 2, [])],
      ['a stamp of three fields', header(7, 1, 2, [1, 2, 3])],
      ['a stamp of six fields', header(7, 1, 2, [1, 2, 3, 4, 5, 6])],
      ['a heardAt given as a string', header(7, 1, 2, [1, '2'])],
      ['a heardAt beyond the range of dates', header(7, 1, 2, [1, 0, 1, 0, MAX_CLOCK_STAMP_MS * 2])],
      ['a sentAt given as a string', header(7, 1, 2, ['1'])],
      ['a sentAt beyond the range of dates', header(7, 1, 2, [MAX_CLOCK_STAMP_MS * 2])],
      ['an offset of 1e300', header(7, 1, 2, [1, 1e300, 1, 0])],
      ['a negative round trip', header(7, 1, 2, [1, 0, -1, 0])],
      ['a cluster offset given as null', header(7, 1, 2, [1, 0, 1, null])],
      ['an echo of two fields', header(8, 0, [1, 2])],
      ['an echo of three fields (no wall offset)', header(8, 0, [1, 2, 3])],
      ['an echo of six fields', header(8, 0, [1, 2, 3, 4, 5, 6])],
      ['an echo whose cluster offset is null', header(8, 0, [1, 2, 3, 4, null])],
      ['an echo whose cluster offset is beyond the range of dates', header(8, 0, [1, 2, 3, 4, MAX_CLOCK_STAMP_MS * 2])],
      ['an echo with bytes', header(8, 0, [1, bytes(2), 3, 4])],
      ['an echo time below the range of dates', header(8, 0, [1, -MAX_CLOCK_STAMP_MS - 1, 3, 4])],
      ['a wall offset beyond the range of dates', header(8, 0, [1, 2, 3, MAX_CLOCK_STAMP_MS * 2])],
      ['a wall offset given as null', header(8, 0, [1, 2, 3, null])],
    ])('reject %s', (_name, value) => {
      expectCodecError(() => decodeFrame(raw(value)));
    });

    it('reject NaN and Infinity, which strict CBOR decoding refuses', () => {
      const frame = raw(header(7, 1, 2, [1.5]));
      // [1.5] is the float16 0xf9 0x3e 0x00 at the end: turn it into NaN, then Infinity.
      const nan = frame.slice();
      nan.set([0xf9, 0x7e, 0x00], nan.length - 3);
      expectCodecError(() => decodeFrame(nan));
      const inf = frame.slice();
      inf.set([0xf9, 0x7c, 0x00], inf.length - 3);
      expectCodecError(() => decodeFrame(inf));
      expect(decodeFrame(frame).message).toMatchObject({ clock: { sentAt: 1.5 } });
    });

    it('are refused by the encoder when out of bounds', () => {
      const bad = (clock: unknown): WireMessage => ({ ...examples.heartbeat, clock }) as WireMessage;
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: bad({ sentAt: Number.NaN }) }), /sentAt/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: bad({ sentAt: 1, estimate: { offsetMs: 0, rttMs: -1, clusterOffsetMs: 0 } }) }), /rttMs/);
      const badEcho = (clock: unknown): WireMessage => ({ ...examples['heartbeat-resp'], clock }) as WireMessage;
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: badEcho({ echo: 1, receivedAt: 2, sentAt: 3, wallOffset: Number.POSITIVE_INFINITY }) }), /wallOffset/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: badEcho({ echo: 1, receivedAt: 2, sentAt: 3 }) }), /wallOffset/);
    });
  });

  it('round-trips a propose-resp without a leader and an empty append', () => {
    const a: Message = { type: 'propose-resp', ...base, index: 0, pids: [], reject: true, leader: null };
    const b: Message = { type: 'append', ...base, prevIndex: 0, prevTerm: 0, entries: [], commit: 0 };
    expect(decodeFrame(encodeFrame({ clusterId: 'c', message: a })).message).toEqual(a);
    expect(decodeFrame(encodeFrame({ clusterId: 'c', message: b })).message).toEqual(b);
  });

  it('decodes entry data into a copy, not a view of the frame', () => {
    const frame = encodeFrame({ clusterId: 'c', message: examples.append });
    const decoded = decodeFrame(frame).message;
    frame.fill(0);
    expect(decoded.type === 'append' && decoded.entries[1]?.data).toEqual(bytes(1, 2, 3));
  });

  it('accepts a Buffer as entry data', () => {
    const message: Message = { type: 'propose', ...base, proposals: [{ pid: 'p', data: Buffer.from([1, 2]) }] };
    const decoded = decodeFrame(encodeFrame({ clusterId: 'c', message })).message;
    expect(decoded.type === 'propose' && Array.from(decoded.proposals[0]?.data ?? [])).toEqual([1, 2]);
  });

  it('writes the format version first and a heartbeat in under 40 bytes', () => {
    const frame = encodeFrame({ clusterId: 'c', message: examples.heartbeat });
    expect(frame.length).toBeLessThan(40);
    expect(frame[1]).toBe(FRAME_FORMAT_VERSION);
  });

  describe('rejects with CodecError', () => {
    it.each<[string, unknown]>([
      ['a map instead of an array', { v: 1 }],
      ['a bare number', 1],
      ['an empty array', []],
      ['a short header', [1, 'c', 7, 'a', 'b']],
      ['another format version', [3, 'c', 9, 'a', 'b', 1]],
      ['a version given as a string', ['1', 'c', 9, 'a', 'b', 1]],
      ['an unknown type code', header(99)],
      ['a type code given as a string', [1, 'c', 'heartbeat', 'a', 'b', 1, 0, 0]],
      ['a missing field', header(7, 1)],
      ['an extra field', header(7, 1, 2, 3)],
      ['an empty cluster id', [1, '', 9, 'a', 'b', 1]],
      ['a cluster id that is too long', [1, 'c'.repeat(MAX_CLUSTER_ID_LENGTH + 1), 9, 'a', 'b', 1]],
      ['an empty from', [1, 'c', 9, '', 'b', 1]],
      ['a from that is too long', [1, 'c', 9, 'a'.repeat(MAX_ID_LENGTH + 1), 'b', 1]],
      ['a to given as bytes', [1, 'c', 9, 'a', bytes(1), 1]],
      ['a negative term', [1, 'c', 9, 'a', 'b', -1]],
      ['a fractional term', [1, 'c', 9, 'a', 'b', 1.5]],
      ['a term above 2^53', [1, 'c', 9, 'a', 'b', 2 ** 53]],
      ['a term of 2^53 - 1', [1, 'c', 9, 'a', 'b', Number.MAX_SAFE_INTEGER]],
      ['a term given as null', [1, 'c', 9, 'a', 'b', null]],
      ['a boolean given as a number', header(2, 1)],
      ['a vote transfer given as a string', header(3, 1, 1, 'yes')],
      ['entries given as a map', header(5, 0, 0, 0, {})],
      ['an entry with too few fields', header(5, 0, 0, 0, [[1, 1, 0, bytes()]])],
      ['an entry with string data', header(5, 0, 0, 0, [[1, 1, 0, 'data', '']])],
      ['an entry of unknown type', header(5, 0, 0, 0, [[1, 1, 2, bytes(), '']])],
      ['an entry whose index does not follow prevIndex', header(5, 4, 1, 0, [[6, 1, 0, bytes(), '']])],
      ['entries that are not contiguous', header(5, 0, 0, 0, [[1, 1, 0, bytes(), ''], [3, 1, 0, bytes(), '']])],
      ['a pid that is too long', header(5, 0, 0, 0, [[1, 1, 0, bytes(), 'p'.repeat(MAX_PID_LENGTH + 1)]])],
      ['a proposal with an empty pid', header(10, [['', bytes()]])],
      ['a proposal with three fields', header(10, [['p', bytes(), 1]])],
      ['a propose-resp with a numeric pid', header(11, 1, [1], false, null)],
      ['a propose-resp with an empty leader', header(11, 1, [], false, '')],
      ['a propose-resp with a numeric leader', header(11, 1, [], false, 3)],
      ['a read-index-resp with a negative index', header(13, 1, -2, false)],
    ])('%s', (_name, value) => {
      expectCodecError(() => decodeFrame(raw(value)));
    });

    it('too many entries, proposals or pids', () => {
      const entry = (i: number): unknown[] => [i + 1, 1, 0, bytes(), ''];
      const many = MAX_ENTRIES_PER_MESSAGE + 1;
      expectCodecError(() => decodeFrame(raw(header(5, 0, 0, 0, Array.from({ length: many }, (_, i) => entry(i))))), /more than/);
      expectCodecError(() => decodeFrame(raw(header(10, Array.from({ length: MAX_PROPOSALS_PER_MESSAGE + 1 }, () => ['p', bytes()])))), /more than/);
      expectCodecError(() => decodeFrame(raw(header(11, 1, Array.from({ length: MAX_PROPOSALS_PER_MESSAGE + 1 }, () => 'p'), false, null))), /more than/);
    });

    it('bytes that are not CBOR, or CBOR that cborg refuses in strict mode', () => {
      const valid = encodeFrame({ clusterId: 'c', message: examples.heartbeat });
      expectCodecError(() => decodeFrame(new Uint8Array(0)));
      expectCodecError(() => decodeFrame(bytes(0xff)));
      expectCodecError(() => decodeFrame(valid.subarray(0, valid.length - 1)), /Malformed frame/);
      expectCodecError(() => decodeFrame(new Uint8Array([...valid, 0])), /Malformed frame/);
      // A non-minimal integer: term 1 written as a 2-byte uint.
      expectCodecError(() => decodeFrame(bytes(0x86, 0x01, 0x61, 0x63, 0x09, 0x61, 0x61, 0x61, 0x62, 0x19, 0x00, 0x01)));
      // An indefinite-length array.
      expectCodecError(() => decodeFrame(bytes(0x9f, 0x01, 0xff)));
      // An integer beyond 2^64 needs a bignum tag; a big uint64 would need BigInt.
      expectCodecError(() => decodeFrame(bytes(0x86, 0x01, 0x61, 0x63, 0x09, 0x61, 0x61, 0x61, 0x62, 0x1b, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff)));
      // A tag wrapping the whole frame.
      expectCodecError(() => decodeFrame(raw(new Tagged(42, header(9)))));
      // undefined and NaN.
      expectCodecError(() => decodeFrame(bytes(0x86, 0x01, 0x61, 0x63, 0x09, 0x61, 0x61, 0x61, 0x62, 0xf7)));
      expectCodecError(() => decodeFrame(bytes(0x86, 0x01, 0x61, 0x63, 0x09, 0x61, 0x61, 0x61, 0x62, 0xf9, 0x7e, 0x00)));
    });

    it('deeply nested arrays without overflowing the stack into a RangeError', () => {
      expectCodecError(() => decodeFrame(new Uint8Array(200_000).fill(0x81)));
    });

    it('a frame larger than MAX_FRAME_BYTES', () => {
      expectCodecError(() => decodeFrame(new Uint8Array(MAX_FRAME_BYTES + 1)), /exceeds/);
    });

    it('a non-Uint8Array input', () => {
      expectCodecError(() => decodeFrame('hello' as unknown as Uint8Array));
    });
  });

  describe('bounds on numbers', () => {
    // Each field with its bound, as a frame holding `v` there and in-bounds values elsewhere.
    const fields: Array<[string, number, (v: number) => unknown[]]> = [
      ['term', MAX_TERM, (v) => [FRAME_FORMAT_VERSION, 'c', 9, 'a', 'b', v]],
      ['prevote.lastIndex', MAX_INDEX, (v) => header(1, v, 0)],
      ['prevote.lastTerm', MAX_TERM, (v) => header(1, 0, v)],
      ['vote.lastIndex', MAX_INDEX, (v) => header(3, v, 0, false)],
      ['vote.lastTerm', MAX_TERM, (v) => header(3, 0, v, false)],
      ['append.prevIndex', MAX_INDEX, (v) => header(5, v, 0, 0, [])],
      ['append.prevTerm', MAX_TERM, (v) => header(5, 0, v, 0, [])],
      ['append.commit', MAX_INDEX, (v) => header(5, 0, 0, v, [])],
      ['append-resp.index', MAX_INDEX, (v) => header(6, v, false, 0, 0)],
      ['append-resp.hintIndex', MAX_INDEX, (v) => header(6, 0, false, v, 0)],
      ['append-resp.hintTerm', MAX_TERM, (v) => header(6, 0, false, 0, v)],
      ['heartbeat.commit', MAX_INDEX, (v) => header(7, v, 0)],
      ['heartbeat.readCtx', MAX_READ_CTX, (v) => header(7, 0, v)],
      ['heartbeat-resp.readCtx', MAX_READ_CTX, (v) => header(8, v)],
      ['propose-resp.index', MAX_INDEX, (v) => header(11, v, [], false, null)],
      ['read-index.ctx', MAX_READ_CTX, (v) => header(12, v)],
      ['read-index-resp.ctx', MAX_READ_CTX, (v) => header(13, v, 0, false)],
      ['read-index-resp.index', MAX_INDEX, (v) => header(13, 0, v, false)],
      ['snapshot.index', MAX_INDEX, (v) => header(14, v, 1, 0, 0, bytes())],
      ['snapshot.term', MAX_TERM, (v) => header(14, 1, v, 0, 0, bytes())],
      ['snapshot.offset', MAX_SNAPSHOT_BYTES, (v) => header(14, 1, 1, v, MAX_SNAPSHOT_BYTES, bytes())],
      ['snapshot.total', MAX_SNAPSHOT_BYTES, (v) => header(14, 1, 1, 0, v, bytes(1))],
    ];
    it.each(fields)('%s: accepted at its bound, refused one past it', (field, bound, frame) => {
      expect(() => decodeFrame(raw(frame(bound)))).not.toThrow();
      expectCodecError(() => decodeFrame(raw(frame(bound + 1))), `${field}: expected an integer from 0 to ${bound}`);
    });

    // An append with an entry, read in one pass when its strings are ASCII, by cborg otherwise.
    const append = (clusterId: string, n: { term?: number; prevIndex?: number; prevTerm?: number; commit?: number; entryTerm?: number }): Uint8Array => {
      const prevIndex = n.prevIndex ?? 0;
      return raw([FRAME_FORMAT_VERSION, clusterId, 5, 'a', 'b', n.term ?? 1, prevIndex, n.prevTerm ?? 0, n.commit ?? 0, [[prevIndex + 1, n.entryTerm ?? 1, 0, bytes(1), 'p']]]);
    };
    const appendFields: Array<[string, number, (v: number) => Parameters<typeof append>[1]]> = [
      ['append.term', MAX_TERM, (v) => ({ term: v })],
      ['append.entries[0].index', MAX_INDEX, (v) => ({ prevIndex: v - 1 })],
      ['append.prevTerm', MAX_TERM, (v) => ({ prevTerm: v })],
      ['append.commit', MAX_INDEX, (v) => ({ commit: v })],
      ['append.entries[0].term', MAX_TERM, (v) => ({ entryTerm: v })],
    ];
    it.each(appendFields)('%s of an append with entries: at its bound and one past, on the one-pass reader and on cborg', (field, bound, fieldsAt) => {
      for (const clusterId of ['c', 'ç']) {
        const at = append(clusterId, fieldsAt(bound));
        const past = append(clusterId, fieldsAt(bound + 1));
        // The ASCII frame takes the one-pass reader, the other cborg.
        expect(readAppendWire(at, TYPE_CODES.append, MAX_ENTRIES_PER_MESSAGE) !== undefined, clusterId).toBe(clusterId === 'c');
        expect(readAppendWire(past, TYPE_CODES.append, MAX_ENTRIES_PER_MESSAGE) !== undefined, clusterId).toBe(clusterId === 'c');
        expect(() => decodeFrame(at)).not.toThrow();
        expectCodecError(() => decodeFrame(past), field);
      }
    });

    it('refuses a term of 2^53 - 1 in every message type', () => {
      for (const type of messageTypes) {
        const frame = encodeFrame({ clusterId: 'c', message: examples[type] }, undefined, PROTOCOL_2_TYPES.has(type) ? 2 : 1);
        const wire = decode(frame) as unknown[];
        wire[5] = Number.MAX_SAFE_INTEGER;
        expectCodecError(() => decodeFrame(raw(wire)), `${type}.term`);
      }
    });

    it('are kept by the encoder, which refuses what its peers would drop', () => {
      const append = examples.append as Extract<Message, { type: 'append' }>;
      const readIndex = examples['read-index'] as Extract<Message, { type: 'read-index' }>;
      const snapshot = examples.snapshot as Extract<Message, { type: 'snapshot' }>;
      const [first] = append.entries as [Entry];
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...examples.heartbeat, term: MAX_TERM + 1 } }), /term/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...readIndex, ctx: MAX_READ_CTX + 1 } }), /ctx/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...append, entries: [{ ...first, term: MAX_TERM + 1 }] } }), /term/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...append, prevIndex: MAX_INDEX, entries: [{ ...first, index: MAX_INDEX + 1 }] } }), /index/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...snapshot, chunk: { offset: 0, total: MAX_SNAPSHOT_BYTES + 1 } } }), /total/);
    });
  });

  describe('encoding', () => {
    it('refuses a message its peers would reject, with CodecError', () => {
      const tooMany: Message = {
        type: 'propose',
        ...base,
        proposals: Array.from({ length: MAX_PROPOSALS_PER_MESSAGE + 1 }, () => ({ pid: 'p', data: new Uint8Array(0) })),
      };
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: tooMany }), /more than/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...examples.heartbeat, term: -1 } }), /term/);
      expectCodecError(() => encodeFrame({ clusterId: '', message: examples.heartbeat }), /clusterId/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...examples.heartbeat, type: 'bogus' } as unknown as Message }), /Unknown message type/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: null as unknown as Message }));
      // Entries that are not a contiguous run after prevIndex, or with a field out of bounds.
      const append = examples.append as Extract<Message, { type: 'append' }>;
      const [first, second] = append.entries as [Entry, Entry];
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...append, entries: [first, { ...second, index: 13 }] } }), /index/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...append, entries: [{ ...first, pid: 'p'.repeat(MAX_PID_LENGTH + 1) }] } }), /pid/);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...append, term: -1 } }), /term/);
      // What no protocol message holds, but a caller might pass: still CodecError.
      for (const odd of [[first, null], [first, undefined], new Array<Entry>(2), [first, 7]]) {
        expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...append, entries: odd as Entry[] } }));
      }
      for (const prevIndex of [10n, Symbol('x'), '10', 1.5]) {
        expectCodecError(() => encodeFrame({ clusterId: 'c', message: { ...append, prevIndex: prevIndex as unknown as number } }));
      }
    });

    it('refuses a frame larger than MAX_FRAME_BYTES', () => {
      const message: Message = { type: 'propose', ...base, proposals: [{ pid: 'p', data: new Uint8Array(MAX_FRAME_BYTES) }] };
      expectCodecError(() => encodeFrame({ clusterId: 'c', message }), /more than the/);
    });

    it('carries the largest entry a leader appends (RAFT_DEFAULTS.maxEntryBytes) alone in an append and in a forwarded proposal', () => {
      const data = new Uint8Array(RAFT_DEFAULTS.maxEntryBytes);
      const pid = 'p'.repeat(MAX_PID_LENGTH);
      const append: Message = { type: 'append', ...base, prevIndex: MAX_INDEX - 1, prevTerm: MAX_TERM, commit: MAX_INDEX, entries: [{ index: MAX_INDEX, term: MAX_TERM, type: EntryType.Normal, data, pid }] };
      const propose: Message = { type: 'propose', ...base, proposals: [{ pid, data }] };
      for (const message of [append, propose]) expect(decodeFrame(encodeFrame({ clusterId: 'c'.repeat(MAX_CLUSTER_ID_LENGTH), message })).message).toMatchObject({ type: message.type });
    });
  });

  describe('properties', () => {
    const id = fc.string({ minLength: 1, maxLength: 40 });
    // Every number up to its bound (see src/raft/bounds.ts), the bound itself included.
    const upTo = (max: number): fc.Arbitrary<number> => fc.oneof(fc.nat({ max: 1000 }), fc.nat({ max }), fc.constant(max));
    const term = upTo(MAX_TERM);
    const index = upTo(MAX_INDEX);
    const ctx = upTo(MAX_READ_CTX);
    const pid = fc.string({ minLength: 1, maxLength: 40 });
    const data = fc.uint8Array({ maxLength: 64 });
    const common = { from: id, to: id, term };
    // -0 travels as 0, so the arbitraries leave it out.
    const ms = (min: number): fc.Arbitrary<number> =>
      fc.oneof(fc.double({ min, max: MAX_CLOCK_STAMP_MS, noNaN: true }), fc.integer({ min: Math.max(min, -1e6), max: 1e6 })).map((x) => (Object.is(x, -0) ? 0 : x));
    const time = ms(-MAX_CLOCK_STAMP_MS);
    const heartbeatClock = fc.oneof(
      fc.record({ sentAt: time }),
      fc.record({ sentAt: time, estimate: fc.record({ offsetMs: time, rttMs: ms(0), clusterOffsetMs: time }) }),
    );
    const heartbeatEcho = fc.oneof(
      fc.record({ echo: time, receivedAt: time, sentAt: time, wallOffset: time }),
      fc.record({ echo: time, receivedAt: time, sentAt: time, wallOffset: time, clusterOffset: time }),
    );
    const append = fc
      .record({ ...common, prevIndex: fc.nat({ max: 1_000_000 }), prevTerm: term, commit: index, count: fc.nat({ max: 20 }) })
      .chain(({ count, ...rest }) =>
        fc
          .array(fc.record({ term, type: fc.constantFrom(EntryType.Normal, EntryType.Noop), data, pid: fc.oneof(fc.constant(''), pid) }), {
            minLength: count,
            maxLength: count,
          })
          .map((items): Message => ({ type: 'append', ...rest, entries: items.map((e, i) => ({ index: rest.prevIndex + 1 + i, ...e })) })),
      );
    const message: fc.Arbitrary<Message> = fc.oneof(
      fc.record({ type: fc.constant('prevote' as const), ...common, lastIndex: index, lastTerm: term }),
      fc.record({ type: fc.constant('prevote-resp' as const), ...common, reject: fc.boolean() }),
      fc.record({ type: fc.constant('vote' as const), ...common, lastIndex: index, lastTerm: term, transfer: fc.boolean() }),
      fc.record({ type: fc.constant('vote-resp' as const), ...common, reject: fc.boolean() }),
      append,
      fc.record({ type: fc.constant('append-resp' as const), ...common, index, reject: fc.boolean(), hintIndex: index, hintTerm: term }),
      fc.record({ type: fc.constant('heartbeat' as const), ...common, commit: index, readCtx: ctx }),
      fc.record({ type: fc.constant('heartbeat' as const), ...common, commit: index, readCtx: ctx, clock: heartbeatClock }),
      fc.record({ type: fc.constant('heartbeat-resp' as const), ...common, readCtx: ctx }),
      fc.record({ type: fc.constant('heartbeat-resp' as const), ...common, readCtx: ctx, clock: heartbeatEcho }),
      fc.record({ type: fc.constant('timeout-now' as const), ...common }),
      fc.record({ type: fc.constant('propose' as const), ...common, proposals: fc.array(fc.record({ pid, data }), { maxLength: 10 }) }),
      fc.record({
        type: fc.constant('propose-resp' as const),
        ...common,
        index,
        pids: fc.array(pid, { maxLength: 10 }),
        reject: fc.boolean(),
        leader: fc.option(id, { nil: null }),
      }),
      fc.record({ type: fc.constant('read-index' as const), ...common, ctx }),
      fc.record({ type: fc.constant('read-index-resp' as const), ...common, ctx, index, reject: fc.boolean() }),
    );

    it('round-trips arbitrary valid messages', () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1, maxLength: 40 }), message, (clusterId, m) => {
          expect(decodeFrame(encodeFrame({ clusterId, message: m }, undefined, 2))).toEqual({ clusterId, message: m });
          // At protocol 1, as a peer of it reads the message (an echo's clusterOffset dropped).
          expect(decodeFrame(encodeFrame({ clusterId, message: m }))).toEqual({ clusterId, message: atProtocol(m as WireMessage, 1) });
        }),
        { numRuns: 2000 },
      );
    });

    it('encodes an append with entries as cborg encodes its wire array, around records shared with storage', () => {
      fc.assert(
        fc.property(fc.string({ minLength: 1, maxLength: 40 }), append, (clusterId, m) => {
          if (m.type !== 'append') return;
          const records = m.entries.map((e) => [e.index, e.term, e.type, e.data, e.pid]);
          const wire = [FRAME_FORMAT_VERSION, clusterId, 5, m.from, m.to, m.term, m.prevIndex, m.prevTerm, m.commit, records];
          expect(Buffer.from(encodeFrame({ clusterId, message: m })).equals(Buffer.from(encode(wire)))).toBe(true);
          if (m.entries.length === 0) return;
          // A member's encoder encodes a run of entries once, whichever array holds them; another member's does its own.
          const member = new EntryRecords();
          const once = member.encode(m.entries);
          expect(member.encode([...m.entries])).toBe(once);
          expect(new EntryRecords().encode(m.entries)).not.toBe(once);
          expect(Buffer.from(encodeFrame({ clusterId, message: m }, member)).equals(Buffer.from(encode(wire)))).toBe(true);
          expect(Buffer.from(once).equals(Buffer.from(encodeEntryRecords(m.entries)))).toBe(true);
          expect(Buffer.from(once).equals(Buffer.concat(records.map((r) => encode(r))))).toBe(true);
        }),
        { numRuns: 1000 },
      );
      // Longer runs, whose array headers take two and three bytes.
      for (const count of [24, 255, 256, 300]) {
        const run: Entry[] = Array.from({ length: count }, (_, i) => ({ index: 101 + i, term: 3, type: EntryType.Normal, data: bytes(i % 256), pid: `n.${i}` }));
        const m: Message = { type: 'append', ...base, prevIndex: 100, prevTerm: 3, commit: 90, entries: run };
        const wire = [FRAME_FORMAT_VERSION, 'c', 5, m.from, m.to, m.term, 100, 3, 90, run.map((e) => [e.index, e.term, e.type, e.data, e.pid])];
        expect(Buffer.from(encodeFrame({ clusterId: 'c', message: m })).equals(Buffer.from(encode(wire)))).toBe(true);
      }
    });

    it('writes the header of an array of every length an append may hold as cborg does', () => {
      for (let n = 1; n <= MAX_ENTRIES_PER_MESSAGE; n++) {
        const items = encode(new Array<number>(n).fill(0));
        // Each 0 takes one byte: what precedes them is the header.
        expect(Buffer.from(arrayHeader(n)).equals(Buffer.from(items.subarray(0, items.length - n)))).toBe(true);
      }
    });

    it('throws nothing but CodecError on random bytes', () => {
      fc.assert(
        fc.property(fc.uint8Array({ maxLength: 256 }), (input) => {
          try {
            decodeFrame(input);
          } catch (error) {
            expect(error).toBeInstanceOf(CodecError);
          }
        }),
        { numRuns: 5000 },
      );
    });

    it('reads a float -0 as 0, so that a frame decoded and encoded again decodes the same (found by the property below)', () => {
      // A heartbeat: [1, 'yh$', 7 (heartbeat), from, to, term, commit, readCtx, [sentAt]].
      const head = Uint8Array.from([0x89, 1, 0x63, 0x79, 0x68, 0x24, 7, 0x68, 0x64, 0x2f, 0x3d, 0x63, 0x54, 0x38, 0x71, 0x5b, 0x64, 0x2c, 0x54, 0x34, 0x57, 0x1b, 0, 0, 0x89, 0x0e, 0x44, 0xf0, 0xe1, 0x3c]);
      const uint64 = [0x1b, 0, 8, 0, 0, 0, 0, 0, 0];
      const minusZero64 = [0xfb, 0x80, 0, 0, 0, 0, 0, 0, 0];
      const minusZero16 = [0xf9, 0x80, 0];
      const cases = [
        Uint8Array.from([...head, ...uint64, ...uint64, 0x81, ...minusZero64]), // sentAt
        Uint8Array.from([...head, ...minusZero16, ...uint64, 0x81, 0]), // commit
      ];
      for (const frame of cases) {
        const decoded = decodeFrame(frame);
        const { commit, clock } = decoded.message as { commit: number; clock: { sentAt: number } };
        expect(Object.is(commit, -0) || Object.is(clock.sentAt, -0)).toBe(false);
        expect(decodeFrame(encodeFrame(decoded))).toEqual(decoded);
      }
    });

    it('throws nothing but CodecError on corrupted valid frames, and returns only valid messages', () => {
      const corrupted = fc
        .tuple(fc.string({ minLength: 1, maxLength: 8 }), message)
        .map(([clusterId, m]) => encodeFrame({ clusterId, message: m }))
        .chain((frame) =>
          fc.tuple(fc.constant(frame), fc.array(fc.tuple(fc.nat({ max: frame.length - 1 }), fc.nat({ max: 255 })), { minLength: 1, maxLength: 4 })),
        );
      fc.assert(
        fc.property(corrupted, ([frame, edits]) => {
          const bad = frame.slice();
          for (const [at, value] of edits) bad[at] = value;
          try {
            const decoded = decodeFrame(bad);
            // Whatever decodes must survive re-encoding, i.e. satisfy every rule of the format.
            expect(decodeFrame(encodeFrame(decoded))).toEqual(decoded);
          } catch (error) {
            expect(error).toBeInstanceOf(CodecError);
          }
        }),
        { numRuns: 5000 },
      );
    });
  });
});

describe('protocol 2: configuration changes', () => {
  const change = (index: number, data: Uint8Array): Entry => ({ index, term: 2, type: EntryType.ConfChange, data, pid: '' });
  const addLearner = encodeConfChange({ type: 'add-learner', id: '127.0.0.1:7004' });
  const appendWith = (entries: Entry[]): WireMessage => ({ type: 'append', ...base, prevIndex: 4, prevTerm: 2, commit: 4, entries });
  const normal = (index: number): Entry => ({ index, term: 2, type: EntryType.Normal, data: bytes(1, 2), pid: 'a#1' });
  const conf = { voters: ['127.0.0.1:7001', '127.0.0.1:7002'], learners: ['127.0.0.1:7004'], peerIds: [['127.0.0.1:7002', '12D3KooWB'], ['127.0.0.1:7004', '12D3KooWD']] as const };
  const snapshot: WireMessage = { type: 'snapshot', ...base, snapshot: { index: 9, term: 2, conf, data: bytes(7, 8, 9) } };

  it('round-trips an append with a conf change in a frame of version 2 at protocol 2', () => {
    const bind = encodeConfChange({ type: 'bind', id: '127.0.0.1:7001', peerId: '12D3KooWA' });
    const m = appendWith([normal(5), change(6, addLearner), normal(7), change(8, bind)]);
    const frame = encodeFrame({ clusterId: 'c', message: m }, undefined, 2);
    expect((decode(frame) as unknown[])[0]).toBe(CONF_FRAME_FORMAT_VERSION);
    expect(decodeFrame(frame)).toEqual({ clusterId: 'c', message: m });
  });

  it('writes an append without a conf change as version 1 at protocol 2, byte for byte as at protocol 1', () => {
    const m = appendWith([normal(5)]);
    expect(encodeFrame({ clusterId: 'c', message: m }, undefined, 2)).toEqual(encodeFrame({ clusterId: 'c', message: m }));
  });

  it("round-trips a snapshot with its configuration at protocol 2, and drops the configuration at protocol 1", () => {
    const two = encodeFrame({ clusterId: 'c', message: snapshot }, undefined, 2);
    expect((decode(two) as unknown[])[0]).toBe(CONF_FRAME_FORMAT_VERSION);
    expect(decodeFrame(two)).toEqual({ clusterId: 'c', message: snapshot });
    const one = encodeFrame({ clusterId: 'c', message: snapshot });
    expect((decode(one) as unknown[])[0]).toBe(FRAME_FORMAT_VERSION);
    const decoded = decodeFrame(one).message;
    expect(decoded.type === 'snapshot' && 'conf' in decoded.snapshot).toBe(false);
    expect(atProtocol(snapshot, 1)).toEqual(decoded);
  });

  it('carries the configuration on every chunk of a snapshot, and joins them with it', () => {
    const big = { ...snapshot, snapshot: { ...snapshot.snapshot, data: new Uint8Array(10).fill(3) } } as SnapshotMessage;
    const chunks = splitSnapshot(big, 4);
    expect(chunks.length).toBe(3);
    const assembler = new SnapshotAssembler();
    let whole: SnapshotMessage | null = null;
    for (const chunk of chunks) whole = assembler.add((decodeFrame(encodeFrame({ clusterId: 'c', message: chunk }, undefined, 2)).message as SnapshotChunk), 0) ?? whole;
    expect(whole?.snapshot).toEqual(big.snapshot);
  });

  it("carries a heartbeat's heardAt at protocol 2, in a frame of version 1, and drops it at protocol 1", () => {
    const heartbeats: WireMessage[] = [
      { type: 'heartbeat', ...base, commit: 3, readCtx: 0, clock: { sentAt: 10.5, heardAt: 73_004.25 } },
      { type: 'heartbeat', ...base, commit: 3, readCtx: 0, clock: { sentAt: 10.5, estimate: { offsetMs: 72_000.5, rttMs: 2, clusterOffsetMs: 9 }, heardAt: 73_004.25 } },
    ];
    for (const m of heartbeats) {
      const two = encodeFrame({ clusterId: 'c', message: m }, undefined, 2);
      expect((decode(two) as unknown[])[0]).toBe(FRAME_FORMAT_VERSION);
      expect(decodeFrame(two).message).toEqual(m);
      const one = decodeFrame(encodeFrame({ clusterId: 'c', message: m })).message;
      expect(one.type === 'heartbeat' && one.clock !== undefined && 'heardAt' in one.clock).toBe(false);
      expect(atProtocol(m, 1)).toEqual(one);
      expect(atProtocol(m, 2)).toBe(m);
    }
  });

  it("carries a heartbeat answer's clusterOffset at protocol 2, in a frame of version 1, drops it at protocol 1, and refuses a bad one or a sixth field", () => {
    const m: WireMessage = { type: 'heartbeat-resp', ...base, readCtx: 3, clock: { echo: 1_234.625, receivedAt: 98_765.5, sentAt: 98_766.25, wallOffset: 1.7e12, clusterOffset: 1.7e12 + 0.5 } };
    const two = encodeFrame({ clusterId: 'c', message: m }, undefined, 2);
    expect((decode(two) as unknown[])[0]).toBe(FRAME_FORMAT_VERSION);
    expect(decodeFrame(two).message).toEqual(m);
    const one = decodeFrame(encodeFrame({ clusterId: 'c', message: m })).message;
    expect(one.type === 'heartbeat-resp' && one.clock !== undefined && 'clusterOffset' in one.clock).toBe(false);
    expect(one).toEqual({ ...m, clock: { echo: 1_234.625, receivedAt: 98_765.5, sentAt: 98_766.25, wallOffset: 1.7e12 } });
    expect(atProtocol(m, 1)).toEqual(one);
    expect(atProtocol(m, 2)).toBe(m);
    const badEcho = (clock: unknown): WireMessage => ({ ...m, clock }) as WireMessage;
    expectCodecError(() => encodeFrame({ clusterId: 'c', message: badEcho({ ...m.clock, clusterOffset: Number.NaN }) }, undefined, 2), /clusterOffset/);
    // A sixth field, as a later release might add, is refused by its length rather than misread.
    const wire = decode(two) as unknown[];
    const echo = wire[wire.length - 1] as unknown[];
    expectCodecError(() => decodeFrame(encode([...wire.slice(0, -1), [...echo, 1]])), /more than 5 items/);
  });

  it('refuses at protocol 1 an append that carries a conf change, in the encoder and in atProtocol', () => {
    const m = appendWith([normal(5), change(6, addLearner)]);
    expectCodecError(() => encodeFrame({ clusterId: 'c', message: m }), /needs protocol 2/);
    expectCodecError(() => atProtocol(m, 1), /needs protocol 2/);
  });

  it('refuses a conf change in a frame of version 1, as cronraft 0.1.0 and this release at protocol 1 do', () => {
    const wire = [FRAME_FORMAT_VERSION, 'c', TYPE_CODES.append, 'a', 'b', 2, 4, 2, 4, [[5, 2, EntryType.ConfChange, addLearner, '']]];
    expectCodecError(() => decodeFrame(raw(wire)), /type/);
  });

  it('refuses a conf-change entry whose data is not a change, and a frame version it does not know', () => {
    for (const data of [bytes(), bytes(9, 0, 0x61), bytes(1, 7, 0x61), bytes(1, 0), bytes(1, 0, 0xff)]) {
      const wire = [CONF_FRAME_FORMAT_VERSION, 'c', TYPE_CODES.append, 'a', 'b', 2, 4, 2, 4, [[5, 2, EntryType.ConfChange, data, '']]];
      expectCodecError(() => decodeFrame(raw(wire)), /not a configuration change/);
    }
    expectCodecError(() => decodeFrame(raw([3, 'c', TYPE_CODES['timeout-now'], 'a', 'b', 2])), /Unsupported frame version/);
  });

  it("refuses a snapshot whose configuration is malformed: unsorted, repeated, no voter, a member in both, not ids, or missing", () => {
    const head = [CONF_FRAME_FORMAT_VERSION, 'c', TYPE_CODES.snapshot, 'a', 'b', 2, 9, 2, 0, 1, bytes(1)];
    const bads = [
      [['b', 'a'], [], []],
      [['a', 'a'], [], []],
      [[], ['a'], []],
      [['a'], ['a'], []],
      [[''], [], []],
      [[1], [], []],
      [['a'], []],
      'a',
      [['a'], [], [], []],
      // Peer ids: of a non-member, unsorted, bound twice, malformed, not pairs, too long.
      [['a'], [], [['b', 'P1']]],
      [['a', 'b'], [], [['b', 'P1'], ['a', 'P2']]],
      [['a', 'b'], [], [['a', 'P1'], ['b', 'P1']]],
      [['a'], [], [['a', 'not a peer id']]],
      [['a'], [], [['a', '']]],
      [['a'], [], [['a']]],
      [['a'], [], [['a', 'P'.repeat(MAX_PEER_ID_LENGTH + 1)]]],
    ];
    for (const bad of bads) {
      expectCodecError(() => decodeFrame(raw([...head, bad])), /snapshot\.conf/);
    }
    expectCodecError(() => decodeFrame(raw(head)), /expected 12 fields/);
  });

  it('carries a forwarded change and its answer in frames of version 2, only at protocol 2', () => {
    for (const message of [examples['conf-propose'], examples['conf-propose-resp']]) {
      expect((decode(encodeFrame({ clusterId: 'c', message }, undefined, 2)) as unknown[])[0]).toBe(CONF_FRAME_FORMAT_VERSION);
      expectCodecError(() => encodeFrame({ clusterId: 'c', message }), /needs protocol 2/);
      expectCodecError(() => atProtocol(message, 1), /needs protocol 2/);
    }
    expectCodecError(() => decodeFrame(raw([FRAME_FORMAT_VERSION, 'c', TYPE_CODES['conf-propose'], 'a', 'b', 2, 'a#1', addLearner])), /only in a frame of version 2/);
  });

  it('refuses a forwarded change that is not one, and an answer whose reason is no refusal', () => {
    for (const bad of [bytes(), bytes(9, 0, 0x61), bytes(1, 7, 0x61), 'remove a']) {
      expectCodecError(() => decodeFrame(raw([CONF_FRAME_FORMAT_VERSION, 'c', TYPE_CODES['conf-propose'], 'a', 'b', 2, 'a#1', bad])), /conf-propose\.change/);
    }
    expectCodecError(() => decodeFrame(raw([CONF_FRAME_FORMAT_VERSION, 'c', TYPE_CODES['conf-propose'], 'a', 'b', 2, '', addLearner])), /conf-propose\.pid/);
    for (const bad of ['oops', 3, '']) {
      expectCodecError(() => decodeFrame(raw([CONF_FRAME_FORMAT_VERSION, 'c', TYPE_CODES['conf-propose-resp'], 'a', 'b', 2, 'a#1', 0, bad, null])), /reason/);
    }
  });
});
