import type { Entry } from '../raft/types.js';

/** The replicated application: `apply` runs in log order on every member and must be deterministic. */
export interface StateMachine {
  apply(entry: Entry): unknown;
  /** The state as applied so far, encoded: the data of a snapshot at the last applied index. */
  snapshot(): Uint8Array;
  /**
   * Replaces the whole state with a snapshot's: the stored one at start, or a leader's that
   * this member installs. Only given data that `acceptsSnapshot` accepted.
   */
  restore(data: Uint8Array): void;
  /**
   * Whether `restore` can take `data`. A leader's snapshot is checked before the protocol takes
   * it in: a corrupt or hostile one is dropped and counted like any malformed message, and the
   * log and state stay as they were. Throws VersionTooOldError for a snapshot of a cluster
   * version this member cannot read: the driver then stops the member.
   */
  acceptsSnapshot(data: Uint8Array): boolean;
  /**
   * Optional: begins a snapshot of the state as applied so far, to be taken in steps with other
   * work between them (entries go on being applied). The driver uses it, when present, for its
   * compactions, so that a large state does not hold the event loop for the whole encoding.
   * A `restore` abandons a snapshot in progress.
   */
  snapshotInSteps?(): SnapshotSteps;
}

/** A snapshot being taken in steps (see StateMachine.snapshotInSteps). */
export interface SnapshotSteps {
  /** Does a bounded part of the work: the data once the snapshot is complete, else null. */
  step(): Uint8Array | null;
}
