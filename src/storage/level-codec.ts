import { encode } from 'cborg';
import { decode, decodeFirst } from '../bytes/cbor-decode.js';
import { MAX_TERM } from '../raft/bounds.js';
import { configurationProblem } from '../raft/configuration.js';
import type { Configuration, Entry, HardState, Snapshot } from '../raft/types.js';
import type { StorageIdentity } from './log-storage.js';
import { encodeEntryRecords, type EntryRecords } from '../bytes/entry-records.js';
import { crc32 } from '../bytes/crc32.js';
import { isCount, isEntryType, isTerm } from './store-checks.js';
import type { SnapshotFileRef } from './snapshot-files.js';

/** The largest CRC-32. */
const MAX_CRC = 0xffff_ffff;

/**
 * The values of a LevelLogStorage, in CBOR (cborg). Records are CBOR arrays rather than maps:
 * smaller, faster to encode on the commit path, and their shape is fixed by the format version.
 *
 * - format:    2, or 3 once the store seals its values (the format's own is never sealed)
 * - identity:  [clusterId, nodeId], or [clusterId, nodeId, foundingVoters] for a member that joined
 * - hardstate: [term, vote | null, commit]
 * - snapshot:  [index, term, data (bytes)]: the state machine as of `index`, whose entry had `term`,
 *              or [index, term, data, [voters, learners, peerIds]] with the configuration as of
 *              `index`, peerIds a list of [member, peer id]; in a sealed store (format 3), the
 *              data is in a file of its own (snapshot-files.ts), and [length, crc] in its place
 *              says how long it is and its CRC-32 (a record of format 3 written before the files
 *              existed holds its data, and is read as it is)
 * - segment:   one or more entries, each [index, term, type, data (bytes), pid], one after
 *              another (a CBOR sequence, RFC 8742) at consecutive indexes
 *
 * In format 3 every value written since the store began sealing is sealed by the CRC-32 of its
 * bytes (sealValue), checked as it is read; one written before is read as it is.
 *
 * An entry keeps its index although the key holds the first one, so that a value stored under
 * the wrong key is detected. A segment of one entry is the whole entry value of format 1, which
 * stored one entry per key.
 *
 * The snapshot record gained its data without a new format version: no released version ever
 * wrote a snapshot record, so no store holds the older two-element shape, and decodeSnapshot
 * rejects it as corrupt like any other wrong shape. Its configuration came the same way (issue
 * 18): written when the snapshot has one (every snapshot this release takes), which every store
 * before it lacks and reads as none (the founding voters); a store that has one cannot be
 * opened by a release before it (README, "Downgrades": a member that took a snapshot since its
 * upgrade cannot go back to 0.1.0).
 */

/** A value that decodes but does not have the shape of its record, or does not decode at all. */
export class ValueShapeError extends Error {}

/**
 * The first byte of a sealed value: no CBOR item starts with it (it is the "break" code), so a
 * value written before sealing began (an unsealed one, as formats 1 and 2 hold) is told apart.
 */
export const SEALED_VALUE_MARK = 0xff;

/** Bytes of the CRC-32 that ends a sealed value. */
export const VALUE_CHECKSUM_BYTES = 4;

/**
 * A value sealed, as a store of format 3 writes it: SEALED_VALUE_MARK, its bytes, then their
 * CRC-32 (big-endian). LevelDB checks its blocks' checksums only when asked, which
 * classic-level never does: a byte flipped on disk in an entry's data read back as another
 * entry, silently, and a member applied it.
 */
export function sealValue(bytes: Uint8Array): Uint8Array {
  const sealed = new Uint8Array(1 + bytes.length + VALUE_CHECKSUM_BYTES);
  sealed[0] = SEALED_VALUE_MARK;
  sealed.set(bytes, 1);
  new DataView(sealed.buffer, sealed.byteOffset, sealed.byteLength).setUint32(1 + bytes.length, crc32(bytes));
  return sealed;
}

/**
 * The bytes of a value: a sealed one's once its CRC-32 holds (a view, not a copy; ValueShapeError
 * if not), an unsealed one's as they are (written before its store began sealing).
 */
export function unsealValue(value: Uint8Array): Uint8Array {
  if (value[0] !== SEALED_VALUE_MARK) return value;
  if (value.length < 1 + VALUE_CHECKSUM_BYTES) throw new ValueShapeError(`${value.length} bytes, too short for a sealed value`);
  const bytes = value.subarray(1, value.length - VALUE_CHECKSUM_BYTES);
  const stored = new DataView(value.buffer, value.byteOffset, value.byteLength).getUint32(value.length - VALUE_CHECKSUM_BYTES);
  const actual = crc32(bytes);
  if (stored !== actual) throw new ValueShapeError(checksumMismatch(stored, actual));
  return bytes;
}

/** What a store says of bytes whose CRC-32, `actual`, is not the one stored beside them: a sealed value's, a snapshot's file's. */
export function checksumMismatch(stored: number, actual: number): string {
  return `its checksum does not match its bytes (stored ${hex(stored)}, computed ${hex(actual)}): damaged on disk`;
}

function hex(n: number): string {
  return `0x${n.toString(16).padStart(8, '0')}`;
}

export function encodeFormat(version: number): Uint8Array {
  return encode(version);
}

export function decodeFormat(bytes: Uint8Array): number {
  const value = decodeValue(bytes);
  if (!isCount(value)) throw new ValueShapeError(`expected a format version number, got ${describe(value)}`);
  return value;
}

/**
 * The identity of a member that joined a running cluster carries the founding voters, a third
 * element, without a new format version: a store written before joining existed holds the
 * two-element shape, which is read as before, and a release that cannot join never meets the
 * three-element one (a joined member exists only at cluster version 2, which such a release
 * refuses to run).
 */
export function encodeIdentity(identity: StorageIdentity): Uint8Array {
  const { foundingVoters } = identity;
  return encode(foundingVoters === undefined ? [identity.clusterId, identity.nodeId] : [identity.clusterId, identity.nodeId, foundingVoters]);
}

export function decodeIdentity(bytes: Uint8Array): StorageIdentity {
  const value = decodeValue(bytes);
  if (!Array.isArray(value) || (value.length !== 2 && value.length !== 3)) throw new ValueShapeError(`expected identity [clusterId, nodeId, foundingVoters?], got ${describe(value)}`);
  const [clusterId, nodeId, foundingVoters] = value as unknown[];
  if (typeof clusterId !== 'string' || typeof nodeId !== 'string') throw new ValueShapeError('expected identity [clusterId, nodeId] as two strings');
  if (value.length === 2) return { clusterId, nodeId };
  if (!Array.isArray(foundingVoters) || foundingVoters.length === 0 || !foundingVoters.every((id) => typeof id === 'string' && id.length > 0)) {
    throw new ValueShapeError(`expected the founding voters as member ids, got ${describe(foundingVoters)}`);
  }
  return { clusterId, nodeId, foundingVoters: foundingVoters as string[] };
}

export function encodeHardState(hardState: HardState): Uint8Array {
  return encode([hardState.term, hardState.vote, hardState.commit]);
}

export function decodeHardState(bytes: Uint8Array): HardState {
  const [term, vote, commit] = decodeTuple(bytes, 3, 'hard state [term, vote, commit]');
  if (!isTerm(term)) throw new ValueShapeError(`expected a term from 0 to ${MAX_TERM - 1}, got ${describe(term)}`);
  if (vote !== null && typeof vote !== 'string') throw new ValueShapeError(`expected a string or null vote, got ${describe(vote)}`);
  if (!isCount(commit)) throw new ValueShapeError(`expected a non-negative integer commit, got ${describe(commit)}`);
  return { term, vote, commit };
}

export function encodeSnapshot(snapshot: Snapshot): Uint8Array {
  return encodeSnapshotRecord(snapshot, snapshot.data);
}

/**
 * The record of a snapshot whose data is in a file of its own (snapshot-files.ts), as a sealed
 * store writes it: [index, term, [length, crc], conf?], the data's length and CRC-32 in place
 * of the data.
 */
export function encodeSnapshotFileRecord(snapshot: Snapshot, crc: number): Uint8Array {
  return encodeSnapshotRecord(snapshot, [snapshot.data.byteLength, crc]);
}

function encodeSnapshotRecord(snapshot: Snapshot, data: Uint8Array | readonly [number, number]): Uint8Array {
  const { conf } = snapshot;
  return encode(conf === undefined ? [snapshot.index, snapshot.term, data] : [snapshot.index, snapshot.term, data, [conf.voters, conf.learners, conf.peerIds]]);
}

/** A snapshot's record whose data is in the file `file` points to. */
export interface SnapshotFileRecord {
  readonly file: SnapshotFileRef;
  readonly conf?: Configuration;
}

/** A snapshot record, with its data, or pointing to the file that holds it (encodeSnapshotFileRecord). */
export function decodeSnapshot(bytes: Uint8Array): Snapshot | SnapshotFileRecord {
  const value = decodeValue(bytes);
  if (!Array.isArray(value) || (value.length !== 3 && value.length !== 4)) throw new ValueShapeError(`expected snapshot [index, term, data, conf?], got ${describe(value)}`);
  const [index, term, data, conf] = value as unknown[];
  if (!isCount(index)) throw new ValueShapeError(`expected a non-negative integer snapshot index, got ${describe(index)}`);
  if (!isTerm(term)) throw new ValueShapeError(`expected a snapshot term from 0 to ${MAX_TERM - 1}, got ${describe(term)}`);
  const configuration = value.length === 3 ? {} : { conf: decodeConfiguration(conf) };
  if (data instanceof Uint8Array) return { index, term, data, ...configuration };
  const [length, crc] = Array.isArray(data) && data.length === 2 ? (data as unknown[]) : [];
  // The length is not bounded here: the file's size must equal it before the file is read.
  if (!isCount(length) || !isCount(crc) || crc > MAX_CRC) {
    throw new ValueShapeError(`expected bytes for the snapshot data, or its file's [length, CRC-32], got ${describe(data)}`);
  }
  return { file: { index, term, length, crc }, ...configuration };
}

export function isSnapshotFileRecord(record: Snapshot | SnapshotFileRecord): record is SnapshotFileRecord {
  return 'file' in record;
}

/**
 * A stored configuration: [voters, learners, peerIds], lists of ids, sorted, no one in both, at
 * least one voter, and [member, peer id] pairs as configurationProblem wants them.
 */
function decodeConfiguration(value: unknown): Configuration {
  const lists = Array.isArray(value) && value.length === 3 ? (value as unknown[]) : null;
  const isIds = (list: unknown): list is string[] => Array.isArray(list) && list.every((id) => typeof id === 'string' && id.length > 0);
  const isBindings = (list: unknown): list is [string, string][] => Array.isArray(list) && list.every((pair) => Array.isArray(pair) && pair.length === 2 && isIds(pair));
  if (lists === null || !isIds(lists[0]) || !isIds(lists[1]) || !isBindings(lists[2])) {
    throw new ValueShapeError(`expected the snapshot's configuration [voters, learners, peerIds] as lists of ids and of [member, peer id], got ${describe(value)}`);
  }
  const conf = { voters: lists[0], learners: lists[1], peerIds: lists[2] };
  const problem = configurationProblem(conf);
  if (problem !== null) throw new ValueShapeError(`the snapshot's configuration is invalid: ${problem}`);
  return conf;
}

/**
 * The entries of one save, in one value (see level-layout.ts); `entries` holds at least one. A
 * leader's are the bytes it sends its followers, encoded once for both when `records` is the
 * member's encoder that its transport uses too.
 */
export function encodeSegment(entries: readonly Entry[], records?: EntryRecords): Uint8Array {
  return records === undefined ? encodeEntryRecords(entries) : records.encode(entries);
}

/**
 * The entries of a segment, checked one by one, in order; their indexes are checked by the
 * reader, which knows the key. The entries' data are views into `bytes`.
 */
export function decodeSegment(bytes: Uint8Array): Entry[] {
  const entries: Entry[] = [];
  let rest = bytes;
  do {
    let value: unknown;
    try {
      [value, rest] = decodeFirst(rest);
    } catch (error) {
      throw new ValueShapeError(`not valid CBOR after ${entries.length} entries (${error instanceof Error ? error.message : String(error)})`);
    }
    entries.push(entryFrom(value));
  } while (rest.length > 0);
  return entries;
}

function entryFrom(value: unknown): Entry {
  if (!Array.isArray(value) || value.length !== 5) throw new ValueShapeError(`expected entry [index, term, type, data, pid], got ${describe(value)}`);
  const [index, term, type, data, pid] = value as unknown[];
  if (!isCount(index)) throw new ValueShapeError(`expected a non-negative integer index, got ${describe(index)}`);
  if (!isTerm(term)) throw new ValueShapeError(`expected a term from 0 to ${MAX_TERM - 1}, got ${describe(term)}`);
  if (!isEntryType(type)) throw new ValueShapeError(`expected an entry type, got ${describe(type)}`);
  if (!(data instanceof Uint8Array)) throw new ValueShapeError(`expected bytes for data, got ${describe(data)}`);
  if (typeof pid !== 'string') throw new ValueShapeError(`expected a string pid, got ${describe(pid)}`);
  return { index, term, type, data, pid };
}

function decodeValue(bytes: Uint8Array): unknown {
  try {
    return decode(bytes);
  } catch (error) {
    throw new ValueShapeError(`not valid CBOR (${error instanceof Error ? error.message : String(error)})`);
  }
}

function decodeTuple(bytes: Uint8Array, length: number, what: string): unknown[] {
  const value = decodeValue(bytes);
  if (!Array.isArray(value) || value.length !== length) throw new ValueShapeError(`expected ${what}, got ${describe(value)}`);
  return value;
}

/** Enough of a value to recognise it in an error, never the whole of a large one. */
function describe(value: unknown): string {
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (typeof value === 'string') return JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value);
  if (value === null || typeof value !== 'object') return String(value);
  return 'an object';
}
