import { BackpressureError, CronraftError, InvalidArgumentError, MembershipChangeRefusedError, NotLeaderError, OutcomeUnknownError, ProposalDroppedError, TimeoutError } from '../errors.js';
import type { ConfChange } from '../raft/conf-change.js';
import type { ConfChangeRefusal } from '../raft/membership.js';
import type { ProposeOutcome, RaftNode } from '../raft/node.js';
import type { ForwardResult, ReadState } from '../raft/ready.js';
import type { Entry, NodeId, ProposalData } from '../raft/types.js';
import type { Timers } from '../time/clock.js';
import { ReadContexts } from './read-contexts.js';

/** The timeout and bounds of the requests waiting on a member (part of DriverOptions). */
export interface RequestOptions {
  /** How long a proposal or read may wait before it fails with TimeoutError. */
  readonly requestTimeoutMs: number;
  /** Bound on proposals waiting to commit on this member; more fail with BackpressureError. */
  readonly maxPendingProposals: number;
  /** Bound on proposals handed to Raft in one batch (one disk write, one append). */
  readonly maxProposalBatch: number;
  /** Bound on the bytes of one batch (at least one proposal goes), so a forwarded batch fits in a frame. */
  readonly maxProposalBatchBytes: number;
  /** Bound on linearizable reads waiting on this member. */
  readonly maxPendingReads: number;
  /**
   * A follower that has not heard from its leader for this long, while its own loop ran, fails
   * proposals at once with NotLeaderError instead of forwarding them into silence (an election
   * follows soon anyway).
   */
  readonly leaderSilenceMs: number;
  /** A prefix that makes this process's proposal ids unique across restarts. */
  readonly bootId: string;
  /** Told how long each proposal made here took, from `propose()` to its entry applied here (the metrics' histogram). */
  readonly onProposalApplied?: (durationMs: number) => void;
}

export interface ProposalResult {
  readonly index: number;
  readonly result: unknown;
}

interface PendingProposal {
  readonly pid: string;
  readonly data: Uint8Array;
  readonly deadline: number;
  readonly resolve: (r: ProposalResult) => void;
  readonly reject: (e: Error) => void;
  /** Where Raft put the entry, once known; the entry applied there decides the outcome. */
  index: number;
  /** The leader it was forwarded to and has not answered yet, if any. */
  forwardedTo: NodeId | null;
  /** A change of the configuration, named for its refusal (`add-learner m4`); undefined for a command. */
  readonly what?: string;
  /** The term of this member's leading it was made for, to be appended in alone: never forwarded (see propose). */
  readonly leaderTerm?: number;
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface PendingRead {
  readonly deadline: number;
  readonly resolve: (index: number) => void;
  readonly reject: (e: Error) => void;
  /** 0 until the leader answers; then the index the state machine must reach. */
  index: number;
  /** When it was last asked of a leader (monotonic ms): a follower asks again when no answer comes (see expire). */
  askedAt: number;
}

/**
 * The proposals and linearizable reads waiting on a member, each bounded in number and in time:
 * queued and handed to Raft in batches (`submit`), placed at the index Raft gives them, and
 * settled by what the driver hands over from each Ready (entries applied, forwards answered,
 * read states, a snapshot installed, a change of leader), by their deadline, or by the member
 * stopping. The driver calls in; nothing here performs an effect but the node's own inputs
 * (`propose`, `readIndex`).
 */
export class PendingRequests {
  readonly #node: RaftNode;
  readonly #timers: Timers;
  readonly #o: RequestOptions;
  readonly #kick: () => void;
  #seq = 0;
  /** This process life's read contexts, apart from every other life's (read-contexts.ts). */
  readonly #readContexts: ReadContexts;
  /** Proposals not yet handed to Raft, batched by the next loop turn. */
  #queued: PendingProposal[] = [];
  /** Every proposal not yet settled, in order of arrival (= deadline order). */
  readonly #pending = new Map<string, PendingProposal>();
  /** Index → pid of proposals whose position is known. */
  readonly #byIndex = new Map<number, string>();
  /**
   * Index → pids of proposals placed there whose place a later proposal of this member took (a
   * new leader appended it at the same index): the entry the old leader appended may still
   * commit there, should a member that holds it lead again, so each is decided as the index
   * applies, not told dropped at once. Bounded by the proposals pending.
   */
  readonly #displaced = new Map<number, Set<string>>();
  readonly #reads = new Map<number, PendingRead>();
  /** Reads answered, waiting for the state machine to reach their index. */
  #readsWaitingApply: Array<{ ctx: number; index: number }> = [];

  /** `kick` runs the driver's loop soon: a proposal was queued, or a read asked of Raft. */
  constructor(node: RaftNode, timers: Timers, options: RequestOptions, kick: () => void) {
    this.#node = node;
    this.#timers = timers;
    this.#o = options;
    this.#kick = kick;
    this.#readContexts = new ReadContexts(options.bootId);
  }

  /** Proposals waiting to commit on this member (bounded by maxPendingProposals). */
  get proposals(): number {
    return this.#pending.size;
  }

  /**
   * Queues a proposal for the next loop turn, unless too many wait, `unreachable` says no
   * leader can take it, or `signal` is already aborted. With `leaderTerm`, it is the plan of
   * this member leading in that term (fan-out's leases, made with its own rate buckets and
   * leases in flight): it is appended only while this member still leads in that term, and
   * refused with NotLeaderError rather than forwarded to another leader, whose own plan it
   * would add to.
   */
  propose(data: Uint8Array, signal: AbortSignal | undefined, unreachable: () => NotLeaderError | null, leaderTerm?: number): Promise<ProposalResult> {
    if (this.#pending.size >= this.#o.maxPendingProposals) {
      return Promise.reject(new BackpressureError(`${this.#pending.size} proposals are already waiting (maxPendingProposals)`));
    }
    // Refused here rather than by the leader, which would refuse it as if it were not leading.
    if (data.byteLength > this.#node.maxEntryBytes) {
      return Promise.reject(new InvalidArgumentError('data', `${data.byteLength} bytes`, `an entry of at most ${this.#node.maxEntryBytes} bytes`));
    }
    const refused = unreachable();
    if (refused !== null) return Promise.reject(refused);
    if (signal?.aborted === true) return Promise.reject(abortError(signal));
    return new Promise<ProposalResult>((resolve, reject) => {
      const pid = `${this.#o.bootId}.${(++this.#seq).toString(36)}`;
      const p: PendingProposal = {
        pid,
        data,
        deadline: this.#timers.now() + this.#o.requestTimeoutMs,
        resolve,
        reject,
        index: 0,
        forwardedTo: null,
        signal,
        onAbort: undefined,
        ...(leaderTerm === undefined ? {} : { leaderTerm }),
      };
      if (signal !== undefined) {
        p.onAbort = (): void => this.#settle(p, abortError(signal));
        signal.addEventListener('abort', p.onAbort, { once: true });
      }
      this.#pending.set(pid, p);
      this.#queued.push(p);
      this.#kick();
    });
  }

  /**
   * Asks the node to append `change` now on the leader, or to forward it to the leader (a change
   * is never queued nor batched: one at a time), and settles like a proposal once its entry is
   * applied here. A refusal, here or by the leader, rejects with MembershipChangeRefusedError
   * naming `what` and the reason, or NotLeaderError / BackpressureError as a proposal's would.
   * `pidSuffix` marks the entry (a leave: see LEAVE_PID_SUFFIX).
   */
  proposeConfChange(change: ConfChange, what: string, pidSuffix = ''): Promise<ProposalResult> {
    if (this.#pending.size >= this.#o.maxPendingProposals) {
      return Promise.reject(new BackpressureError(`${this.#pending.size} proposals are already waiting (maxPendingProposals)`));
    }
    const pid = `${this.#o.bootId}.${(++this.#seq).toString(36)}${pidSuffix}`;
    const outcome = this.#node.proposeConfChange(change, pid);
    if (outcome.kind === 'refused') return Promise.reject(confChangeRefused(outcome.reason, outcome.leader, what));
    return new Promise<ProposalResult>((resolve, reject) => {
      const p: PendingProposal = { pid, data: new Uint8Array(0), deadline: this.#timers.now() + this.#o.requestTimeoutMs, resolve, reject, index: 0, forwardedTo: null, what, signal: undefined, onAbort: undefined };
      this.#pending.set(pid, p);
      if (outcome.kind === 'appended') this.#place(p, outcome.index);
      else p.forwardedTo = outcome.leader;
      this.#kick();
    });
  }

  /** Asks Raft for a read index, unless too many reads wait (see RaftDriver.readBarrier). */
  read(): Promise<number> {
    if (this.#reads.size >= this.#o.maxPendingReads) return Promise.reject(new BackpressureError('too many reads are waiting (maxPendingReads)'));
    const ctx = this.#readContexts.next();
    if (!this.#node.readIndex(ctx)) return Promise.reject(new NotLeaderError(null));
    return new Promise<number>((resolve, reject) => {
      const now = this.#timers.now();
      this.#reads.set(ctx, { deadline: now + this.#o.requestTimeoutMs, resolve, reject, index: 0, askedAt: now });
      this.#kick();
    });
  }

  /** Hands the queued proposals to Raft, in batches bounded in count and bytes. */
  submit(): void {
    while (this.#queued.length > 0) {
      let count = 0;
      let bytes = 0;
      while (count < this.#queued.length && count < this.#o.maxProposalBatch) {
        bytes += (this.#queued[count] as PendingProposal).data.byteLength;
        if (count > 0 && bytes > this.#o.maxProposalBatchBytes) break;
        count++;
      }
      const batch = this.#queued.splice(0, count).filter((p) => this.#pending.has(p.pid) && this.#stillLeading(p));
      if (batch.length === 0) continue;
      const outcome = this.#node.propose(batch.map((p): ProposalData => ({ pid: p.pid, data: p.data })));
      this.#onProposeOutcome(batch, outcome);
    }
  }

  /** Whether a proposal may go to the node: any but one made for a term this member no longer leads in, which is refused here. */
  #stillLeading(p: PendingProposal): boolean {
    if (p.leaderTerm === undefined || (this.#node.role === 'leader' && this.#node.term === p.leaderTerm)) return true;
    this.#settle(p, new NotLeaderError(this.#node.leader));
    return false;
  }

  /** Settles the proposal the entry applied at its index decides: with `result`, or dropped. */
  applied(entry: Entry, result: unknown): void {
    const displaced = this.#displaced.get(entry.index);
    if (displaced !== undefined) {
      this.#displaced.delete(entry.index);
      for (const pid of displaced) {
        const p = this.#pending.get(pid);
        if (p !== undefined) this.#settle(p, pid === entry.pid ? null : new ProposalDroppedError(), { index: entry.index, result });
      }
    }
    const waiting = this.#byIndex.get(entry.index);
    if (waiting !== undefined) {
      this.#byIndex.delete(entry.index);
      const p = this.#pending.get(waiting);
      if (p !== undefined) {
        if (waiting === entry.pid) this.#settle(p, null, { index: entry.index, result });
        else this.#settle(p, new ProposalDroppedError());
      }
    } else if (entry.pid !== '') {
      // Applied before we learned its position (a forward's answer was lost): still ours.
      const p = this.#pending.get(entry.pid);
      if (p !== undefined) this.#settle(p, null, { index: entry.index, result });
    }
  }

  /**
   * A leader's snapshot up to `index` replaced the state: proposals placed at indexes it covers
   * will never be applied here, so their outcome is unknown to this member (they may be in the
   * snapshot, or were replaced).
   */
  snapshotInstalled(index: number): void {
    const covered = [...this.#byIndex].filter(([placed]) => placed <= index).map(([, pid]) => pid);
    for (const [placed, pids] of this.#displaced) if (placed <= index) covered.push(...pids);
    for (const pid of covered) {
      const p = this.#pending.get(pid);
      if (p !== undefined) this.#settle(p, new OutcomeUnknownError('A snapshot from the leader replaced the log here before the proposal was applied; it may or may not have committed'));
    }
  }

  /** Places forwarded proposals a leader took, and fails those it refused. */
  forwardResults(results: readonly ForwardResult[]): void {
    // One error for the refusals that name the same leader, as for a batch the node refused: a
    // leader that stepped down refuses every proposal forwarded to it at once, and an error
    // each (its stack captured) held the loop for each of thousands.
    let refused: NotLeaderError | null = null;
    for (const r of results) {
      const p = this.#pending.get(r.pid);
      if (p === undefined) continue;
      if (r.accepted) this.#place(p, r.index);
      else if (p.what !== undefined && r.reason !== undefined) this.#settle(p, confChangeRefused(r.reason, r.leader, p.what));
      else {
        if (refused === null || refused.leader !== r.leader) refused = new NotLeaderError(r.leader);
        this.#settle(p, refused);
      }
    }
  }

  /** Takes the leader's answers to reads: each then waits for the state machine to reach its index. */
  readStates(states: readonly ReadState[]): void {
    for (const s of states) {
      const r = this.#reads.get(s.ctx);
      if (r === undefined) continue;
      if (s.index === 0) {
        this.#reads.delete(s.ctx);
        r.reject(new NotLeaderError(this.#node.leader === this.#node.id ? null : this.#node.leader, 'The read could not be confirmed by a leader'));
      } else {
        r.index = s.index;
        this.#readsWaitingApply.push({ ctx: s.ctx, index: s.index });
      }
    }
  }

  /** Resolves the answered reads whose index the state machine has reached. */
  releaseReads(): void {
    if (this.#readsWaitingApply.length === 0) return;
    const applied = this.#node.log.applying;
    this.#readsWaitingApply = this.#readsWaitingApply.filter(({ ctx, index }) => {
      if (index > applied) return true;
      const r = this.#reads.get(ctx);
      this.#reads.delete(ctx);
      r?.resolve(index);
      return false;
    });
  }

  /**
   * The leader changed to `leader`. A forwarded proposal whose leader changed before answering
   * would otherwise wait out its whole timeout (the old leader may be dead). Whether it commits
   * is unknown: the old leader may have appended it. Say so now, so callers with idempotent
   * commands can retry at once.
   */
  leaderChanged(leader: NodeId | null): void {
    for (const p of this.#pending.values()) {
      if (p.forwardedTo !== null && p.forwardedTo !== leader) this.#settle(p, new OutcomeUnknownError());
    }
  }

  /**
   * Fails requests whose deadline passed (pending proposals are in deadline order), and asks
   * again the reads a leader has not answered for `leaderSilenceMs`.
   */
  expire(now: number): void {
    for (const p of this.#pending.values()) {
      if (p.deadline > now) break;
      this.#settle(p, new TimeoutError('The proposal', this.#o.requestTimeoutMs));
    }
    for (const [ctx, r] of this.#reads) {
      if (r.deadline <= now) {
        this.#reads.delete(ctx);
        r.reject(new TimeoutError('The read barrier', this.#o.requestTimeoutMs));
        continue;
      }
      // A follower's request to the leader, or the answer, was lost (nothing else sends either
      // again), or the leader changed: without asking again, the read would wait out its whole
      // timeout after the network healed (etcd's server asks again every 500 ms). A late answer
      // to the first asking is one more for the same read, and changes nothing. A leader's own
      // reads need no second asking: its periodic heartbeats confirm them.
      if (r.index === 0 && now - r.askedAt >= this.#o.leaderSilenceMs && this.#node.role !== 'leader' && this.#node.readIndex(ctx)) r.askedAt = now;
    }
  }

  /** Fails every proposal still waiting. */
  failProposals(error: Error): void {
    for (const p of this.#pending.values()) this.#settle(p, error);
  }

  /** Fails every read still waiting. */
  failReads(error: Error): void {
    for (const [ctx, r] of this.#reads) {
      this.#reads.delete(ctx);
      r.reject(error);
    }
  }

  #onProposeOutcome(batch: readonly PendingProposal[], outcome: ProposeOutcome): void {
    if (outcome.kind === 'appended') {
      batch.forEach((p, i) => this.#place(p, outcome.index + i));
      return;
    }
    if (outcome.kind === 'forwarded') {
      for (const p of batch) p.forwardedTo = outcome.leader;
      return;
    }
    const error =
      outcome.reason === 'backpressure'
        ? new BackpressureError('Too many bytes are appended but not yet committed (maxUncommittedBytes)')
        : outcome.reason === 'transferring'
          ? new NotLeaderError(outcome.leader, `Leadership is being transferred to ${outcome.leader ?? 'another member'}`)
          : new NotLeaderError(outcome.leader);
    for (const p of batch) this.#settle(p, error);
  }

  #place(p: PendingProposal, index: number): void {
    // Its position is already applied here, yet it was not settled: a snapshot covered it, so
    // whether it is in the state is unknown here (the answer of a forward came after it).
    if (index <= this.#node.log.applied) {
      this.#settle(p, new OutcomeUnknownError('A snapshot from the leader covered the proposal before its position was known here; it may or may not have committed'));
      return;
    }
    p.index = index;
    p.forwardedTo = null;
    // If another proposal of ours held this index, a new leader put this one there instead: the
    // old one is decided as the index applies (it may yet commit there, see #displaced).
    const previous = this.#byIndex.get(index);
    if (previous !== undefined && previous !== p.pid && this.#pending.has(previous)) {
      const pids = this.#displaced.get(index) ?? new Set<string>();
      pids.add(previous);
      this.#displaced.set(index, pids);
    }
    this.#byIndex.set(index, p.pid);
  }

  #settle(p: PendingProposal, error: Error | null, value?: ProposalResult): void {
    if (!this.#pending.delete(p.pid)) return;
    if (p.index !== 0 && this.#byIndex.get(p.index) === p.pid) this.#byIndex.delete(p.index);
    const displaced = p.index === 0 ? undefined : this.#displaced.get(p.index);
    if (displaced?.delete(p.pid) === true && displaced.size === 0) this.#displaced.delete(p.index);
    if (p.onAbort !== undefined) p.signal?.removeEventListener('abort', p.onAbort);
    if (error !== null) {
      p.reject(error);
      return;
    }
    // The deadline is the proposal's start plus the timeout: its start needs no field of its own.
    this.#o.onProposalApplied?.(this.#timers.now() - (p.deadline - this.#o.requestTimeoutMs));
    p.resolve(value as ProposalResult);
  }
}

/** The error a refused change of the configuration rejects with. */
function confChangeRefused(reason: ConfChangeRefusal, leader: NodeId | null, what: string): Error {
  if (reason === 'backpressure') return new BackpressureError('Too many bytes are appended but not yet committed (maxUncommittedBytes)');
  if (reason === 'not-leader' || reason === 'transferring') return new NotLeaderError(leader);
  return new MembershipChangeRefusedError(reason, what);
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new CronraftError('CRONRAFT_ABORTED', 'The operation was aborted');
}
