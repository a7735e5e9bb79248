import { InvariantError } from './invariant.js';
import type { RaftLog } from './log.js';
import { Progress } from './progress.js';
import { committedIndex, hasQuorum } from './quorum.js';
import type { AppendResponse, HeartbeatResponse, Message, NodeId, Snapshot } from './types.js';

/**
 * Heartbeats a leader sends after a snapshot before it sends the snapshot again, on the next
 * answer: answers travel in order behind the snapshot's own, so an answer that comes after
 * a few later heartbeats, with none to the snapshot, means that it or its answer was lost.
 * Each retry waits twice as long, up to 2^MAX_SNAPSHOT_BACKOFF times this, so a follower
 * that cannot take the snapshot (a newer format, say) is not flooded with it.
 */
export const SNAPSHOT_RETRY_HEARTBEATS = 3;
export const MAX_SNAPSHOT_BACKOFF = 4;

/** The bounds replication keeps to (see RaftConfig). */
export interface ReplicationLimits {
  readonly maxInflightMsgs: number;
  readonly maxInflightBytes: number;
  readonly maxBytesPerAppend: number;
  readonly maxEntriesPerAppend: number;
  readonly maxUncommittedBytes: number;
}

/** What replication reads of the node it works for, and how it reaches the rest of it. */
export interface ReplicationHost {
  readonly id: NodeId;
  readonly log: RaftLog;
  term(): number;
  /** Every member but this one, voters then learners. */
  peers(): readonly NodeId[];
  voters(): readonly NodeId[];
  /** The latest snapshot the node holds: what a follower behind the log is sent. */
  snapshot(): Snapshot;
  /** The member leadership is being handed to, if any. */
  transferee(): NodeId | null;
  send(m: Message): void;
  /** A member acknowledged the heartbeat round `seq` (see read-only.ts). */
  ackReads(peer: NodeId, seq: number): void;
  /** The commit index moved on. */
  committed(): void;
  /** A follower lost entries it had acknowledged (see `Progress.maybeForgetMatch`). */
  followerLogLost(): void;
}

/**
 * The leader's side of log replication (after etcd-io/raft's tracker/ and the leader's half of
 * raft.go): the progress of every member's log, appends sent within each follower's window,
 * snapshots to followers behind the log, heartbeats, the answers to them, the commit, and the
 * bytes appended but not yet committed. Empty unless the node leads.
 */
export class Replication {
  readonly #host: ReplicationHost;
  readonly #limits: ReplicationLimits;
  readonly #progress = new Map<NodeId, Progress>();
  /** Bytes of entry data appended by this leader and not yet committed. */
  #uncommittedBytes = 0;

  constructor(host: ReplicationHost, limits: ReplicationLimits) {
    this.#host = host;
    this.#limits = limits;
  }

  /** Forgets every member's progress: the node stopped leading, or starts to. */
  reset(): void {
    this.#progress.clear();
    this.#uncommittedBytes = 0;
  }

  /** Tracks a member's log from `next` on; counted active for the first election timeout. */
  track(peer: NodeId, next: number): void {
    const pr = new Progress(next, this.#limits.maxInflightMsgs, this.#limits.maxInflightBytes);
    pr.recentActive = true;
    this.#progress.set(peer, pr);
  }

  tracks(peer: NodeId): boolean {
    return this.#progress.has(peer);
  }

  /** The members tracked, this one included, and how far their logs match this leader's. */
  tracked(): [NodeId, number][] {
    return [...this.#progress].map(([peer, pr]) => [peer, pr.match]);
  }

  untrack(peer: NodeId): void {
    this.#progress.delete(peer);
  }

  /** How far `peer`'s log is known to match this leader's (0 if not tracked). */
  matchOf(peer: NodeId): number {
    return this.#progress.get(peer)?.match ?? 0;
  }

  /** This leader's view of a member's log, for inspection. */
  view(peer: NodeId): { match: number; next: number; state: string; recentActive: boolean } | undefined {
    const pr = this.#progress.get(peer);
    return pr === undefined ? undefined : { match: pr.match, next: pr.next, state: pr.state, recentActive: pr.recentActive };
  }

  /** The member was heard from at this leader's term. */
  heardFrom(peer: NodeId): void {
    const pr = this.#progress.get(peer);
    if (pr !== undefined) pr.recentActive = true;
  }

  /** This leader's own entries are durable up to `stable`: they count towards a majority from here on. */
  persisted(stable: number, startup = false): void {
    const pr = this.#progress.get(this.#host.id) as Progress;
    if (startup) pr.match = stable;
    else pr.maybeUpdate(stable);
  }

  /** Whether a proposal of `bytes` more fits under the bound on uncommitted bytes. */
  admits(bytes: number): boolean {
    return !(this.#uncommittedBytes > 0 && this.#uncommittedBytes + bytes > this.#limits.maxUncommittedBytes);
  }

  /** Counts `bytes` appended at this leader's term, uncommitted until the commit passes them. */
  appended(bytes: number): void {
    this.#uncommittedBytes += bytes;
  }

  /**
   * The lowest match of a live follower at `floor` or above, and at most `target`: how far a
   * leader compacts so that a follower a few entries behind still gets entries (see compactLog).
   */
  liveFloor(target: number, floor: number): number {
    for (const peer of this.#host.peers()) {
      const pr = this.#progress.get(peer);
      if (pr !== undefined && pr.recentActive && pr.match >= floor) target = Math.min(target, pr.match);
    }
    return target;
  }

  /**
   * Tells followers a commit index they have not been sent yet. Done once a tick, and when the
   * driver asks, a turn after the commit moved (RaftNode.propagateCommit), not on every commit:
   * under load the next append carries it anyway, and a message per commit per follower would
   * double the traffic of the commit path.
   */
  propagateCommit(): void {
    for (const peer of this.#host.peers()) if (this.#commitToTell(peer)) this.sendAppend(peer, true);
  }

  /**
   * Whether a follower holds entries past the commit index it was last sent, the commit moved
   * past that too, and an append may go to it now: one paused gets the commit with the next
   * append it is sent once it answers, and one whose next entries are compacted away gets a
   * snapshot instead. Once told, none is left (the driver asks again only then).
   */
  hasCommitToTell(): boolean {
    for (const peer of this.#host.peers()) if (this.#commitToTell(peer)) return true;
    return false;
  }

  #commitToTell(peer: NodeId): boolean {
    const pr = this.#progress.get(peer) as Progress;
    const log = this.#host.log;
    return pr.sentCommit < log.committed && pr.match > pr.sentCommit && !pr.isPaused() && log.term(pr.next - 1) !== undefined;
  }

  /** Whether a majority of the voters (learners do not count) was heard from since the last check. */
  quorumActive(): boolean {
    const active = new Set<NodeId>();
    for (const [peer, pr] of this.#progress) {
      if (peer === this.#host.id || pr.recentActive) active.add(peer);
      if (peer !== this.#host.id) pr.recentActive = false;
    }
    return hasQuorum(this.#host.voters(), active);
  }

  /** The live voter whose log is furthest along, other than this one. */
  bestTransferTarget(): NodeId | null {
    let best: NodeId | null = null;
    let bestMatch = -1;
    for (const peer of this.#host.voters()) {
      if (peer === this.#host.id) continue;
      const pr = this.#progress.get(peer) as Progress;
      if (pr.recentActive && pr.match > bestMatch) {
        best = peer;
        bestMatch = pr.match;
      }
    }
    return best;
  }

  /**
   * Sends each follower the next append its window allows. `all`: as many as its window allows
   * and the new entries fill (each within maxBytesPerAppend), for entries appended by several
   * batches at once, which appended one by one had one append each.
   */
  broadcastAppend(all = false): void {
    for (const peer of this.#host.peers()) {
      // Each append sent in the replicate state moves `next` on, so this ends when the entries
      // or the window do; in any other state one append pauses the follower.
      while (this.sendAppend(peer) && all && this.#progress.get(peer)?.state === 'replicate');
    }
  }

  /** Sends the next append to `to` if its window allows. Returns whether it sent one. */
  sendAppend(to: NodeId, allowEmpty = false): boolean {
    const log = this.#host.log;
    const pr = this.#progress.get(to);
    if (pr === undefined || pr.isPaused()) return false;
    const prevIndex = pr.next - 1;
    const prevTerm = log.term(prevIndex);
    // The entries it needs next are compacted away: it gets the state instead.
    if (prevTerm === undefined) return this.#sendSnapshot(to, pr);
    const entries = log.slice(pr.next, log.lastIndex() + 1, this.#limits.maxBytesPerAppend, this.#limits.maxEntriesPerAppend);
    if (entries.length === 0 && !allowEmpty && pr.state === 'replicate') return false;
    this.#host.send({ type: 'append', from: this.#host.id, to, term: this.#host.term(), prevIndex, prevTerm, entries, commit: log.committed });
    pr.sentCommit = log.committed;
    const last = entries.at(-1);
    if (pr.state === 'replicate' && last !== undefined) {
      let bytes = 0;
      for (const e of entries) bytes += e.data.byteLength;
      pr.next = last.index + 1;
      pr.inflights.add(last.index, bytes);
    } else if (pr.state === 'probe') {
      pr.probeSent = true;
    }
    return true;
  }

  #sendSnapshot(to: NodeId, pr: Progress): boolean {
    // A peer not heard from lately is probably down: the state can be large, so it goes once
    // the peer answers a heartbeat again.
    if (!pr.recentActive) return false;
    const snapshot = this.#host.snapshot();
    const compacted = this.#host.log.snapshot().index;
    if (snapshot.index < compacted) throw new InvariantError(`the log is compacted to ${compacted}, past the snapshot at ${snapshot.index}`);
    this.#host.send({ type: 'snapshot', from: this.#host.id, to, term: this.#host.term(), snapshot });
    pr.becomeSnapshot(snapshot.index);
    return true;
  }

  /** `periodic`: the heartbeat of a tick, not of a read round (only those time a snapshot's retry). */
  broadcastHeartbeat(readSeq: number, periodic = false): void {
    for (const peer of this.#host.peers()) {
      const pr = this.#progress.get(peer) as Progress;
      if (periodic && pr.state === 'snapshot') pr.snapshotWait++;
      // Never tell a follower to commit past what it is known to hold.
      const commit = Math.min(pr.match, this.#host.log.committed);
      this.#host.send({ type: 'heartbeat', from: this.#host.id, to: peer, term: this.#host.term(), commit, readCtx: readSeq });
    }
  }

  handleAppendResponse(m: AppendResponse): void {
    const log = this.#host.log;
    const pr = this.#progress.get(m.from);
    if (pr === undefined) return;
    if (m.reject) {
      let probeAt = m.hintIndex;
      if (m.hintTerm > 0) probeAt = log.findConflictByTerm(m.hintIndex, m.hintTerm);
      // etcd assumes durable followers: its follower panics at a heartbeat's commit index beyond
      // its log. Ours says so, and is replicated to again from where its log ends.
      if (pr.maybeForgetMatch(m.index, m.hintIndex, probeAt)) {
        this.#host.followerLogLost();
        this.sendAppend(m.from, true);
        return;
      }
      if (pr.maybeDecrTo(m.index, probeAt)) {
        if (pr.state === 'replicate') pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      return;
    }
    const wasPaused = pr.isPaused();
    const updated = pr.maybeUpdate(m.index);
    if (pr.state === 'snapshot') {
      // The answer to the snapshot (or to an append that got as far): replicate from there.
      if (pr.match < pr.pendingSnapshot) return;
      pr.snapshotRetries = 0;
      pr.becomeReplicate();
    } else if (!updated) {
      if (wasPaused && !pr.isPaused()) this.sendAppend(m.from);
      return;
    } else if (pr.state === 'probe') pr.becomeReplicate();
    else pr.inflights.freeLE(m.index);
    this.maybeCommit();
    // Keep the pipeline full: more entries may be waiting behind the window.
    this.sendAppend(m.from);
    if (m.from === this.#host.transferee() && pr.match === log.lastIndex()) {
      this.#host.send({ type: 'timeout-now', from: this.#host.id, to: m.from, term: this.#host.term() });
    }
  }

  handleHeartbeatResponse(m: HeartbeatResponse): void {
    const pr = this.#progress.get(m.from);
    if (pr === undefined) return;
    pr.probeSent = false;
    if (pr.state === 'snapshot') {
      if (pr.snapshotWait >= SNAPSHOT_RETRY_HEARTBEATS * 2 ** Math.min(pr.snapshotRetries, MAX_SNAPSHOT_BACKOFF)) {
        pr.snapshotRetries++;
        pr.becomeProbe();
        this.sendAppend(m.from, true);
      }
      if (m.readCtx > 0) this.#host.ackReads(m.from, m.readCtx);
      return;
    }
    // A window full of appends that were lost would otherwise never drain (etcd does the same).
    if (pr.state === 'replicate' && pr.inflights.full()) pr.inflights.freeFirst();
    // Sent even when nothing new is queued: if appends in the pipeline were lost, the follower
    // rejects this one (its log has a gap) and the progress falls back to probing from its match.
    if (pr.match < this.#host.log.lastIndex()) this.sendAppend(m.from, true);
    if (m.readCtx > 0) this.#host.ackReads(m.from, m.readCtx);
  }

  /** Commits the highest index a majority holds, if it is of this leader's term (paper, 5.4.2). */
  maybeCommit(): boolean {
    const log = this.#host.log;
    const term = this.#host.term();
    const index = committedIndex(this.#host.voters(), (id) => this.#progress.get(id)?.match ?? 0);
    if (index <= log.committed || log.term(index) !== term) return false;
    const before = log.committed;
    log.commitTo(index);
    // Only entries of this term were counted when appended (earlier terms' were not ours).
    for (const e of log.slice(before + 1, index + 1)) if (e.term === term) this.#uncommittedBytes -= e.data.byteLength;
    if (this.#uncommittedBytes < 0) this.#uncommittedBytes = 0;
    this.#host.committed();
    return true;
  }
}
