import {
  BackpressureError,
  CronraftError,
  NotLeaderError,
  NotRunningError,
  OutcomeUnknownError,
  ProposalDroppedError,
  TimeoutError,
} from '../errors.js';
import { InvariantError } from '../raft/invariant.js';
import type { ProposeOutcome, RaftNode } from '../raft/node.js';
import type { ForwardResult, Ready, ReadState, SoftState } from '../raft/ready.js';
import { EntryType, type Entry, type HardState, type Message, type NodeId, type ProposalData, type Snapshot } from '../raft/types.js';
import type { LogStorage } from '../storage/log-storage.js';
import type { Clock, TimerHandle, Timers } from '../time/clock.js';
import { SnapshotAssembler, splitSnapshot } from './snapshot-chunks.js';
import type { Transport } from '../transport/transport.js';
import { ClockSync, type ClockOffset } from './clock-sync.js';

/** The replicated application: `apply` runs in log order on every member and must be deterministic. */
export interface StateMachine {
  apply(entry: Entry): unknown;
  /** The state as applied so far, encoded: the data of a snapshot at the last applied index. */
  snapshot(): Uint8Array;
  /**
   * Replaces the whole state with a snapshot's: the stored one at start, or a leader's that
   * this member installs. Only given data that `acceptsSnapshot` accepted.
   */
  restore(data: Uint8Array): void;
  /**
   * Whether `restore` can take `data`. A leader's snapshot is checked before the protocol takes
   * it in: a corrupt or hostile one is dropped and counted like any malformed message, and the
   * log and state stay as they were.
   */
  acceptsSnapshot(data: Uint8Array): boolean;
  /**
   * Optional: begins a snapshot of the state as applied so far, to be taken in steps with other
   * work between them (entries go on being applied). The driver uses it, when present, for its
   * compactions, so that a large state does not hold the event loop for the whole encoding.
   * A `restore` abandons a snapshot in progress.
   */
  snapshotInSteps?(): SnapshotSteps;
}

/** A snapshot being taken in steps (see StateMachine.snapshotInSteps). */
export interface SnapshotSteps {
  /** Does a bounded part of the work: the data once the snapshot is complete, else null. */
  step(): Uint8Array | null;
}

/** How long the last snapshot this member took of its own state held its event loop. */
export interface SnapshotTiming {
  /** Every step together, in ms. */
  readonly loopMs: number;
  /** The longest step, in ms: the longest the loop stood still for it at once. */
  readonly longestStepMs: number;
  readonly steps: number;
}

/** What only a leader sends, to its followers: what renews a follower's lease. */
const LEADER_TRAFFIC: ReadonlySet<Message['type']> = new Set(['append', 'heartbeat', 'snapshot']);

/**
 * When a member compacts its log: once this many entries were applied since its last snapshot,
 * it takes a new one and drops the log behind it, keeping `retainEntries` so that a follower a
 * little behind still gets entries rather than the whole state. Together they bound the log
 * kept in memory and on disk.
 */
export interface CompactionOptions {
  readonly everyEntries: number;
  readonly retainEntries: number;
}

export const COMPACTION_DEFAULTS: CompactionOptions = {
  everyEntries: 10_000,
  retainEntries: 1_000,
};

export interface DriverOptions {
  readonly node: RaftNode;
  readonly storage: LogStorage;
  readonly transport: Transport;
  readonly stateMachine: StateMachine;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly tickMs: number;
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
  /** @default COMPACTION_DEFAULTS */
  readonly compaction?: CompactionOptions;
  /** Bytes of snapshot data per message. @default SNAPSHOT_CHUNK_BYTES */
  readonly snapshotChunkBytes?: number;
  readonly onSoftState?: (state: SoftState) => void;
  /**
   * Called with each message from a peer before it counts as contact (`lastHeard`), so that
   * a silence the message ends can still be seen (the member's lease, member.ts).
   */
  readonly beforeContact?: () => void;
  readonly onApplied?: (entry: Entry) => void;
  /** A leader's snapshot replaced the state: entries up to `index` will not be applied one by one. */
  readonly onSnapshotInstalled?: (index: number) => void;
  /** A fatal error (storage failed): the member stops taking part and reports it. */
  readonly onFatal?: (error: unknown) => void;
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
  signal: AbortSignal | undefined;
  onAbort: (() => void) | undefined;
}

interface PendingRead {
  readonly deadline: number;
  readonly resolve: (index: number) => void;
  readonly reject: (e: Error) => void;
  /** 0 until the leader answers; then the index the state machine must reach. */
  index: number;
  /** When it was last asked of a leader (monotonic ms): a follower asks again when no answer comes (see #expire). */
  askedAt: number;
}

/**
 * The one place that orders a member's effects. It takes each Ready from the Raft node, in
 * sequence, and:
 *
 * 1. **Persists** its hard state and entries: one atomic, synced write, started at once.
 *    Writes are queued and complete in order (the storage merges queued writes, so one fsync
 *    can carry several Readies: group commit).
 * 2. **Sends** its messages only once that write and every earlier one are durable. A vote, an
 *    append acknowledgement or any message at a new term promises durable state; if it left
 *    before the write and the process died, the member could vote twice in a term, or a leader
 *    could count an entry that is gone. The one exception: a leader's appends and heartbeats
 *    promise nothing about the leader's own disk (it counts its own copy only once durable, in
 *    `advancePersisted`), so they leave at once, overlapping the leader's fsync with the
 *    followers' (the Raft paper, section 10.2.1), unless the Ready changes term or vote.
 * 3. **Applies** its committed entries in log order, at once: committed means durable on a
 *    majority, so applying does not wait for this member's own write (etcd's server applies
 *    concurrently with its write in the same way). Then it resolves the proposals and reads
 *    that waited on them: a caller learns of success only once its entry is applied here.
 * 4. **Advances** the node: applied at once, persisted when the write completes.
 *
 * A snapshot follows the same order. One installed from the leader is written with the Ready
 * (it replaces the stored log), the answer that acknowledges it leaves once that write is
 * durable, and the state machine is restored from it before the entries after it are applied.
 * One this member takes of its own state (compaction) is written after every earlier write,
 * so that a crash leaves either the entries or the snapshot that stands for them.
 *
 * Heartbeats and their responses carry clock stamps, added as they leave and read once the
 * protocol has stepped them (`clock-sync.ts`): that is how members learn the cluster's time.
 *
 * Nothing else in the code base calls `storage.save`, `transport.send` or `stateMachine.apply`.
 */
export class RaftDriver {
  readonly #o: DriverOptions;
  readonly #node: RaftNode;
  #running = false;
  #looping = false;
  #loopAgain = false;
  #stopped = false;
  #tickHandle: TimerHandle | null = null;
  #seq = 0;
  #readSeq = 0;
  /** Proposals not yet handed to Raft, batched by the next loop turn. */
  #queued: PendingProposal[] = [];
  /** Every proposal not yet settled, in order of arrival (= deadline order). */
  #pending = new Map<string, PendingProposal>();
  /** Index → pid of proposals whose position is known. */
  #byIndex = new Map<number, string>();
  #reads = new Map<number, PendingRead>();
  /** Reads answered, waiting for the state machine to reach their index. */
  #readsWaitingApply: Array<{ ctx: number; index: number }> = [];
  #lastHeard = new Map<NodeId, number>();
  /** Ticks run so far, and the tick count when each peer was last heard from (see #unreachableLeader). */
  #ticks = 0;
  readonly #heardAtTick = new Map<NodeId, number>();
  /** When this member last took in a message from the leader it then followed (monotonic ms). */
  #leaderContact: number | undefined;
  /** Writes started and not yet durable. */
  #savesInFlight = 0;
  /** Compactions queued behind the writes, not yet done (see #maybeCompact). */
  #compactionsInFlight = 0;
  /** The last write started; it completes after every earlier one. */
  #lastSave: Promise<void> = Promise.resolve();
  /** The term and vote last made durable: a Ready that changes them sends nothing before its write. */
  #durableTerm: number;
  #durableVote: NodeId | null;
  /** The hard state of the last write started (durable or not). */
  #savedTerm: number;
  #savedVote: NodeId | null;
  #savedCommit: number;
  /** The node's latest hard state, written or not. */
  #hardState: HardState;
  #fatal: unknown = null;
  /** Snapshots this member took of its own state (compactions), and installed from a leader. */
  snapshotsTaken = 0;
  snapshotsInstalled = 0;
  /** How long the last snapshot taken here held the event loop; null before the first. */
  lastSnapshot: SnapshotTiming | null = null;
  /** A snapshot taken in steps and complete, for the loop to compact to once it has handled every Ready. */
  #snapshotTaken: Snapshot | null = null;
  /** The snapshot being taken in steps for a compaction, if any (see #maybeCompact). */
  #snapshotting: { readonly index: number; readonly term: number; readonly steps: SnapshotSteps; timer: TimerHandle | null; loopMs: number; longestStepMs: number; count: number } | null = null;
  /** Snapshots from a leader that the state machine could not read: dropped (see acceptsSnapshot). */
  invalidSnapshots = 0;
  readonly #snapshotChunks = new SnapshotAssembler();
  /** Clock offsets and the cluster's time, from stamps on heartbeats (see clock-sync.ts). */
  readonly #clockSync: ClockSync;
  readonly #clusterClock: Clock;
  /**
   * Messages that threw inside the protocol other than on a broken invariant (only a faulty
   * peer sends them; see #receive).
   */
  invalidMessages = 0;
  /** Messages the transport refused to encode. */
  unsendableMessages = 0;

  constructor(options: DriverOptions) {
    this.#o = options;
    this.#node = options.node;
    this.#durableTerm = options.node.term;
    this.#durableVote = options.node.vote;
    this.#savedTerm = options.node.term;
    this.#savedVote = options.node.vote;
    this.#hardState = options.node.hardState();
    this.#savedCommit = this.#hardState.commit;
    this.#clockSync = new ClockSync({ self: options.node.id, voters: options.node.voters });
    this.#clusterClock = { now: () => this.#clockSync.clusterTime(this.#o.timers.now(), this.#o.clock.now()) };
    options.transport.onMessage((m) => this.#receive(m));
  }

  get node(): RaftNode {
    return this.#node;
  }

  get fatalError(): unknown {
    return this.#fatal;
  }

  start(): void {
    if (this.#running) return;
    // The stored snapshot stands for every entry up to it: the state starts from it, and the
    // entries after it are applied as they commit.
    const stored = this.#node.latestSnapshot;
    if (stored.index > 0) this.#o.stateMachine.restore(stored.data);
    this.#running = true;
    this.#scheduleTick();
    this.#kick();
  }

  /** Stops ticking and fails everything still waiting. Storage and transport are closed by the owner. */
  stop(): void {
    this.#running = false;
    this.#stopped = true;
    if (this.#tickHandle !== null) this.#o.timers.clearTimeout(this.#tickHandle);
    this.#tickHandle = null;
    this.#abandonSnapshot();
    const error = new NotRunningError('stopped');
    for (const p of this.#pending.values()) this.#settle(p, error);
    for (const [ctx, r] of this.#reads) {
      this.#reads.delete(ctx);
      r.reject(error);
    }
  }

  /** Why a proposal cannot even be forwarded now, or null if it can. */
  #unreachableLeader(): NotLeaderError | null {
    const leader = this.#node.leader;
    if (this.#node.role === 'leader') return null;
    if (leader === null) return new NotLeaderError(null);
    const heard = this.#lastHeard.get(leader);
    // Silence counts while this member's loop ran, in ticks as Raft counts its election timeout:
    // a member whose own loop stood still (a long synchronous start of the app, a stall) took in
    // nothing meanwhile, and the leader's messages may be waiting on its socket. The ticks due
    // in such a stall fire as one.
    const ticksSince = this.#ticks - (this.#heardAtTick.get(leader) ?? 0);
    if (heard === undefined || (this.#o.timers.now() - heard > this.#o.leaderSilenceMs && ticksSince * this.#o.tickMs > this.#o.leaderSilenceMs)) {
      return new NotLeaderError(leader, `The leader ${leader} has not been heard from for over ${this.#o.leaderSilenceMs} ms`);
    }
    return null;
  }

  /**
   * When this member last took in a message from the leader it then followed, on the timers'
   * monotonic time base, or undefined if it never did.
   */
  leaderContact(): number | undefined {
    return this.#leaderContact;
  }

  /** When this member last heard from `peer`, on the timers' monotonic time base (`timers.now()`), or undefined. */
  lastHeard(peer: NodeId): number | undefined {
    return this.#lastHeard.get(peer);
  }

  // ---- the cluster's time --------------------------------------------------------------------

  /**
   * The cluster's time: this member's monotonic clock (`timers.now()`) corrected by its
   * estimated offset from the median of the members' wall clocks (see clock-sync.ts), so a step
   * of this member's wall clock does not move it. Until synced (`clockSynced`), the local wall
   * clock itself; once synced, the last correction is held over while no leader refreshes it.
   */
  clusterClock(): Clock {
    return this.#clusterClock;
  }

  /** Whether this member has learned the cluster's time. Once true, it stays true (held over). */
  get clockSynced(): boolean {
    return this.#clockSync.synced;
  }

  /**
   * Each member's wall clock minus the cluster's time, with the round trip it was measured over
   * and its age. The leader knows itself and every member it has a fresh estimate of; a
   * follower knows itself (its current wall clock against its held correction, so a step of
   * its wall clock shows at once). Empty until synced.
   */
  clockOffsets(): ReadonlyMap<NodeId, ClockOffset> {
    return this.#clockSync.offsets(this.#o.timers.now(), this.#o.clock.now());
  }

  /** Proposals waiting to commit on this member (bounded by maxPendingProposals). */
  get pendingProposals(): number {
    return this.#pending.size;
  }

  /**
   * Writes started and not yet done: of Readies, and of compactions (which wait behind them).
   * Until they are done, the log on disk may hold more than compaction leaves there.
   */
  get writesInFlight(): number {
    return this.#savesInFlight + this.#compactionsInFlight;
  }

  /** Clock stamps from peers dropped as malformed, out of bounds or inconsistent. */
  get invalidClockStamps(): number {
    return this.#clockSync.invalidStamps;
  }

  /** Chunks of snapshots dropped as no honest leader sends them (see SnapshotAssembler.invalid). */
  get invalidSnapshotChunks(): number {
    return this.#snapshotChunks.invalid;
  }

  // ---- requests ----------------------------------------------------------------------------

  /**
   * Replicates `data` and resolves once it is committed and applied on this member, with the
   * state machine's result. Rejects with NotLeaderError when no leader is known or reachable,
   * ProposalDroppedError when a new leader replaced the entry, TimeoutError after the request
   * timeout (the entry may still commit later), BackpressureError when too much is waiting.
   */
  propose(data: Uint8Array, signal?: AbortSignal): Promise<ProposalResult> {
    if (this.#fatal !== null) return Promise.reject(this.#fatalError());
    if (!this.#running) return Promise.reject(new NotRunningError(this.#stopped ? 'stopped' : 'not started'));
    if (this.#pending.size >= this.#o.maxPendingProposals) {
      return Promise.reject(new BackpressureError(`${this.#pending.size} proposals are already waiting (maxPendingProposals)`));
    }
    const unreachable = this.#unreachableLeader();
    if (unreachable !== null) return Promise.reject(unreachable);
    if (signal?.aborted === true) return Promise.reject(abortError(signal));
    return new Promise<ProposalResult>((resolve, reject) => {
      const pid = `${this.#o.bootId}.${(++this.#seq).toString(36)}`;
      const p: PendingProposal = {
        pid,
        data,
        deadline: this.#o.timers.now() + this.#o.requestTimeoutMs,
        resolve,
        reject,
        index: 0,
        forwardedTo: null,
        signal,
        onAbort: undefined,
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
   * A linearizable read barrier: resolves with an index once this member has applied every
   * entry committed before the call, as confirmed by a quorum (Raft's ReadIndex).
   */
  readBarrier(): Promise<number> {
    if (this.#fatal !== null) return Promise.reject(this.#fatalError());
    if (!this.#running) return Promise.reject(new NotRunningError(this.#stopped ? 'stopped' : 'not started'));
    if (this.#reads.size >= this.#o.maxPendingReads) return Promise.reject(new BackpressureError('too many reads are waiting (maxPendingReads)'));
    const ctx = ++this.#readSeq;
    if (!this.#node.readIndex(ctx)) return Promise.reject(new NotLeaderError(null));
    return new Promise<number>((resolve, reject) => {
      const now = this.#o.timers.now();
      this.#reads.set(ctx, { deadline: now + this.#o.requestTimeoutMs, resolve, reject, index: 0, askedAt: now });
      this.#kick();
    });
  }

  /** The transport lost its connection to `peer`: if it leads, the node may campaign early. */
  peerDisconnected(peer: NodeId): void {
    if (!this.#running || peer !== this.#node.leader) return;
    this.#node.leaderConnectionLost();
    this.#kick();
  }

  /** Asks Raft to hand leadership to the most up-to-date follower. Returns the target, or null. */
  transferLeadership(): NodeId | null {
    const target = this.#node.transferLeadership();
    this.#kick();
    return target;
  }

  // ---- inputs ------------------------------------------------------------------------------

  #receive(m: Message): void {
    if (!this.#running) return;
    // Silences are durations: measured on the monotonic time base. Clock stamps are timed on it
    // too; the wall clock only votes for the cluster's time.
    const mono = this.#o.timers.now();
    this.#o.beforeContact?.();
    this.#lastHeard.set(m.from, mono);
    this.#heardAtTick.set(m.from, this.#ticks);
    const wall = this.#o.clock.now();
    if (m.type === 'snapshot') {
      // A large snapshot comes in chunks: the protocol sees it once whole, and only if the
      // state machine can read it.
      const whole = this.#snapshotChunks.add(m, mono);
      if (whole === null) return;
      if (!this.#o.stateMachine.acceptsSnapshot(whole.snapshot.data)) {
        this.invalidSnapshots++;
        return;
      }
      m = whole;
    }
    try {
      this.#node.step(m);
      // After the step, so that only the stamps of the leader the protocol follows count, and
      // only what that leader sends as leader renews the contact the lease counts from: a
      // deposed leader asking for votes keeps no member's lease alive.
      this.#clockSync.receive(m, mono, wall, this.#node.leader);
      if (this.#node.leader === m.from && m.term === this.#node.term && LEADER_TRAFFIC.has(m.type)) this.#leaderContact = mono;
    } catch (error) {
      // A broken invariant is this member's own fault, whatever message led to it: its state
      // can no longer be trusted, so it stops (see InvariantError).
      if (error instanceof InvariantError) {
        this.#fail(error);
        return;
      }
      // Anything else is a message the protocol could not take, which the codec should have
      // refused: only a faulty peer sends one. Count it and carry on: one peer must not crash
      // a member.
      this.invalidMessages++;
    }
    this.#kick();
  }

  #scheduleTick(): void {
    this.#tickHandle = this.#o.timers.setTimeout(() => {
      if (!this.#running) return;
      this.#ticks++;
      try {
        this.#node.tick();
      } catch (error) {
        // A broken invariant (nothing else throws here): the member stops, as from the loop.
        this.#fail(error);
        return;
      }
      this.#expire();
      this.#kick();
      this.#scheduleTick();
    }, this.#o.tickMs);
  }

  /**
   * Fails requests whose deadline passed (pending proposals are in deadline order), and asks
   * again the reads a leader has not answered for `leaderSilenceMs`.
   */
  #expire(): void {
    const now = this.#o.timers.now();
    this.#snapshotChunks.expire(now);
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

  // ---- the loop ----------------------------------------------------------------------------

  /** Runs the loop soon; calls while it is scheduled are absorbed by that run. */
  #kick(): void {
    if (this.#looping) {
      this.#loopAgain = true;
      return;
    }
    this.#looping = true;
    // A microtask, not a timer: callers in the same turn are batched, with no added delay.
    queueMicrotask(() => this.#loop());
  }

  #loop(): void {
    try {
      do {
        this.#loopAgain = false;
        if (!this.#running) break;
        this.#submitQueued();
        while (this.#running && this.#node.hasReady()) {
          this.#handleReady(this.#node.ready());
          this.#submitQueued();
        }
        this.#compactTaken();
      } while (this.#loopAgain);
    } catch (error) {
      this.#fail(error);
    } finally {
      this.#looping = false;
    }
  }

  #handleReady(rd: Ready): void {
    if (rd.hardState !== null) this.#hardState = rd.hardState;
    const hs = this.#hardState;
    const voteChanged = hs.term !== this.#savedTerm || hs.vote !== this.#savedVote;
    // A change of the commit index alone is not written: no message promises it, and a member
    // that restarts with an older one re-learns it from the leader. It rides along with the
    // next write of entries instead, which halves the fsyncs on the commit path.
    const persist = voteChanged || rd.entries.length > 0 || rd.snapshot !== null;
    // 2. Send, decided first: all at once if nothing is written; a leader's replication at once
    // if its term and vote are durable; everything else once every write so far is durable.
    // What may go at once is handed to the transport before this Ready's own write is built, so
    // that storage usually reuses the bytes its entries were encoded to for the wire (when an
    // append carries exactly them: entry-records.ts); the leader counts its own copy only once
    // durable.
    const termDurable = this.#node.term === this.#durableTerm && this.#node.vote === this.#durableVote;
    let later: readonly Message[] = [];
    let flushAfterWrite = false;
    if (!persist && this.#savesInFlight === 0) {
      for (const m of rd.messages) this.#send(m);
    } else if (termDurable && this.#node.role === 'leader') {
      for (const m of rd.messages) if (isLeaderReplication(m)) this.#send(m);
      later = rd.messages.filter((m) => !isLeaderReplication(m));
      flushAfterWrite = persist && later.length < rd.messages.length;
    } else {
      later = rd.messages;
    }
    // 1. Persist: the write starts now, right after what could leave first (see the class
    // comment for what waits on it).
    if (persist) {
      this.#savesInFlight++;
      // An installed snapshot moves the commit point to it at least: it is written with it.
      const hardState = voteChanged || hs.commit !== this.#savedCommit || rd.snapshot !== null ? hs : undefined;
      if (hardState !== undefined) {
        this.#savedTerm = hardState.term;
        this.#savedVote = hardState.vote;
        this.#savedCommit = hardState.commit;
      }
      const batch = { entries: rd.entries, ...(hardState === undefined ? {} : { hardState }), ...(rd.snapshot === null ? {} : { snapshot: rd.snapshot }) };
      this.#lastSave = this.#o.storage.save(batch).then(() => {
        this.#savesInFlight--;
        if (hardState !== undefined) {
          this.#durableTerm = hardState.term;
          this.#durableVote = hardState.vote;
        }
      });
    }
    // The transport would write the appends at the end of this turn; handing them over now
    // starts the followers' writes sooner. It comes after the write above has started (its disk
    // work runs on libuv's pool), because a socket write on loopback also runs the receiver's
    // TCP processing on this thread: measured 0.23 ms (p50) to flush a one-entry append to two
    // followers, by which the leader's own fsync started later when the flush came first (serial
    // commit p50 1.17 ms against 1.05 ms with this order, in alternating windows of one run).
    if (flushAfterWrite) this.#o.transport.flush();
    if (persist || later.length > 0) {
      this.#lastSave.then(
        () => {
          if (!this.#running) return;
          for (const m of later) this.#send(m);
          if (persist) this.#node.advancePersisted(rd);
          this.#kick();
        },
        (error: unknown) => this.#fail(error),
      );
    }
    // 3. Apply, in log order: from the installed snapshot, then the entries after it.
    if (rd.snapshot !== null) {
      // The leader's snapshot is newer than the one in progress here, which it abandons.
      this.#abandonSnapshot();
      this.#o.stateMachine.restore(rd.snapshot.data);
      this.snapshotsInstalled++;
      this.#o.onSnapshotInstalled?.(rd.snapshot.index);
      // Proposals placed at indexes the snapshot covers will never be applied here: their
      // outcome is unknown to this member (they may be in the snapshot, or were replaced).
      for (const [index, pid] of this.#byIndex) {
        if (index > rd.snapshot.index) continue;
        const p = this.#pending.get(pid);
        if (p !== undefined) this.#settle(p, new OutcomeUnknownError('A snapshot from the leader replaced the log here before the proposal was applied; it may or may not have committed'));
      }
    }
    for (const entry of rd.committed) this.#apply(entry);
    this.#handleForwardResults(rd.forwardResults);
    this.#handleReadStates(rd.readStates);
    this.#releaseReads();
    if (rd.softState !== null) this.#onSoftState(rd.softState);
    // 4. Advance what is done now; persistence is acknowledged when the write completes.
    this.#node.advanceApplied(rd);
    this.#maybeCompact();
  }

  /**
   * Takes a snapshot of the state machine at the applied index and compacts the log behind it,
   * once `everyEntries` were applied since the last snapshot (see CompactionOptions).
   */
  #maybeCompact(): void {
    if (this.#snapshotting !== null || this.#snapshotTaken !== null) return;
    const { everyEntries } = this.#o.compaction ?? COMPACTION_DEFAULTS;
    const log = this.#node.log;
    const index = log.applied;
    if (index - this.#node.latestSnapshot.index < everyEntries) return;
    const term = log.term(index);
    if (term === undefined) return;
    // The state machine's own snapshot is not read back here (that would double the time the
    // loop stands still): every value in it came through a checked command or snapshot.
    if (this.#o.stateMachine.snapshotInSteps === undefined) {
      const started = this.#o.timers.now();
      const data = this.#o.stateMachine.snapshot();
      const ms = this.#o.timers.now() - started;
      this.lastSnapshot = { loopMs: ms, longestStepMs: ms, steps: 1 };
      this.#compactTo({ index, term, data });
      return;
    }
    // In steps, one per turn of the event loop (a timer), so that messages, proposals and slot
    // timers are served between them; the snapshot still stands for `index`.
    const steps = this.#o.stateMachine.snapshotInSteps();
    this.#snapshotting = { index, term, steps, timer: null, loopMs: 0, longestStepMs: 0, count: 0 };
    this.#snapshotStep();
  }

  /** Takes one step of the snapshot in progress, and the next on a later turn until it is complete. */
  #snapshotStep(): void {
    const s = this.#snapshotting;
    if (s === null || !this.#running) return;
    s.timer = null;
    const started = this.#o.timers.now();
    let data: Uint8Array | null;
    try {
      data = s.steps.step();
    } catch (error) {
      this.#fail(error);
      return;
    }
    const ms = this.#o.timers.now() - started;
    s.loopMs += ms;
    s.longestStepMs = Math.max(s.longestStepMs, ms);
    s.count++;
    if (data === null) {
      s.timer = this.#o.timers.setTimeout(() => this.#snapshotStep(), 0);
      return;
    }
    this.#snapshotting = null;
    this.lastSnapshot = { loopMs: s.loopMs, longestStepMs: s.longestStepMs, steps: s.count };
    // Compacted from the loop, not from this timer: messages stepped since the last Ready may
    // have moved the node's commit point past what storage has been handed, and the compaction
    // writes that commit point (see #compactTaken).
    this.#snapshotTaken = { index: s.index, term: s.term, data };
    this.#kick();
  }

  /** Compacts to a snapshot taken in steps, once every Ready so far is handled (its entries handed to storage). */
  #compactTaken(): void {
    const snapshot = this.#snapshotTaken;
    if (snapshot === null || !this.#running) return;
    this.#snapshotTaken = null;
    this.#compactTo(snapshot);
  }

  /** Drops the snapshot in progress, if any: the member stops, or a leader's snapshot replaces the state. */
  #abandonSnapshot(): void {
    this.#snapshotTaken = null;
    const s = this.#snapshotting;
    if (s === null) return;
    if (s.timer !== null) this.#o.timers.clearTimeout(s.timer);
    this.#snapshotting = null;
  }

  /** Compacts the log behind a snapshot of this member's state, in memory and then in storage. */
  #compactTo(snapshot: Snapshot): void {
    const { everyEntries, retainEntries } = this.#o.compaction ?? COMPACTION_DEFAULTS;
    // False when a leader's snapshot newer than this one was installed meanwhile.
    if (!this.#node.compact(snapshot, retainEntries, everyEntries)) return;
    this.snapshotsTaken++;
    // The stored commit point may lag (a commit alone is not written): it must reach the
    // snapshot, or a restart would find a snapshot past its commit point. Both writes queue
    // behind every earlier one, so the entries the snapshot replaces are stored first.
    const hs = this.#node.hardState();
    this.#savedCommit = hs.commit;
    // A leader's snapshot installed meanwhile (queued while the save was in flight) replaced
    // the stored log past this one: this compaction then has nothing left to do. Nor has it
    // once the member stopped (its store is closing).
    this.#compactionsInFlight++;
    this.#lastSave = this.#o.storage
      .save({ hardState: { term: this.#savedTerm, vote: this.#savedVote, commit: hs.commit }, entries: [] })
      .then(() => (this.#running && this.#o.storage.snapshot().index < snapshot.index ? this.#o.storage.compact(snapshot) : undefined))
      .finally(() => this.#compactionsInFlight--);
    this.#lastSave.catch((error: unknown) => this.#fail(error));
  }

  #send(m: Message): void {
    if (m.type === 'snapshot') {
      for (const chunk of splitSnapshot(m, this.#o.snapshotChunkBytes)) this.#sendOne(chunk);
      return;
    }
    this.#sendOne(m);
  }

  #sendOne(m: Message): void {
    try {
      // Stamped as it leaves, not when the protocol made it: a response held back for a write
      // must report when it really went (NTP's t3 excludes the time it waited).
      this.#o.transport.send(this.#clockSync.stamp(m, this.#o.timers.now(), this.#o.clock.now()));
    } catch {
      // The transport refuses a message its peers would reject (e.g. too large for a frame).
      // Count it; Raft treats it as lost, and the bounds on batches keep this from recurring.
      this.unsendableMessages++;
    }
  }

  #submitQueued(): void {
    while (this.#queued.length > 0) {
      let count = 0;
      let bytes = 0;
      while (count < this.#queued.length && count < this.#o.maxProposalBatch) {
        bytes += (this.#queued[count] as PendingProposal).data.byteLength;
        if (count > 0 && bytes > this.#o.maxProposalBatchBytes) break;
        count++;
      }
      const batch = this.#queued.splice(0, count).filter((p) => this.#pending.has(p.pid));
      if (batch.length === 0) continue;
      const outcome = this.#node.propose(batch.map((p): ProposalData => ({ pid: p.pid, data: p.data })));
      this.#onProposeOutcome(batch, outcome);
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
    // If another proposal of ours held this index, a new leader overwrote it: it is dropped.
    const previous = this.#byIndex.get(index);
    if (previous !== undefined && previous !== p.pid) {
      const old = this.#pending.get(previous);
      if (old !== undefined) this.#settle(old, new ProposalDroppedError());
    }
    this.#byIndex.set(index, p.pid);
  }

  #handleForwardResults(results: readonly ForwardResult[]): void {
    for (const r of results) {
      const p = this.#pending.get(r.pid);
      if (p === undefined) continue;
      if (r.accepted) this.#place(p, r.index);
      else this.#settle(p, new NotLeaderError(r.leader));
    }
  }

  #apply(entry: Entry): void {
    let result: unknown;
    if (entry.type === EntryType.Normal) result = this.#o.stateMachine.apply(entry);
    this.#o.onApplied?.(entry);
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

  #settle(p: PendingProposal, error: Error | null, value?: ProposalResult): void {
    if (!this.#pending.delete(p.pid)) return;
    if (p.index !== 0 && this.#byIndex.get(p.index) === p.pid) this.#byIndex.delete(p.index);
    if (p.onAbort !== undefined) p.signal?.removeEventListener('abort', p.onAbort);
    if (error !== null) p.reject(error);
    else p.resolve(value as ProposalResult);
  }

  #handleReadStates(states: readonly ReadState[]): void {
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

  #releaseReads(): void {
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

  #onSoftState(s: SoftState): void {
    // A forwarded proposal whose leader changed before answering would otherwise wait out its
    // whole timeout (the old leader may be dead). Whether it commits is unknown: the old leader
    // may have appended it. Say so now, so callers with idempotent commands can retry at once.
    for (const p of this.#pending.values()) {
      if (p.forwardedTo !== null && p.forwardedTo !== s.leader) this.#settle(p, new OutcomeUnknownError());
    }
    this.#clockSync.setLeading(s.role === 'leader', this.#o.timers.now());
    this.#o.onSoftState?.(s);
  }

  #fail(error: unknown): void {
    // Every write queued behind a failed one fails too; the first failure is the one to report.
    if (this.#fatal !== null) return;
    this.#fatal = error;
    const e = this.#fatalError();
    for (const p of this.#pending.values()) this.#settle(p, e);
    this.#running = false;
    if (this.#tickHandle !== null) this.#o.timers.clearTimeout(this.#tickHandle);
    this.#o.onFatal?.(error);
  }

  #fatalError(): CronraftError {
    const cause = this.#fatal;
    return new CronraftError('CRONRAFT_FATAL', `The member stopped after a fatal error: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

function isLeaderReplication(m: Message): boolean {
  return m.type === 'append' || m.type === 'heartbeat';
}

function abortError(signal: AbortSignal): Error {
  const reason: unknown = signal.reason;
  return reason instanceof Error ? reason : new CronraftError('CRONRAFT_ABORTED', 'The operation was aborted');
}
