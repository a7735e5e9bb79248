import { StorageError } from '../errors.js';
import { emptyHardState } from '../raft/types.js';
import type { Entry, HardState, Snapshot } from '../raft/types.js';
import type { StorageIdentity, StoredState } from './log-storage.js';

export interface MemoryDiskOptions {
  /** Stands in for a path in errors. */
  readonly name?: string;
  /**
   * When true, a write stays unsynced, and its save() pending, until sync() is called, and
   * crash() loses it: a simulator decides when fsync completes. When false (the default), a
   * write is durable as soon as it is made.
   */
  readonly manualSync?: boolean;
}

/**
 * The durable contents of a disk. Entries are contiguous from snapshot.index + 1. A compaction
 * or an installed snapshot is one write: it replaces the snapshot and drops entries together.
 */
export interface DiskContents {
  identity: StorageIdentity | null;
  hardState: HardState;
  snapshot: Snapshot;
  readonly entries: Entry[];
}

/** A change to the contents. It must not keep references to the caller's objects. */
export type DiskWrite = (contents: DiskContents) => void;

interface UnsyncedWrite {
  readonly apply: DiskWrite;
  readonly resolve: () => void;
}

/**
 * The "disk" under MemoryLogStorage: outlives the storage objects, so that a test or a
 * simulator can reopen it with a new MemoryLogStorage as a restarted process would reopen its
 * data directory. It models the lock a directory has (one open store at a time), and, with
 * `manualSync`, writes that a crash loses because they were not yet synced.
 */
export class MemoryDisk {
  readonly name: string;
  readonly manualSync: boolean;
  private readonly contents: DiskContents = {
    identity: null,
    hardState: emptyHardState,
    snapshot: { index: 0, term: 0, data: new Uint8Array(0) },
    entries: [],
  };
  private readonly unsynced: UnsyncedWrite[] = [];
  /** Increases at every crash, so that the stores opened before it (the dead process) can no longer write. */
  private generation = 0;
  private holder: object | null = null;

  constructor(options: MemoryDiskOptions = {}) {
    this.name = options.name ?? 'memory';
    this.manualSync = options.manualSync ?? false;
  }

  /** Writes not yet synced. */
  get unsyncedWrites(): number {
    return this.unsynced.length;
  }

  /** Takes the lock for `holder` and returns the generation its writes must carry. */
  lock(holder: object): number {
    if (this.holder !== null && this.holder !== holder) {
      throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.name, 'the store is already open (its lock is held)');
    }
    this.holder = holder;
    return this.generation;
  }

  /**
   * Releases the lock on a clean close, which flushes: only a crash loses unsynced writes. Does
   * nothing for a holder that a crash already released.
   */
  release(holder: object): void {
    if (this.holder !== holder) return;
    this.sync();
    this.holder = null;
  }

  /** A copy of the durable contents: what a process that opens the disk now finds. */
  read(): StoredState {
    const { identity, hardState, snapshot, entries } = this.contents;
    return {
      identity: identity === null ? null : { ...identity },
      hardState: { ...hardState },
      snapshot: copySnapshot(snapshot),
      entries: entries.map(copyEntry),
    };
  }

  /**
   * Applies a write now, or queues it until sync() with `manualSync`. A write from a generation
   * before the last crash is dropped and its promise never settles: the process that made it is
   * dead and observes nothing.
   */
  write(generation: number, apply: DiskWrite): Promise<void> {
    if (generation !== this.generation) return new Promise<void>(() => undefined);
    if (!this.manualSync) {
      apply(this.contents);
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      this.unsynced.push({ apply, resolve });
    });
  }

  /** The durable snapshot's index and the durable log's last index, without copying (for checkers). */
  durableBounds(): { readonly snapshotIndex: number; readonly lastIndex: number } {
    const { snapshot, entries } = this.contents;
    return { snapshotIndex: snapshot.index, lastIndex: snapshot.index + entries.length };
  }

  /** The term of the durable entry at `index`, without copying the log (for checkers). */
  durableTerm(index: number): number | undefined {
    const { snapshot, entries } = this.contents;
    if (index === snapshot.index) return snapshot.term;
    return entries[index - snapshot.index - 1]?.term;
  }

  /**
   * Makes the oldest `count` unsynced writes (all by default) durable, in order, and resolves
   * their saves. A simulator syncs a few at a time, so that one write completes before the next.
   */
  sync(count = Number.POSITIVE_INFINITY): void {
    const writes = this.unsynced.splice(0, count);
    for (const write of writes) write.apply(this.contents);
    for (const write of writes) write.resolve();
  }

  /**
   * Loses the unsynced writes, as a power cut would, and releases the lock. The stores open
   * until now are dead: their later writes are dropped and their pending saves never settle.
   */
  crash(): void {
    this.unsynced.length = 0;
    this.generation++;
    this.holder = null;
  }
}

/** A deep copy, so that neither the caller nor the disk sees the other's later changes. */
export function copyEntry(entry: Entry): Entry {
  return { index: entry.index, term: entry.term, type: entry.type, data: new Uint8Array(entry.data), pid: entry.pid };
}

/** A deep copy of a snapshot, for the same reason as copyEntry. */
export function copySnapshot(snapshot: Snapshot): Snapshot {
  const { conf } = snapshot;
  const copy = { index: snapshot.index, term: snapshot.term, data: new Uint8Array(snapshot.data) };
  return conf === undefined ? copy : { ...copy, conf: { voters: [...conf.voters], learners: [...conf.learners], peerIds: conf.peerIds.map(([id, peerId]) => [id, peerId] as const) } };
}
