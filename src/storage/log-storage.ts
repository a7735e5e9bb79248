import type { Entry, HardState, NodeId, SnapshotMeta } from '../raft/types.js';

/** Who a data directory belongs to, written on first start and checked on every later one. */
export interface StorageIdentity {
  readonly clusterId: string;
  readonly nodeId: NodeId;
}

/** Everything a member needs to resume after a restart. */
export interface StoredState {
  /** Null when the store is new (nothing was ever written). */
  readonly identity: StorageIdentity | null;
  readonly hardState: HardState;
  /** Where the retained log starts; `{ index: 0, term: 0 }` when nothing was compacted. */
  readonly snapshot: SnapshotMeta;
  /** The retained entries, contiguous, from `snapshot.index + 1`. */
  readonly entries: readonly Entry[];
}

/** One atomic write. */
export interface StorageBatch {
  /** Written if present. */
  readonly hardState?: HardState;
  /**
   * Contiguous entries. Any stored entry with an index >= `entries[0].index` is replaced
   * or removed (a follower's log conflict is repaired by truncating the suffix).
   */
  readonly entries: readonly Entry[];
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
   * Resolves only once the batch is durable (synced) when the store is durable.
   */
  save(batch: StorageBatch): Promise<void>;
  /** Index of the first retained entry (snapshot.index + 1). */
  firstIndex(): number;
  /** Where the retained log starts. */
  snapshot(): SnapshotMeta;
  close(): Promise<void>;
}
