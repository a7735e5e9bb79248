import { CronraftError, NotRunningError, RemovedError } from '../errors.js';
import type { ConfChange } from '../raft/conf-change.js';
import { isMember, membersOf } from '../raft/configuration.js';
import { InvariantError } from '../raft/invariant.js';
import type { RaftNode } from '../raft/node.js';
import type { Ready, SoftState } from '../raft/ready.js';
import { EntryType, type Configuration, type Entry, type HardState, type Message, type NodeId } from '../raft/types.js';
import type { Clock, TimerHandle } from '../time/clock.js';
import { StampClock } from '../time/stamp-clock.js';
import { splitSnapshot } from './snapshot-chunks.js';
import type { WireMessage } from '../transport/envelope.js';
import { ClockSync, type ClockOffset } from './clock-sync.js';
import { Compactor, type SnapshotTiming } from './compaction.js';
import { DurableWrites } from './durable-writes.js';
import { InboundSnapshots } from './inbound-snapshots.js';
import { leaseMs } from './lease.js';
import { LeaseEchoes } from './lease-echoes.js';
import { SelfInConfiguration } from './own-removal.js';
import { PeerContact, type PeerContactView } from './peer-contact.js';
import type { DriverOptions } from './driver-options.js';
import { PendingRequests, type ProposalResult } from './pending-requests.js';

/**
 * The one place that orders a member's effects. It takes each Ready from the Raft node, in
 * sequence, and:
 *
 * 1. **Persists** its hard state and entries, when the node says they must be (`mustSync`):
 *    one atomic, synced write, started at once.
 *    Writes are queued and complete in order (the storage merges queued writes, so one fsync
 *    can carry several Readies: group commit).
 * 2. **Sends** what the node says may leave at once (`Ready.messages`) before that write
 *    starts, and the rest (`messagesAfterWrite`) only once that write and every earlier one
 *    are durable. The protocol decides which is which (ready.ts), from the writes the driver
 *    acknowledged durable (`writeDurable`): a vote, an append acknowledgement or any message at
 *    a term not yet durable waits; a leader's appends and heartbeats at a durable term do not.
 * 3. **Applies** its committed entries in log order, at once: committed means durable on a
 *    majority, so applying does not wait for this member's own write (etcd's server applies
 *    concurrently with its write in the same way). Then it resolves the proposals and reads
 *    that waited on them: a caller learns of success only once its entry is applied here.
 * 4. **Advances** the node: applied at once; durable (`writeDurable`, then `advancePersisted`)
 *    when the write completes.
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
  /** The timer of #propagateCommitSoon while one is set. */
  #commitTimer: TimerHandle | null = null;
  /** The proposals and reads waiting on this member. */
  readonly #requests: PendingRequests;
  /** When peers and the leader were last heard from. */
  readonly #contact: PeerContact;
  /** Leading: what each follower's heartbeats say of its answers taken in (its lease, lease-echoes.ts). */
  readonly #leaseEchoes: LeaseEchoes;
  /** The writes to storage, in order: of Readies and of compactions. */
  readonly #writes: DurableWrites;
  /** The node's latest hard state, written or not. */
  #hardState: HardState;
  #fatal: unknown = null;
  /** Takes snapshots of this member's own state and compacts its log behind them. */
  readonly #compactor: Compactor;
  /** Snapshots installed from a leader. */
  snapshotsInstalled = 0;
  /** A leader's snapshots, joined from their chunks and vetted by the state machine. */
  readonly #inbound: InboundSnapshots;
  /** Clock offsets and the cluster's time, from stamps on heartbeats (see clock-sync.ts). */
  readonly #clockSync: ClockSync;
  readonly #clusterClock: Clock;
  readonly #stampClock: StampClock;
  /**
   * Messages that threw inside the protocol other than on a broken invariant (only a faulty
   * peer sends them; see #receive).
   */
  invalidMessages = 0;
  /** Messages the transport refused to encode. */
  unsendableMessages = 0;
  /** The last index of the log that onLeaderAppended was told of, or passed over while not leading. */
  #appendedSeen = 0;
  /** Set when a Ready's configuration no longer holds this member: it stops once that Ready is done. */
  #removed: RemovedError | null = null;
  /** Whether the configuration holds this member, and its removal (a joiner's before its addition, or an earlier member's of its address, is none). */
  readonly #self: SelfInConfiguration;

  constructor(options: DriverOptions) {
    this.#o = options;
    this.#node = options.node;
    this.#hardState = options.node.hardState();
    this.#writes = new DurableWrites({ node: options.node, storage: options.storage, running: () => this.#running, fail: (error) => this.#fail(error), now: () => options.timers.now() });
    // Every member, learners too, has its clock measured: the leader gives work only to members it has measured.
    this.#clockSync = new ClockSync({ self: options.node.id, voters: membersOf(options.node.configuration) });
    this.#clusterClock = { now: () => this.#clockSync.clusterTime(this.#o.timers.now(), this.#o.clock.now()) };
    this.#stampClock = new StampClock(this.#clusterClock, () => this.#clockSync.synced);
    this.#self = new SelfInConfiguration(options.node.id, options.node.configuration, options.incarnation, options.node.log.lastIndex() === 0);
    this.#contact = new PeerContact(options.node, options.tickMs, options.leaderSilenceMs, options.timers.now());
    this.#leaseEchoes = new LeaseEchoes(options.node, options.leaseMs ?? leaseMs(options.leaderSilenceMs));
    this.#inbound = new InboundSnapshots(options.stateMachine, (error) => this.#fail(error));
    this.#requests = new PendingRequests(options.node, options.timers, options, () => this.#kick());
    this.#compactor = new Compactor({
      node: options.node,
      stateMachine: options.stateMachine,
      timers: options.timers,
      compaction: options.compaction,
      running: () => this.#running,
      kick: () => this.#kick(),
      fail: (error) => this.#fail(error),
      store: (snapshot, held) => this.#writes.saveCompaction(snapshot, held),
    });
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
    if (this.#commitTimer !== null) this.#o.timers.clearTimeout(this.#commitTimer);
    this.#commitTimer = null;
    this.#compactor.abandon();
    const error = new NotRunningError('stopped');
    this.#requests.failProposals(error);
    this.#requests.failReads(error);
  }

  /**
   * When this member last heard from each peer and from the leader it followed, and how long a
   * peer has been silent while this member's loop ran, on the timers' monotonic time base
   * (`timers.now()`): what its lease, and the leader's choice of members to give work to, count from.
   */
  get contact(): PeerContactView {
    return this.#contact;
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

  /**
   * The cluster's time for this member's stamps (a trigger's slot, a lock's time, fan-out's):
   * the cluster clock, held rather than stepped back by less than MAX_STAMP_HOLD_MS once synced,
   * so that the stamps this member makes keep their order (see stamp-clock.ts). Nothing fires by it.
   */
  stampClock(): Clock {
    return this.#stampClock;
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

  /** The index of the log applied up to. */
  get appliedIndex(): number {
    return this.#node.log.applied;
  }

  /** Proposals waiting to commit on this member (bounded by maxPendingProposals). */
  get pendingProposals(): number {
    return this.#requests.proposals;
  }

  /** Snapshots this member took of its own state (compactions). */
  get snapshotsTaken(): number {
    return this.#compactor.snapshotsTaken;
  }

  /** How long the last snapshot taken here held the event loop; null before the first. */
  get lastSnapshot(): SnapshotTiming | null {
    return this.#compactor.lastSnapshot;
  }

  /**
   * Writes started and not yet done: of Readies, and of compactions (which wait behind them).
   * Until they are done, the log on disk may hold more than compaction leaves there.
   */
  get writesInFlight(): number {
    return this.#node.writesInFlight + this.#writes.compactionsInFlight;
  }

  /** Clock stamps from peers dropped as malformed, out of bounds or inconsistent. */
  get invalidClockStamps(): number {
    return this.#clockSync.invalidStamps;
  }

  /** Chunks of snapshots dropped as no honest leader sends them (see SnapshotAssembler.invalid). */
  get invalidSnapshotChunks(): number {
    return this.#inbound.invalidChunks;
  }

  /** Snapshots from a leader that the state machine could not read: dropped (see acceptsSnapshot). */
  get invalidSnapshots(): number {
    return this.#inbound.invalid;
  }

  // ---- requests ----------------------------------------------------------------------------

  /**
   * Replicates `data` and resolves once it is committed and applied on this member, with the
   * state machine's result. Rejects with NotLeaderError when no leader is known or reachable,
   * ProposalDroppedError when a new leader replaced the entry, TimeoutError after the request
   * timeout (the entry may still commit later), BackpressureError when too much is waiting.
   * With `leaderTerm`, it is appended only while this member leads in that term, never
   * forwarded (PendingRequests.propose).
   */
  propose(data: Uint8Array, signal?: AbortSignal, leaderTerm?: number): Promise<ProposalResult> {
    const refused = this.#refusal();
    if (refused !== null) return Promise.reject(refused);
    return this.#requests.propose(data, signal, () => this.#contact.unreachableLeaderError(this.#o.timers.now()), leaderTerm);
  }

  /**
   * Whether a proposal made now would be refused with NotLeaderError (no leader is known, or it
   * has been silent too long) while this driver runs: a caller that tries until its command
   * applies waits instead, sparing the encoding and the error of a try that cannot go anywhere.
   */
  get leaderUnreachable(): boolean {
    return this.#running && this.#fatal === null && !this.#contact.reachesLeader(this.#o.timers.now());
  }

  /**
   * A linearizable read barrier: resolves with an index once this member has applied every
   * entry committed before the call, as confirmed by a quorum (Raft's ReadIndex).
   */
  readBarrier(): Promise<number> {
    const refused = this.#refusal();
    if (refused !== null) return Promise.reject(refused);
    return this.#requests.read();
  }

  /**
   * Proposes a change of the configuration: on the leader, or forwarded to it from any other
   * member (protocol 2), and resolves once it is applied here. Rejects with
   * MembershipChangeRefusedError when the leader's protocol refuses it (`reason`), NotLeaderError
   * when no leader is known, BackpressureError, TimeoutError, ProposalDroppedError or
   * OutcomeUnknownError as a proposal does. `pidSuffix` marks the entry (see LEAVE_PID_SUFFIX).
   */
  proposeConfChange(change: ConfChange, what: string, pidSuffix = ''): Promise<ProposalResult> {
    const refused = this.#refusal();
    if (refused !== null) return Promise.reject(refused);
    const result = this.#requests.proposeConfChange(change, what, pidSuffix);
    this.#kick();
    return result;
  }

  /** The transport lost its connection to `peer`: if it leads, the node may campaign early. */
  peerDisconnected(peer: NodeId): void {
    if (!this.#running) return;
    this.#contact.disconnected(peer, this.#o.timers.now());
    this.#leaseEchoes.forget(peer);
    if (peer !== this.#node.leader) return;
    this.#node.leaderConnectionLost();
    this.#kick();
  }

  /**
   * Another member showed that this one was removed, which the log could not tell it
   * (removal-probe.ts): it stops as it does on applying its own removal, with a RemovedError.
   */
  removedElsewhere(index: number): void {
    if (!this.#running || this.#removed !== null) return;
    this.#removed = new RemovedError(index);
    this.#kick();
  }

  /** Asks Raft to hand leadership to the most up-to-date follower. Returns the target, or null. */
  transferLeadership(): NodeId | null {
    const target = this.#node.transferLeadership();
    this.#kick();
    return target;
  }

  // ---- inputs ------------------------------------------------------------------------------

  #receive(m: WireMessage): void {
    if (!this.#running) return;
    // Silences are durations: measured on the monotonic time base. Clock stamps are timed on it
    // too; the wall clock only votes for the cluster's time.
    const mono = this.#o.timers.now();
    this.#o.beforeContact?.();
    // A member's message is contact; a stranger's is not, whose vote requests the transport
    // lets through (vote-askers.ts): each would leave its sender in PeerContact's maps for good.
    // A leader of a configuration this member has not applied is heard once it follows it.
    const member = isMember(this.#node.configuration, m.from);
    if (member) this.#contact.heard(m.from, mono);
    const wall = this.#o.clock.now();
    if (m.type === 'snapshot') {
      // A large snapshot comes in chunks: the protocol sees it once whole, and only if the
      // state machine can read it.
      const whole = this.#inbound.take(m, mono);
      if (whole === null) return;
      m = whole;
    }
    try {
      this.#node.step(m);
      if (!member && this.#node.leader === m.from) this.#contact.heard(m.from, mono);
      // After the step, so that only the stamps of the leader the protocol follows count, and
      // only what that leader sends as leader renews the contact the lease counts from.
      this.#clockSync.receive(m, mono, wall, this.#node.leader);
      this.#contact.stepped(m, mono, this.#node.log.applied);
      this.#leaseEchoes.stepped(m, mono);
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
    const dueAt = this.#o.timers.now() + this.#o.tickMs;
    this.#tickHandle = this.#o.timers.setTimeout(() => {
      if (!this.#running) return;
      const lateMs = this.#o.timers.now() - dueAt;
      this.#contact.tick();
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
      // Last: what it tells reaches the app's listeners, which may stop this member.
      this.#o.onTickLate?.(lateMs);
    }, this.#o.tickMs);
  }

  /**
   * Drops snapshot chunks whose next chunk did not come in time, fails requests whose deadline
   * passed and asks again the reads a leader has not answered (PendingRequests.expire).
   */
  #expire(): void {
    const now = this.#o.timers.now();
    this.#inbound.expire(now);
    this.#requests.expire(now);
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
        this.#submit();
        while (this.#running && this.#node.hasReady()) {
          this.#handleReady(this.#node.ready());
          this.#submit();
        }
        // Removed: every Ready is done (a removed leader's last heartbeats and its TimeoutNow
        // have gone to the transport); nothing more is applied or sent.
        if (this.#removed !== null) {
          this.#o.transport.flush();
          this.#fail(this.#removed);
          break;
        }
        // Applying reached its hold while a snapshot is taken in steps: the rest of it is taken
        // now, and the entries held are handed out on the next round (see Compactor.maybeCompact).
        if (this.#node.applyingHeld) this.#compactor.finishNow();
        if (this.#compactor.compactTaken()) this.#loopAgain = true;
      } while (this.#loopAgain);
      this.#propagateCommitSoon();
    } catch (error) {
      this.#fail(error);
    } finally {
      this.#looping = false;
    }
  }

  /** Hands the proposals queued to the node, then tells a leader's new entries to onLeaderAppended, and hands over what it proposed. */
  #submit(): void {
    this.#requests.submit();
    const tell = this.#o.onLeaderAppended;
    if (tell === undefined) return;
    const from = this.#appendedSeen + 1;
    const last = this.#node.log.lastIndex();
    this.#appendedSeen = last;
    if (last < from || this.#node.role !== 'leader') return;
    tell(from, last);
    this.#requests.submit();
  }

  /**
   * A leader's commit index that a follower holds the entries of and was not sent is told to it
   * a turn later (a timer of no delay), if no append carried it meanwhile: under load the next
   * append does, and so does a client's next proposal, made as its last one applied. Without
   * this, a follower learned it only at the leader's next tick, and what it runs once an entry
   * commits (a slot's run, a work item) waited up to a tick for it. Once told, nothing is left to
   * tell (a follower whose window is full is not counted: its next append carries the commit),
   * so the timer is not set again at once.
   */
  #propagateCommitSoon(): void {
    if (this.#commitTimer !== null || !this.#running || !this.#node.hasCommitToTell) return;
    this.#commitTimer = this.#o.timers.setTimeout(() => {
      this.#commitTimer = null;
      if (!this.#running) return;
      this.#node.propagateCommit();
      this.#kick();
    }, 0);
  }

  #handleReady(rd: Ready): void {
    if (rd.conf !== null) this.#configurationChanged(rd);
    if (rd.hardState !== null) this.#hardState = rd.hardState;
    const hs = this.#hardState;
    // 2. Send what the node says may leave before the write (ready.ts: with nothing to write
    // and nothing in flight, every message; a leader's appends and heartbeats once its term and
    // vote are durable). It is handed to the transport before this Ready's own write is built,
    // so that storage usually reuses the bytes its entries were encoded to for the wire (when
    // an append carries exactly them: entry-records.ts). The rest waits for the write.
    for (const m of rd.messages) this.#send(m);
    const later = rd.messagesAfterWrite;
    const flushAfterWrite = rd.mustSync && rd.messages.length > 0;
    // 1. Persist: the write starts now, right after what could leave first (see the class
    // comment for what waits on it).
    // The node learns of it as the write completes, so that the Readies after it hold back only
    // what they must; this Ready's held messages follow below.
    if (rd.mustSync) this.#writes.saveReady(rd, hs);
    // The transport would write the appends at the end of this turn; handing them over now
    // starts the followers' writes sooner. It comes after the write above has started (its disk
    // work runs on libuv's pool), because a socket write on loopback also runs the receiver's
    // TCP processing on this thread, which delays the leader's own fsync when it comes first.
    if (flushAfterWrite) this.#o.transport.flush();
    if (rd.mustSync || later.length > 0) {
      this.#writes.last.then(
        () => {
          if (!this.#running) return;
          for (const m of later) this.#send(m);
          if (rd.mustSync) this.#node.advancePersisted(rd);
          this.#kick();
        },
        (error: unknown) => this.#fail(error),
      );
    }
    // 3. Apply, in log order: from the installed snapshot, then the entries after it.
    if (rd.snapshot !== null) {
      // The leader's snapshot is newer than the one in progress here, which it abandons.
      this.#compactor.abandon();
      this.#o.stateMachine.restore(rd.snapshot.data);
      this.snapshotsInstalled++;
      this.#o.onSnapshotInstalled?.(rd.snapshot.index);
      this.#requests.snapshotInstalled(rd.snapshot.index);
    }
    for (const entry of rd.committed) this.#apply(entry);
    this.#requests.forwardResults(rd.forwardResults);
    this.#requests.readStates(rd.readStates);
    this.#requests.releaseReads();
    if (rd.softState !== null) this.#onSoftState(rd.softState);
    // 4. Advance what is done now; persistence is acknowledged when the write completes.
    this.#node.advanceApplied(rd);
    this.#compactor.maybeCompact();
  }

  /** The members whose clocks count, and the member's part (the transport's peers, the lease); a removal noted. */
  #configurationChanged(rd: Ready): void {
    const conf = rd.conf as Configuration;
    this.#clockSync.setMembers(membersOf(conf), this.#o.timers.now(), this.#o.clock.now());
    this.#leaseEchoes.configured(conf);
    this.#o.onConfiguration?.(conf);
    const removedAt = this.#self.removal(rd.committed, conf, rd.snapshot?.index ?? this.#node.log.applied, rd.snapshot === null ? null : rd.snapshot.conf);
    if (removedAt !== null && this.#removed === null) this.#removed = new RemovedError(removedAt);
  }

  #send(m: Message): void {
    if (m.type === 'snapshot') {
      for (const chunk of splitSnapshot(m, this.#o.snapshotChunkBytes)) this.#sendOne(chunk);
      return;
    }
    this.#sendOne(m);
  }

  #sendOne(m: WireMessage): void {
    try {
      // Stamped as it leaves, not when the protocol made it: a response held back for a write
      // must report when it really went (NTP's t3 excludes the time it waited).
      this.#o.transport.send(this.#clockSync.stamp(m, this.#o.timers.now(), this.#o.clock.now(), this.#leaseEchoes.heardAtFor(m)));
    } catch {
      // The transport refuses a message its peers would reject (e.g. too large for a frame).
      // Count it; Raft treats it as lost, and the bounds on batches keep this from recurring.
      this.unsendableMessages++;
    }
  }

  #apply(entry: Entry): void {
    let result: unknown;
    if (entry.type === EntryType.Normal) result = this.#o.stateMachine.apply(entry);
    this.#o.onApplied?.(entry);
    this.#requests.applied(entry, result);
  }

  #onSoftState(s: SoftState): void {
    this.#requests.leaderChanged(s.leader);
    const mono = this.#o.timers.now();
    this.#clockSync.setLeading(s.role === 'leader', mono);
    // Answers taken in another term, or while another member led, say nothing now.
    this.#leaseEchoes.reset();
    this.#contact.setLeading(s.role === 'leader', mono);
    this.#o.onSoftState?.(s);
  }

  #fail(error: unknown): void {
    // Every write queued behind a failed one fails too; the first failure is the one to report.
    if (this.#fatal !== null) return;
    this.#fatal = error;
    const e = this.#fatalError();
    // Nothing will time them out: the loop and its ticks stop here.
    this.#requests.failProposals(e);
    this.#requests.failReads(e);
    this.#running = false;
    if (this.#tickHandle !== null) this.#o.timers.clearTimeout(this.#tickHandle);
    if (this.#commitTimer !== null) this.#o.timers.clearTimeout(this.#commitTimer);
    this.#compactor.abandon();
    this.#o.onFatal?.(error);
  }

  /** Why a request is refused at once: the member failed, or does not run. Null while it runs. */
  #refusal(): CronraftError | null {
    if (this.#fatal !== null) return this.#fatalError();
    return this.#running ? null : new NotRunningError(this.#stopped ? 'stopped' : 'not started');
  }

  #fatalError(): CronraftError {
    const cause = this.#fatal;
    // A removal is no failure of this member's: its own code says what happened.
    if (cause instanceof RemovedError) return cause;
    return new CronraftError('CRONRAFT_FATAL', `The member stopped after a fatal error: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}
