/** A put or a del, as LevelDB takes them in a batch. */
export type WriteOp = { readonly type: 'put'; readonly key: Uint8Array; readonly value: Uint8Array } | { readonly type: 'del'; readonly key: Uint8Array };

/** Writes a list of operations atomically and durably. */
export type BatchWriter = (ops: WriteOp[], sync: boolean) => Promise<void>;

/** Work a write needs done, durably, before its batch: a snapshot's data written to its own file (snapshot-files.ts). */
export type BeforeBatch = () => Promise<void>;

interface Waiter {
  readonly resolve: () => void;
  readonly reject: (error: unknown) => void;
}

/**
 * Serialises writes to one store, in the order they were made. LevelDB batches submitted
 * concurrently run on separate threads and may land in either order, which would let an older
 * batch overwrite a newer one; here at most one batch is in flight. Writes made while one is in
 * flight are merged into the next batch (group commit): one sync for all of them, each still
 * atomic since it lands whole inside a larger atomic batch.
 *
 * After a failed write, the in-memory view of the store that later writes were checked against
 * may no longer match the disk, so every later write fails with the same error.
 */
export class WriteQueue {
  private readonly writeBatch: BatchWriter;
  private queuedOps: WriteOp[][] = [];
  private queuedBefore: BeforeBatch[] = [];
  private queuedWaiters: Waiter[] = [];
  /** Whether any write merged into the next batch asked to be synced. */
  private queuedSync = false;
  private inFlight: Promise<void> | null = null;
  private failure: { readonly error: unknown } | null = null;

  constructor(writeBatch: BatchWriter) {
    this.writeBatch = writeBatch;
  }

  /**
   * `sync: false` for a write whose loss on power failure is harmless; a merged batch syncs if
   * any part asks. `before`, if given, runs once every write made earlier has landed and before
   * the batch that holds `ops` is written (the befores of a merged batch one after the other, in
   * order); if it fails, so does the batch, as a failed write.
   */
  write(ops: WriteOp[], sync = true, before?: BeforeBatch): Promise<void> {
    if (this.failure !== null) return Promise.reject(this.failure.error);
    return new Promise<void>((resolve, reject) => {
      this.queuedOps.push(ops);
      if (before !== undefined) this.queuedBefore.push(before);
      this.queuedSync ||= sync;
      this.queuedWaiters.push({ resolve, reject });
      if (this.inFlight === null) this.inFlight = this.drain();
    });
  }

  /**
   * Fails every later write with `error`: for a failure the store met outside the queue (see
   * LevelLogStorage's removal of stale entries), after which its view of the disk is in doubt.
   */
  fail(error: unknown): void {
    this.failure ??= { error };
  }

  /** Resolves once every write made so far has settled. */
  async idle(): Promise<void> {
    while (this.inFlight !== null) await this.inFlight;
  }

  private async drain(): Promise<void> {
    while (this.queuedOps.length > 0) {
      const groups = this.queuedOps;
      const befores = this.queuedBefore;
      const waiters = this.queuedWaiters;
      const sync = this.queuedSync;
      this.queuedOps = [];
      this.queuedBefore = [];
      this.queuedWaiters = [];
      this.queuedSync = false;
      try {
        if (this.failure !== null) throw this.failure.error;
        for (const before of befores) await before();
        await this.writeBatch(groups.length === 1 ? (groups[0] as WriteOp[]) : groups.flat(), sync);
      } catch (error) {
        this.failure ??= { error };
        for (const waiter of waiters) waiter.reject(this.failure.error);
        continue;
      }
      for (const waiter of waiters) waiter.resolve();
    }
    this.inFlight = null;
  }
}
