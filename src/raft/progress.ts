/**
 * The leader's view of one follower (etcd's tracker/progress.go): how far its log matches,
 * what to send next, and how many appends are in flight, bounded in count and bytes.
 */
export type ProgressState = 'probe' | 'replicate' | 'snapshot';

/** A bounded window of in-flight appends: the last index and byte size of each. */
export class Inflights {
  readonly #maxCount: number;
  readonly #maxBytes: number;
  #items: Array<{ index: number; bytes: number }> = [];
  #bytes = 0;

  constructor(maxCount: number, maxBytes: number) {
    this.#maxCount = maxCount;
    this.#maxBytes = maxBytes;
  }

  add(index: number, bytes: number): void {
    this.#items.push({ index, bytes });
    this.#bytes += bytes;
  }

  /** Frees every in-flight append whose last index is <= `index`: the follower has them. */
  freeLE(index: number): void {
    let n = 0;
    while (n < this.#items.length && (this.#items[n] as { index: number }).index <= index) {
      this.#bytes -= (this.#items[n] as { bytes: number }).bytes;
      n++;
    }
    if (n > 0) this.#items.splice(0, n);
  }

  /** Frees the oldest in-flight append, so that a window full of lost messages can drain. */
  freeFirst(): void {
    const first = this.#items.shift();
    if (first !== undefined) this.#bytes -= first.bytes;
  }

  full(): boolean {
    return this.#items.length >= this.#maxCount || this.#bytes >= this.#maxBytes;
  }

  count(): number {
    return this.#items.length;
  }

  reset(): void {
    this.#items = [];
    this.#bytes = 0;
  }
}

export class Progress {
  match = 0;
  next: number;
  state: ProgressState = 'probe';
  /** In probe state, one append at a time: set when one is sent, cleared by a heartbeat response. */
  probeSent = false;
  /** In snapshot state: the index of the snapshot sent, which the peer's answer must reach. */
  pendingSnapshot = 0;
  /** In snapshot state: periodic heartbeats sent since the snapshot went, with no answer to it. */
  snapshotWait = 0;
  /** Snapshots sent again since one was last answered: each retry waits longer. */
  snapshotRetries = 0;
  /** The commit index last sent to the peer in an append. */
  sentCommit = 0;
  /** Set by any message from the peer; CheckQuorum reads and clears it once per election timeout. */
  recentActive = false;
  readonly inflights: Inflights;

  constructor(next: number, maxInflightMsgs: number, maxInflightBytes: number) {
    this.next = next;
    this.inflights = new Inflights(maxInflightMsgs, maxInflightBytes);
  }

  becomeProbe(): void {
    this.state = 'probe';
    this.next = this.match + 1;
    this.probeSent = false;
    this.inflights.reset();
  }

  becomeReplicate(): void {
    this.state = 'replicate';
    this.next = this.match + 1;
    this.probeSent = false;
    this.inflights.reset();
  }

  /** A snapshot at `index` went to the peer: nothing more until it answers. */
  becomeSnapshot(index: number): void {
    this.state = 'snapshot';
    this.pendingSnapshot = index;
    this.next = index + 1;
    this.snapshotWait = 0;
    this.probeSent = false;
    this.inflights.reset();
  }

  isPaused(): boolean {
    if (this.state === 'snapshot') return true;
    return this.state === 'probe' ? this.probeSent : this.inflights.full();
  }

  /** A successful append response up to `index`. Returns whether it moved the match forward. */
  maybeUpdate(index: number): boolean {
    let updated = false;
    if (index > this.match) {
      this.match = index;
      this.probeSent = false;
      updated = true;
    }
    if (this.next < index + 1) this.next = index + 1;
    return updated;
  }

  /**
   * A rejected append at `rejected`. Moves `next` back to `probeAt + 1`, unless the rejection
   * is stale (it refers to an append older than the current window). Returns whether it moved.
   */
  maybeDecrTo(rejected: number, probeAt: number): boolean {
    // Waiting for a snapshot's answer: a rejection is of an append sent before it.
    if (this.state === 'snapshot') return false;
    if (this.state === 'replicate') {
      if (rejected <= this.match) return false;
      this.next = this.match + 1;
      return true;
    }
    if (this.next - 1 !== rejected) return false;
    this.next = Math.max(Math.min(rejected, probeAt + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }
}
