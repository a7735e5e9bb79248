import { CronraftError, InvalidArgumentError } from '../errors.js';
import { canHoldTerm, MAX_TERM } from '../raft/bounds.js';
import { EntryType } from '../raft/types.js';
import type { Entry, HardState, Snapshot } from '../raft/types.js';
import type { StorageBatch, StorageIdentity } from './log-storage.js';

/**
 * Checks shared by both stores. save() refuses a batch that would leave the store in a state
 * that open() rejects as corrupt, so that a bug in the caller fails at the write that causes it
 * instead of at the next restart.
 */

/** A log index: a non-negative integer that survives a round trip through a double. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

/**
 * A term a member may hold (see canHoldTerm in src/raft/bounds.ts). A later one came from a
 * damaged disk or a bug, and a member that adopted it could never campaign again.
 */
export function isTerm(value: unknown): value is number {
  return typeof value === 'number' && canHoldTerm(value);
}

export function isEntryType(value: unknown): value is EntryType {
  // A conf change is stored only once the cluster runs version 2: a release before it refuses
  // the directory (0.1.0 as corrupt, at this entry; a later one by its cluster version).
  return value === EntryType.Normal || value === EntryType.Noop || value === EntryType.ConfChange;
}

/** What the store knows about the log it holds, enough to check a batch without reading it. */
export interface LogBounds {
  /** Index of the first retained entry (snapshot index + 1). */
  readonly firstIndex: number;
  /** Index of the last retained entry; firstIndex - 1 when the log is empty. */
  readonly lastIndex: number;
  /** Term of the entry at `index`, for firstIndex - 1 <= index <= lastIndex (the snapshot's term at firstIndex - 1). */
  termAt(index: number): number;
}

/**
 * Checks a batch against the stored log and the stored hard state, and returns the last index
 * once it is written. Throws InvalidArgumentError naming the offending field.
 */
export function checkBatch(batch: StorageBatch, bounds: LogBounds, stored: HardState): number {
  const { entries, hardState, snapshot } = batch;
  const storedCommit = stored.commit;
  if (!Array.isArray(entries)) throw new InvalidArgumentError('batch.entries', entries, 'an array of entries');
  if (snapshot !== undefined) {
    checkSnapshot(snapshot, 'batch.snapshot');
    // Raft installs a leader's snapshot only past its commit point, so past the stored snapshot
    // too. Refusing one behind it keeps every index below the retained log for good: a store may
    // then remove the entries there after the write that made them stale (see LevelLogStorage).
    if (snapshot.index < bounds.firstIndex - 1) {
      throw new InvalidArgumentError('batch.snapshot.index', snapshot.index, `an index from ${bounds.firstIndex - 1} (the stored snapshot's): a snapshot installed never moves the start of the log back`);
    }
  }
  // An installed snapshot replaces the whole log: the entries then follow it, not the stored log.
  const base = snapshot === undefined ? bounds : snapshotBounds(snapshot);
  let lastIndex = base.lastIndex;
  const first = entries[0];
  if (first !== undefined) {
    if (snapshot !== undefined && first.index !== snapshot.index + 1) {
      throw new InvalidArgumentError('batch.entries[0].index', first.index, `${snapshot.index + 1} (entries follow the installed snapshot at ${snapshot.index})`);
    }
    if (!isCount(first.index) || first.index < base.firstIndex || first.index > base.lastIndex + 1) {
      throw new InvalidArgumentError('batch.entries[0].index', first.index, `an index from ${base.firstIndex} to ${base.lastIndex + 1} (the log holds ${base.firstIndex}..${base.lastIndex})`);
    }
    let previousTerm = base.termAt(first.index - 1);
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as Entry;
      checkEntry(entry, first.index + i, previousTerm, `batch.entries[${i}]`);
      previousTerm = entry.term;
    }
    lastIndex = first.index + entries.length - 1;
  }
  const lowestCommit = snapshot === undefined ? 0 : snapshot.index;
  if (hardState !== undefined) {
    checkHardState(hardState, lowestCommit, lastIndex, 'batch.hardState');
    const regression = hardStateRegression(stored, hardState);
    if (regression !== null) throw new InvalidArgumentError('batch.hardState', hardState, `a hard state that does not go back on the stored one (${regression})`);
  } else if (storedCommit > lastIndex) {
    throw new InvalidArgumentError('batch.entries', `entries up to ${lastIndex}`, `a log that keeps the stored commit point ${storedCommit}`);
  } else if (storedCommit < lowestCommit) {
    // open() would find a snapshot of entries the store never knew to be committed: corrupt.
    throw new InvalidArgumentError('batch.hardState', hardState, `a hard state with a commit point from ${lowestCommit} (the installed snapshot's index) to ${lastIndex}, as the stored one (${storedCommit}) is below the snapshot`);
  }
  return lastIndex;
}

/**
 * Checks a compaction against the stored log: the snapshot must stand for a stored entry (or the
 * current snapshot), with that entry's term, and cover only committed entries, since an entry
 * past the commit point may still be replaced by a new leader.
 */
export function checkCompaction(snapshot: Snapshot, bounds: LogBounds, storedCommit: number): void {
  checkSnapshot(snapshot, 'snapshot');
  const lowest = bounds.firstIndex - 1;
  const highest = Math.min(bounds.lastIndex, storedCommit);
  if (snapshot.index < lowest || snapshot.index > highest) {
    throw new InvalidArgumentError(
      'snapshot.index',
      snapshot.index,
      `an index from ${lowest} (the current snapshot) to ${highest} (the last stored index ${bounds.lastIndex} and the stored commit point ${storedCommit}, whichever is lower)`,
    );
  }
  const term = bounds.termAt(snapshot.index);
  if (snapshot.term !== term) throw new InvalidArgumentError('snapshot.term', snapshot.term, `${term}, the term stored at index ${snapshot.index}`);
}

function checkSnapshot(snapshot: Snapshot, name: string): void {
  if (typeof snapshot !== 'object' || snapshot === null) throw new InvalidArgumentError(name, snapshot, 'a Snapshot');
  if (!isCount(snapshot.index)) throw new InvalidArgumentError(`${name}.index`, snapshot.index, 'a non-negative integer');
  if (!isTerm(snapshot.term)) throw new InvalidArgumentError(`${name}.term`, snapshot.term, `an integer from 0 to ${MAX_TERM - 1}`);
  if (!(snapshot.data instanceof Uint8Array)) throw new InvalidArgumentError(`${name}.data`, typeof snapshot.data, 'a Uint8Array');
}

/** The bounds of a log that an installed snapshot has just replaced: empty, after the snapshot. */
function snapshotBounds(snapshot: Snapshot): LogBounds {
  return {
    firstIndex: snapshot.index + 1,
    lastIndex: snapshot.index,
    termAt: (index) => {
      if (index !== snapshot.index) throw new RangeError(`No entry at index ${index} (the log is empty after the snapshot at ${snapshot.index})`);
      return snapshot.term;
    },
  };
}

function checkEntry(entry: Entry, index: number, previousTerm: number, name: string): void {
  if (typeof entry !== 'object' || entry === null) throw new InvalidArgumentError(name, entry, 'an entry');
  if (entry.index !== index) throw new InvalidArgumentError(`${name}.index`, entry.index, `${index} (entries must be contiguous)`);
  if (!isTerm(entry.term) || entry.term < previousTerm) {
    throw new InvalidArgumentError(`${name}.term`, entry.term, `an integer from ${previousTerm} to ${MAX_TERM - 1} (terms never decrease along the log)`);
  }
  if (!isEntryType(entry.type)) throw new InvalidArgumentError(`${name}.type`, entry.type, 'an EntryType');
  if (!(entry.data instanceof Uint8Array)) throw new InvalidArgumentError(`${name}.data`, entry.data, 'a Uint8Array');
  if (typeof entry.pid !== 'string') throw new InvalidArgumentError(`${name}.pid`, entry.pid, 'a string');
}

function checkHardState(hardState: HardState, lowestCommit: number, lastIndex: number, name: string): void {
  if (typeof hardState !== 'object' || hardState === null) throw new InvalidArgumentError(name, hardState, 'a HardState');
  if (!isTerm(hardState.term)) throw new InvalidArgumentError(`${name}.term`, hardState.term, `an integer from 0 to ${MAX_TERM - 1}`);
  if (hardState.vote !== null && typeof hardState.vote !== 'string') throw new InvalidArgumentError(`${name}.vote`, hardState.vote, 'a member id or null');
  if (!isCount(hardState.commit) || hardState.commit < lowestCommit || hardState.commit > lastIndex) {
    const from = lowestCommit === 0 ? '0' : `the installed snapshot's index, ${lowestCommit},`;
    throw new InvalidArgumentError(`${name}.commit`, hardState.commit, `an integer from ${from} to the last index, ${lastIndex}`);
  }
}

/**
 * How `later` goes back on `earlier`, or null when it does not. Raft never moves a hard state
 * back: a term never decreases, a vote cast stands for the rest of its term, and a commit point
 * never moves back. So a store refuses a save that would, and a stored hard state behind one the
 * store knew durable shows that writes were lost (see durable-mark.ts).
 */
export function hardStateRegression(earlier: HardState, later: HardState): string | null {
  if (later.term < earlier.term) return `term ${later.term} is below term ${earlier.term}`;
  if (later.term === earlier.term && earlier.vote !== null && later.vote !== earlier.vote) {
    return `the vote in term ${later.term} is ${JSON.stringify(later.vote)}, not ${JSON.stringify(earlier.vote)} as cast`;
  }
  if (later.commit < earlier.commit) return `commit ${later.commit} is below commit ${earlier.commit}`;
  return null;
}

export function checkIdentity(identity: StorageIdentity): void {
  if (typeof identity !== 'object' || identity === null) throw new InvalidArgumentError('identity', identity, 'a StorageIdentity');
  if (typeof identity.clusterId !== 'string' || identity.clusterId === '') throw new InvalidArgumentError('identity.clusterId', identity.clusterId, 'a non-empty string');
  if (typeof identity.nodeId !== 'string' || identity.nodeId === '') throw new InvalidArgumentError('identity.nodeId', identity.nodeId, 'a non-empty string');
  const voters = identity.foundingVoters;
  if (voters !== undefined && (!Array.isArray(voters) || voters.length === 0 || !voters.every((id) => typeof id === 'string' && id !== ''))) {
    throw new InvalidArgumentError('identity.foundingVoters', voters, 'member ids');
  }
}

/** A copy of an identity, to keep (the founding voters, when given, copied and frozen). */
export function copyIdentity(identity: StorageIdentity): StorageIdentity {
  const { clusterId, nodeId, foundingVoters } = identity;
  return foundingVoters === undefined ? { clusterId, nodeId } : { clusterId, nodeId, foundingVoters: Object.freeze([...foundingVoters]) };
}

export function describeIdentity(identity: StorageIdentity): string {
  return `cluster ${JSON.stringify(identity.clusterId)} member ${JSON.stringify(identity.nodeId)}`;
}

export function mismatchMessage(stored: StorageIdentity, wanted: StorageIdentity): string {
  // The same member in another cluster: a founding member whose peers list changed (its cluster
  // id is a hash of the founding addresses), which an operator meets after replacing a machine.
  const hint =
    stored.nodeId === wanted.nodeId && stored.foundingVoters === undefined && wanted.foundingVoters === undefined
      ? ': a founding member starts with the peers it formed the cluster with (another list computes another cluster id)'
      : '';
  return `belongs to ${describeIdentity(stored)}, not ${describeIdentity(wanted)}${hint}`;
}

/** Whether `b` is the identity `a` stored: the founding voters, a consequence of the cluster id, need not be given again. */
export function sameIdentity(a: StorageIdentity, b: StorageIdentity): boolean {
  return a.clusterId === b.clusterId && a.nodeId === b.nodeId;
}

/** A call that needs an open store, made before open() or after close(): a bug in the caller. */
export function notOpenError(path: string): CronraftError {
  return new CronraftError('CRONRAFT_NOT_RUNNING', `${path}: the store is not open`);
}
