import { InvalidArgumentError, type RunAbortedError } from '../../errors.js';
import type { TimerHandle } from '../../time/clock.js';
import type { JobSpec } from '../../scheduler/spec.js';
import { restoreSchedulerSnapshot } from '../../scheduler/state-snapshot.js';
import { claimKey, type ApplyResult, type SchedulerStateParts } from '../../scheduler/records.js';
import type { SchedulerCommand } from '../../scheduler/command.js';
import type { SchedulerState } from '../../scheduler/state.js';
import { Assignee } from './assignee.js';
import { handOver, waitUntil } from './handover.js';
import { JobOperations } from './job-operations.js';
import type { JobHandler, JobOptions } from './job-types.js';
import { LeaderPlanning } from './leader-planning.js';
import { Registrations } from './registrations.js';
import { RuntimeContext, SCHEDULER_RUNTIME_DEFAULTS, type SchedulerRuntimeOptions } from './runtime-context.js';
import { FIRST_CLUSTER_VERSION, JOB_TAKEOVER_VERSION } from '../../version/versions.js';

export { SCHEDULER_RUNTIME_DEFAULTS, type SchedulerRuntimeOptions } from './runtime-context.js';

/**
 * How long after a member starts its app has to schedule its jobs: past it, a claim that reaches
 * the member for a job it has no handler for takes the job off the log for this member (see
 * #noHandler). An app schedules its jobs as it starts, some once a connection or two is up;
 * within this, such a claim is reported interrupted and moves, as before.
 */
export const UNSCHEDULED_AFTER_MS = 60_000;

/**
 * The scheduler on one member: applies the replicated commands to SchedulerState, lets the
 * leader plan claims (leader-planning.ts), and runs this member's claimed slots on its own
 * timers at their instants (assignee.ts), so no consensus round sits between the instant and
 * the handler's start. It holds what the two sides share (runtime-context.ts, the jobs this
 * member has handlers for in registrations.ts) and the plan interval's timer, which drives both.
 */
export class SchedulerRuntime {
  readonly state: SchedulerState;
  readonly #ctx: RuntimeContext;
  readonly #o: SchedulerRuntimeOptions;
  readonly #registrations: Registrations;
  readonly #assignee: Assignee;
  readonly #leader: LeaderPlanning;
  /** pause, resume, trigger, cancel (job-operations.ts). */
  readonly operations: JobOperations;
  #planTimer: TimerHandle | null = null;
  /** Whether #planTimer was set to plan at once (#planSoon), rather than at the next interval. */
  #planningNow = false;
  /** When start() was called (the timers' time): see UNSCHEDULED_AFTER_MS. */
  #startedAtMs = 0;
  /** Jobs this member is taking itself off of (#unregister), each until that is done: bounded by the jobs the log names it for. */
  readonly #unregistering = new Set<string>();

  constructor(options: SchedulerRuntimeOptions) {
    const max = options.maxConcurrent ?? SCHEDULER_RUNTIME_DEFAULTS.maxConcurrent;
    if (!(max === Number.POSITIVE_INFINITY || (Number.isInteger(max) && max > 0))) {
      throw new InvalidArgumentError('maxConcurrent', max, 'a positive integer, or Infinity for no limit');
    }
    this.#o = options;
    this.#ctx = new RuntimeContext(options);
    this.state = this.#ctx.state;
    // A registration of another form waits for this member's runs of the job to show in the log.
    this.#registrations = new Registrations(this.#ctx, (job) => {
      this.#assignee.flushRecords();
      return this.#assignee.runsAnnounced(job);
    });
    this.#assignee = new Assignee(this.#ctx, this.#registrations, max, (job) => this.#noHandler(job));
    this.#leader = new LeaderPlanning(this.#ctx, (limitMs) => this.#assignee.msUntilQuiet(limitMs));
    this.operations = new JobOperations(this.#ctx);
  }

  start(): void {
    this.#startedAtMs = this.#o.timers.now();
    this.#schedulePlan();
  }

  /**
   * A graceful stop's part in the scheduler (handover.ts): gives up this member's jobs through
   * the log so that leaders move its claims at once, lets its runs finish within `timeoutMs`,
   * reports those still going then as interrupted, and waits (each at most `settleMs`) for those
   * outcomes and for its claims to move.
   */
  handOver(timeoutMs: number, settleMs: number): Promise<void> {
    return handOver({ ctx: this.#ctx, assignee: this.#assignee, registrations: this.#registrations }, timeoutMs, settleMs);
  }

  /**
   * Starts no run from now on: the member's driver stopped (a failure, its removal), so it can
   * record none. Claims not started are dropped, as by a graceful stop. Runs in progress are
   * aborted with `abort` when given (a removal: the leader moved their claims as it applied it);
   * else they go on, and a mode 'one' run is aborted once its lease runs out, as on a member
   * cut off (the leader moves its claims once it finds the member lost, which takes longer).
   */
  halt(abort?: RunAbortedError): void {
    this.#ctx.drain();
    this.#assignee.drain();
    if (abort !== undefined) this.#assignee.interruptRunning(abort);
  }

  stop(): void {
    this.#ctx.stop();
    if (this.#planTimer !== null) this.#o.timers.clearTimeout(this.#planTimer);
    this.#assignee.stop();
  }

  /** Adds a local handler and registers the job through the log (retried until a leader takes it). */
  schedule(name: string, spec: JobSpec, handler: JobHandler, options: JobOptions): void {
    this.#registrations.add(name, spec, handler, options);
    this.#assignee.scheduled(name);
  }

  unschedule(name: string): boolean {
    if (!this.#registrations.remove(name)) return false;
    this.#assignee.unscheduled(name);
    this.#ctx.track(this.#unregister(name));
    return true;
  }

  /**
   * A claim of `job` reached this member, which has no handler for it, at its slot's instant
   * (reported interrupted, it moves). Past UNSCHEDULED_AFTER_MS since start, the app does not
   * schedule the job: the log still names this member for it from an earlier life, killed rather
   * than stopped (which would have unregistered it), whose release had the job and this one has
   * not. It unregisters, as an unschedule() does. Left, every slot of such a job was claimed for
   * a member with no handler, reported interrupted there, on every member in turn, for good.
   */
  #noHandler(job: string): void {
    if (this.#o.timers.now() - this.#startedAtMs < UNSCHEDULED_AFTER_MS || this.#registrations.get(job) !== undefined || this.#unregistering.has(job)) return;
    this.#ctx.track(this.#unregister(job));
  }

  /**
   * Unregisters the job once the runs of it here show in the log: a leader moves at once a
   * claim whose assignee no longer handles its job and started no run of it (planner.ts), so
   * a run whose start was still held back would be started again elsewhere.
   */
  async #unregister(name: string): Promise<void> {
    this.#unregistering.add(name);
    try {
      this.#assignee.flushRecords();
      await waitUntil(this.#o.timers, () => this.#ctx.stopped || this.#assignee.runsAnnounced(name), this.#o.reassignHorizonMs, this.#o.planIntervalMs);
      await this.#registrations.unregister(name);
    } finally {
      this.#unregistering.delete(name);
    }
  }

  /**
   * The cluster version in force became `version` (SchedulerState.versionRaised): a slot it made
   * due is planned at once. At JOB_TAKEOVER_VERSION, a job whose registrations of a new form were
   * all refused as conflicts before it (a deploy of the release that brings take-overs, with the
   * job's spec changed: the version rises only once every member runs it) is taken over by them
   * registering again; before, nothing registered again, and the job ran no more.
   */
  versionRaised(version: number): void {
    this.state.versionRaised(version);
    if (version === JOB_TAKEOVER_VERSION) this.#registrations.orphanedAll();
    this.#planSoon();
  }

  /** Called for every scheduler command applied, in log order, on every member. */
  apply(index: number, command: SchedulerCommand, version: number = FIRST_CLUSTER_VERSION): ApplyResult {
    const result = this.state.apply(index, command, version);
    this.#leader.applied(command, result);
    // A job just registered may have a slot due soon; a member that just unregistered one (it
    // stops gracefully) holds claims that should move before their instants.
    if ((command.type === 'register' || command.type === 'unregister') && result.ok) this.#planSoon();
    // Its last handler gone, a registration of another form that this member holds takes it over.
    if (command.type === 'unregister' && result.ok) this.#registrations.orphaned(command.job);
    this.#assignee.applied(command, result);
    return result;
  }

  /**
   * Replaces the replicated state with a snapshot's (the stored one at start, or a leader's
   * installed here), then brings this member's runs in line with it: a run whose claim the
   * snapshot moved or ended no longer holds it, and every claim of this member's that it holds
   * is armed as an applied claim would be (one it already ran is recognised when it fires).
   * Takes the snapshot's bytes, or its parts already decoded and checked (given to no other
   * state). Throws CodecError, changing nothing, on data that is not a snapshot.
   */
  restore(snapshot: Uint8Array | SchedulerStateParts): void {
    if (snapshot instanceof Uint8Array) restoreSchedulerSnapshot(this.state, snapshot);
    else this.state.restoreFrom(snapshot);
    this.#leader.restored();
    this.#assignee.restored();
    // The snapshot may hold the unregistration that left a job of this member's other form with no handler.
    this.#registrations.orphanedAll();
  }

  /**
   * Aborts the runs in progress if this member no longer holds its lease. The plan tick looks
   * every interval; the member also looks before each message from a peer counts as contact
   * (member.ts), so that a lease that ran out while the event loop stood still is seen before
   * the first message renews it.
   */
  checkLease(): void {
    this.#assignee.checkLease();
  }

  /** Whether this member's run of the slot under `token` is not over as the log will tell it (Assignee.unsettled). */
  unsettled(job: string, slotMs: number, token: number): boolean {
    return this.#assignee.unsettled(claimKey(job, slotMs), token);
  }

  #schedulePlan(delayMs = this.#o.planIntervalMs): void {
    if (this.#ctx.stopped) return;
    this.#planTimer = this.#o.timers.setTimeout(() => {
      this.#planTimer = null;
      this.#planningNow = false;
      this.#registrations.registerSome();
      this.#assignee.tick();
      const nextMs = this.#o.planIntervalMs;
      this.#schedulePlan(Math.min(nextMs, this.#leader.planIfLeading() ?? nextMs));
    }, delayMs);
  }

  /**
   * Plans now rather than at the next interval: a job just registered may have a slot due
   * within it, which a plan an interval away would claim late.
   */
  #planSoon(): void {
    // Once set to plan now, the timer stays: every registration a batch of entries applies asks.
    if (this.#planTimer === null || this.#planningNow || !this.#o.isLeader()) return;
    this.#o.timers.clearTimeout(this.#planTimer);
    this.#planningNow = true;
    this.#schedulePlan(0);
  }
}
