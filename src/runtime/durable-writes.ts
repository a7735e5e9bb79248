import type { RaftNode } from '../raft/node.js';
import type { Ready } from '../raft/ready.js';
import type { HardState, NodeId, Snapshot } from '../raft/types.js';
import type { LogStorage } from '../storage/log-storage.js';

export interface DurableWritesOptions {
  readonly node: RaftNode;
  readonly storage: LogStorage;
  /** Whether the member still runs: a compaction queued behind a write does nothing once it stopped. */
  readonly running: () => boolean;
  /** A write failed: the member stops (every write queued behind it fails too). */
  readonly fail: (error: unknown) => void;
  /** A monotonic clock, ms: how long handing a compaction to storage held the event loop (see saveCompaction). */
  readonly now: () => number;
}

/**
 * The driver's writes to storage, in the order they start: each Ready that must be persisted,
 * and each compaction of this member's own, behind every earlier write (storage completes
 * queued writes in order and may merge them under one fsync). It keeps the hard state last
 * written, so that a write carries one only when it changed (see `saveReady`).
 */
export class DurableWrites {
  readonly #o: DurableWritesOptions;
  /** The last write started; it completes after every earlier one. */
  #last: Promise<void> = Promise.resolve();
  /** The hard state of the last write started (durable or not). */
  #term: number;
  #vote: NodeId | null;
  #commit: number;
  /** Compactions queued behind the writes, not yet done (see saveCompaction). */
  #compactionsInFlight = 0;

  constructor(options: DurableWritesOptions) {
    this.#o = options;
    const hs = options.node.hardState();
    this.#term = hs.term;
    this.#vote = hs.vote;
    this.#commit = hs.commit;
  }

  /** Settles once every write started so far is durable (or one of them failed). */
  get last(): Promise<void> {
    return this.#last;
  }

  /** Compactions started and not yet done. */
  get compactionsInFlight(): number {
    return this.#compactionsInFlight;
  }

  /**
   * Starts the one atomic, synced write of a Ready that must be persisted (`rd.mustSync`), with
   * `hs`, the node's latest hard state. The node learns it is durable (`writeDurable`) as it
   * completes, before anything waiting on `last` runs.
   */
  saveReady(rd: Ready, hs: HardState): void {
    // A change of the commit index alone is not written (the node does not ask for it): it
    // rides along with the next write, which halves the fsyncs on the commit path. An
    // installed snapshot moves the commit point to it at least: it is written with it.
    const voteChanged = hs.term !== this.#term || hs.vote !== this.#vote;
    const hardState = voteChanged || hs.commit !== this.#commit || rd.snapshot !== null ? hs : undefined;
    if (hardState !== undefined) this.#written(hardState);
    const batch = { entries: rd.entries, ...(hardState === undefined ? {} : { hardState }), ...(rd.snapshot === null ? {} : { snapshot: rd.snapshot }) };
    this.#last = this.#o.storage.save(batch).then(() => this.#o.node.writeDurable(rd));
  }

  /**
   * Writes a compaction behind every earlier write: the node's log is already compacted to
   * `snapshot` in memory (compaction.ts). `held` is told how long the call that hands it to
   * storage held the event loop (encoding the snapshot's record, and whatever the store does
   * before its first wait), if it is made.
   */
  saveCompaction(snapshot: Snapshot, held?: (ms: number) => void): void {
    // The stored commit point may lag (a commit alone is not written): it must reach the
    // snapshot, or a restart would find a snapshot past its commit point. Both writes queue
    // behind every earlier one, so the entries the snapshot replaces are stored first.
    const hardState = { term: this.#term, vote: this.#vote, commit: this.#o.node.hardState().commit };
    this.#written(hardState);
    // A leader's snapshot installed meanwhile (queued while the save was in flight) replaced
    // the stored log past this one: this compaction then has nothing left to do. Nor has it
    // once the member stopped (its store is closing).
    const storage = this.#o.storage;
    this.#compactionsInFlight++;
    this.#last = storage
      .save({ hardState, entries: [] })
      .then(() => {
        if (!this.#o.running() || storage.snapshot().index >= snapshot.index) return undefined;
        const started = this.#o.now();
        const compacted = storage.compact(snapshot);
        held?.(this.#o.now() - started);
        return compacted;
      })
      .finally(() => this.#compactionsInFlight--);
    this.#last.catch((error: unknown) => this.#o.fail(error));
  }

  #written(hs: HardState): void {
    this.#term = hs.term;
    this.#vote = hs.vote;
    this.#commit = hs.commit;
  }
}
