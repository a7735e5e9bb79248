import { randomInt } from 'node:crypto';
import { EventEmitter } from 'node:events';
import { historyOf, type SlotHistory } from './api/history.js';
import { JobStates } from './api/job-states.js';
import { JobViewsWarmer } from './api/job-views-warmer.js';
import { ExclusiveTasks, exclusiveAbortMarginMs, runExclusive, type ExclusiveLock, type ExclusiveOptions } from './api/run-exclusive.js';
import { UnansweredLocks } from './api/unanswered-locks.js';
import { clusterStateOf, type ClusterState, type StateSources } from './api/state.js';
import { refuseForeignEvent, tellApp, type ClusterEvents } from './cluster-events.js';
import { Lifecycle } from './cluster-lifecycle.js';
import { clusterIdOf, resolveOptions, CLUSTER_DEFAULTS, type ClusterOptions, type ResolvedOptions } from './cluster-options.js';
import { ClusterHttp } from './http/cluster-http.js';
import { CronraftError, InvalidArgumentError, TimeoutError } from './errors.js';
import { validateJobOptions, validateName } from './job-options.js';
import type { SoftState } from './raft/ready.js';
import type { NodeId } from './raft/types.js';
import { encodeCommand } from './runtime/commands.js';
import type { RaftDriver } from './runtime/driver.js';
import type { ProposalResult } from './runtime/pending-requests.js';
import type { Member } from './runtime/member.js';
import { heartbeatIntervalMs } from './runtime/member-settings.js';
import { JoinServer } from './runtime/join-server.js';
import { startMember, type MemberParts, type ScheduledJob } from './cluster-start.js';
import { checkItemIds, CONSUME_OPTION_KEYS, consumerSettings, deadLettersOf, registerConsumer, type ConsumeHandler, type ConsumeOptions, type DeadLetterView } from './cluster-fanout.js';
import type { Batch } from './runtime/fanout/batches.js';
import type { FanoutRuntime } from './runtime/fanout/fanout-runtime.js';
import { checkTopic, emitKeyOf, type EmitOptions } from './fanout/items.js';
import { hasLoneSurrogate, nonNegativeInt, optionsObject, positiveInt, refuseMoreArguments } from './option-checks.js';
import { policyOf } from './runtime/scheduler/registrations.js';
import { isJobPolicy, isJobSpec } from './scheduler/command-shape.js';
import type { ConsumerSettings } from './fanout/command.js';
import type { JobHandler, JobOptions } from './runtime/scheduler/job-types.js';
import type { SchedulerRuntime } from './runtime/scheduler/scheduler-runtime.js';
import type { CancelledRuns, JobPause, TriggeredSlot } from './runtime/scheduler/job-operations.js';
import { parseSpec, type SpecInput } from './scheduler/spec.js';
import { SCHEDULER_DEFAULTS } from './scheduler/state.js';
import { systemClock, systemTimers, type Clock, type Timers } from './time/clock.js';
import type { Random } from './time/random.js';
import { versionSupportOf } from './version/test-seams.js';
import { MEMBERSHIP_VERSION } from './version/versions.js';

const encoder = new TextEncoder();
/** Randomness for election timeouts when none is injected. */
const cryptoRandom: Random = { int: (min, max) => randomInt(min, max + 1) };

/**
 * One member of a cronraft cluster, embedded in an app. Members find one another over libp2p,
 * elect a leader with Raft and keep a replicated log durable in level.
 *
 * The first configuration is the set of all member addresses: the peer list plus this member's
 * own (advertised) address. Every member given the same set computes the same configuration
 * and the same cluster id, so however the members are started, only one majority exists and
 * only one cluster can form. Members given different sets have different cluster ids and refuse
 * one another's messages (counted in `state().transport.droppedUnexpected`). A member with an
 * empty data directory first asks its peers whether a cluster runs, and joins it as a learner
 * if one does (runtime/join.ts; README, "Forming the cluster").
 */
export class Cluster extends EventEmitter<ClusterEvents> {
  readonly #o: ResolvedOptions;
  readonly #clock: Clock;
  readonly #timers: Timers;
  readonly #random: Random;
  readonly #clusterId: string;
  /** The status, and the order of start and stop (cluster-lifecycle.ts). */
  readonly #life: Lifecycle;
  /** Tasks running under a lock here (runExclusive), which a graceful stop waits for and then aborts. */
  readonly #exclusive = new ExclusiveTasks();
  /** Lock proposals of runExclusive that went unanswered, let go should they commit. */
  readonly #unansweredLocks = new UnansweredLocks();
  /** Storage, transport, the member and what watches it, as start() opened them (cluster-start.ts). */
  readonly #parts: MemberParts = { storage: null, transport: null, discovery: null, peerId: null, member: null, removalProbe: null, watch: null };
  #lastLeader: NodeId | null = null;
  #lastRole: SoftState['role'] = 'follower';
  #roleWaiters = new Set<() => void>();
  /** What this member answers members that join (runtime/join-server.ts). */
  readonly #joins: JoinServer;
  /** Jobs scheduled before start(), registered once the member runs. */
  readonly #jobs = new Map<string, ScheduledJob>();
  /** Whether start() handed #jobs and #consumers to the member: those added later register at once. */
  #handedOver = false;
  /** The topics this member consumes (cluster-fanout.ts), registered again at each start. */
  readonly #consumers = new Map<string, { handler: ConsumeHandler; settings: ConsumerSettings }>();
  /** The jobs of state(), kept between calls until they change. */
  readonly #jobStates = new JobStates();
  /** Builds those views ahead of the next call, once state() was called (api/job-views-warmer.ts). */
  readonly #jobViewsWarmer: JobViewsWarmer;
  /** The `http` option's server and metrics (http/cluster-http.ts); null when it is off. */
  readonly #http: ClusterHttp | null;

  /**
   * @param peers the other members' addresses (`/ip4/10.0.0.2/tcp/7001`, `10.0.0.2:7001`, with
   *   or without `/p2p/<peer id>`); this member's own address may be included. `[]` makes a
   *   single-member cluster, or, with the `mdns` option, one that first looks for a cluster on
   *   the local network to join.
   * @throws InvalidArgumentError (code CRONRAFT_INVALID_ARGUMENT) naming the bad option.
   */
  constructor(peers: readonly string[], options: ClusterOptions = {}) {
    super();
    this.#o = resolveOptions(peers, options);
    this.#clock = options.clock ?? systemClock;
    this.#timers = options.timers ?? systemTimers;
    this.#random = options.random ?? cryptoRandom;
    this.#clusterId = clusterIdOf(this.#o.voters);
    this.#joins = new JoinServer(this.#o.self.id);
    this.#jobViewsWarmer = new JobViewsWarmer(this.#timers, this.#jobStates, () => {
      const scheduler = this.#scheduler;
      return scheduler === null ? null : { state: scheduler.state, nowMs: this.#clusterNowMs() };
    });
    this.#http = this.#o.http === null ? null : new ClusterHttp(this, this.#o.http, () => this.#jobsNow());
    this.#life = new Lifecycle({
      start: () => this.#start(),
      // Its jobs and claims are handed over, its runs finish (or are reported interrupted) and
      // record their outcomes, its tasks under a lock end and release it, and a leader hands
      // leadership over, before the streams close.
      handOver: async (leave) => {
        await Promise.all([this.#parts.member?.stopGracefully(this.#o.stopTimeoutMs), this.#exclusive.settle(this.#timers, this.#o.stopTimeoutMs)]);
        if (leave) await this.#parts.member?.leave(this.#o.stopTimeoutMs);
      },
      close: () => this.#close(),
    });
  }

  /** Where the `http` option serves once started (`host:port`, the port bound when it asked for 0); null when it does not. */
  get httpAddress(): string | null {
    return this.#http?.address ?? null;
  }

  /** This member's id: its advertised `host:port`. */
  get id(): NodeId {
    return this.#o.self.id;
  }

  /**
   * Opens storage, starts listening and joins the cluster. Resolves once the member runs.
   * Rejects with a StorageError naming the path if the data directory cannot be used, and with
   * NotRunningError (state 'stopping') if stop() is called before the start is done.
   */
  start(): Promise<void> {
    return this.#life.start();
  }

  async #start(): Promise<void> {
    await startMember(
      {
        cluster: this,
        members: () => clusterStateOf(this.#stateSources(false)).members,
        options: this.#o,
        clusterId: this.#clusterId,
        clock: this.#clock,
        timers: this.#timers,
        random: this.#random,
        joins: this.#joins,
        http: this.#http,
        jobs: this.#jobs,
        consumers: this.#consumers,
        handedOver: () => {
          this.#handedOver = true;
        },
        starting: () => this.#life.starting,
        ended: () => this.#life.status !== 'running' && this.#life.status !== 'starting',
        onSoftState: (s) => this.#onSoftState(s),
        onJobsChanged: () => this.#jobViewsWarmer.changed(),
        unansweredLocks: this.#unansweredLocks,
        onFatal: (error) => this.#onFatal(error),
      },
      this.#parts,
    );
  }

  /**
   * Stops gracefully, so that a rolling restart misses and doubles no slot: this member
   * unregisters its jobs (the leader moves its claims not yet run to other members at once;
   * `schedule()` at the next start registers them again), lets its runs in progress finish
   * within `stopTimeoutMs` and reports those still going then as interrupted (their slots move
   * at once), and a leader hands leadership to the most up-to-date follower (waiting at most
   * `stopTimeoutMs`), so the others need not wait for an election timeout.
   *
   * With `leave: true` it then removes itself from the configuration (cluster version 2), asking
   * the new leader, within another `stopTimeoutMs`: the others see `member-left`, and this
   * member stops cleanly (no `error` event, status `stopped`). A member that cannot leave (the
   * last voter, or a cluster before version 2) or runs out of time stops all the same.
   * @throws InvalidArgumentError for options that are not `{ leave?: boolean }`
   */
  async stop(options: { leave?: boolean } = {}): Promise<void> {
    // A misspelt `leave` would stop without leaving, leaving a dead voter behind.
    const { leave } = optionsObject(options, ['leave']);
    if (leave !== undefined && typeof leave !== 'boolean') throw new InvalidArgumentError('leave', leave, 'a boolean');
    const stopping = this.#life.stop(leave === true);
    // What waits for a leader or the cluster's time ends now: before, a waitForLeader() ran its
    // whole timeout, and the process could exit with it pending (the member's timers are unref'd).
    for (const wake of this.#roleWaiters) wake();
    return stopping;
  }

  async #close(): Promise<void> {
    this.#joins.stop();
    this.#parts.removalProbe?.stop();
    this.#parts.watch?.stop();
    this.#jobViewsWarmer.stop();
    this.#parts.member?.stop();
    for (const wake of this.#roleWaiters) wake();
    try {
      await this.#http?.stop();
      await this.#parts.discovery?.stop();
      await this.#parts.transport?.stop();
    } finally {
      await this.#parts.storage?.close();
    }
  }

  /**
   * Appends `data` to the replicated log. Resolves once it is committed and applied on this
   * member, with its log index. Low level: the scheduler builds on it.
   * @throws NotLeaderError when no leader is known, TimeoutError, ProposalDroppedError, BackpressureError
   */
  async propose(data: Uint8Array | string, options: { signal?: AbortSignal } = {}): Promise<{ index: number }> {
    const { signal } = optionsObject(options, ['signal']);
    if (signal !== undefined && !(signal instanceof AbortSignal)) throw new InvalidArgumentError('signal', signal, 'an AbortSignal');
    // A lone surrogate has no UTF-8: encoded, it would come back as U+FFFD, another value.
    if (typeof data === 'string' && hasLoneSurrogate(data)) throw new InvalidArgumentError('data', data, 'a Uint8Array, or a string with no lone surrogate');
    const bytes = typeof data === 'string' ? encoder.encode(data) : data;
    if (!(bytes instanceof Uint8Array)) throw new InvalidArgumentError('data', data, 'a Uint8Array or a string');
    if (bytes.byteLength > CLUSTER_DEFAULTS.maxProposalBytes) {
      throw new InvalidArgumentError('data', `${bytes.byteLength} bytes`, `at most ${CLUSTER_DEFAULTS.maxProposalBytes} bytes`);
    }
    const r: ProposalResult = await this.#running().propose(encodeCommand({ kind: 'user', data: bytes }), signal);
    return { index: r.index };
  }

  /**
   * Removes a member, a voter or a learner, from the cluster's configuration: asked of any
   * member, it is forwarded to the leader. Resolves once the change is applied here, with its
   * log index; the member removed stops with `CRONRAFT_REMOVED` as it applies it. One change at
   * a time, and only once the cluster runs version 2 ("membership", see "Upgrading"): a call
   * before waits for it, as long as a proposal may (requestTimeoutMs).
   * @throws VersionNotActiveError, NotLeaderError (no leader known), MembershipChangeRefusedError
   *   (`reason`: `not-member`, `last-voter`, `pending`, ...), TimeoutError, OutcomeUnknownError, BackpressureError
   */
  async removeMember(id: NodeId): Promise<{ index: number }> {
    if (typeof id !== 'string' || id.length === 0) throw new InvalidArgumentError('id', id, 'a member id');
    this.#running();
    const member = this.#parts.member as Member;
    await member.versionWaits.whenActive('a membership change', MEMBERSHIP_VERSION);
    const r = await member.proposeConfChange({ type: 'remove', id });
    return { index: r.index };
  }

  /**
   * A linearizable read barrier: resolves once this member has applied everything committed
   * before the call, as confirmed by a majority. Read `state()` after it for a consistent view.
   */
  async barrier(): Promise<{ index: number }> {
    return { index: await this.#running().readBarrier() };
  }

  /** Tells one of the Cluster's events; any other name is refused (InvalidArgumentError): work items are emitted with emitItems. */
  override emit<K extends keyof ClusterEvents>(event: K, ...payload: ClusterEvents[K]): boolean {
    refuseForeignEvent(event);
    return (super.emit as (this: Cluster, name: string, ...values: unknown[]) => boolean).call(this, event, ...payload);
  }

  /**
   * Resolves with the leader once one is known, or rejects with TimeoutError; with
   * NotRunningError once the member is stopping, stopped or failed (a wait under way ends then,
   * and a failed member's error names why, e.g. CRONRAFT_REMOVED).
   */
  async waitForLeader(options: { timeoutMs?: number } = {}): Promise<{ leader: NodeId; term: number }> {
    const given = optionsObject(options, ['timeoutMs']).timeoutMs;
    const timeoutMs = given === undefined ? this.#o.member.timing.electionTimeoutMs * 20 : nonNegativeInt(given, 'timeoutMs');
    const driver = this.#running();
    const ok = await this.#waitFor(() => driver.node.leader !== null, timeoutMs);
    if (this.#life.status !== 'running') throw this.#life.notRunning();
    if (!ok || driver.node.leader === null) throw new TimeoutError('Waiting for a leader', timeoutMs);
    return { leader: driver.node.leader, term: driver.node.term };
  }

  /**
   * Runs `handler` at every slot of `spec`, once across the cluster (mode 'one', the default)
   * or on every member that scheduled it (mode 'all'). The handler gets the slot's fencing
   * token. May be called before or after start(); every member that should run the job calls it.
   * @throws InvalidArgumentError for a bad name, spec, handler or option, or a name already scheduled here
   * @throws NotRunningError once this member is stopping, stopped or failed: it never starts again, and the job would never run
   */
  schedule(name: string, spec: SpecInput, handler: JobHandler, options: JobOptions = {}): { readonly name: string; unschedule(): boolean } {
    this.#refuseWhenEnded();
    validateName(name);
    if (this.#jobs.has(name)) throw new InvalidArgumentError('name', name, 'a name not already scheduled on this member');
    // The replicated state holds at most this many jobs: past it a registration would be
    // refused as it applies, and the job would never run, with nothing to say why.
    if (this.#jobs.size >= SCHEDULER_DEFAULTS.maxJobs) throw new InvalidArgumentError('name', name, `a job while this member schedules fewer than ${SCHEDULER_DEFAULTS.maxJobs} (the most a cluster holds): it schedules that many already`);
    const parsed = parseSpec(spec);
    if (typeof handler !== 'function') throw new InvalidArgumentError('handler', handler, 'a function');
    validateJobOptions(options);
    // What the log's check of a registration refuses would be skipped by every member as it
    // applies, with the jobs registered in the same entry: checked here by the same rules.
    if (!isJobSpec(parsed) || !isJobPolicy(policyOf(options))) throw new InvalidArgumentError('options', options, 'a spec and options the log can carry (whole numbers within 2^53)');
    this.#jobs.set(name, { spec: parsed, handler, options });
    if (this.#handedOver) this.#scheduler?.schedule(name, parsed, handler, options);
    return { name, unschedule: () => this.unschedule(name) };
  }

  /** A member stopping, stopped or failed never starts again: what would only run once it did is refused. */
  #refuseWhenEnded(): void {
    if (this.#life.status === 'stopping' || this.#life.status === 'stopped' || this.#life.status === 'failed') throw this.#life.notRunning();
  }

  /**
   * Consumes the work items of `topic` on this member: `handler` gets each item leased here
   * (bytes as emitted, or the JSON value) and its context, whose `fencingToken` is greater on
   * every delivery. Before or after start(); registered again at each start.
   * @throws NotRunningError once this member is stopping, stopped or failed, as schedule() does
   */
  consume(topic: string, handler: ConsumeHandler, options: ConsumeOptions = {}): void {
    this.#refuseWhenEnded();
    checkTopic(topic);
    if (typeof handler !== 'function') throw new InvalidArgumentError('handler', handler, 'a function');
    if (this.#consumers.has(topic)) throw new InvalidArgumentError('topic', topic, 'a topic not already consumed on this member');
    const settings = consumerSettings(optionsObject(options, CONSUME_OPTION_KEYS));
    this.#consumers.set(topic, { handler, settings });
    if (this.#handedOver && this.#parts.member !== null) void registerConsumer(this.#parts.member.fanoutRuntime, topic, handler, settings, this.#timers, () => this.#life.status !== 'running' && this.#life.status !== 'starting');
  }

  /**
   * Emits work items to `topic`, from outside a slot (in a job's handler, `ctx.emit` names the
   * slot): resolves once every item is committed and applied on this member, with their Batch
   * (`settled()` waits until each succeeded or went to the dead letters). `key` orders the
   * items of one key: they run one at a time, in emit order.
   * @throws InvalidArgumentError for a bad topic or item (nothing of the call is kept), BackpressureError, VersionNotActiveError, NotLeaderError, TimeoutError
   */
  // Not `emit`: that is EventEmitter's on this class, and the events' API must stay as Node's.
  async emitItems<T>(topic: string, items: readonly T[], options: EmitOptions<T> = {}): Promise<Batch> {
    checkTopic(topic);
    const key = emitKeyOf(options);
    // Refused at once when fan-out is not available here, before the items are encoded.
    return this.#fanout().emitItems(topic, items, key, null);
  }

  /** The dead letters of `topic` as this member applied them, oldest first (at most FANOUT_DEFAULTS.maxDeadLettersPerTopic). */
  deadLetters(topic: string): DeadLetterView[] {
    return deadLettersOf(this.#fanout(), checkTopic(topic));
  }

  /**
   * Emits dead letters of `topic` again as new items (all of them, or those with these ids),
   * resolving with their Batch once applied here.
   * @throws InvalidArgumentError for an unknown topic, BackpressureError
   */
  // Async, so that a bad argument rejects like the rest of what it does, never throws at the call.
  async requeue(topic: string, ids?: readonly number[]): Promise<Batch> {
    return this.#fanout().requeue(checkTopic(topic), ids === undefined ? null : checkItemIds(ids));
  }

  /**
   * Drops dead letters of `topic` for good (all of them, or those with these ids), resolving
   * with how many went once applied here. A topic left with no consumer, item or dead letter is
   * forgotten, which frees its place among the topics the cluster holds.
   * @throws InvalidArgumentError for an unknown topic or bad ids
   */
  async dropDeadLetters(topic: string, ids?: readonly number[]): Promise<{ readonly dropped: number }> {
    return this.#fanout().dropDeadLetters(checkTopic(topic), ids === undefined ? null : checkItemIds(ids));
  }

  #fanout(): FanoutRuntime {
    this.#running();
    if (this.#parts.member === null) throw this.#life.notRunning();
    return this.#parts.member.fanoutRuntime;
  }

  /**
   * Pauses the job across the cluster, from any member: its slots are still claimed, and each
   * that fires once its member applied the pause is recorded as skipped with the reason
   * `paused` (see history()), not run; its runs in progress finish. Resolves once applied here.
   * Idempotent. Cluster version 3.
   * @throws VersionNotActiveError, UnknownJobError, NotRunningError, NotLeaderError, TimeoutError, BackpressureError
   */
  async pause(name: string): Promise<JobPause> {
    refuseMoreArguments(arguments.length, 1, 'pause');
    validateName(name);
    return this.#scheduling().operations.setPaused(name, true);
  }

  /**
   * Resumes a paused job: its slots that fire from then on run. The slots skipped while it was
   * paused are not missed ones: its catch-up policy runs none of them. Cluster version 3.
   * @throws as pause()
   */
  async resume(name: string): Promise<JobPause> {
    refuseMoreArguments(arguments.length, 1, 'resume');
    validateName(name);
    return this.#scheduling().operations.setPaused(name, false);
  }

  /**
   * Runs one extra slot of the job now, once across the cluster: a claim through the log at the
   * cluster's time, marked `trigger: true` in history(), run by the job's mode and overlap
   * policy like any slot, with its fencing token, even while the job is paused. Resolves once
   * claimed (applied here), not once run. Cluster version 3.
   * @throws VersionNotActiveError, UnknownJobError, InvalidArgumentError (no member has a handler), TimeoutError, ClockUnsyncedError, NotRunningError, NotLeaderError
   */
  async trigger(name: string): Promise<TriggeredSlot> {
    // `trigger('j', { slot })` from JavaScript would have triggered now, the slot unsaid.
    refuseMoreArguments(arguments.length, 1, 'trigger');
    validateName(name);
    return this.#scheduling().operations.trigger(name);
  }

  /**
   * Cancels the job's runs in progress across the cluster, from any member: every slot of the
   * job with a run in progress, or due when asked and not ended on all its members (only
   * `options.slot`'s, to the millisecond, when given). Wherever such a run is, its member aborts
   * its `ctx.signal` with CRONRAFT_RUN_CANCELLED (a RunAbortedError of reason `cancelled`) and
   * records the outcome `cancelled`, at once, whether or not the handler heeds the signal; an
   * assignee that had not started it records it without running it. No retry follows and the
   * slot is never moved. Slots claimed after the cancel, and those not due yet, are not touched.
   * Resolves once applied here, with the slots cancelled: none when nothing was running (not an
   * error). Cluster version 3.
   * @throws VersionNotActiveError, UnknownJobError, InvalidArgumentError (a bad slot), ClockUnsyncedError, NotRunningError, NotLeaderError, TimeoutError, BackpressureError
   */
  async cancel(name: string, options: { readonly slot?: Date } = {}): Promise<CancelledRuns> {
    validateName(name);
    // A misspelt `slot` (`slots`) would cancel every run of the job, as HTTP's cancel refuses too.
    const { slot } = optionsObject(options, ['slot']);
    if (slot !== undefined && !(slot instanceof Date && Number.isFinite(slot.getTime()))) throw new InvalidArgumentError('slot', slot, 'a valid Date');
    return this.#scheduling().operations.cancel(name, slot?.getTime());
  }

  #scheduling(): SchedulerRuntime {
    this.#running();
    if (this.#scheduler === null) throw this.#life.notRunning();
    return this.#scheduler;
  }

  /** Stops running `name` on this member. Returns whether it was scheduled here. */
  unschedule(name: string): boolean {
    const had = this.#jobs.delete(name);
    this.#scheduler?.unschedule(name);
    return had;
  }

  /**
   * Runs `fn` if no other member holds the lock `name` (ShedLock's contract): the lock is taken
   * through the log, held at least `atLeastFor` ms even if `fn` returns sooner (so a quick task
   * on one member keeps others from running it again right away), and at most `atMostFor` ms,
   * after which it expires even if its holder died. `fn` gets the lock's fencing token and a
   * signal that aborts before `atMostFor` runs out, by `maxClockSkewMs` plus a second (at most
   * half of it: see exclusiveAbortMarginMs). Resolves with whether `fn` ran (not when the lock
   * was granted past that point, its commit that slow); rejects with `fn`'s
   * error after releasing the lock. A graceful `stop()` lets `fn` end within `stopTimeoutMs`,
   * then aborts its signal.
   */
  async runExclusive(name: string, options: ExclusiveOptions, fn: (lock: ExclusiveLock) => unknown): Promise<boolean> {
    const { timing } = this.#o.member;
    return runExclusive(
      {
        self: this.id,
        driver: () => this.#running(),
        timers: this.#timers,
        clockSyncTimeoutMs: timing.requestTimeoutMs,
        clockSyncPollMs: heartbeatIntervalMs(timing),
        waitFor: (done, timeoutMs, pollMs) => this.#waitFor(done, timeoutMs, pollMs),
        tasks: this.#exclusive,
        abortMarginMs: exclusiveAbortMarginMs(this.#o.member.timing.maxClockSkewMs),
        unanswered: this.#unansweredLocks,
        locks: () => this.#scheduler?.state.locks ?? null,
      },
      name,
      options,
      fn,
    );
  }

  /**
   * Recent claims and their outcomes (including 'skipped', 'replaced' and 'missed' slots, with
   * the token each was recorded under), the latest claimed first (the log's order: the leader
   * claims slots ahead, so a slot triggered now may come before one of a later instant claimed
   * earlier), with the runs still in progress (started
   * per the log, no outcome yet) by member. Bounded by what the state machine keeps.
   */
  history(options: { job?: string; limit?: number } = {}): SlotHistory[] {
    const { job, limit } = optionsObject(options, ['job', 'limit']);
    if (job !== undefined) validateName(job);
    // A limit of 0 or less took slice(-limit) to every claim kept.
    if (limit !== undefined) positiveInt(limit, 'limit', 'a count of slots');
    const state = this.#scheduler?.state;
    const tally = this.#parts.member?.fanoutRuntime.slotBatches;
    return state === undefined ? [] : historyOf(state, { ...(job === undefined ? {} : { job }), ...(limit === undefined ? {} : { limit }) }, (name, slotMs) => tally?.of(name, slotMs) ?? null);
  }

  /** A snapshot of this member's view: role, term, leader, indexes, members and their reachability. */
  state(): ClusterState {
    this.#jobViewsWarmer.arm();
    return clusterStateOf(this.#stateSources(true));
  }

  /** state().jobs alone (what the `http` option's warmer keeps the JSON of). */
  #jobsNow(): ClusterState['jobs'] {
    this.#jobViewsWarmer.arm();
    const scheduler = this.#scheduler;
    return scheduler === null ? [] : this.#jobStates.of(scheduler.state, this.#clusterNowMs());
  }

  /** Slot instants are on the cluster's time (as in the log), not the timers' monotonic base. */
  #clusterNowMs(): number {
    return this.#driver?.clusterClock().now() ?? this.#clock.now();
  }

  /**
   * What state() is built from; without the jobs' entries unless `withJobs` (the member watch
   * reads the members only: at ten thousand jobs changing, building their entries every second
   * for it was most of its work).
   */
  #stateSources(withJobs: boolean): StateSources {
    const driver = this.#driver;
    const clusterNowMs = this.#clusterNowMs();
    return {
      id: this.id,
      status: this.#life.status,
      fatal: this.#life.fatal,
      voters: this.#o.voters,
      ownAddrs: this.#parts.transport?.listenAddresses() ?? [this.#o.listen],
      addrOf: (id) => this.#o.peers.get(id)?.multiaddr ?? id,
      electionTimeoutMs: this.#o.member.timing.electionTimeoutMs,
      maxClockSkewMs: this.#o.member.timing.maxClockSkewMs,
      monoNowMs: this.#timers.now(),
      clusterNowMs,
      driver,
      transport: this.#parts.transport,
      peerId: this.#parts.peerId,
      joins: this.#joins.counts,
      discovery: this.#parts.discovery,
      member: this.#parts.member,
      versionSupport: versionSupportOf(this),
      jobs: this.#scheduler === null || !withJobs ? [] : this.#jobStates.of(this.#scheduler.state, clusterNowMs),
    };
  }

  get #driver(): RaftDriver | null {
    return this.#parts.member?.driver ?? null;
  }

  get #scheduler(): SchedulerRuntime | null {
    return this.#parts.member?.scheduler ?? null;
  }

  #running(): RaftDriver {
    if (this.#life.status !== 'running' || this.#driver === null) throw this.#life.notRunning();
    return this.#driver;
  }

  #onSoftState(s: SoftState): void {
    for (const wake of this.#roleWaiters) wake();
    if (s.role !== this.#lastRole) {
      this.#lastRole = s.role;
      tellApp(this, 'role', { role: s.role, term: s.term });
    }
    if (s.leader !== this.#lastLeader) {
      this.#lastLeader = s.leader;
      tellApp(this, 'leader', { leader: s.leader, term: s.term });
    }
  }

  #onFatal(error: unknown): void {
    const e = error instanceof Error ? error : new CronraftError('CRONRAFT_FATAL', String(error));
    this.#life.failed(e);
    // A waitForLeader() under way ends now, as at a stop: its member will know no leader again.
    for (const wake of this.#roleWaiters) wake();
    if (this.listenerCount('error') > 0) this.emit('error', e);
  }

  /**
   * Waits until `done()` holds, re-checked on every role or leader change and, given `pollMs`,
   * that often (for conditions no event announces); false on timeout.
   */
  #waitFor(done: () => boolean, timeoutMs: number, pollMs?: number): Promise<boolean> {
    if (done()) return Promise.resolve(true);
    return new Promise((resolve) => {
      let poll: unknown = null;
      const finish = (ok: boolean): void => {
        this.#roleWaiters.delete(check);
        this.#timers.clearTimeout(timer);
        if (poll !== null) this.#timers.clearTimeout(poll);
        resolve(ok);
      };
      const check = (): void => {
        if (done()) finish(true);
        else if (this.#life.status === 'stopping' || this.#life.status === 'stopped' || this.#life.status === 'failed') finish(false);
      };
      const repoll = (): void => {
        poll = this.#timers.setTimeout(() => {
          check();
          if (this.#roleWaiters.has(check)) repoll();
        }, pollMs ?? 0);
      };
      const timer = this.#timers.setTimeout(() => finish(done()), timeoutMs);
      this.#roleWaiters.add(check);
      if (pollMs !== undefined) repoll();
    });
  }
}
