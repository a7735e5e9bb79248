import { StorageError } from '../errors.js';
import type { HardState, Snapshot, SnapshotMeta } from '../raft/types.js';
import type { LogStorage, StorageBatch, StorageIdentity, StoredState } from './log-storage.js';
import { MemoryDisk, copyEntry, copySnapshot } from './memory-disk.js';
import { checkBatch, checkCompaction, checkIdentity, copyIdentity, mismatchMessage, notOpenError, sameIdentity } from './store-checks.js';
import { TermIndex } from './term-index.js';

/** What an open store knows; gone once it is closed. */
interface Session {
  readonly generation: number;
  readonly terms: TermIndex;
  identity: StorageIdentity | null;
  /** The last hard state saved: a batch must not cut off its commit point, nor go back on it. */
  hardState: HardState;
}

/**
 * LogStorage in memory, for tests and the simulator. It keeps its data on a MemoryDisk that
 * outlives it: a new MemoryLogStorage over the same disk is a restarted process. It copies
 * what it is given and what it returns, so that callers may reuse their arrays and buffers.
 */
export class MemoryLogStorage implements LogStorage {
  readonly disk: MemoryDisk;
  private session: Session | null = null;

  constructor(disk: MemoryDisk = new MemoryDisk()) {
    this.disk = disk;
  }

  async open(): Promise<StoredState> {
    if (this.session !== null) throw new StorageError('CRONRAFT_STORAGE_UNREADABLE', this.disk.name, 'the store is already open');
    const generation = this.disk.lock(this);
    const state = this.disk.read();
    this.session = { generation, terms: new TermIndex(state.snapshot, state.entries), identity: state.identity, hardState: { ...state.hardState } };
    return state;
  }

  async setIdentity(identity: StorageIdentity): Promise<void> {
    const session = this.current();
    checkIdentity(identity);
    if (session.identity !== null) {
      if (sameIdentity(session.identity, identity)) return;
      throw new StorageError('CRONRAFT_STORAGE_MISMATCH', this.disk.name, mismatchMessage(session.identity, identity));
    }
    const copy = copyIdentity(identity);
    session.identity = copy;
    await this.disk.write(session.generation, (contents) => {
      contents.identity = copy;
    });
  }

  async save(batch: StorageBatch): Promise<void> {
    const session = this.current();
    checkBatch(batch, session.terms, session.hardState);
    // Copied now, not when the write is applied: the caller may reuse its objects at once.
    const entries = batch.entries.map(copyEntry);
    const hardState = batch.hardState === undefined ? undefined : { ...batch.hardState };
    const installed = batch.snapshot === undefined ? undefined : copySnapshot(batch.snapshot);
    if (installed !== undefined) session.terms.install(installed);
    session.terms.apply(entries);
    if (hardState !== undefined) session.hardState = hardState;
    await this.disk.write(session.generation, (contents) => {
      if (installed !== undefined) {
        contents.snapshot = installed;
        contents.entries.length = 0;
      }
      const first = entries[0];
      if (first !== undefined) {
        contents.entries.length = first.index - contents.snapshot.index - 1;
        for (const entry of entries) contents.entries.push(entry);
      }
      if (hardState !== undefined) contents.hardState = hardState;
    });
  }

  async compact(snapshot: Snapshot): Promise<void> {
    const session = this.current();
    checkCompaction(snapshot, session.terms, session.hardState.commit);
    const copy = copySnapshot(snapshot);
    session.terms.compact(copy);
    await this.disk.write(session.generation, (contents) => {
      // One splice: the disk's log is an array, and a compaction may drop thousands of entries.
      contents.entries.splice(0, copy.index - contents.snapshot.index);
      contents.snapshot = copy;
    });
  }

  firstIndex(): number {
    return this.current().terms.firstIndex;
  }

  snapshot(): SnapshotMeta {
    return { ...this.current().terms.snapshot };
  }

  async close(): Promise<void> {
    if (this.session === null) return;
    this.disk.release(this);
    this.session = null;
  }

  private current(): Session {
    if (this.session === null) throw notOpenError(this.disk.name);
    return this.session;
  }
}
