import type { NodeId } from './types.js';

/** A read asked of the leader: by this member or a follower that forwarded it, with its context. */
export interface ReadRequest {
  readonly from: NodeId;
  readonly ctx: number;
}

/** A read waiting for a heartbeat round to confirm that its leader still leads. */
export interface PendingRead extends ReadRequest {
  /** The heartbeat round that confirms it. */
  readonly seq: number;
  /** The commit index when it was asked: what the reader must have applied. */
  readonly index: number;
  readonly acks: Set<NodeId>;
}

/**
 * The linearizable reads a leader holds (ReadIndex: the Raft thesis, section 6.4; etcd-io/raft's
 * read_only.go). A read is pending until a majority acknowledged a heartbeat round started at or
 * after it, and deferred while the leader has not yet committed an entry of its term (until then
 * it does not know the true commit index). At most `max` are held. Pure data: the node sends.
 */
export class ReadOnly {
  readonly #max: number;
  #pending: PendingRead[] = [];
  #deferred: ReadRequest[] = [];
  #seq = 0;

  constructor(max: number) {
    this.#max = max;
  }

  /** Whether `max` reads are held already: a new one is refused. */
  get full(): boolean {
    return this.#pending.length + this.#deferred.length >= this.#max;
  }

  /** The latest heartbeat round started for a read, or 0: periodic heartbeats carry it. */
  get lastSeq(): number {
    return this.#pending.at(-1)?.seq ?? 0;
  }

  get deferredCount(): number {
    return this.#deferred.length;
  }

  /** Holds a read until the leader's first commit of its term (see takeDeferred). */
  defer(read: ReadRequest): void {
    this.#deferred.push(read);
  }

  /** Holds a read at commit index `index`, acknowledged by `self`; returns the heartbeat round that confirms it. */
  add(read: ReadRequest, index: number, self: NodeId): number {
    const seq = ++this.#seq;
    this.#pending.push({ seq, index, from: read.from, ctx: read.ctx, acks: new Set([self]) });
    return seq;
  }

  /**
   * Records that `peer` acknowledged heartbeat round `seq`, which confirms every earlier round
   * too. Returns the reads whose acknowledgements `confirmed` now finds a quorum of (of the
   * configuration of the moment: it may have changed since the read was asked), oldest first,
   * and stops holding them.
   */
  ack(peer: NodeId, seq: number, confirmed: (acks: ReadonlySet<NodeId>) => boolean): PendingRead[] {
    for (const read of this.#pending) {
      if (read.seq > seq) break;
      read.acks.add(peer);
    }
    let released = 0;
    while (released < this.#pending.length && confirmed((this.#pending[released] as PendingRead).acks)) released++;
    return released === 0 ? [] : this.#pending.splice(0, released);
  }

  /** The deferred reads, no longer held: the leader asks them again now that it can. */
  takeDeferred(): ReadRequest[] {
    const deferred = this.#deferred;
    this.#deferred = [];
    return deferred;
  }

  /** Every read held, pending then deferred, no longer held: the leader stepped down. */
  takeAll(): ReadRequest[] {
    const all = [...this.#pending, ...this.#deferred];
    this.#pending = [];
    this.#deferred = [];
    return all;
  }
}
