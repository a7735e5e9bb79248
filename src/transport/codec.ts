import { encode } from 'cborg';
import { decode } from '../bytes/cbor-decode.js';
import { CodecError } from '../errors.js';
import { MAX_INDEX, MAX_READ_CTX, MAX_TERM } from '../raft/bounds.js';
import { decodeConfChange, encodeConfChange } from '../raft/conf-change.js';
import { CONF_CHANGE_REFUSALS, type ConfChangeRefusal } from '../raft/membership.js';
import type { AppendMessage, Configuration, Entry, MessageType } from '../raft/types.js';
import type { HeartbeatClock, HeartbeatEcho, WireMessage } from './envelope.js';
import { encodeEntryRecords, entryRecord, type EntryRecords } from '../bytes/entry-records.js';
import { arrayHeader } from '../bytes/cbor-heads.js';
import { readAppendWire } from './append-reader.js';
import { bool, bytes, configuration, describe, entries, heartbeatClock, heartbeatEcho, isValidEntryFields, needsProtocol2, nodeId, nonEmptyString, pids, proposals, uint } from './wire-fields.js';
import { DECODE_OPTIONS } from '../bytes/strict-cbor.js';
import {
  CONF_FRAME_FORMAT_VERSION,
  FRAME_FORMAT_VERSION,
  MAX_CLUSTER_ID_LENGTH,
  MAX_ENTRIES_PER_MESSAGE,
  MAX_FRAME_BYTES,
  MAX_PID_LENGTH,
  MAX_SNAPSHOT_BYTES,
} from './constants.js';

/**
 * The wire format of one Raft message. A frame is the CBOR encoding of a compact array:
 *
 *   [version, clusterId, typeCode, from, to, term, ...fields of that type]
 *
 * A heartbeat and its response may end with one more element, the driver's clock stamp:
 *
 *   heartbeat:      [...,  commit, readCtx, [sentAt] | [sentAt, offsetMs, rttMs, clusterOffsetMs]]
 *   heartbeat-resp: [..., readCtx, [echo, receivedAt, sentAt, wallOffset]]
 *
 * The stamp is an optional extension of version 1, not a new version: frames without it are the
 * same bytes as before it existed and still decode. A decoder from before it rejects a stamped
 * frame by its length, so members of such a build cannot take part in a cluster of this one.
 *
 * Every number is an integer within a named bound, far below 2^53: terms within MAX_TERM,
 * indexes within MAX_INDEX, read contexts within MAX_READ_CTX (src/raft/bounds.ts, where the
 * protocol checks them again), a snapshot chunk's offset and total within MAX_SNAPSHOT_BYTES,
 * clock stamps within MAX_CLOCK_STAMP_MS; counts and lengths within the bounds of constants.ts.
 * A frame with any other is dropped as malformed.
 *
 * An array rather than a map keeps frames small and fast to encode: field names are not repeated
 * in every heartbeat. Type codes are a fixed table below, never derived from the order of
 * `messageTypes`, so that reordering that list cannot change the wire format. Any change to the
 * layout must bump FRAME_FORMAT_VERSION.
 *
 * Protocol 2 (cluster version 2, "membership") adds two things, in frames of version 2
 * (CONF_FRAME_FORMAT_VERSION), which a member of 0.1.0 refuses rather than misreads:
 *
 *   append:   entries may be conf changes (EntryType.ConfChange, data as conf-change.ts writes it)
 *   snapshot: [..., index, term, offset, total, data, [voters, learners, peerIds]], peerIds a
 *             list of [member, peer id] (the peer ids bound, see Configuration.peerIds)
 *   conf-propose:      [..., pid, change (as conf-change.ts writes it)]
 *   conf-propose-resp: [..., pid, index, reason | null, leader | null]
 *
 * and, in a frame of version 1 still (only members of this release speak protocol 2), a
 * heartbeat's stamp may end with `heardAt`, the recipient's own clock when it sent the latest
 * answer the leader took in (what the recipient's lease counts from, peer-contact.ts):
 *
 *   heartbeat: [..., commit, readCtx, [sentAt, heardAt] | [sentAt, offsetMs, rttMs, clusterOffsetMs, heardAt]]
 *
 * and a heartbeat answer's echo may end with `clusterOffset`, the follower's cluster time minus
 * its monotonic clock, once it knows the cluster's time (what a leader that holds none counts,
 * clock-sync.ts):
 *
 *   heartbeat-resp: [..., readCtx, [echo, receivedAt, sentAt, wallOffset, clusterOffset]]
 *
 * Every other frame stays version 1 at either protocol. This release reads both versions; it
 * writes version 2 only at protocol 2 (`encodeFrame`'s `protocol`, which the member sets as the
 * cluster version applies): at protocol 1 an append with a conf change is refused, and a
 * snapshot goes without its configuration, which is then the founding one (no change can
 * commit before the cluster version is 2), what a receiver reads a snapshot without one as.
 */
export interface Frame {
  readonly clusterId: string;
  readonly message: WireMessage;
}

/** Each message type's code on the wire. */
export const TYPE_CODES = {
  prevote: 1,
  'prevote-resp': 2,
  vote: 3,
  'vote-resp': 4,
  append: 5,
  'append-resp': 6,
  heartbeat: 7,
  'heartbeat-resp': 8,
  'timeout-now': 9,
  propose: 10,
  'propose-resp': 11,
  'read-index': 12,
  'read-index-resp': 13,
  snapshot: 14,
  'conf-propose': 15,
  'conf-propose-resp': 16,
} as const satisfies Record<MessageType, number>;

/** How many fields follow [version, clusterId, typeCode, from, to, term] for each type, in a frame of version 1. */
const FIELD_COUNTS = {
  prevote: 2,
  'prevote-resp': 1,
  vote: 3,
  'vote-resp': 1,
  append: 4,
  'append-resp': 4,
  heartbeat: 2,
  'heartbeat-resp': 1,
  'timeout-now': 0,
  propose: 1,
  'propose-resp': 4,
  'read-index': 1,
  'read-index-resp': 3,
  snapshot: 5,
  'conf-propose': 2,
  'conf-propose-resp': 4,
} as const satisfies Record<MessageType, number>;

/** The types that exist only at protocol 2, in frames of version 2 only: a forwarded change of the configuration and its answer. */
export const PROTOCOL_2_TYPES: ReadonlySet<MessageType> = new Set<MessageType>(['conf-propose', 'conf-propose-resp']);

/** The types whose frame may end with a clock stamp (one more element than FIELD_COUNTS says). */
const CLOCK_STAMPED: ReadonlySet<MessageType> = new Set<MessageType>(['heartbeat', 'heartbeat-resp']);

const TYPES_BY_CODE: ReadonlyMap<number, MessageType> = new Map(
  (Object.entries(TYPE_CODES) as [MessageType, number][]).map(([type, code]) => [code, type]),
);

const HEADER_LENGTH = 6;

/** The fields of a message of `type` in a frame of `version`: a snapshot of version 2 has its configuration last. */
function fieldsOf(type: MessageType, version: number): number {
  return FIELD_COUNTS[type] + (type === 'snapshot' && version === CONF_FRAME_FORMAT_VERSION ? 1 : 0);
}


type Wire = unknown[];

/**
 * Encodes a frame. Throws CodecError when the message does not satisfy the same rules the decoder
 * enforces (e.g. too many entries, or a frame larger than MAX_FRAME_BYTES): a member must never
 * send what its peers would drop as malformed.
 */
export function encodeFrame(frame: Frame, records?: EntryRecords, protocol = 1): Uint8Array {
  // Callers may pass anything (see the tests): checked before it is read.
  const m = (frame as Frame | null | undefined)?.message as WireMessage | null | undefined;
  const version = frameVersion(m);
  if (version > protocol) throw new CodecError(`An append with a configuration change needs protocol 2; the protocol in force is ${protocol}`);
  if (
    version === FRAME_FORMAT_VERSION &&
    m?.type === 'append' &&
    Number.isSafeInteger(m.prevIndex) &&
    Array.isArray(m.entries) &&
    m.entries.length > 0 &&
    m.entries.length <= MAX_ENTRIES_PER_MESSAGE &&
    validEntries(m.entries, m.prevIndex)
  ) {
    return encodeAppend(frame.clusterId, m, records);
  }
  let wire: Wire;
  try {
    wire = toWire(frame, protocol);
    // Validating the wire array with the decoder's own rules keeps the two sides from drifting.
    fromWire(wire);
  } catch (error) {
    throw asCodecError(error, 'Cannot encode message');
  }
  let bytes: Uint8Array;
  try {
    bytes = encode(wire);
  } catch (error) {
    throw asCodecError(error, 'Cannot encode message');
  }
  if (bytes.length > MAX_FRAME_BYTES) {
    throw new CodecError(`Encoded ${frame.message.type} message is ${bytes.length} bytes, more than the ${MAX_FRAME_BYTES} allowed`);
  }
  return bytes;
}

/**
 * An append whose entries the decoder accepts (checked by the caller), encoded around the
 * records of them, which the leader's own write shares through the member's `encoder`: the same bytes
 * as cborg's encoding of the whole wire array. CBOR writes an array as its header and then its
 * items, and an empty array as its header alone, so the entries, the last item, are spliced in
 * where the encoded frame ends with an empty array.
 */
function encodeAppend(clusterId: string, m: AppendMessage, encoder?: EntryRecords): Uint8Array {
  const wire: Wire = [FRAME_FORMAT_VERSION, clusterId, TYPE_CODES.append, m.from, m.to, m.term, m.prevIndex, m.prevTerm, m.commit, []];
  let head: Uint8Array;
  try {
    // Everything but the entries, checked with the decoder's own rules, as for any frame.
    fromWire(wire);
    head = encode(wire);
  } catch (error) {
    throw asCodecError(error, 'Cannot encode message');
  }
  const records = encoder === undefined ? encodeEntryRecords(m.entries) : encoder.encode(m.entries);
  const count = arrayHeader(m.entries.length);
  const start = head.length - 1;
  const size = start + count.length + records.length;
  if (size > MAX_FRAME_BYTES) throw new CodecError(`Encoded append message is ${size} bytes, more than the ${MAX_FRAME_BYTES} allowed`);
  const bytes = new Uint8Array(size);
  bytes.set(head.subarray(0, start));
  bytes.set(count, start);
  bytes.set(records, start + count.length);
  return bytes;
}

/**
 * The frame version a message needs: CONF_FRAME_FORMAT_VERSION for an append that carries a
 * conf change, FRAME_FORMAT_VERSION for anything else (a snapshot's configuration is dropped
 * at protocol 1 rather than refused: see the comment on Frame).
 */
function frameVersion(m: WireMessage | null | undefined): number {
  if (m !== null && m !== undefined && PROTOCOL_2_TYPES.has(m.type)) return CONF_FRAME_FORMAT_VERSION;
  if (m?.type !== 'append' || !Array.isArray(m.entries)) return FRAME_FORMAT_VERSION;
  for (const e of m.entries as readonly (Entry | null | undefined)[]) if (typeof e === 'object' && e !== null && needsProtocol2(e.type)) return CONF_FRAME_FORMAT_VERSION;
  return FRAME_FORMAT_VERSION;
}

/**
 * `m` as a peer decodes it from a frame of `protocol` (the simulator's network, which encodes
 * nothing, sends this): a snapshot without its configuration at protocol 1.
 * @throws CodecError, as encodeFrame does, for a conf change at protocol 1
 */
export function atProtocol(m: WireMessage, protocol: number): WireMessage {
  if (frameVersion(m) > protocol) throw new CodecError(`A ${m.type} with a configuration change needs protocol 2; the protocol in force is ${protocol}`);
  if (protocol >= 2) return m;
  if (m.type === 'heartbeat' && m.clock?.heardAt !== undefined) return { ...m, clock: withoutHeardAt(m.clock) };
  if (m.type === 'heartbeat-resp' && m.clock?.clusterOffset !== undefined) return { ...m, clock: withoutClusterOffset(m.clock) };
  if (m.type !== 'snapshot' || m.snapshot.conf === undefined) return m;
  return { ...m, snapshot: { index: m.snapshot.index, term: m.snapshot.term, data: m.snapshot.data } };
}

/** Whether the decoder would accept these entries of an append after `prevIndex` (see isValidEntry). */
function validEntries(entries: readonly Entry[], prevIndex: number): boolean {
  for (let i = 0; i < entries.length; i++) {
    // A caller's array may hold anything, holes included.
    const e = entries[i] as Entry | null | undefined;
    if (typeof e !== 'object' || e === null || !isValidEntryFields(e.index, e.term, e.type, e.data, e.pid, prevIndex + 1 + i)) return false;
  }
  return true;
}

/** Decodes and fully validates a frame. Throws CodecError, and only CodecError, on any bad input. */
export function decodeFrame(bytes: Uint8Array): Frame {
  try {
    if (!(bytes instanceof Uint8Array)) throw new CodecError('Frame must be a Uint8Array');
    if (bytes.length > MAX_FRAME_BYTES) throw new CodecError(`Frame of ${bytes.length} bytes exceeds ${MAX_FRAME_BYTES}`);
    // An append, a follower's frame on every commit, is read in one pass; the rest by cborg.
    const value: unknown = readAppendWire(bytes, TYPE_CODES.append, MAX_ENTRIES_PER_MESSAGE) ?? decode(bytes, DECODE_OPTIONS);
    return fromWire(value);
  } catch (error) {
    // cborg throws plain Errors, deep nesting throws RangeError: all mean "malformed".
    throw asCodecError(error, 'Malformed frame');
  }
}

function asCodecError(error: unknown, prefix: string): CodecError {
  if (error instanceof CodecError) return error;
  const detail = error instanceof Error ? error.message : String(error);
  return new CodecError(`${prefix}: ${detail}`, { cause: error });
}

/**
 * The wire array of a frame at `protocol`, as cborg encodes it; exported for bench/codec.ts,
 * which measures the hand-written paths against cborg alone.
 */
export function toWire({ clusterId, message: m }: Frame, protocol = 1): Wire {
  const conf = protocol >= 2 && m.type === 'snapshot' ? m.snapshot.conf : undefined;
  const version = conf !== undefined ? CONF_FRAME_FORMAT_VERSION : frameVersion(m);
  const head: Wire = [version, clusterId, TYPE_CODES[m.type], m.from, m.to, m.term];
  switch (m.type) {
    case 'prevote':
      return [...head, m.lastIndex, m.lastTerm];
    case 'prevote-resp':
      return [...head, m.reject];
    case 'vote':
      return [...head, m.lastIndex, m.lastTerm, m.transfer];
    case 'vote-resp':
      return [...head, m.reject];
    case 'append':
      return [...head, m.prevIndex, m.prevTerm, m.commit, m.entries.map(entryRecord)];
    case 'append-resp':
      return [...head, m.index, m.reject, m.hintIndex, m.hintTerm];
    case 'heartbeat':
      return m.clock === undefined ? [...head, m.commit, m.readCtx] : [...head, m.commit, m.readCtx, heartbeatClockWire(m.clock, protocol)];
    case 'heartbeat-resp':
      return m.clock === undefined ? [...head, m.readCtx] : [...head, m.readCtx, heartbeatEchoWire(m.clock, protocol)];
    case 'timeout-now':
      return head;
    case 'propose':
      return [...head, m.proposals.map((p) => [p.pid, p.data])];
    case 'propose-resp':
      return [...head, m.index, m.pids, m.reject, m.leader];
    case 'read-index':
      return [...head, m.ctx];
    case 'read-index-resp':
      return [...head, m.ctx, m.index, m.reject];
    case 'snapshot': {
      // A whole snapshot is one chunk of itself.
      const fields = [...head, m.snapshot.index, m.snapshot.term, m.chunk?.offset ?? 0, m.chunk?.total ?? m.snapshot.data.byteLength, m.snapshot.data];
      return conf === undefined ? fields : [...fields, confWire(conf)];
    }
    case 'conf-propose':
      return [...head, m.pid, encodeConfChange(m.change)];
    case 'conf-propose-resp':
      return [...head, m.pid, m.index, m.reason, m.leader];
    default:
      return unknownType(m);
  }
}

function refusal(value: unknown): ConfChangeRefusal {
  if (!(CONF_CHANGE_REFUSALS as readonly unknown[]).includes(value)) throw new CodecError(`conf-propose-resp.reason: not a refusal: ${describe(value)}`);
  return value as ConfChangeRefusal;
}

function confWire(conf: Configuration): Wire {
  return [conf.voters, conf.learners, conf.peerIds];
}

/** A heartbeat answer's echo on the wire: `clusterOffset` only at protocol 2, which a member of 0.1.0 never speaks. */
function heartbeatEchoWire(clock: HeartbeatEcho, protocol: number): Wire {
  const fields: Wire = [clock.echo, clock.receivedAt, clock.sentAt, clock.wallOffset];
  if (protocol >= 2 && clock.clusterOffset !== undefined) fields.push(clock.clusterOffset);
  return fields;
}

/** A heartbeat's stamp on the wire: `heardAt` only at protocol 2, which a member of 0.1.0 never speaks. */
function heartbeatClockWire(clock: HeartbeatClock, protocol: number): Wire {
  const e = clock.estimate;
  const fields: Wire = e === undefined ? [clock.sentAt] : [clock.sentAt, e.offsetMs, e.rttMs, e.clusterOffsetMs];
  if (protocol >= 2 && clock.heardAt !== undefined) fields.push(clock.heardAt);
  return fields;
}

/** A heartbeat answer's echo as a peer at protocol 1 reads it: without `clusterOffset`. */
function withoutClusterOffset(clock: HeartbeatEcho): HeartbeatEcho {
  return { echo: clock.echo, receivedAt: clock.receivedAt, sentAt: clock.sentAt, wallOffset: clock.wallOffset };
}

/** A heartbeat's stamp as a peer at protocol 1 reads it: without `heardAt`. */
function withoutHeardAt(clock: HeartbeatClock): HeartbeatClock {
  return clock.estimate === undefined ? { sentAt: clock.sentAt } : { sentAt: clock.sentAt, estimate: clock.estimate };
}

function unknownType(message: never): never {
  const type = (message as { type?: unknown }).type;
  throw new CodecError(`Unknown message type ${JSON.stringify(type) ?? String(type)}`);
}

/** A frame from a decoded wire array, fully validated; exported for bench/codec.ts (see toWire). */
export function fromWire(value: unknown): Frame {
  if (!Array.isArray(value) || value.length < HEADER_LENGTH) throw new CodecError('Frame must be an array with a header');
  const version: unknown = value[0];
  if (version !== FRAME_FORMAT_VERSION && version !== CONF_FRAME_FORMAT_VERSION) throw new CodecError(`Unsupported frame version ${describe(version)}`);
  const clusterId = nonEmptyString(value[1], 'clusterId', MAX_CLUSTER_ID_LENGTH);
  const code: unknown = value[2];
  const type = typeof code === 'number' ? TYPES_BY_CODE.get(code) : undefined;
  if (type === undefined) throw new CodecError(`Unknown message type code ${describe(code)}`);
  if (PROTOCOL_2_TYPES.has(type) && version !== CONF_FRAME_FORMAT_VERSION) throw new CodecError(`${type}: only in a frame of version ${CONF_FRAME_FORMAT_VERSION}`);
  const fieldCount = HEADER_LENGTH + fieldsOf(type, version);
  if (value.length !== fieldCount && !(CLOCK_STAMPED.has(type) && value.length === fieldCount + 1)) {
    throw new CodecError(`${type}: expected ${fieldCount} fields, got ${value.length}`);
  }
  const stamp: unknown = value[fieldCount];
  const from = nodeId(value[3], `${type}.from`);
  const to = nodeId(value[4], `${type}.to`);
  const term = uint(value[5], `${type}.term`, MAX_TERM);
  const f = (i: number): unknown => value[HEADER_LENGTH + i];
  const base = { from, to, term };
  let message: WireMessage;
  switch (type) {
    case 'prevote':
      message = { type, ...base, lastIndex: uint(f(0), 'prevote.lastIndex', MAX_INDEX), lastTerm: uint(f(1), 'prevote.lastTerm', MAX_TERM) };
      break;
    case 'prevote-resp':
      message = { type, ...base, reject: bool(f(0), 'prevote-resp.reject') };
      break;
    case 'vote':
      message = {
        type,
        ...base,
        lastIndex: uint(f(0), 'vote.lastIndex', MAX_INDEX),
        lastTerm: uint(f(1), 'vote.lastTerm', MAX_TERM),
        transfer: bool(f(2), 'vote.transfer'),
      };
      break;
    case 'vote-resp':
      message = { type, ...base, reject: bool(f(0), 'vote-resp.reject') };
      break;
    case 'append': {
      const prevIndex = uint(f(0), 'append.prevIndex', MAX_INDEX);
      message = {
        type,
        ...base,
        prevIndex,
        prevTerm: uint(f(1), 'append.prevTerm', MAX_TERM),
        commit: uint(f(2), 'append.commit', MAX_INDEX),
        entries: entries(f(3), prevIndex, version === CONF_FRAME_FORMAT_VERSION),
      };
      break;
    }
    case 'append-resp':
      message = {
        type,
        ...base,
        index: uint(f(0), 'append-resp.index', MAX_INDEX),
        reject: bool(f(1), 'append-resp.reject'),
        hintIndex: uint(f(2), 'append-resp.hintIndex', MAX_INDEX),
        hintTerm: uint(f(3), 'append-resp.hintTerm', MAX_TERM),
      };
      break;
    case 'heartbeat': {
      const commit = uint(f(0), 'heartbeat.commit', MAX_INDEX);
      const readCtx = uint(f(1), 'heartbeat.readCtx', MAX_READ_CTX);
      message = stamp === undefined ? { type, ...base, commit, readCtx } : { type, ...base, commit, readCtx, clock: heartbeatClock(stamp) };
      break;
    }
    case 'heartbeat-resp': {
      const readCtx = uint(f(0), 'heartbeat-resp.readCtx', MAX_READ_CTX);
      message = stamp === undefined ? { type, ...base, readCtx } : { type, ...base, readCtx, clock: heartbeatEcho(stamp) };
      break;
    }
    case 'timeout-now':
      message = { type, ...base };
      break;
    case 'propose':
      message = { type, ...base, proposals: proposals(f(0)) };
      break;
    case 'propose-resp':
      message = {
        type,
        ...base,
        index: uint(f(0), 'propose-resp.index', MAX_INDEX),
        pids: pids(f(1)),
        reject: bool(f(2), 'propose-resp.reject'),
        leader: f(3) === null ? null : nodeId(f(3), 'propose-resp.leader'),
      };
      break;
    case 'read-index':
      message = { type, ...base, ctx: uint(f(0), 'read-index.ctx', MAX_READ_CTX) };
      break;
    case 'read-index-resp':
      message = {
        type,
        ...base,
        ctx: uint(f(0), 'read-index-resp.ctx', MAX_READ_CTX),
        index: uint(f(1), 'read-index-resp.index', MAX_INDEX),
        reject: bool(f(2), 'read-index-resp.reject'),
      };
      break;
    case 'conf-propose': {
      const change = decodeConfChange(bytes(f(1), 'conf-propose.change'));
      if (change === null) throw new CodecError('conf-propose.change: not a change of the configuration');
      message = { type, ...base, pid: nonEmptyString(f(0), 'conf-propose.pid', MAX_PID_LENGTH), change };
      break;
    }
    case 'conf-propose-resp':
      message = {
        type,
        ...base,
        pid: nonEmptyString(f(0), 'conf-propose-resp.pid', MAX_PID_LENGTH),
        index: uint(f(1), 'conf-propose-resp.index', MAX_INDEX),
        reason: f(2) === null ? null : refusal(f(2)),
        leader: f(3) === null ? null : nodeId(f(3), 'conf-propose-resp.leader'),
      };
      break;
    case 'snapshot': {
      const offset = uint(f(2), 'snapshot.offset', MAX_SNAPSHOT_BYTES);
      const total = uint(f(3), 'snapshot.total', MAX_SNAPSHOT_BYTES);
      const data = bytes(f(4), 'snapshot.data');
      if (offset + data.byteLength > total) throw new CodecError(`snapshot: a chunk of ${data.byteLength} bytes at ${offset} overruns the total of ${total}`);
      const meta = { index: uint(f(0), 'snapshot.index', MAX_INDEX), term: uint(f(1), 'snapshot.term', MAX_TERM) };
      const snapshot = version === CONF_FRAME_FORMAT_VERSION ? { ...meta, conf: configuration(f(5), 'snapshot.conf'), data } : { ...meta, data };
      message = offset === 0 && data.byteLength === total ? { type, ...base, snapshot } : { type, ...base, snapshot, chunk: { offset, total } };
      break;
    }
  }
  return { clusterId, message };
}
