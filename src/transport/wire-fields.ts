import { CodecError } from '../errors.js';
import { MAX_INDEX, MAX_TERM } from '../raft/bounds.js';
import { decodeConfChange, MAX_PEER_ID_LENGTH } from '../raft/conf-change.js';
import { configurationProblem } from '../raft/configuration.js';
import { EntryType } from '../raft/types.js';
import type { Configuration, Entry, NodeId, PeerIdBinding, ProposalData } from '../raft/types.js';
import { ENTRY_RECORD_FIELDS } from '../bytes/entry-records.js';
import type { ClockEstimate, HeartbeatClock, HeartbeatEcho } from './envelope.js';
import { MAX_CLOCK_STAMP_MS, MAX_CONF_MEMBERS, MAX_ENTRIES_PER_MESSAGE, MAX_ID_LENGTH, MAX_PID_LENGTH, MAX_PROPOSALS_PER_MESSAGE } from './constants.js';

/*
 * The readers of a frame's fields (codec.ts's fromWire): each takes a decoded value, checks it
 * against its type and bound, and returns it typed, or throws CodecError naming the field.
 */

/** The fields of a forwarded proposal: [pid, data]. */
const PROPOSAL_FIELDS = 2;

/**
 * The entries of an append after `prevIndex`. `confChanges`: whether the frame's version allows
 * conf-change entries (CONF_FRAME_FORMAT_VERSION); each one's data must then decode as a change.
 */
export function entries(value: unknown, prevIndex: number, confChanges = false): Entry[] {
  const items = array(value, 'append.entries', MAX_ENTRIES_PER_MESSAGE);
  const out = new Array<Entry>(items.length);
  for (let i = 0; i < items.length; i++) {
    const e = items[i];
    // Most entries are valid: checked here without building a field name per check (that was a
    // fifth of the cost of an append), and by entry() with its messages only when one is not.
    out[i] = isValidEntry(e, prevIndex + 1 + i) ? { index: e[0], term: e[1], type: e[2], data: e[3], pid: e[4] } : entry(e, i, prevIndex, confChanges);
  }
  return out;
}

export type ValidEntry = [number, number, EntryType, Uint8Array, string];

/** What entry() accepts, as one boolean test. */
export function isValidEntry(e: unknown, index: number): e is ValidEntry {
  return Array.isArray(e) && e.length === ENTRY_RECORD_FIELDS && isValidEntryFields(e[0], e[1], e[2], e[3], e[4], index);
}

/** The fields of an entry that entry() accepts at `index`; the encoder checks an entry with it too. */
export function isValidEntryFields(index: unknown, term: unknown, type: unknown, data: unknown, pid: unknown, expected: number): boolean {
  return (
    index === expected &&
    isUint(index, MAX_INDEX) &&
    isUint(term, MAX_TERM) &&
    (type === EntryType.Normal || type === EntryType.Noop) &&
    data instanceof Uint8Array &&
    typeof pid === 'string' &&
    pid.length <= MAX_PID_LENGTH
  );
}

export function isUint(value: unknown, max: number): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0 && value <= max;
}

/** One entry, checked field by field with a message that names the field at fault. */
export function entry(item: unknown, i: number, prevIndex: number, confChanges = false): Entry {
  const field = `append.entries[${i}]`;
  const e = array(item, field, ENTRY_RECORD_FIELDS);
  if (e.length !== ENTRY_RECORD_FIELDS) throw new CodecError(`${field}: expected ${ENTRY_RECORD_FIELDS} fields, got ${e.length}`);
  const index = uint(e[0], `${field}.index`, MAX_INDEX);
  // Raft appends a contiguous run right after prevIndex; any other index would corrupt the log.
  if (index !== prevIndex + 1 + i) throw new CodecError(`${field}.index: expected ${prevIndex + 1 + i}, got ${index}`);
  const type = confChanges && e[2] === EntryType.ConfChange ? EntryType.ConfChange : entryType(e[2], `${field}.type`);
  const data = bytes(e[3], `${field}.data`);
  // A conf change no member could apply would stop every member that applied it (membership.ts's
  // changedBy): it is refused here, with its frame.
  if (type === EntryType.ConfChange && decodeConfChange(data) === null) throw new CodecError(`${field}.data: not a configuration change`);
  return { index, term: uint(e[1], `${field}.term`, MAX_TERM), type, data, pid: string(e[4], `${field}.pid`, MAX_PID_LENGTH) };
}

/** Whether an entry may be written in a frame of protocol 1: any but a conf change. */
export function needsProtocol2(type: EntryType): boolean {
  return type === EntryType.ConfChange;
}

/**
 * A snapshot's configuration on the wire: [voters, learners, peer ids], the lists sorted, no one
 * in both, at least one voter, and the peer ids [member, peer id] pairs as configurationProblem
 * wants them (sorted by member, each a member, each well formed, none bound twice).
 */
export function configuration(value: unknown, field: string): Configuration {
  const c = array(value, field, 3);
  if (c.length !== 3) throw new CodecError(`${field}: expected 3 fields, got ${c.length}`);
  const voters = array(c[0], `${field}.voters`, MAX_CONF_MEMBERS).map((id, i) => nodeId(id, `${field}.voters[${i}]`));
  const learners = array(c[1], `${field}.learners`, MAX_CONF_MEMBERS).map((id, i) => nodeId(id, `${field}.learners[${i}]`));
  const peerIds = array(c[2], `${field}.peerIds`, MAX_CONF_MEMBERS).map((item, i): PeerIdBinding => {
    const pair = array(item, `${field}.peerIds[${i}]`, 2);
    if (pair.length !== 2) throw new CodecError(`${field}.peerIds[${i}]: expected [member, peer id], got ${pair.length} fields`);
    return [nodeId(pair[0], `${field}.peerIds[${i}].member`), nonEmptyString(pair[1], `${field}.peerIds[${i}].peerId`, MAX_PEER_ID_LENGTH)];
  });
  const conf = { voters, learners, peerIds };
  const problem = configurationProblem(conf);
  if (problem !== null) throw new CodecError(`${field}: ${problem}`);
  return conf;
}

export function proposals(value: unknown): ProposalData[] {
  const items = array(value, 'propose.proposals', MAX_PROPOSALS_PER_MESSAGE);
  return items.map((item, i): ProposalData => {
    const field = `propose.proposals[${i}]`;
    const p = array(item, field, PROPOSAL_FIELDS);
    if (p.length !== PROPOSAL_FIELDS) throw new CodecError(`${field}: expected ${PROPOSAL_FIELDS} fields, got ${p.length}`);
    return { pid: nonEmptyString(p[0], `${field}.pid`, MAX_PID_LENGTH), data: bytes(p[1], `${field}.data`) };
  });
}

export function heartbeatClock(value: unknown): HeartbeatClock {
  const field = 'heartbeat.clock';
  const c = array(value, field, 5);
  if (c.length !== 1 && c.length !== 2 && c.length !== 4 && c.length !== 5) throw new CodecError(`${field}: expected 1, 2, 4 or 5 fields, got ${c.length}`);
  const sentAt = clockValue(c[0], `${field}.sentAt`);
  // Two or five fields end with heardAt (protocol 2, codec.ts).
  const heardAt = c.length === 2 || c.length === 5 ? clockValue(c[c.length - 1], `${field}.heardAt`) : undefined;
  if (c.length <= 2) return heardAt === undefined ? { sentAt } : { sentAt, heardAt };
  const estimate: ClockEstimate = {
    offsetMs: clockValue(c[1], `${field}.offsetMs`),
    rttMs: clockValue(c[2], `${field}.rttMs`, 0),
    clusterOffsetMs: clockValue(c[3], `${field}.clusterOffsetMs`),
  };
  return heardAt === undefined ? { sentAt, estimate } : { sentAt, estimate, heardAt };
}

export function heartbeatEcho(value: unknown): HeartbeatEcho {
  const field = 'heartbeat-resp.clock';
  const c = array(value, field, 5);
  // Five fields end with clusterOffset (protocol 2, codec.ts).
  if (c.length !== 4 && c.length !== 5) throw new CodecError(`${field}: expected 4 or 5 fields, got ${c.length}`);
  const echo: HeartbeatEcho = {
    echo: clockValue(c[0], `${field}.echo`),
    receivedAt: clockValue(c[1], `${field}.receivedAt`),
    sentAt: clockValue(c[2], `${field}.sentAt`),
    wallOffset: clockValue(c[3], `${field}.wallOffset`),
  };
  return c.length === 4 ? echo : { ...echo, clusterOffset: clockValue(c[4], `${field}.clusterOffset`) };
}

/** A finite number of milliseconds within [min, MAX_CLOCK_STAMP_MS]; fractions allowed. */
export function clockValue(value: unknown, field: string, min = -MAX_CLOCK_STAMP_MS): number {
  if (typeof value !== 'number' || !Number.isFinite(value) || value < min || value > MAX_CLOCK_STAMP_MS) {
    throw new CodecError(`${field}: expected a number of milliseconds in [${min}, ${MAX_CLOCK_STAMP_MS}], got ${describe(value)}`);
  }
  // -0 reads as 0, as in uint.
  return value === 0 ? 0 : value;
}

export function pids(value: unknown): string[] {
  return array(value, 'propose-resp.pids', MAX_PROPOSALS_PER_MESSAGE).map((pid, i) => nonEmptyString(pid, `propose-resp.pids[${i}]`, MAX_PID_LENGTH));
}

/**
 * An integer from 0 to `max`, the field's bound (see src/raft/bounds.ts). A float -0 (CBOR may
 * carry one) reads as 0, the value every encoder writes: a frame decoded and encoded again must
 * decode to the same message.
 */
export function uint(value: unknown, field: string, max: number): number {
  if (!isUint(value, max)) throw new CodecError(`${field}: expected an integer from 0 to ${max}, got ${describe(value)}`);
  return value === 0 ? 0 : value;
}

export function bool(value: unknown, field: string): boolean {
  if (typeof value !== 'boolean') throw new CodecError(`${field}: expected a boolean, got ${describe(value)}`);
  return value;
}

export function string(value: unknown, field: string, maxLength: number): string {
  if (typeof value !== 'string') throw new CodecError(`${field}: expected a string, got ${describe(value)}`);
  if (value.length > maxLength) throw new CodecError(`${field}: longer than ${maxLength} characters`);
  return value;
}

export function nonEmptyString(value: unknown, field: string, maxLength: number): string {
  const s = string(value, field, maxLength);
  if (s.length === 0) throw new CodecError(`${field}: must not be empty`);
  return s;
}

export function nodeId(value: unknown, field: string): NodeId {
  return nonEmptyString(value, field, MAX_ID_LENGTH);
}

export function bytes(value: unknown, field: string): Uint8Array {
  if (!(value instanceof Uint8Array)) throw new CodecError(`${field}: expected bytes, got ${describe(value)}`);
  return value;
}

export function entryType(value: unknown, field: string): EntryType {
  if (value !== EntryType.Normal && value !== EntryType.Noop) {
    throw new CodecError(`${field}: expected ${EntryType.Normal} (normal) or ${EntryType.Noop} (no-op), got ${describe(value)}`);
  }
  return value;
}

export function array(value: unknown, field: string, maxLength: number): unknown[] {
  if (!Array.isArray(value)) throw new CodecError(`${field}: expected an array, got ${describe(value)}`);
  if (value.length > maxLength) throw new CodecError(`${field}: more than ${maxLength} items`);
  return value;
}

/** A short, safe description of a bad value for error messages: never the whole of a large input. */
export function describe(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (typeof value === 'string') return value.length > 40 ? `a string of ${value.length} characters` : JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint' || value === undefined) return String(value);
  return `a ${typeof value}`;
}
