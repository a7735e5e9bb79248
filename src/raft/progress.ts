import { REJECT_LOST_LOG } from './types.js';

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
   * The peer's answer to a heartbeat that carried a commit index beyond its log
   * (REJECT_LOST_LOG): it lost entries it acknowledged, since we never send a commit index
   * beyond what a peer acknowledged. Nothing it holds is known to match ours any more, so the
   * match is forgotten and the peer probed from `probeAt`, where its log may still match, as a
   * new follower is (and sent the snapshot if the entries after `probeAt` are compacted away).
   * A copy of the answer that comes again once the peer caught up (a duplicate, or one that
   * reordering delayed) is not told apart: it costs entries sent again. Lowering the match
   * never un-commits anything (a commit index only moves forward; fewer known copies can only
   * delay the next commit). Returns whether it was such an answer.
   */
  maybeForgetMatch(rejected: number, hintIndex: number, probeAt: number): boolean {
    if (rejected !== REJECT_LOST_LOG || hintIndex >= this.match) return false;
    const next = Math.max(0, Math.min(probeAt, this.match - 1)) + 1;
    this.match = 0;
    this.sentCommit = 0;
    this.snapshotRetries = 0;
    this.becomeProbe();
    this.next = next;
    return true;
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
    // Probed one append at a time, a rejection of another one is stale. So is one at the match
    // itself (`next` is then match + 1), which the peer holds: probing there again at once
    // would only be refused again if the peer lost its log (it says so on the next heartbeat,
    // see maybeForgetMatch), in a loop as fast as the network.
    if (this.next - 1 !== rejected || rejected <= this.match) return false;
    this.next = Math.max(Math.min(rejected, probeAt + 1), this.match + 1);
    this.probeSent = false;
    return true;
  }
}
