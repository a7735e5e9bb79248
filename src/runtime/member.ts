import type { ConfChange } from '../raft/conf-change.js';
import type { RaftNode } from '../raft/node.js';
import type { SoftState } from '../raft/ready.js';
import { isMember } from '../raft/configuration.js';
import { changedBy } from '../raft/membership.js';
import { EntryType, type Configuration, type Entry, type NodeId } from '../raft/types.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import type { LogStorage } from '../storage/log-storage.js';
import type { Clock, Timers } from '../time/clock.js';
import type { Transport } from '../transport/transport.js';
import { AppendedDecodings } from './appended-decodings.js';
import { encodeCommand } from './commands.js';
import { appendedEmits } from './fanout/appended-emits.js';
import { COMPACTION_DEFAULTS, type CompactionOptions } from './compaction.js';
import { memberBounds, type BoundRow } from './member-bounds.js';
import { RaftDriver } from './driver.js';
import { memberStateMachine, type MemberStateMachineHooks } from './member-state-machine.js';
import { VERSION_STEADY_MS, VersionKeeper } from './version-keeper.js';
import { VersionWaits } from './version-waits.js';
import { BindingKeeper } from './binding-keeper.js';
import { ClusterVersionState } from '../version/cluster-version.js';
import { BATCH_VERSION, FANOUT_VERSION, FIRST_CLUSTER_VERSION, FORFEIT_VERSION, MEMBERSHIP_VERSION, OPERATIONS_VERSION, protocolOf, SUPPORTED, type VersionSupport } from '../version/versions.js';
import { ConfigurationKeeper } from './configuration-keeper.js';
import { leaveConfiguration } from './leave.js';
import { LEAVE_PID_SUFFIX, membershipEventOf, type MembershipEvent } from './membership-events.js';
import { RemovedError, RunAbortedError } from '../errors.js';
import { FanoutState, type FanoutApplyResult } from '../fanout/state.js';
import type { FanoutCommand } from '../fanout/command.js';
import { FanoutRuntime, type FanoutEvent } from './fanout/fanout-runtime.js';
import { checkTopic } from '../fanout/items.js';
import { MembershipKeeper } from './membership-keeper.js';
import { PROMOTE_STABLE_MS } from './membership-decide.js';
import { heartbeatIntervalMs, MEMBER_DEFAULTS } from './member-settings.js';
import { leaseMs } from './lease.js';
import { MemberReach } from './member-reach.js';
import type { ProposalResult } from './pending-requests.js';
import type { RunRecord } from './scheduler/job-types.js';
import { LoopBlocks, type LoopBlocked } from './loop-blocks.js';
import { waitUntil } from './scheduler/handover.js';
import { SchedulerRuntime, type SchedulerRuntimeOptions } from './scheduler/scheduler-runtime.js';
import type { Incarnation } from './own-removal.js';

/** Bounds and intervals of one member, resolved from the cluster's options. */
export interface MemberTiming {
  readonly tickMs: number;
  readonly heartbeatTicks: number;
  readonly electionTimeoutMs: number;
  readonly requestTimeoutMs: number;
  readonly maxPendingProposals: number;
  readonly maxProposalBatch: number;
  readonly maxProposalBatchBytes: number;
  readonly maxPendingReads: number;
  readonly planIntervalMs: number;
  readonly lookaheadMs: number;
  readonly maxClaimsPerPlan: number;
  readonly reassignHorizonMs: number;
  /** A member whose clock is off the cluster's time by more than this is given no work. */
  readonly maxClockSkewMs: number;
  /** Runs at once on this member; more wait, by priority. @default no limit */
  readonly maxConcurrent?: number;
  /** Voters the leader promotes learners up to (option `voters`). @default MEMBER_DEFAULTS.voters */
  readonly voters?: number;
  /** A member silent this long is removed by the leader (option `deadMemberAfterMs`). @default MEMBER_DEFAULTS.deadMemberAfterMs */
  readonly deadMemberAfterMs?: number;
  /**
   * How long a learner must have been live and caught up before the leader promotes it. Not an
   * option of Cluster: tests of real processes shorten it (test-timing.ts). @default PROMOTE_STABLE_MS
   */
  readonly promoteStableMs?: number;
  /**
   * How long a member goes without a leader before it asks whether it was removed (the Cluster's
   * removal-probe.ts). Not an option of Cluster, as promoteStableMs. @default LEADERLESS_BEFORE_PROBE_MS (removal-probe.ts)
   */
  readonly leaderlessBeforeProbeMs?: number;
}

export interface MemberParts {
  readonly self: NodeId;
  /** The Raft node, built with the founding voters: its configuration is where this member's starts. */
  readonly node: RaftNode;
  /** Which member this process is beyond its id: see DriverOptions.incarnation. @default its id alone */
  readonly incarnation?: Incarnation;
  readonly storage: LogStorage;
  readonly transport: Transport;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly timing: MemberTiming;
  /** Tells apart this process's proposals from a previous incarnation's. */
  readonly bootId: string;
  /** @default COMPACTION_DEFAULTS */
  readonly compaction?: CompactionOptions;
  /** Bytes of snapshot data per message (the simulator makes them small). @default SNAPSHOT_CHUNK_BYTES */
  readonly snapshotChunkBytes?: number;
  /** An application entry (`cluster.propose`) applied here, in log order. */
  readonly onUserEntry?: (entry: Entry, data: Uint8Array) => void;
  /** Whether onUserEntry wants entries now; when not, they are not decoded. @default true */
  readonly wantsUserEntries?: () => boolean;
  /** Every entry applied here, whatever it holds (the simulator's checkers watch them). */
  readonly onApplied?: (entry: Entry) => void;
  /** A leader's snapshot replaced the state here: entries up to `index` will not be applied one by one. */
  readonly onSnapshotInstalled?: (index: number) => void;
  /** A change of the configuration applied here (not those a snapshot covers). */
  readonly onMembershipEvent?: (event: MembershipEvent) => void;
  readonly onSoftState?: (state: SoftState) => void;
  readonly onFatal?: (error: unknown) => void;
  readonly onRunStart?: SchedulerRuntimeOptions['onRunStart'];
  readonly onRun?: (run: RunRecord) => void;
  /** This member's event loop was held for its lease or longer, by a handler or else (loop-blocks.ts). */
  readonly onBlocked?: (blocked: LoopBlocked) => void;
  /** Fan-out's events on this member (an item run here failed, a batch emitted here settled). */
  readonly onFanoutEvent?: (event: FanoutEvent) => void;
  /** See RequestOptions.onProposalApplied. */
  readonly onProposalApplied?: (durationMs: number) => void;
  /** A fan-out command applied here, with its result (the simulator's checkers watch them). */
  readonly onFanoutApplied?: (index: number, command: FanoutCommand, result: FanoutApplyResult) => void;
  /** A scheduler command applied here, with its result and the cluster version it applied under (the simulator's checkers watch them). */
  readonly onSchedulerApplied?: (index: number, command: SchedulerCommand, result: unknown, version: number) => void;
  /** A cluster command applied here (a version announced or raised), with its result. */
  readonly onClusterApplied?: MemberStateMachineHooks['onClusterApplied'];
  /** What this member reads: tests build "the next release" with more. @default SUPPORTED */
  readonly versions?: VersionSupport;
  /**
   * The cluster version of the stored log, its uncommitted activations included
   * (stored-version.ts, storedWireVersion): the wire protocol it needs is in force from the
   * start, before the log's activation is applied again.
   * @default FIRST_CLUSTER_VERSION
   */
  readonly storedVersion?: number;
}

/**
 * One member's moving parts, assembled the same way in production (`Cluster`, over libp2p and
 * level) and in the simulator (over a simulated network and disk): the Raft driver, the
 * scheduler runtime, and the rules that connect them (which entries go where, who holds a
 * lease, who may be given work). Keeping this in one place is what makes simulations honest.
 */
export class Member {
  /** The fan-out entries this member decoded as it appended them as leader, for their apply. */
  readonly appendedDecodings = new AppendedDecodings();
  readonly driver: RaftDriver;
  readonly scheduler: SchedulerRuntime;
  /** The cluster version in force and what each member reads, as applied here. */
  readonly versions: ClusterVersionState;
  /** The calls waiting for a cluster version not yet in force (version-waits.ts). */
  readonly versionWaits: VersionWaits;
  readonly versionKeeper: VersionKeeper;
  /** On the leader, binds members to their peer ids (trust on first use). */
  readonly bindingKeeper: BindingKeeper;
  /** The configuration as applied here: the voters, the learners, the transport's peers. */
  readonly configuration: ConfigurationKeeper;
  /** On the leader: promotes learners, removes dead members (membership-keeper.ts). */
  readonly membershipKeeper: MembershipKeeper;
  /** Entries applied here that every member skips (see decodeEntry), by reason. */
  readonly skippedEntries = { malformed: 0, inactive: 0 };
  readonly #p: MemberParts;
  /** Which members this one, as leader, may count on (member-reach.ts). */
  readonly #reach: MemberReach;
  /** While this member led, the latest time by which it had heard from a majority (monotonic ms). */
  #ledAt: number | undefined;
  /**
   * When the peers were last heard from, earliest first: refilled by each look at a leader's
   * lease, which runs as every message comes in while runs go on (and as each fan-out item is
   * leased here), so that it allocates nothing. A typed array, sorted without a comparator:
   * an Array's sort with one allocates its work space on every call, about a kilobyte, which
   * made the look at the lease one of a leader's main allocators under fan-out.
   */
  #peersHeard = new Float64Array(0);
  /** The wire protocol in force (versions.ts): from 2, a leader's heartbeats say when it heard this member (holdsLease). */
  #protocol = 1;
  /** Set once this member asked to leave the configuration (see leave). */
  #leaving = false;
  /**
   * The configuration as of the last entry applied here: its snapshot's, then each conf change
   * as it applies. The state machine's decisions read it (whose announcement counts), so that
   * every member decides alike at each index. The keeper's is the one the node handed out last,
   * ahead of it while a batch of entries applies: a removal later in the batch is in force there
   * before the entries before it apply (a member that restarted, or caught up, applies many).
   */
  #appliedConf: Configuration;
  /** Fan-out's replicated state (issue 19), applied and snapshotted from cluster version 3. */
  readonly fanout = new FanoutState();
  /** Fan-out's delivery (on the leader) and consumption (here), which the Cluster exposes (cluster-fanout.ts). */
  readonly fanoutRuntime: FanoutRuntime;

  constructor(parts: MemberParts) {
    this.#p = parts;
    const t = parts.timing;
    this.configuration = new ConfigurationKeeper({ self: parts.self, conf: parts.node.configuration, transport: parts.transport, timers: parts.timers, removeAfterMs: t.electionTimeoutMs });
    const configuration = this.configuration;
    this.#appliedConf = parts.node.configuration;
    this.versions = new ClusterVersionState(parts.versions ?? SUPPORTED, (id) => isMember(this.#appliedConf, id));
    this.versionWaits = new VersionWaits({ versions: this.versions, members: () => configuration.members, timers: parts.timers, timeoutMs: t.requestTimeoutMs });
    // Tells of the times this member's loop held past its lease (loop-blocks.ts); none where nobody listens (the simulator).
    const loopBlocks = parts.onBlocked === undefined ? null : new LoopBlocks(leaseMs(t.electionTimeoutMs), parts.onBlocked);
    const stateMachine = memberStateMachine(
      () => this.scheduler,
      this.versions,
      {
      now: () => parts.timers.now(),
      appended: this.appendedDecodings,
      onUserEntry: parts.onUserEntry,
      wantsUserEntries: parts.wantsUserEntries,
      onSchedulerApplied: parts.onSchedulerApplied,
      onClusterApplied: (index, command, result) => {
        // The wire protocol of a version is in force on this member once it applies it.
        if (command.type === 'activate' && result === 'applied') this.#versionInForce(command.to);
        this.versionWaits.changed();
        parts.onClusterApplied?.(index, command, result);
      },
      onSkipped: (_index, reason) => this.skippedEntries[reason]++,
        onFanoutApplied: (index, command, result, pid) => {
          this.fanoutRuntime.applied(index, command, result, pid.startsWith(`${parts.bootId}.`));
          parts.onFanoutApplied?.(index, command, result);
        },
      },
      this.fanout,
    );
    this.driver = new RaftDriver({
      node: parts.node,
      ...(loopBlocks === null ? {} : { onTickLate: (lateMs: number) => loopBlocks.tickLate(lateMs) }),
      ...(parts.incarnation === undefined ? {} : { incarnation: parts.incarnation }),
      storage: parts.storage,
      transport: parts.transport,
      stateMachine,
      clock: parts.clock,
      timers: parts.timers,
      tickMs: t.tickMs,
      requestTimeoutMs: t.requestTimeoutMs,
      maxPendingProposals: t.maxPendingProposals,
      maxProposalBatch: t.maxProposalBatch,
      maxProposalBatchBytes: t.maxProposalBatchBytes,
      maxPendingReads: t.maxPendingReads,
      leaderSilenceMs: t.electionTimeoutMs,
      leaseMs: leaseMs(t.electionTimeoutMs),
      bootId: parts.bootId,
      onProposalApplied: parts.onProposalApplied,
      compaction: parts.compaction,
      snapshotChunkBytes: parts.snapshotChunkBytes,
      onApplied: (entry) => {
        const event = membershipEventOf(entry);
        if (event !== null) parts.onMembershipEvent?.(event);
        if (entry.type === EntryType.ConfChange) this.#appliedConf = changedBy(this.#appliedConf, entry);
        parts.onApplied?.(entry);
      },
      // A leader leases an emit's items as it appends the emit, so that the lease commits with it.
      onLeaderAppended: (from, to) => this.fanoutRuntime.delivery.appended(from, to, appendedEmits(parts.node.log, from, to, (bytes) => this.#fanoutCommandOf(bytes))),
      onSnapshotInstalled: (index) => {
        this.#appliedConf = parts.node.latestSnapshot.conf ?? this.#appliedConf;
        // A leader's snapshot may bring a version this member never applied an activation of
        // (a joiner, or one far behind): its wire protocol is in force here from now on, or
        // this member, should it lead, could not send the entries of that version.
        this.#versionInForce(Math.max(parts.storedVersion ?? FIRST_CLUSTER_VERSION, this.versions.active));
        this.versionWaits.changed();
        this.fanoutRuntime.restored();
        parts.onSnapshotInstalled?.(index);
      },
      onSoftState: (s) => {
        configuration.follow(s.leader);
        parts.onSoftState?.(s);
      },
      // A member whose lease ran out while its event loop stood still (SIGSTOP, a paused VM, a
      // long stall) learns it before the first message renews it, and aborts its runs: the
      // plan tick that would have noticed runs after the messages waiting when it resumes.
      beforeContact: () => {
        this.scheduler.checkLease();
        this.fanoutRuntime.consumer.checkLease();
      },
      onConfiguration: (conf) => configuration.apply(conf),
      // A member whose driver stopped records nothing more, so it starts no run or item either:
      // a removed member's claims are the cluster's to forfeit, a failed disk could not record
      // an outcome, and the leader leases its items again once it finds the member lost. Nor
      // does it act as the leader its node still says it is: its scheduler's planning and
      // fan-out's delivery ask #leads(), and the keepers, which only propose, stop. A member
      // that asked to leave stops as its removal applies: no failure.
      onFatal: (error) => {
        // Removed, its claims and leases were moved as the leader applied the removal: its runs
        // end now, not when its lease runs out, or a slot would run here and elsewhere at once.
        const abort = error instanceof RemovedError ? new RunAbortedError('stopping', 'this member was removed from the cluster: it stops, and its work goes to the others') : undefined;
        this.scheduler.halt(abort);
        this.fanoutRuntime.consumer.halt(abort);
        this.fanoutRuntime.delivery.stop();
        // Its version can no longer rise: calls waiting for one end now, not at their timeout.
        this.versionWaits.stop('failed');
        this.versionKeeper.stop();
        this.bindingKeeper.stop();
        this.membershipKeeper.stop();
        if (!(this.#leaving && error instanceof RemovedError)) parts.onFatal?.(error);
      },
    });
    const driver = this.driver;
    this.#reach = new MemberReach({ self: parts.self, driver, configuration, transport: parts.transport, timers: parts.timers, timing: t });
    const blocked = loopBlocks === null ? {} : { loopBlocks };
    this.scheduler = new SchedulerRuntime({
      self: parts.self,
      // Slots fire on the cluster's time (the median of the members' clocks), converted to this
      // member's clock: one bad clock, the leader's included, moves no fire time.
      clock: driver.clusterClock(),
      stampClock: driver.stampClock(),
      timers: parts.timers,
      propose: (command: SchedulerCommand) => driver.propose(encodeCommand({ kind: 'scheduler', command })),
      leaderUnreachable: () => driver.leaderUnreachable,
      // A job's ctx.emit: checked whole before anything is proposed, a turn at a time (fanout/encode-items.ts).
      emitItems: async (topic, items, key, origin, stopped) => this.fanoutRuntime.emitItems(checkTopic(topic), items, key, origin, stopped),
      proposeBatch: (commands) => (this.versions.active >= BATCH_VERSION ? driver.propose(encodeCommand({ kind: 'scheduler-batch', commands })) : null),
      operations: {
        require: (feature) => this.versionWaits.whenActive(feature, OPERATIONS_VERSION),
        propose: (command) => driver.propose(encodeCommand({ kind: 'scheduler', command })),
      },
      barrier: () => driver.readBarrier(),
      // A leader plans by the cluster's time, so not before it has learned it: with a bad clock
      // of its own it would claim slots ahead of time or skip them as missed.
      isLeader: () => this.#leads() && driver.clockSynced,
      clockReady: () => driver.clockSynced,
      holdsLease: () => this.holdsLease(),
      peerConnected: (id) => parts.transport.isConnected(id),
      reassignHorizonMs: t.reassignHorizonMs,
      // Live followers answer a new leader's first heartbeat at once; two heartbeat intervals
      // tell the lost from the not-yet-heard.
      reassignGraceMs: 2 * heartbeatIntervalMs(t),
      eligibleMembers: () => this.eligibleMembers(),
      holdingMembers: () => this.holdingMembers(),
      heardSinceLeading: (id) => this.#reach.heardSinceLeading(id),
      heardAgoMs: () => this.#reach.heardAgo(),
      configuredMembers: () => (this.versions.active >= FORFEIT_VERSION ? configuration.members : null),
      clusterVersion: () => this.versions.active,
      planIntervalMs: t.planIntervalMs,
      lookaheadMs: Math.max(t.lookaheadMs, t.electionTimeoutMs),
      maxClaimsPerPlan: t.maxClaimsPerPlan,
      maxConcurrent: t.maxConcurrent,
      onRunStart: parts.onRunStart,
      onRun: parts.onRun,
      ...blocked,
    });
    this.fanoutRuntime = new FanoutRuntime({
      self: parts.self,
      state: this.fanout,
      timers: parts.timers,
      // As the scheduler's planning: by the cluster's time, so not before the leader learned it.
      isLeader: () => this.#leads() && driver.clockSynced && this.versions.active >= FANOUT_VERSION,
      term: () => driver.node.term,
      // The stamp clock: the leader's rate buckets, deadlines and lease stamps, and the stamps of
      // emits and outcomes, do not go back with the small steps of the cluster's time (no timer
      // fires by it).
      clusterNowMs: () => driver.stampClock().now(),
      appliedIndex: () => driver.appliedIndex,
      eligible: (id) => this.eligibleMembers().includes(id),
      configured: (id) => configuration.isMember(id),
      lost: (id) => this.#reach.lost(id),
      holdsLease: () => this.holdsLease(),
      ...blocked,
      onEvent: parts.onFanoutEvent,
      // An emit or a consumer's registration before cluster version 3 waits for it, once, before
      // anything of it is proposed (a run that ended meanwhile then proposes nothing).
      whenActive: () => (this.versions.active >= FANOUT_VERSION ? null : this.versionWaits.whenActive('fan-out', FANOUT_VERSION)),
      propose: async (command) => {
        this.versions.require('fan-out', FANOUT_VERSION);
        // A lease is the plan of this member leading in its term (its rate buckets, its leases
        // in flight): appended by another leader, it would add to that leader's own.
        return driver.propose(encodeCommand({ kind: 'fanout', command }), undefined, command.type === 'lease' ? driver.node.term : undefined);
      },
    });
    this.versionKeeper = new VersionKeeper({
      self: parts.self,
      members: () => configuration.members,
      versions: this.versions,
      driver,
      timers: parts.timers,
      // Live, and not reconnected lately: a member that came back as another process has not
      // told the log what it reads yet (VERSION_STEADY_MS).
      live: (id) => this.#reach.heardLately(id) && this.#p.timers.now() - (driver.contact.lastDisconnect(id) ?? Number.NEGATIVE_INFINITY) >= VERSION_STEADY_MS,
    });
    this.bindingKeeper = new BindingKeeper({
      self: parts.self,
      conf: () => configuration.conf,
      activeVersion: () => this.versions.active,
      driver,
      transport: parts.transport,
      timers: parts.timers,
      live: (id) => this.#reach.heardLately(id),
    });
    this.membershipKeeper = new MembershipKeeper({
      self: parts.self,
      driver,
      configuration,
      versions: this.versions,
      timers: parts.timers,
      live: (id) => this.#reach.heardLately(id),
      targetVoters: t.voters ?? MEMBER_DEFAULTS.voters,
      deadMemberAfterMs: t.deadMemberAfterMs ?? MEMBER_DEFAULTS.deadMemberAfterMs,
      promoteStableMs: t.promoteStableMs ?? PROMOTE_STABLE_MS,
      propose: (change) => this.proposeConfChange(change),
    });
  }

  /**
   * Whether this member leads and its driver still runs: one whose driver stopped (a failure, its
   * removal) keeps the role its node last had, but could record nothing it planned.
   */
  #leads(): boolean {
    return this.driver.fatalError === null && this.driver.node.role === 'leader';
  }

  /**
   * Proposes a command of a cluster version after the first (`feature` names it in the error).
   * @throws VersionNotActiveError, at once, while the cluster runs an older version
   */
  proposeVersioned(feature: string, version: number, command: unknown): Promise<ProposalResult> {
    this.versions.require(feature, version);
    return this.driver.propose(encodeCommand({ kind: 'extension', version, command }));
  }

  /**
   * Proposes a change of the configuration, on the leader or forwarded to it
   * (driver.proposeConfChange), once the cluster runs version 2 ("membership"). `pidSuffix`
   * marks the entry (a leave: LEAVE_PID_SUFFIX).
   * @throws VersionNotActiveError, at once, while the cluster runs version 1
   */
  proposeConfChange(change: ConfChange, pidSuffix = ''): Promise<ProposalResult> {
    this.versions.require('a membership change', MEMBERSHIP_VERSION);
    return this.driver.proposeConfChange(change, `${change.type} ${change.id}`, pidSuffix);
  }

  /** Starts ticking and planning; the transport must be started already. */
  start(): void {
    const t = this.#p.transport;
    this.#protocol = protocolOf(this.#p.storedVersion ?? FIRST_CLUSTER_VERSION);
    t.setProtocol(this.#protocol);
    this.configuration.start();
    this.driver.start();
    // The stored snapshot, restored by the driver's start, may hold a later version than the log's activations say.
    this.#versionInForce(Math.max(this.#p.storedVersion ?? FIRST_CLUSTER_VERSION, this.versions.active));
    this.scheduler.start();
    this.versionKeeper.start();
    this.bindingKeeper.start();
    this.membershipKeeper.start();
    this.fanoutRuntime.start();
    // Alone, there is nobody to wait for: take leadership now rather than after a timeout.
    const voters = this.configuration.voters;
    if (voters.length === 1 && voters[0] === this.#p.self) this.driver.node.campaign();
  }

  stop(): void {
    this.versionWaits.stop();
    this.configuration.stop();
    this.versionKeeper.stop();
    this.bindingKeeper.stop();
    this.membershipKeeper.stop();
    this.fanoutRuntime.stop();
    this.scheduler.stop();
    this.driver.stop();
  }

  /**
   * Hands this member's work over before it stops (a rolling restart): its scheduler gives up its jobs and claims, lets its runs finish within `timeoutMs` and reports
   * those still going then as interrupted (scheduler/handover.ts), and a leader then hands
   * leadership to an up-to-date follower, waiting at most `timeoutMs` for it to lead. The
   * outcomes and the moves of its claims are awaited for at most one election timeout each,
   * the time the cluster would otherwise take to find this member lost. The caller then stops
   * it (stop()) and closes its transport.
   */
  async stopGracefully(timeoutMs: number): Promise<void> {
    const settleMs = timeoutMs > 0 ? this.#p.timing.electionTimeoutMs : 0;
    await Promise.all([this.scheduler.handOver(timeoutMs, settleMs), this.fanoutRuntime.handOver(timeoutMs)]);
    const driver = this.driver;
    if (driver.node.role === 'leader' && this.configuration.voters.length > 1 && timeoutMs > 0 && driver.transferLeadership() !== null) {
      await waitUntil(this.#p.timers, () => driver.node.role !== 'leader', timeoutMs, this.#p.timing.tickMs);
      // Let the TimeoutNow and the last appends reach the target before the streams close.
      await waitUntil(this.#p.timers, () => driver.node.leader !== null && driver.node.leader !== this.#p.self, timeoutMs, this.#p.timing.tickMs);
    }
  }

  /**
   * Removes this member from the configuration (a leave), after stopGracefully: a leader has
   * handed leadership over by then, so the change goes to the new leader. Resolves with whether
   * the removal was applied here within `timeoutMs` (see leaveConfiguration). The removal
   * stops the driver as it applies, which for a leave is no failure: onFatal is not called.
   */
  async leave(timeoutMs: number): Promise<boolean> {
    this.#leaving = true;
    const self = this.#p.self;
    return leaveConfiguration(
      {
        timers: this.#p.timers,
        proposeRemoval: () => this.proposeConfChange({ type: 'remove', id: self }, LEAVE_PID_SUFFIX),
        isMember: () => this.configuration.isMember(self),
        retryMs: heartbeatIntervalMs(this.#p.timing),
      },
      timeoutMs,
    );
  }

  /** What this member holds against each of its named bounds (member-bounds.ts). */
  bounds(): BoundRow[] {
    const compaction = this.#p.compaction ?? COMPACTION_DEFAULTS;
    return memberBounds({
      scheduler: this.scheduler.state,
      fanout: this.fanout,
      log: this.driver.node.log,
      compaction: { everyEntries: compaction.everyEntries, retainEntries: compaction.retainEntries },
      pendingProposals: this.driver.pendingProposals,
      maxPendingProposals: this.#p.timing.maxPendingProposals,
      versionWaits: this.versionWaits.waiting,
      lastSnapshotBytes: this.driver.lastSnapshot?.bytes ?? 0,
      version: this.versions.active,
    });
  }

  /**
   * Whether this member still knows a live leader that hears it. The lease is two election
   * timeouts (lease.ts) since it last knew one: since it sent the latest of its answers that the
   * leader it followed said it took in (a heartbeat's `heardAt`, PeerContact.leaderHeardMe; at
   * protocol 1, whose heartbeats say nothing of it, since it last took in a message from that
   * leader), also while an election runs, when Raft knows no leader; or since it last led with
   * a majority. A leader counts a follower lost from its own count of the follower's silence,
   * which starts no earlier: a follower whose answers come late, or not at all, while it hears
   * the leader loses its lease before the leader moves its work. A failover keeps most runs
   * going: a new leader comes within one to two election timeouts, and renews the lease once it
   * has taken in an answer and committed an entry of its term (lease-echoes.ts); a follower
   * whose own election timer ran long may lose it meanwhile. A member cut off for longer stops
   * its runs, and the fencing token covers the time between the leader's reassignment and that
   * stop. A leader holds it while it has heard from a majority,
   * itself included, within the lease: Raft's own check counts ticks, so a leader whose process
   * stood still (SIGSTOP, a paused VM) for longer would lead on in its own eyes until it heard
   * of the next term, and its runs with it, when another leader has moved its slots. Contact
   * with a peer that is no leader (a deposed leader, a candidate) renews nothing.
   */
  holdsLease(): boolean {
    const node = this.driver.node;
    const now = this.#p.timers.now();
    const lease = leaseMs(this.#p.timing.electionTimeoutMs);
    if (node.role === 'leader') {
      // The latest time by which a majority, itself included, had been heard from: the lease
      // counts from it, and keeps counting from it if this member steps down.
      const voters = this.configuration.voters;
      const peers = voters.length - (voters.includes(this.#p.self) ? 1 : 0);
      if (this.#peersHeard.length !== peers) this.#peersHeard = new Float64Array(peers);
      const heard = this.#peersHeard;
      let at = 0;
      for (const id of voters) if (id !== this.#p.self) heard[at++] = this.driver.contact.lastHeard(id) ?? Number.NEGATIVE_INFINITY;
      heard.sort();
      const peersNeeded = Math.floor(voters.length / 2);
      // The peersNeeded-th latest: counted from the end of the earliest-first order.
      const majorityAt = peersNeeded === 0 ? now : (heard[peers - peersNeeded] ?? Number.NEGATIVE_INFINITY);
      this.#ledAt = Math.max(this.#ledAt ?? Number.NEGATIVE_INFINITY, majorityAt);
    }
    const c = this.driver.contact;
    const followed = this.#protocol >= 2 ? c.leaderHeardMe(node.log.applied) : c.leaderContact;
    const contact = Math.max(followed ?? Number.NEGATIVE_INFINITY, this.#ledAt ?? Number.NEGATIVE_INFINITY);
    return now - contact < lease;
  }

  /** The wire protocol in force on this member (versions.ts `protocolOf`): from 2, its lease counts from its answers the leader took in. */
  get protocol(): number {
    return this.#protocol;
  }

  /**
   * The cluster version in force on this member is `version` (applied, restored from a snapshot,
   * or stored): its wire protocol, and how its store writes (LogStorage.clusterVersionInForce).
   */
  #versionInForce(version: number): void {
    this.#protocol = protocolOf(version);
    this.#p.transport.setProtocol(this.#protocol);
    this.#p.storage.clusterVersionInForce?.(version);
  }

  /** The fan-out command in an entry's bytes as the apply will read it, or null (another kind, or one it skips). */
  #fanoutCommandOf(bytes: Uint8Array): FanoutCommand | null {
    try {
      const decoded = this.appendedDecodings.decode(bytes, this.versions.active, this.versions.support);
      return decoded.kind === 'fanout' ? decoded.command : null;
    } catch {
      // An entry of a version this member cannot read: its apply stops the member.
      return null;
    }
  }

  /** Members the leader may give work to now (MemberReach.eligible). */
  eligibleMembers(): NodeId[] {
    return this.#reach.eligible();
  }

  /** Members whose claims stay theirs (MemberReach.holding). */
  holdingMembers(): NodeId[] {
    return this.#reach.holding();
  }

  /** Learners of the configuration this member has not heard from lately (MemberReach.heardLately): what a leader counts before it adds another (join-server.ts). */
  silentLearners(): number {
    return this.configuration.conf.learners.filter((id) => id !== this.#p.self && !this.#reach.heardLately(id)).length;
  }
}
