import { acceptsFromNonMember, leaderOf, lowerTermReply, voteIgnored, type Follows } from './admission.js';
import { canHoldTerm, MAX_INDEX, MAX_OUTSIDE_TERM_LEAD, MAX_TERM, messageWithinBounds } from './bounds.js';
import { encodeConfChange, isWellFormedConfChange, type ConfChange } from './conf-change.js';
import { RAFT_DEFAULTS, type RaftConfig } from './config.js';
import { configurationOf, configurationProblem, isMember, isVoter, membersOf, sameConfiguration } from './configuration.js';
import { acknowledge, takeAppend, takeHeartbeat, takeSnapshot } from './follower.js';
import { RaftLog } from './log.js';
import { changedBy, Membership, type ConfChangeOutcome, type ConfChangeRefusal } from './membership.js';
import { hasQuorum, tallyVotes } from './quorum.js';
import { ReadOnly } from './read-only.js';
import { ReadyBuilder, type Ready, type Role, type SoftState } from './ready.js';
import { Replication } from './replication.js';
import {
  EntryType,
  type Configuration,
  type ConfProposeMessage,
  type Entry,
  type HardState,
  type HeartbeatMessage,
  type Message,
  type NodeId,
  type ProposalData,
  type ProposeMessage,
  type ReadIndexMessage,
  type Snapshot,
  type SnapshotMessage,
  type SnapshotMeta,
  type VoteMessage,
  type PreVoteMessage,
} from './types.js';
import type { Random } from '../time/random.js';

/** The outcome of `propose`. */
export type ProposeOutcome =
  | { readonly kind: 'appended'; readonly index: number; readonly term: number }
  | { readonly kind: 'forwarded'; readonly leader: NodeId }
  | { readonly kind: 'refused'; readonly reason: 'no-leader' | 'transferring' | 'backpressure'; readonly leader: NodeId | null };

export type { ConfChangeOutcome } from './membership.js';
export { MAX_SNAPSHOT_BACKOFF, SNAPSHOT_RETRY_HEARTBEATS } from './replication.js';

/** What the node starts from: the durable state read back from storage. */
export interface RaftInitialState {
  readonly hardState: HardState;
  /** The stored snapshot; its data is what this member sends a follower that fell behind the log. */
  readonly snapshot: SnapshotMeta & { readonly data?: Uint8Array };
  readonly entries: readonly Entry[];
}

/**
 * Ticks between the early campaigns of members that lost their connection to the leader at
 * once, taken in the order of their ids (see leaderConnectionLost): two ticks, far longer than
 * a round trip, so that one is elected before the next one starts.
 */
export const EARLY_CAMPAIGN_GAP_TICKS = 2;

/**
 * The Raft protocol as a pure state machine, after etcd-io/raft's RawNode: inputs are
 * `tick()`, `step(message)`, `propose(...)`, `readIndex(ctx)` and `transferLeadership()`;
 * outputs are collected in a `Ready`. No clocks, timers, sockets or promises live here:
 * time is a count of ticks and randomness comes from the injected source, so a simulation
 * runs exactly this code.
 *
 * Implemented: PreVote, CheckQuorum with leader leases, fast log back-off, pipelined appends
 * bounded by in-flight messages and bytes, proposal forwarding, ReadIndex, leadership transfer,
 * configuration changes one member at a time (see proposeConfChange and #applyConfChanges).
 */
export class RaftNode {
  readonly id: NodeId;
  /** The configuration, as of the last conf change handed out for applying (see #applyConfChanges). */
  readonly #membership: Membership;
  readonly #random: Random;
  readonly #electionTicks: number;
  readonly #heartbeatTicks: number;
  readonly #limits: Required<Omit<RaftConfig, 'id' | 'voters' | 'electionTicks' | 'heartbeatTicks' | 'keepData'>>;
  readonly #keepData: (data: Uint8Array) => Uint8Array;
  readonly log: RaftLog;
  /**
   * Messages ignored because they contradict the protocol or carry a number out of its bounds
   * (see bounds.ts): only a faulty peer sends them.
   */
  protocolViolations = 0;
  /**
   * Times this member, leading, learned that a follower lost entries it had acknowledged (a
   * member restarted on `storage: 'memory'`), and so replicated to it again from what it
   * still held (see `Progress.maybeForgetMatch`).
   */
  followerLogsLost = 0;
  /**
   * Messages ignored because their sender is not in this member's configuration, and is not a
   * leader this member may follow (see acceptsFromNonMember in admission.ts): a removed member, or one never added.
   */
  fromNonMembers = 0;

  #term: number;
  #vote: NodeId | null;
  #role: Role = 'follower';
  #leader: NodeId | null = null;
  #electionElapsed = 0;
  #heartbeatElapsed = 0;
  #randomizedElectionTimeout = 0;
  #votes = new Map<NodeId, boolean>();
  /** The leader's side of replication: empty unless this member leads. */
  readonly #replication: Replication;
  #transferee: NodeId | null = null;
  /**
   * Entries this leader appended that no append was sent for yet: ready() sends them, so that
   * the batches appended in one turn (a member's proposals, then what the driver's hook proposes
   * of them, or proposals forwarded by several members) reach each follower in one append, and
   * come back in one answer, rather than one append and one answer per batch.
   */
  #appendsPending = false;
  /** Linearizable reads held while this member leads (see read-only.ts). */
  readonly #reads: ReadOnly;
  /** The latest snapshot this member holds (taken or installed): what it sends a follower that fell behind its log. */
  #snapshot: Snapshot;
  /** Entries kept behind the latest snapshot (see compact). */
  #retainEntries = 0;
  /** The largest distance between two snapshots taken here: how much more a leader may keep for live followers. */
  #compactEvery = 0;
  /** The highest index handed out for applying, while the caller holds applying (see holdApplyingAbove). */
  #applyCeiling = Number.POSITIVE_INFINITY;
  /** A leader's snapshot installed since the last Ready: to persist, and to restore the state machine from. */
  #pendingRestore: Snapshot | null = null;

  /** What the next Ready is built from (see ready.ts). */
  readonly #out: ReadyBuilder;

  constructor(config: RaftConfig, initial: RaftInitialState, random: Random) {
    if (config.voters.length === 0) throw new Error('Raft config: no voters');
    if (config.heartbeatTicks < 1 || config.electionTicks <= config.heartbeatTicks) {
      throw new Error('Raft config: heartbeatTicks must be >= 1 and less than electionTicks');
    }
    // Storage refuses such a state when it reads it; this is the protocol's own guard.
    if (!canHoldTerm(initial.hardState.term)) throw new Error(`Raft initial state: term ${initial.hardState.term} is not a term a member may hold (below ${MAX_TERM})`);
    this.id = config.id;
    // Restarted, a member starts from its snapshot's configuration; the conf changes committed
    // after it are applied again as the entries are handed out again (etcd restores its
    // ConfState the same way). A member outside its configuration is not a member: it waits to
    // be added, or was removed (see Membership.promotable).
    const founding = configurationOf(config.voters);
    const conf = initial.snapshot.conf ?? founding;
    const problem = configurationProblem(conf);
    if (problem !== null) throw new Error(`Raft initial state: the snapshot's configuration is invalid: ${problem}`);
    this.#membership = new Membership(this.id, founding, conf);
    this.#random = random;
    this.#electionTicks = config.electionTicks;
    this.#heartbeatTicks = config.heartbeatTicks;
    this.#limits = {
      maxInflightMsgs: config.maxInflightMsgs ?? RAFT_DEFAULTS.maxInflightMsgs,
      maxInflightBytes: config.maxInflightBytes ?? RAFT_DEFAULTS.maxInflightBytes,
      maxBytesPerAppend: config.maxBytesPerAppend ?? RAFT_DEFAULTS.maxBytesPerAppend,
      maxEntriesPerAppend: config.maxEntriesPerAppend ?? RAFT_DEFAULTS.maxEntriesPerAppend,
      maxEntryBytes: config.maxEntryBytes ?? RAFT_DEFAULTS.maxEntryBytes,
      maxUncommittedBytes: config.maxUncommittedBytes ?? RAFT_DEFAULTS.maxUncommittedBytes,
      maxApplyBatch: config.maxApplyBatch ?? RAFT_DEFAULTS.maxApplyBatch,
      maxPendingReads: config.maxPendingReads ?? RAFT_DEFAULTS.maxPendingReads,
    };
    this.#keepData = config.keepData ?? ((data) => data);
    this.#reads = new ReadOnly(this.#limits.maxPendingReads);
    this.log = new RaftLog(initial.snapshot, initial.entries, initial.hardState.commit);
    this.#replication = new Replication(
      {
        id: this.id,
        log: this.log,
        term: () => this.#term,
        peers: () => this.#membership.peers,
        voters: () => this.#membership.conf.voters,
        snapshot: () => this.#snapshot,
        transferee: () => this.#transferee,
        send: (m) => this.#send(m),
        ackReads: (peer, seq) => this.#ackReads(peer, seq),
        committed: () => this.#releaseDeferredReads(),
        followerLogLost: () => this.followerLogsLost++,
      },
      this.#limits,
    );
    this.#snapshot = { index: initial.snapshot.index, term: initial.snapshot.term, conf, data: initial.snapshot.data ?? new Uint8Array(0) };
    this.#term = initial.hardState.term;
    this.#vote = initial.hardState.vote;
    this.#resetElectionTimeout();
    this.#out = new ReadyBuilder(initial.hardState, this.softState());
  }

  // ---- observation -------------------------------------------------------------------------

  get term(): number {
    return this.#term;
  }
  /** The largest entry data a leader appends (RaftConfig.maxEntryBytes). */
  get maxEntryBytes(): number {
    return this.#limits.maxEntryBytes;
  }
  get role(): Role {
    return this.#role;
  }
  get leader(): NodeId | null {
    return this.#leader;
  }
  get vote(): NodeId | null {
    return this.#vote;
  }
  get voters(): readonly NodeId[] {
    return this.#membership.conf.voters;
  }
  /** The configuration as of the last conf change applied (handed out in a Ready). */
  get configuration(): Configuration {
    return this.#membership.conf;
  }
  /** The configuration as of the last entry of the log, committed or not (Membership.latestInLog). */
  get latestConfiguration(): Configuration {
    return this.#membership.latestInLog(this.log);
  }
  get transferee(): NodeId | null {
    return this.#transferee;
  }

  /** The latest snapshot this member holds (index 0 and no data until one is taken or installed). */
  get latestSnapshot(): Snapshot {
    return this.#snapshot;
  }

  softState(): SoftState {
    return { role: this.#role, leader: this.#leader, term: this.#term };
  }

  hardState(): HardState {
    return { term: this.#term, vote: this.#vote, commit: this.log.committed };
  }

  /** The leader's view of a follower's log, for inspection; undefined on followers. */
  progressOf(peer: NodeId): { match: number; next: number; state: string; recentActive: boolean } | undefined {
    return this.#replication.view(peer);
  }

  // ---- inputs ------------------------------------------------------------------------------

  /**
   * Tells the followers a commit index they have not been sent yet, as every tick of a leader
   * does (nothing on any other member): the driver asks soon after the commit moves, so that a
   * follower learns it without waiting for the next tick when no append carries it.
   */
  propagateCommit(): void {
    if (this.#role === 'leader') this.#replication.propagateCommit();
  }

  /** Whether propagateCommit would tell a follower anything now. */
  get hasCommitToTell(): boolean {
    return this.#role === 'leader' && this.#replication.hasCommitToTell();
  }

  /** Advances logical time by one tick. */
  tick(): void {
    if (this.#role === 'leader') this.#tickLeader();
    else this.#tickElection();
  }

  #tickElection(): void {
    this.#electionElapsed++;
    if (this.#electionElapsed < this.#randomizedElectionTimeout) return;
    if (!this.#membership.promotable) {
      // A learner or a non-member never campaigns. Its clock stays past the lease (and
      // bounded), so that it follows a leader it hears of next, as a voter would.
      this.#electionElapsed = this.#randomizedElectionTimeout;
      return;
    }
    this.#electionElapsed = 0;
    this.#preCampaign();
  }

  #tickLeader(): void {
    this.#heartbeatElapsed++;
    this.#electionElapsed++;
    this.#replication.propagateCommit();
    if (this.#electionElapsed >= this.#electionTicks) {
      this.#electionElapsed = 0;
      // CheckQuorum: a leader that has not heard from a majority within an election timeout
      // steps down, so a partitioned leader stops accepting proposals it can never commit.
      if (!this.#replication.quorumActive()) {
        this.#becomeFollower(this.#term, null);
        return;
      }
      // A transfer that did not finish within an election timeout is abandoned.
      this.#transferee = null;
    }
    if (this.#heartbeatElapsed >= this.#heartbeatTicks) {
      this.#heartbeatElapsed = 0;
      this.#replication.broadcastHeartbeat(this.#reads.lastSeq, true);
    }
  }

  /**
   * The transport saw the connection to the leader close (its process died: the kernel resets
   * the connection at once). A follower then lets its leader lease lapse and campaigns within a
   * fraction of an election timeout, instead of waiting one or two. Safety does not depend on
   * it (PreVote still needs a majority that lost the leader too); a false alarm costs at most
   * a pre-vote round that members still hearing the leader refuse.
   */
  leaderConnectionLost(): void {
    if (this.#role !== 'follower' || this.#leader === null) return;
    this.#electionElapsed = Math.max(this.#electionElapsed, this.#electionTicks);
    // Members that lose the leader together (it died) would campaign in the same tick, each
    // vote for itself, and all wait out a whole election timeout. They go one after another
    // instead, in the order of their ids, EARLY_CAMPAIGN_GAP_TICKS apart (far longer than a
    // round trip): the first whose log is up to date is elected before the next one asks.
    const lost = this.#leader;
    const rank = Math.max(0, this.#membership.conf.voters.filter((v) => v !== lost).indexOf(this.id));
    this.#randomizedElectionTimeout = this.#electionTicks + rank * EARLY_CAMPAIGN_GAP_TICKS + this.#random.int(0, EARLY_CAMPAIGN_GAP_TICKS - 1);
  }

  /** Starts an election now (with a pre-vote first), e.g. to speed up a single member's start. */
  campaign(): void {
    if (this.#role !== 'leader' && this.#membership.promotable) this.#preCampaign();
  }

  /**
   * Takes a snapshot of the state machine, applied up to `snapshot.index`: keeps it to send to
   * followers that fall behind the log, and drops the log up to `retainEntries` before it (so
   * that a follower a little behind still gets entries rather than the whole state), and no
   * further than the entries durable here. A leader keeps, for live followers, up to
   * `everyEntries` more (the interval the caller compacts at). Returns false, changing nothing,
   * for a snapshot not newer than the last or not of an applied entry, or one whose `conf` is
   * not the configuration as of its index. The node records that configuration in the snapshot
   * it keeps (`latestSnapshot`, what the caller stores and what followers are sent), whether the
   * caller gave it or not.
   */
  compact(taken: Snapshot, retainEntries: number, everyEntries?: number): boolean {
    if (taken.index <= this.#snapshot.index || taken.index > this.log.applied) return false;
    if (this.log.term(taken.index) !== taken.term) return false;
    const conf = this.#membership.configurationAt(taken.index, this.#snapshot, this.log);
    if (taken.conf !== undefined && !sameConfiguration(taken.conf, conf)) return false;
    const snapshot: Snapshot = { ...taken, conf };
    // The interval the caller compacts at, if it says; else the widest seen. (A snapshot taken
    // after a large batch was applied lies further from the last one than the interval: counted
    // as the interval, that would let a leader keep more than its bound.)
    this.#compactEvery = everyEntries ?? Math.max(this.#compactEvery, snapshot.index - this.#snapshot.index);
    this.#snapshot = snapshot;
    this.#retainEntries = Math.max(0, retainEntries);
    this.#compactLog();
    return true;
  }

  /**
   * Hands out no committed entry past `index` for applying until called again with null: the
   * caller takes a snapshot in steps and cannot compact the log meanwhile. Entries go on
   * committing; `applyingHeld` says when some wait, and they are handed out once it lifts the hold.
   */
  holdApplyingAbove(index: number | null): void {
    this.#applyCeiling = index ?? Number.POSITIVE_INFINITY;
  }

  /** Whether committed entries wait behind the hold (holdApplyingAbove). */
  get applyingHeld(): boolean {
    return this.log.hasCommittedToApply() && !this.log.hasCommittedToApply(this.#applyCeiling);
  }

  /**
   * Drops the log behind the latest snapshot, less the entries retained, and never past what is
   * durable here: a write still in flight must be able to tell, by the term of its last entry,
   * whether that entry is still the one in the log (log.stableTo). So it runs again as writes
   * complete. A leader also keeps what a live follower still needs, up to another
   * `everyEntries`-worth of entries (the snapshot's distance from the last): a follower a few
   * entries behind (a reordered append it had to refuse) gets entries, not the whole state.
   */
  #compactLog(): void {
    let target = Math.min(this.log.stable, this.#snapshot.index - this.#retainEntries);
    if (this.#role === 'leader') target = this.#replication.liveFloor(target, target - this.#compactEvery);
    if (target > this.log.snapshot().index) this.log.compact(target);
  }

  /**
   * Appends proposals on the leader, forwards them to a known leader, or refuses at once.
   * Proposals given together become consecutive entries: the driver batches its callers'
   * proposals into one call so that one disk write and one round trip carry many of them.
   */
  propose(proposals: readonly ProposalData[]): ProposeOutcome {
    if (this.#role === 'leader') {
      if (this.#transferee !== null) return { kind: 'refused', reason: 'transferring', leader: this.#transferee };
      const index = this.#appendProposals(proposals);
      if (index === 0) return { kind: 'refused', reason: 'backpressure', leader: this.id };
      return { kind: 'appended', index, term: this.#term };
    }
    if (this.#leader === null) return { kind: 'refused', reason: 'no-leader', leader: null };
    this.#send({ type: 'propose', from: this.id, to: this.#leader, term: this.#term, proposals: [...proposals] });
    return { kind: 'forwarded', leader: this.#leader };
  }

  /** Appends proposals as entries of this leader's term. Returns the first index, or 0 if refused. */
  #appendProposals(proposals: readonly ProposalData[]): number {
    let bytes = 0;
    for (const p of proposals) {
      // An entry no append could carry would stop replication for good (see maxEntryBytes).
      if (p.data.byteLength > this.#limits.maxEntryBytes) return 0;
      bytes += p.data.byteLength;
    }
    if (!this.#replication.admits(bytes)) return 0;
    // Never an entry past the bound on indexes: its append could not be sent.
    if (this.log.lastIndex() + proposals.length > MAX_INDEX) return 0;
    this.#replication.appended(bytes);
    const first = this.log.lastIndex() + 1;
    const entries = proposals.map((p, i): Entry => ({ index: first + i, term: this.#term, type: EntryType.Normal, data: this.#keepData(p.data), pid: p.pid }));
    this.log.append(entries);
    this.#appendsPending = true;
    return first;
  }

  /**
   * Proposes a change of the configuration. The leader appends it (see ConfChangeOutcome for the
   * refusals); a follower or a learner that knows a leader forwards it there (a `conf-propose`,
   * protocol 2), and the leader's answer comes back as a ForwardResult for `pid`. It takes
   * effect on each member as the member applies the entry, once committed (see
   * #applyConfChanges), as in etcd, and the next change may be proposed once the leader has
   * applied it. `pid` identifies the proposal in the entry, as a command's does.
   */
  proposeConfChange(change: ConfChange, pid = ''): ConfChangeOutcome {
    // One the log cannot carry is refused here, as the leader would: forwarded, it could not be
    // encoded, and its caller waited for an answer that never came.
    if (!isWellFormedConfChange(change)) return { kind: 'refused', reason: 'malformed', leader: this.#role === 'leader' ? this.id : this.#leader };
    if (this.#role === 'leader' || this.#leader === null || pid === '') return this.#leaderConfChange(change, pid);
    this.#send({ type: 'conf-propose', from: this.id, to: this.#leader, term: this.#term, pid, change });
    return { kind: 'forwarded', leader: this.#leader };
  }

  /** Appends `change` on the leader, or says why not: a change is never forwarded twice. */
  #leaderConfChange(change: ConfChange, pid: string): ConfChangeOutcome {
    const refused = (reason: ConfChangeRefusal): ConfChangeOutcome => ({ kind: 'refused', reason, leader: this.#role === 'leader' ? this.id : this.#leader });
    if (this.#role !== 'leader') return refused('not-leader');
    if (this.#transferee !== null) return { kind: 'refused', reason: 'transferring', leader: this.#transferee };
    if (this.log.term(this.log.committed) !== this.#term) return refused('not-committed-in-term');
    const problem = this.#membership.refusal(change, this.log);
    if (problem !== null) return refused(problem);
    const data = encodeConfChange(change);
    if (!this.#replication.admits(data.byteLength)) return refused('backpressure');
    if (this.log.lastIndex() + 1 > MAX_INDEX) return refused('backpressure');
    const index = this.log.lastIndex() + 1;
    this.#replication.appended(data.byteLength);
    this.log.append([{ index, term: this.#term, type: EntryType.ConfChange, data, pid }]);
    this.#membership.pendingConfIndex = index;
    this.#appendsPending = true;
    return { kind: 'appended', index, term: this.#term };
  }

  /** A member forwarded a change: the leader proposes it and answers where it went, or why not. */
  #handleConfPropose(m: ConfProposeMessage): void {
    const outcome = this.#leaderConfChange(m.change, m.pid);
    const appended = outcome.kind === 'appended';
    const reason = outcome.kind === 'refused' ? outcome.reason : null;
    const leader = outcome.kind === 'refused' ? outcome.leader : this.id;
    this.#send({ type: 'conf-propose-resp', from: this.id, to: m.from, term: this.#term, pid: m.pid, index: appended ? outcome.index : 0, reason, leader });
  }

  /**
   * Asks for a linearizable read point. The answer arrives as a ReadState with this `ctx`:
   * once the state machine has applied its index, a read reflects every write acknowledged
   * before the call. Returns false when no leader is known (the caller fails fast).
   */
  readIndex(ctx: number): boolean {
    if (this.#role === 'leader') {
      this.#leaderReadIndex(this.id, ctx);
      return true;
    }
    if (this.#leader === null) return false;
    this.#send({ type: 'read-index', from: this.id, to: this.#leader, term: this.#term, ctx });
    return true;
  }

  /**
   * Hands leadership to `to` (or the most up-to-date reachable follower): catches it up, then
   * tells it to campaign at once. Returns the target, or null if there is none.
   */
  transferLeadership(to?: NodeId): NodeId | null {
    if (this.#role !== 'leader') return null;
    const target = to ?? this.#replication.bestTransferTarget();
    // Never to a learner or a non-member: it could not be elected.
    if (target === null || target === this.id || !this.#replication.tracks(target) || !isVoter(this.#membership.conf, target)) return null;
    this.#transferee = target;
    this.#electionElapsed = 0;
    if (this.#replication.matchOf(target) === this.log.lastIndex()) this.#send({ type: 'timeout-now', from: this.id, to: target, term: this.#term });
    else this.#replication.sendAppend(target);
    return target;
  }

  /**
   * Takes one message from a peer. Messages from non-members are ignored but for a leader's
   * (see acceptsFromNonMember in admission.ts), and vote requests from any member but a voter,
   * unless its log is ahead of ours (see #takesVoteRequest).
   */
  step(m: Message): void {
    if (m.to !== this.id || m.from === this.id) return;
    // Checked before anything is adopted from it, its term above all (see bounds.ts).
    if (!messageWithinBounds(m)) {
      this.protocolViolations++;
      return;
    }
    const conf = this.#membership.conf;
    const isVote = m.type === 'prevote' || m.type === 'vote';
    if (isVote ? !this.#takesVoteRequest(m) : !isMember(conf, m.from) && !acceptsFromNonMember(m, this.#follows())) {
      this.fromNonMembers++;
      return;
    }
    if (m.term > this.#term) {
      if (!this.#stepHigherTerm(m)) return;
    } else if (m.term < this.#term) {
      const reply = lowerTermReply(m, this.#follows());
      if (reply !== null) this.#send(reply);
      return;
    }
    if (this.#role === 'leader') this.#replication.heardFrom(m.from);
    switch (m.type) {
      case 'prevote':
      case 'vote':
        this.#handleVoteRequest(m);
        return;
      case 'prevote-resp':
      case 'vote-resp':
        this.#handleVoteResponse(m.type, m.from, !m.reject);
        return;
      case 'append':
        if (this.#followLeader(m.from)) this.#send(takeAppend(this.log, m, { id: this.id, term: this.#term }));
        return;
      case 'heartbeat':
        this.#handleHeartbeat(m);
        return;
      case 'append-resp':
        if (this.#role === 'leader') this.#replication.handleAppendResponse(m);
        return;
      case 'heartbeat-resp':
        if (this.#role === 'leader') this.#replication.handleHeartbeatResponse(m);
        return;
      case 'timeout-now':
        this.#handleTimeoutNow();
        return;
      case 'propose':
        this.#handlePropose(m);
        return;
      case 'propose-resp':
        this.#handleProposeResponse(m.pids, m.reject ? null : m.index, m.term, m.leader);
        return;
      case 'read-index':
        this.#handleReadIndex(m);
        return;
      case 'read-index-resp':
        this.#out.readState({ ctx: m.ctx, index: m.reject ? 0 : m.index });
        return;
      case 'snapshot':
        this.#handleSnapshot(m);
        return;
      case 'conf-propose':
        this.#handleConfPropose(m);
        return;
      case 'conf-propose-resp':
        this.#out.forwardResult(m.reason === null && m.index > 0 ? { pid: m.pid, accepted: true, index: m.index, term: m.term } : { pid: m.pid, accepted: false, leader: m.leader, reason: m.reason ?? 'not-leader' });
        return;
    }
  }

  /** What admission.ts's rules read of this member. */
  #follows(): Follows {
    return { id: this.id, term: this.#term, leader: this.#leader, inLease: this.#leader !== null && this.#electionElapsed < this.#electionTicks };
  }

  /** Returns whether the message should go on to the role's handler. */
  #stepHigherTerm(m: Message): boolean {
    if (voteIgnored(m, this.#follows())) return false;
    // A pre-vote is asked at term + 1 without the asker's term changing; granting or hearing of
    // a granted pre-vote must not move ours, or pre-votes would disrupt exactly as votes do.
    if (m.type === 'prevote') return true;
    if (m.type === 'prevote-resp' && !m.reject) return true;
    this.#becomeFollower(m.term, leaderOf(m));
    return true;
  }

  // ---- elections ---------------------------------------------------------------------------

  /**
   * Whether this member may start an election: the term it would campaign at can be held (see
   * canHoldTerm), and its log has room for the no-op it would append as leader. Both hold for
   * centuries of honest work; past them it stays a follower rather than send what its peers
   * would refuse.
   */
  #canCampaign(): boolean {
    return canHoldTerm(this.#term + 1) && this.log.lastIndex() < MAX_INDEX;
  }

  #preCampaign(): void {
    if (!this.#canCampaign()) return;
    this.#role = 'precandidate';
    this.#leader = null;
    this.#votes = new Map([[this.id, true]]);
    this.#transferee = null;
    this.#resetElectionTimeout();
    if (this.#checkElection('prevote-resp')) return;
    for (const peer of this.#membership.conf.voters) {
      if (peer === this.id) continue;
      this.#send({ type: 'prevote', from: this.id, to: peer, term: this.#term + 1, lastIndex: this.log.lastIndex(), lastTerm: this.log.lastTerm() });
    }
  }

  #campaign(transfer: boolean): void {
    this.#role = 'candidate';
    this.#term += 1;
    this.#vote = this.id;
    this.#leader = null;
    this.#votes = new Map([[this.id, true]]);
    this.#transferee = null;
    this.#electionElapsed = 0;
    this.#resetElectionTimeout();
    if (this.#checkElection('vote-resp')) return;
    for (const peer of this.#membership.conf.voters) {
      if (peer === this.id) continue;
      this.#send({ type: 'vote', from: this.id, to: peer, term: this.#term, lastIndex: this.log.lastIndex(), lastTerm: this.log.lastTerm(), transfer });
    }
  }

  /**
   * Whether a vote request is taken at all (before its term, the lease or the vote are looked
   * at). From a voter of the configuration held or of the latest one in the log
   * (Membership.latestInLog), always: a learner never campaigns, and a removed member is in
   * neither once its removal is applied, so neither can make anyone adopt its term. From anyone
   * else, only when its log holds more than ours: a member that was down while the configuration
   * moved on holds an old one, and must still elect the voter that can bring it up to date, or
   * the last voters can wait on each other for ever (etcd checks no membership on a vote
   * request). Voting for an asker outside the configuration is safe, as any vote is, once a
   * term, to a log at least as up to date; and a removed member's log is never ahead of a voter
   * that committed anything without it.
   *
   * What such an asker claims of its log cannot be checked, and anyone holding the cluster
   * secret can ask: so from outside the voters, a request is not taken while this member hears
   * its leader (the lease, a leadership transfer's too: no leader of this member asked for one
   * to an asker it does not know), nor from a term more than MAX_OUTSIDE_TERM_LEAD ahead of its
   * own, which a stranger would push every member to the last term it may hold, where none
   * could campaign again.
   */
  #takesVoteRequest(m: PreVoteMessage | VoteMessage): boolean {
    if (isVoter(this.#membership.conf, m.from) || isVoter(this.#membership.latestInLog(this.log), m.from)) return true;
    if (this.#follows().inLease || m.term > this.#term + MAX_OUTSIDE_TERM_LEAD) return false;
    return this.log.isBehind(m.lastIndex, m.lastTerm);
  }

  #handleVoteRequest(m: PreVoteMessage | VoteMessage): void {
    const prevote = m.type === 'prevote';
    // For a pre-vote at a higher term we may have voted or know a leader in our own term; what
    // matters is that we would vote in the next term, which the lease check above settled.
    const canVote = this.#vote === m.from || (this.#vote === null && this.#leader === null) || (prevote && m.term > this.#term);
    const grant = canVote && this.log.isUpToDate(m.lastIndex, m.lastTerm);
    const type = prevote ? 'prevote-resp' : 'vote-resp';
    if (grant) {
      if (!prevote) {
        this.#vote = m.from;
        this.#electionElapsed = 0;
      }
      // The grant carries the asked term so that the asker counts it for that election.
      this.#send({ type, from: this.id, to: m.from, term: m.term, reject: false });
    } else {
      this.#send({ type, from: this.id, to: m.from, term: this.#term, reject: true });
    }
  }

  #handleVoteResponse(type: 'prevote-resp' | 'vote-resp', from: NodeId, granted: boolean): void {
    const expected = this.#role === 'precandidate' ? 'prevote-resp' : this.#role === 'candidate' ? 'vote-resp' : null;
    if (type !== expected) return;
    if (!this.#votes.has(from)) this.#votes.set(from, granted);
    this.#checkElection(type);
  }

  /** Returns whether the election is decided. */
  #checkElection(type: 'prevote-resp' | 'vote-resp'): boolean {
    // Only the votes of the current configuration's voters count, whoever answered.
    const result = tallyVotes(this.#membership.conf.voters, this.#votes);
    if (result === 'won') {
      if (type === 'prevote-resp') this.#campaign(false);
      else this.#becomeLeader();
      return true;
    }
    if (result === 'lost') {
      this.#becomeFollower(this.#term, null);
      return true;
    }
    return false;
  }

  #handleTimeoutNow(): void {
    // The leader chose us as its successor: skip the pre-vote and the lease so the election
    // happens now rather than after an election timeout.
    if (this.#role !== 'leader' && this.#membership.promotable && this.#canCampaign()) this.#campaign(true);
  }

  #becomeFollower(term: number, leader: NodeId | null): void {
    // What it appended leaves as it would have at once, in the term it was appended in.
    this.#sendPendingAppends();
    if (term !== this.#term) {
      this.#term = term;
      this.#vote = null;
    }
    const wasLeader = this.#role === 'leader';
    this.#role = 'follower';
    this.#leader = leader;
    this.#electionElapsed = 0;
    this.#heartbeatElapsed = 0;
    this.#transferee = null;
    this.#replication.reset();
    this.#resetElectionTimeout();
    if (wasLeader) for (const read of this.#reads.takeAll()) this.#respondRead(read.from, read.ctx, 0);
  }

  #becomeLeader(): void {
    this.#role = 'leader';
    this.#leader = this.id;
    this.#electionElapsed = 0;
    this.#heartbeatElapsed = 0;
    this.#transferee = null;
    this.#replication.reset();
    const next = this.log.lastIndex() + 1;
    for (const peer of membersOf(this.#membership.conf)) this.#replication.track(peer, next);
    // Our own entries count once they are durable; advance() moves this forward.
    this.#replication.persisted(this.log.stable, true);
    // A change appended by an earlier leader may be in our log, not yet applied: no new one
    // until the log is applied up to our no-op, which is then committed too (etcd does the same).
    this.#membership.pendingConfIndex = next;
    // A no-op of our term lets us commit (and so apply) everything earlier (paper, 5.4.2),
    // and makes linearizable reads possible (paper, section 8).
    this.log.append([{ index: next, term: this.#term, type: EntryType.Noop, data: new Uint8Array(0), pid: '' }]);
    this.#replication.broadcastAppend();
    this.#replication.maybeCommit();
  }

  #resetElectionTimeout(): void {
    this.#randomizedElectionTimeout = this.#electionTicks + this.#random.int(0, this.#electionTicks - 1);
  }

  /** After a commit on this leader: reads deferred until an entry of its term committed go on now. */
  #releaseDeferredReads(): void {
    if (this.#reads.deferredCount > 0 && this.log.term(this.log.committed) === this.#term) {
      for (const r of this.#reads.takeDeferred()) this.#leaderReadIndex(r.from, r.ctx);
    }
  }

  #handlePropose(m: ProposeMessage): void {
    const pids = m.proposals.map((p) => p.pid);
    if (this.#role !== 'leader' || this.#transferee !== null) {
      const leader = this.#role === 'leader' ? this.#transferee : this.#leader;
      this.#send({ type: 'propose-resp', from: this.id, to: m.from, term: this.#term, index: 0, pids, reject: true, leader });
      return;
    }
    const index = this.#appendProposals(m.proposals);
    this.#send({ type: 'propose-resp', from: this.id, to: m.from, term: this.#term, index, pids, reject: index === 0, leader: this.id });
  }

  #handleProposeResponse(pids: readonly string[], index: number | null, term: number, leader: NodeId | null): void {
    pids.forEach((pid, i) => {
      this.#out.forwardResult(index === null ? { pid, accepted: false, leader } : { pid, accepted: true, index: index + i, term });
    });
  }

  // ---- linearizable reads ------------------------------------------------------------------

  #leaderReadIndex(from: NodeId, ctx: number): void {
    if (this.log.term(this.log.committed) !== this.#term) {
      // Until an entry of our term commits we do not know the true commit index.
      if (this.#reads.full) this.#respondRead(from, ctx, 0);
      else this.#reads.defer({ from, ctx });
      return;
    }
    if (this.#membership.conf.voters.length === 1) {
      // The only voter (a leader always is one): no one else need confirm.
      this.#respondRead(from, ctx, this.log.committed);
      return;
    }
    if (this.#reads.full) {
      this.#respondRead(from, ctx, 0);
      return;
    }
    const seq = this.#reads.add({ from, ctx }, this.log.committed, this.id);
    // A heartbeat round confirms that no newer leader exists as of now.
    this.#replication.broadcastHeartbeat(seq);
  }

  #ackReads(peer: NodeId, seq: number): void {
    // A learner's acknowledgement is recorded and never counted: only voters elect a rival leader.
    for (const read of this.#reads.ack(peer, seq, (acks) => hasQuorum(this.#membership.conf.voters, acks))) this.#respondRead(read.from, read.ctx, read.index);
  }

  #respondRead(to: NodeId, ctx: number, index: number): void {
    if (to === this.id) this.#out.readState({ ctx, index });
    else this.#send({ type: 'read-index-resp', from: this.id, to, term: this.#term, ctx, index, reject: index === 0 });
  }

  #handleReadIndex(m: ReadIndexMessage): void {
    if (this.#role !== 'leader') {
      this.#send({ type: 'read-index-resp', from: this.id, to: m.from, term: this.#term, ctx: m.ctx, index: 0, reject: true });
      return;
    }
    this.#leaderReadIndex(m.from, m.ctx);
  }

  // ---- replication: follower ---------------------------------------------------------------

  #handleSnapshot(m: SnapshotMessage): void {
    if (!this.#followLeader(m.from)) return;
    const s = m.snapshot;
    const outcome = takeSnapshot(this.log, s);
    if (outcome === 'malformed') {
      this.protocolViolations++;
      return;
    }
    if (outcome === 'restored') {
      this.#snapshot = { ...s, conf: s.conf ?? this.#membership.founding };
      this.#pendingRestore = this.#snapshot;
      // Every entry up to it counts as applied: its configuration is this member's now.
      this.#switchConfiguration(this.#snapshot.conf as Configuration);
    }
    // Sent once the snapshot is durable: a follower's answers wait for its writes (messagesAfterWrite).
    // A stale one (a duplicate, or we caught up meanwhile) is answered with how far we are.
    this.#send(acknowledge({ id: this.id, term: this.#term }, m.from, outcome === 'stale' ? this.log.committed : s.index));
  }

  #handleHeartbeat(m: HeartbeatMessage): void {
    if (!this.#followLeader(m.from)) return;
    this.#send({ type: 'heartbeat-resp', from: this.id, to: m.from, term: this.#term, readCtx: m.readCtx });
    const lost = takeHeartbeat(this.log, m, { id: this.id, term: this.#term });
    if (lost !== null) this.#send(lost);
  }

  /** Returns false when the message claims a second leader for our own term: it is ignored. */
  #followLeader(leader: NodeId): boolean {
    if (this.#role === 'leader') {
      // Two leaders in one term cannot happen between correct members; a corrupt or hostile
      // message must not make us give up a leadership the majority granted.
      this.protocolViolations++;
      return false;
    }
    if (this.#role !== 'follower') this.#becomeFollower(this.#term, leader);
    this.#leader = leader;
    this.#electionElapsed = 0;
    return true;
  }

  // ---- configuration -----------------------------------------------------------------------

  /**
   * Applies the conf changes among committed entries as they are handed out for applying: the
   * node does it itself, where etcd leaves it to the application (ApplyConfChange), since the
   * driver has nothing to decide; the Ready says what the configuration became (`conf`). A
   * change takes effect once committed, never once appended, on every member alike; a restarted
   * member hands its committed entries out again and so applies them again.
   */
  #applyConfChanges(committed: readonly Entry[]): void {
    for (const e of committed) if (e.type === EntryType.ConfChange) this.#switchConfiguration(changedBy(this.#membership.conf, e));
  }

  /**
   * Makes `conf` this member's configuration. A leader starts replicating to new members and
   * stops for removed ones; commits what the new quorum allows; drops a transfer to a member
   * no longer a voter. A leader removed hands over and steps down (the thesis, section 4.2.2):
   * it has replicated the change (it is committed), it tells the voters so with a heartbeat
   * round, asks the most up-to-date one to campaign at once, and becomes a follower that never
   * campaigns. A candidate removed gives up its election.
   */
  #switchConfiguration(conf: Configuration): void {
    this.#membership.switchTo(conf);
    const replication = this.#replication;
    if (this.#role !== 'leader') {
      if (this.#role !== 'follower' && !this.#membership.promotable) this.#becomeFollower(this.#term, null);
      return;
    }
    for (const peer of this.#membership.peers) if (!replication.tracks(peer)) replication.track(peer, this.log.lastIndex() + 1);
    for (const [peer, match] of replication.tracked()) {
      if (peer === this.id || isMember(conf, peer)) continue;
      this.#sendFarewell(peer, match);
      replication.untrack(peer);
    }
    if (this.#transferee !== null && !isVoter(conf, this.#transferee)) this.#transferee = null;
    if (!this.#membership.promotable) {
      this.#replication.broadcastHeartbeat(0);
      const successor = replication.bestTransferTarget();
      if (successor !== null && replication.matchOf(successor) === this.log.lastIndex()) {
        this.#send({ type: 'timeout-now', from: this.id, to: successor, term: this.#term });
      }
      this.#becomeFollower(this.#term, null);
      return;
    }
    if (replication.maybeCommit()) replication.broadcastAppend();
    else for (const peer of this.#membership.peers) replication.sendAppend(peer);
  }

  /**
   * The last message to a member removed, which tells it that its removal committed, so that it
   * knows it was removed and stops (and stops campaigning): a heartbeat when it holds every
   * committed entry, else an append of the committed entries it lacks (within one append's
   * bounds), from its match index, which it holds. A member removed while it lacked the change
   * (the others committed it first, as when it asks to leave) would otherwise never learn of it.
   * One too far behind for one append, or behind the log kept, campaigns in vain (its vote
   * requests are ignored, see step).
   */
  #sendFarewell(peer: NodeId, match: number): void {
    const committed = this.log.committed;
    const prevTerm = this.log.term(match);
    if (match >= committed || prevTerm === undefined) {
      this.#send({ type: 'heartbeat', from: this.id, to: peer, term: this.#term, commit: Math.min(match, committed), readCtx: 0 });
      return;
    }
    const entries = this.log.slice(match + 1, committed + 1, this.#limits.maxBytesPerAppend, this.#limits.maxEntriesPerAppend);
    this.#send({ type: 'append', from: this.id, to: peer, term: this.#term, prevIndex: match, prevTerm, entries, commit: committed });
  }

  // ---- output ------------------------------------------------------------------------------

  #send(m: Message): void {
    this.#out.send(m);
  }

  /** Sends the appends of the entries appended since the last (see #appendsPending). */
  #sendPendingAppends(): void {
    if (!this.#appendsPending) return;
    this.#appendsPending = false;
    if (this.#role === 'leader') this.#replication.broadcastAppend(true);
  }

  hasReady(): boolean {
    return (
      this.#pendingRestore !== null ||
      this.#appendsPending ||
      this.log.hasUnstable() ||
      this.log.hasCommittedToApply(this.#applyCeiling) ||
      this.#membership.changed ||
      this.#out.hasEffects(this.hardState(), this.softState())
    );
  }

  /**
   * Collects the pending effects, to perform in the order ready.ts gives. Then call
   * `advance(ready)` once they are done, or, as the driver does, `advanceApplied(ready)` once
   * applied, and `writeDurable(ready)` then `advancePersisted(ready)` once its write is durable.
   */
  ready(): Ready {
    this.#sendPendingAppends();
    // Whether the messages collected are a leader's: taken before the conf changes apply, since
    // a leader that applies its own removal steps down there, and its farewell (the commit of
    // its removal, and TimeoutNow) is still a leader's message of a durable term, which leaves
    // before the write (ready.ts). Held for the write, it never left: the driver stops a
    // removed member once its Ready is handed out, and the voters, never told that the removal
    // committed, kept needing the leader's vote among theirs.
    const leading = this.#role === 'leader';
    // First, as it may change the role and send messages: the conf changes among the entries
    // handed out for applying take effect now (see #applyConfChanges).
    const committed = this.log.takeCommitted(this.#limits.maxApplyBatch, this.#applyCeiling);
    this.#applyConfChanges(committed);
    const ready = this.#out.take({
      hardState: this.hardState(),
      softState: this.softState(),
      snapshot: this.#pendingRestore,
      entries: this.log.takeUnstable(),
      committed,
      conf: this.#membership.takeChanged(),
      leading,
    });
    this.#pendingRestore = null;
    return ready;
  }

  /** Acknowledges a whole Ready: its write is durable and its committed entries applied. */
  advance(ready: Ready): void {
    this.advanceApplied(ready);
    if (ready.mustSync) this.writeDurable(ready);
    this.advancePersisted(ready);
  }

  /**
   * Acknowledges that the write of a Ready that `mustSync` is durable, and every earlier one
   * with it (writes complete in order): its term and vote are durable from now on, so the
   * Readies after it hold back only what they must (see ready.ts). Called as the write
   * completes, before the Ready's held messages are sent and `advancePersisted` is called.
   */
  writeDurable(ready: Ready): void {
    this.#out.writeDurable(ready);
  }

  /** Readies handed out that must be written and are not yet acknowledged durable (`writeDurable`). */
  get writesInFlight(): number {
    return this.#out.writesInFlight;
  }

  /** Acknowledges that a Ready's committed entries were applied. */
  advanceApplied(ready: Ready): void {
    if (ready.snapshot !== null) this.log.appliedTo(ready.snapshot.index);
    const applied = ready.committed.at(-1);
    if (applied !== undefined) this.log.appliedTo(applied.index);
  }

  /**
   * Acknowledges that a Ready's hard state and entries are durable. A leader counts its own
   * copy of an entry towards a majority only from here on.
   */
  advancePersisted(ready: Ready): void {
    if (ready.snapshot !== null) this.log.snapshotStable(ready.snapshot);
    const last = ready.entries.at(-1);
    if (last === undefined || !this.log.stableTo(last.index, last.term)) return;
    this.#compactLog();
    if (this.#role === 'leader') {
      this.#replication.persisted(this.log.stable);
      this.#replication.maybeCommit();
    }
  }
}

