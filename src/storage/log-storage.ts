import type { Entry, HardState, NodeId, Snapshot, SnapshotMeta } from '../raft/types.js';

/** Who a data directory belongs to, written on first start and checked on every later one. */
export interface StorageIdentity {
  readonly clusterId: string;
  readonly nodeId: NodeId;
  /**
   * The voters the cluster was formed with, kept by a member that joined a running cluster
   * (runtime/join.ts): it builds its node with them on every start, as a founding member
   * builds its own from its peer list. Absent for a founding member.
   */
  readonly foundingVoters?: readonly NodeId[];
}

/** Everything a member needs to resume after a restart. */
export interface StoredState {
  /** Null when the store is new (nothing was ever written). */
  readonly identity: StorageIdentity | null;
  readonly hardState: HardState;
  /** Where the retained log starts, with the state as of there; `{ index: 0, term: 0, data: empty }` when nothing was compacted. */
  readonly snapshot: Snapshot;
  /** The retained entries, contiguous, from `snapshot.index + 1`. */
  readonly entries: readonly Entry[];
}

/** One atomic write. */
export interface StorageBatch {
  /**
   * Written if present. Never behind the stored one, as Raft never moves it back: a lower term
   * or commit point, or another vote in the same term, is refused (a level store checks at open
   * that its hard state is not behind the last one it knew durable).
   */
  readonly hardState?: HardState;
  /**
   * Contiguous entries. Any stored entry with an index >= `entries[0].index` is replaced
   * or removed (a follower's log conflict is repaired by truncating the suffix).
   */
  readonly entries: readonly Entry[];
  /**
   * A snapshot received from the leader (a follower too far behind its log). It replaces the
   * stored snapshot and the whole stored log: every stored entry is removed, whatever its index,
   * since entries past a snapshot this member did not make may conflict with it. Written first;
   * `entries`, if any, then follow it (`entries[0].index === snapshot.index + 1`). The hard
   * state's commit point may then be anywhere from `snapshot.index` to the last entry.
   */
  readonly snapshot?: Snapshot;
  /**
   * Sync to disk before resolving (default true). False only for a write whose loss on power
   * failure is harmless, e.g. the commit index alone: it still survives the process crashing.
   */
  readonly sync?: boolean;
}

/**
 * Durable Raft state. The protocol keeps its log in memory (the log is small and compacted)
 * and reads from there; storage only has to make the writes durable and give them back on
 * restart. Implementations: level (durable) and memory (tests, simulations). Both pass
 * test/storage-compliance.ts.
 */
export interface LogStorage {
  /** Opens the store and returns what it holds. Throws StorageError when unreadable or corrupt. */
  open(): Promise<StoredState>;
  /** Binds a new store to its cluster and member. Throws StorageError if it is bound to others. */
  setIdentity(identity: StorageIdentity): Promise<void>;
  /**
   * Writes the batch atomically: after a crash, either all of it or none of it is there.
   * Resolves only once the batch is durable (synced) when the store is durable. A snapshot's
   * data may be read until then, from the bytes given (a level store writes them to a file with
   * no copy): they must not change meanwhile, as Raft never changes a snapshot's; a change after
   * does not reach the store.
   */
  save(batch: StorageBatch): Promise<void>;
  /**
   * Compacts the log behind a snapshot this member took of its own applied state: stores the
   * snapshot, and with it the log starts after `snapshot.index`, atomically, ordered after every
   * earlier save(); a store may remove what it held up to there later, in the background.
   * `snapshot.index` must be a stored entry (or the current snapshot's index) with that term, at
   * or below the stored commit point; the entries after it are kept. The snapshot's data must
   * not change until it resolves, as for save().
   */
  compact(snapshot: Snapshot): Promise<void>;
  /** Index of the first retained entry (snapshot.index + 1). */
  firstIndex(): number;
  /** Where the retained log starts. */
  snapshot(): SnapshotMeta;
  close(): Promise<void>;
  /**
   * The cluster version in force is `version`, as this member applied or restored it: a store
   * may change how it writes once every member's release reads it (LevelLogStorage seals its
   * values from SEALED_STORE_VERSION). Optional: a store that writes alike at every version has none.
   */
  clusterVersionInForce?(version: number): void;
}
