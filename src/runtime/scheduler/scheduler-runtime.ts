import { InvalidArgumentError, RunAbortedError } from '../../errors.js';
import type { NodeId } from '../../raft/types.js';
import type { Clock, TimerHandle, Timers } from '../../time/clock.js';
import { decideOverlap, runsInProgress } from '../../scheduler/overlap.js';
import { MAX_WAITING_RUNS } from '../../scheduler/run-queue.js';
import { plan, planReassignments, type CatchUp } from '../../scheduler/planner.js';
import { quietAt } from '../../scheduler/quiet-window.js';
import type { JobSpec } from '../../scheduler/spec.js';
import { restoreSchedulerSnapshot } from '../../scheduler/state-snapshot.js';
import type { JobHandler, JobOptions, RunRecord } from './job-types.js';
import { RecordBatcher } from './record-batcher.js';
import { RunPermits, type PermittedRun } from './run-permits.js';
import {
  claimKey,
  DEFAULT_OVERLAP,
  SchedulerState,
  type ApplyResult,
  type AssignMode,
  type ClaimRecord,
  type JobPolicy,
  type OverlapPolicy,
  type RunInProgress,
  type RunOutcome,
  type SchedulerCommand,
  type SchedulerStateParts,
} from '../../scheduler/state.js';

export interface SchedulerRuntimeOptions {
  readonly self: NodeId;
  readonly clock: Clock;
  readonly timers: Timers;
  /** Replicates a command; resolves once it is applied here. */
  readonly propose: (command: SchedulerCommand) => Promise<unknown>;
  /** Resolves once this member has applied everything committed before the call (a read barrier). */
  readonly barrier: () => Promise<unknown>;
  readonly isLeader: () => boolean;
  /**
   * Whether `clock` (the cluster's time) can be trusted yet: until this member has learned the
   * cluster's time, a slot's timer that fires waits and looks again (its own clock may be a
   * minute off). @default always
   */
  readonly clockReady?: () => boolean;
  /**
   * Whether this member still knows a live leader (it leads, or heard from the leader within
   * an election timeout). A member that lost it aborts its runs: its claims may be moved.
   */
  readonly holdsLease: () => boolean;
  /**
   * Whether this member is connected to `member` now. Another member's run that the log shows
   * in progress counts for overlap only while it is: a member whose connection closed (killed
   * mid-run) will never report that run's end, and its slot is moved anyway. @default always
   */
  readonly peerConnected?: (member: NodeId) => boolean;
  /** Members that may be given work now (reachable), this one included when it leads. */
  readonly eligibleMembers: () => readonly NodeId[];
  /** How often the leader plans. */
  readonly planIntervalMs: number;
  /** Claims are made this far ahead of their instant. */
  readonly lookaheadMs: number;
  /** Bound on commands proposed by one plan. */
  readonly maxClaimsPerPlan: number;
  /** Claims whose slot is older than this are never moved again. */
  readonly reassignHorizonMs: number;
  /**
   * A new leader moves no claim until it has led this long: until then, it cannot tell a lost
   * assignee from one it has not heard from yet.
   */
  readonly reassignGraceMs: number;
  /**
   * Runs at once on this member, whatever their jobs; more wait, by priority.
   * @default SCHEDULER_RUNTIME_DEFAULTS.maxConcurrent (no limit)
   */
  readonly maxConcurrent?: number;
  /** Called as a run's handler starts (after its checks), before `onRun` reports its end. */
  readonly onRunStart?: (run: Pick<RunRecord, 'job' | 'slotMs' | 'fencingToken' | 'member' | 'startedAtMs'>) => void;
  readonly onRun?: (run: RunRecord) => void;
}

export const SCHEDULER_RUNTIME_DEFAULTS = {
  /** No limit: every due slot starts at its instant. */
  maxConcurrent: Number.POSITIVE_INFINITY,
} as const;

/** Bound on read-barrier attempts for a late claim when no leader answers (about two seconds). */
const BARRIER_ATTEMPTS_MAX = 20;
/** A run's timeout when its job sets none (JobOptions.timeoutMs). */
export const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_RETRY_DELAY_MS = 1000;
/** A slot whose timer fires this long after its instant is confirmed by a read barrier first. */
const LATE_FIRE_MS = 100;
/** How often a fired slot looks again while this member has not learned the cluster's time. */
const CLOCK_WAIT_MS = 10;
/** A slot's timer is set again when the cluster's time says it is off by more than this. */
const REARM_TOLERANCE_MS = 2;
/**
 * A slot fires once the cluster's time is within this of its instant: floating-point slack
 * only (it must exceed the rounding of time sums, or a timer set for less could never move
 * time forward in a simulation).
 */
const FIRE_EARLY_TOLERANCE_MS = 0.01;
/** Claims older than this when applied are history, not work: they are not armed at all. */
const ARM_HORIZON_MS = 10 * 60_000;
/**
 * Registrations one member has proposed and not yet seen answered; the others wait their turn.
 * An app that schedules thousands of jobs at start would otherwise propose them all at once:
 * they would fill the member's bound on pending proposals (maxPendingProposals), which claims
 * and run records need too, and while no leader answers (or answers late) they would all fail
 * and all be proposed again on every plan interval, each failure an error built and thrown away.
 */
export const MAX_REGISTRATIONS_IN_FLIGHT = 512;

interface LocalJob {
  readonly spec: JobSpec;
  readonly handler: JobHandler;
  readonly options: JobOptions;
}

/** A run's start or outcome waiting to be proposed, and how to tell it no longer needs to be. */
interface HeldRecord {
  readonly command: SchedulerCommand;
  readonly settled: () => boolean;
  readonly done: () => void;
}

/** One of this member's claims, from its timer to the end of its run (RunPermits holds it once it fires). */
interface Armed extends PermittedRun {
  readonly job: string;
  readonly slotMs: number;
  /** The token of the claim it holds. */
  readonly token: number;
  readonly mode: AssignMode;
  readonly overlap: OverlapPolicy;
  readonly timeoutMs: number;
  readonly abort: AbortController;
  timer: TimerHandle | null;
  /** When the timer fires, on the timers' monotonic time base: compared with the cluster's time to re-arm. */
  firesAt: number;
  /** The timer's callback, so that #rearm can set it again. */
  fire: (() => void) | null;
}

/** Another run of a slot's job in progress: this member's own, or another's per the log. */
interface OtherRun {
  readonly slotMs: number;
  readonly startedAtMs: number | undefined;
  readonly local?: Armed;
  readonly remote?: RunInProgress;
}

/** What became of a slot that fired, before its handler could start. */
type Admission = 'run' | 'dropped' | { readonly outcome: 'skipped' | 'replaced' | 'interrupted'; readonly reason: string };

/**
 * The scheduler on one member: applies the replicated commands to SchedulerState, lets the
 * leader plan claims, and runs this member's claimed slots on its own timers at their instants,
 * so no consensus round sits between the instant and the handler's start.
 */
export class SchedulerRuntime {
  readonly state = new SchedulerState();
  readonly #o: SchedulerRuntimeOptions;
  readonly #jobs = new Map<string, LocalJob>();
  /**
   * Jobs of #jobs whose registration is to be proposed: new ones, and those whose last proposal
   * failed. A job leaves it while its proposal is in flight, so that no registration is proposed
   * again before the last one is answered.
   */
  readonly #toRegister = new Set<string>();
  /**
   * Jobs scheduled in this turn whose claims are yet to be armed (see #armScheduled): bounded by
   * the jobs scheduled here, and emptied within the turn.
   */
  readonly #toArm = new Set<string>();
  /** Registrations proposed and not yet answered: at most MAX_REGISTRATIONS_IN_FLIGHT. */
  #registrationsInFlight = 0;
  /** Commands proposed and not yet applied or failed, so one plan does not repeat the last one's. */
  readonly #inflight = new Set<string>();
  /** This member's armed, waiting or running claims, by claimKey, with the token they hold. */
  readonly #armed = new Map<string, Armed>();
  /** This member's runs from their firing to their end: queued, ready (maxConcurrent) or running. */
  readonly #slots: RunPermits<Armed>;
  #planTimer: TimerHandle | null = null;
  /** Whether #planTimer was set to plan at once (#planSoon), rather than at the next interval. */
  #planningNow = false;
  /**
   * Runs that ended here and whose outcome is not recorded yet, by claim key, with their token:
   * a snapshot installed meanwhile may not hold the outcome, and must not arm them again.
   * Bounded by the runs in flight (each leaves once its outcome is recorded or given up).
   */
  readonly #unrecorded = new Map<string, number>();
  /** Runs started and their outcomes not yet recorded: a graceful stop waits for them. */
  readonly #inFlightRuns = new Set<Promise<void>>();
  /** One read barrier in flight, shared by every late claim waiting for it. */
  #sharedBarrier: Promise<unknown> | null = null;
  /** When this member last became leader (clock ms), or null while it follows. */
  #leaderSinceMs: number | null = null;
  #stopped = false;
  /** Set by drain(): nothing new is armed. */
  #draining = false;
  /** Starts and outcomes of runs, held while slot instants are near (record-batcher.ts). */
  readonly #records: RecordBatcher<HeldRecord>;

  constructor(options: SchedulerRuntimeOptions) {
    const max = options.maxConcurrent ?? SCHEDULER_RUNTIME_DEFAULTS.maxConcurrent;
    if (!(max === Number.POSITIVE_INFINITY || (Number.isInteger(max) && max > 0))) {
      throw new InvalidArgumentError('maxConcurrent', max, 'a positive integer, or Infinity for no limit');
    }
    this.#o = options;
    this.#slots = new RunPermits<Armed>({
      maxConcurrent: max,
      monotonicNow: () => options.timers.now(),
      clusterNow: () => options.clock.now(),
      blocked: (armed) => this.#othersInProgress(armed).some((o) => o.local === undefined || o.local.phase !== 'queued'),
      open: () => !this.#stopped && !this.#draining,
    });
    this.#records = new RecordBatcher<HeldRecord>({
      timers: options.timers,
      msUntilQuiet: (limitMs) => this.#msUntilQuiet(limitMs),
      send: (r) => void this.#proposeUntil(r.command, r.settled).then(r.done),
    });
  }

  start(): void {
    this.#schedulePlan();
  }

  /**
   * Lets the runs in progress finish and record their outcomes, for at most `timeoutMs`, so a
   * graceful stop does not leave a slot that ran without its outcome (which would run again).
   * New slots are not started meanwhile.
   */
  async drain(timeoutMs: number): Promise<void> {
    this.#draining = true;
    // Records go at once from now on: the runs' outcomes are what a graceful stop waits for.
    this.#records.flush();
    for (const [key, armed] of this.#armed) {
      if (armed.phase === 'running') continue;
      if (armed.timer !== null) this.#o.timers.clearTimeout(armed.timer);
      this.#armed.delete(key);
      // A run waiting for its turn has not started: it is dropped like one not yet fired.
      this.#slots.drop(armed);
    }
    if (this.#inFlightRuns.size === 0) return;
    let timer: TimerHandle | null = null;
    await Promise.race([Promise.allSettled([...this.#inFlightRuns]), new Promise<void>((resolve) => (timer = this.#o.timers.setTimeout(resolve, timeoutMs)))]);
    if (timer !== null) this.#o.timers.clearTimeout(timer);
  }

  stop(): void {
    this.#stopped = true;
    // Stopped, the member proposes nothing more: records still held settle now, unsent.
    this.#records.flush();
    if (this.#planTimer !== null) this.#o.timers.clearTimeout(this.#planTimer);
    for (const { timer, abort } of this.#armed.values()) {
      if (timer !== null) this.#o.timers.clearTimeout(timer);
      abort.abort(new RunAbortedError('stopping', 'the member is stopping'));
    }
    this.#armed.clear();
  }

  /** Adds a local handler and registers the job through the log (retried until a leader takes it). */
  schedule(name: string, spec: JobSpec, handler: JobHandler, options: JobOptions): void {
    this.#jobs.set(name, { spec, handler, options });
    this.#toRegister.add(name);
    if (this.#o.clockReady?.() === false) this.#registerOne(name);
    else this.#registerSome();
    // Claims already assigned to this member (e.g. before a restart's schedule() call) run now:
    // looked for once for every job scheduled in this turn, since a look through every claim
    // for each job cost the product of their numbers (an app schedules all its jobs at start).
    // With no claims, there is none to look for (a claim applied later is armed as it applies).
    if (this.state.claims.size === 0) return;
    if (this.#toArm.size === 0) queueMicrotask(() => this.#armScheduled());
    this.#toArm.add(name);
  }

  /** Arms the claims of the jobs scheduled since the last call (#toArm), in one pass over the claims. */
  #armScheduled(): void {
    const names = this.#toArm;
    if (names.size === 0) return;
    for (const claim of this.state.claims.values()) if (names.has(claim.job)) this.#arm(claim);
    names.clear();
  }

  unschedule(name: string): boolean {
    if (!this.#jobs.delete(name)) return false;
    this.#toArm.delete(name);
    // Slots already armed here do not run; their claims are reported interrupted at their instant.
    for (const [key, armed] of this.#armed) {
      if (armed.job !== name || armed.phase === 'running') continue;
      if (armed.timer !== null) this.#o.timers.clearTimeout(armed.timer);
      this.#armed.delete(key);
      this.#slots.drop(armed);
      const claim = this.state.claims.get(key);
      if (claim !== undefined) this.#armMissingHandler(claim);
    }
    this.#track(this.#unregister(name));
    return true;
  }

  /** Proposes `unregister` until it is applied (the leader then stops assigning the job here). */
  #unregister(name: string): Promise<void> {
    return this.#proposeUntil({ type: 'unregister', job: name, member: this.#o.self }, () => this.#jobs.has(name) || this.state.jobs.get(name)?.handlers.has(this.#o.self) !== true);
  }

  /**
   * Proposes `command` until it is applied, `settled()` holds (nothing left to do), the member
   * stops, or the reassignment horizon passes; between tries it waits a plan interval. Safe only
   * for commands that may be applied twice.
   */
  async #proposeUntil(command: SchedulerCommand, settled: () => boolean): Promise<void> {
    const giveUpAtMs = this.#o.clock.now() + this.#o.reassignHorizonMs;
    while (!this.#stopped && this.#o.clock.now() < giveUpAtMs && !settled()) {
      try {
        await this.#o.propose(command);
        return;
      } catch {
        await new Promise<void>((resolve) => this.#o.timers.setTimeout(resolve, this.#o.planIntervalMs));
      }
    }
  }

  /**
   * Proposes the registrations waiting (#toRegister), as many as MAX_REGISTRATIONS_IN_FLIGHT
   * lets. Called on every plan interval, and when a job is scheduled or a registration succeeds
   * while this member knows the cluster's time (until then most jobs wait, see #registerOne, and
   * looking through them all on every call would cost the square of their number); not as
   * registrations fail, so that while no leader answers they are tried once a plan interval.
   */
  #registerSome(): void {
    for (const name of this.#toRegister) {
      if (this.#registrationsInFlight >= MAX_REGISTRATIONS_IN_FLIGHT) return;
      this.#registerOne(name);
    }
  }

  /** Proposes the job's registration if it may be now; it stays in #toRegister if not. */
  #registerOne(name: string): void {
    if (this.#registrationsInFlight >= MAX_REGISTRATIONS_IN_FLIGHT) return;
    const job = this.#jobs.get(name);
    if (job === undefined || this.#stopped) {
      this.#toRegister.delete(name);
      return;
    }
    // The first registration's time anchors the job's slots on every member: a member that has
    // not learned the cluster's time would stamp its own clock, perhaps a minute off, and put
    // every slot that far away. It joins a job already registered at once (its time is then
    // unused); it creates one only once synced. The next plan interval tries again.
    if (this.#o.clockReady?.() === false && !this.state.jobs.has(name)) return;
    const command: SchedulerCommand = { type: 'register', job: name, spec: job.spec, mode: job.options.mode ?? 'one', policy: policyOf(job.options), member: this.#o.self, atMs: this.#o.clock.now() };
    this.#toRegister.delete(name);
    this.#registrationsInFlight++;
    this.#o.propose(command).then(
      () => {
        this.#registrationsInFlight--;
        if (this.#o.clockReady?.() !== false) this.#registerSome();
      },
      () => {
        this.#registrationsInFlight--;
        // No leader yet, or it changed: the next plan interval tries again (unless the job was
        // unscheduled, or scheduled anew, meanwhile).
        if (this.#jobs.get(name) === job) this.#toRegister.add(name);
      },
    );
  }

  /** Called for every scheduler command applied, in log order, on every member. */
  apply(index: number, command: SchedulerCommand): ApplyResult {
    const result = this.state.apply(index, command);
    if (command.type === 'claim' || command.type === 'skip' || command.type === 'reassign' || command.type === 'expire') this.#inflight.delete(inflightKey(command));
    if ((command.type === 'claim' || command.type === 'reassign' || command.type === 'expire') && result.ok && result.claim !== undefined) {
      const claim = result.claim;
      const key = claimKey(claim.job, claim.slotMs);
      const mine = this.#armed.get(key);
      // A run whose claim moved (or was recorded missed) no longer holds it: its signal aborts
      // (the fencing token it has is now stale).
      if (mine !== undefined && mine.token !== claim.token) {
        if (mine.timer !== null) this.#o.timers.clearTimeout(mine.timer);
        const why = command.type === 'expire' ? `the slot was recorded missed (${command.reason})` : `the slot was reassigned (token ${claim.token})`;
        mine.abort.abort(new RunAbortedError('reassigned', why));
        this.#armed.delete(key);
      }
      if (command.type !== 'expire') this.#arm(claim);
    }
    if (command.type === 'cancel' && result.ok && result.claim !== undefined) this.#replaced(result.claim, command.bySlotMs);
    if (command.type === 'register' && result.ok) this.#planSoon();
    // A run that ended, started or moved elsewhere may let a queued run of its job go.
    if (this.#slots.queuedCount > 0 && (command.type === 'outcome' || command.type === 'started' || command.type === 'cancel' || command.type === 'reassign' || command.type === 'expire')) this.#slots.pump();
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
    this.#inflight.clear();
    for (const [key, mine] of this.#armed) {
      const claim = this.state.claims.get(key);
      if (claim !== undefined && claim.token === mine.token && claim.assignees.includes(this.#o.self)) continue;
      if (mine.timer !== null) this.#o.timers.clearTimeout(mine.timer);
      mine.abort.abort(new RunAbortedError('reassigned', 'a snapshot from the leader shows the slot claimed under another token'));
      this.#armed.delete(key);
    }
    for (const [key, claim] of this.state.claims) {
      // A run that ended here with its outcome still on its way is not run again.
      if (claim.assignees.includes(this.#o.self) && !this.#alreadyReported(claim) && this.#unrecorded.get(key) !== claim.token) this.#arm(claim);
    }
    // Runs queued behind another member's may go, if the snapshot shows that run ended.
    if (this.#slots.queuedCount > 0) this.#slots.pump();
  }

  /** A later slot replaced this member's run of the claim (overlap 'replace', from another member). */
  #replaced(claim: ClaimRecord, bySlotMs: number): void {
    const key = claimKey(claim.job, claim.slotMs);
    const mine = this.#armed.get(key);
    if (mine === undefined || mine.token !== claim.token) return;
    const reason = new RunAbortedError('replaced', `replaced by the run of slot ${new Date(bySlotMs).toISOString()}`);
    if (mine.phase === 'armed') {
      // Not fired yet: it never runs, and says so.
      if (mine.timer !== null) this.#o.timers.clearTimeout(mine.timer);
      this.#armed.delete(key);
      mine.abort.abort(reason);
      this.#track(this.#report({ ...claim, assignees: [...claim.assignees] }, 'replaced', reason.message));
      return;
    }
    mine.abort.abort(reason);
  }

  #schedulePlan(delayMs = this.#o.planIntervalMs): void {
    if (this.#stopped) return;
    this.#planTimer = this.#o.timers.setTimeout(() => {
      this.#planTimer = null;
      this.#planningNow = false;
      this.#registerSome();
      this.checkLease();
      // Runs queued behind another member's run also go once that run's timeout passes.
      if (this.#slots.queuedCount > 0) this.#slots.pump();
      this.#rearm();
      let nextMs = this.#o.planIntervalMs;
      if (this.#o.isLeader()) {
        this.#leaderSinceMs ??= this.#o.clock.now();
        nextMs = Math.min(nextMs, this.#plan() ?? nextMs);
      } else {
        this.#leaderSinceMs = null;
      }
      this.#schedulePlan(nextMs);
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

  /**
   * Aborts the runs in progress if this member no longer holds its lease. The plan tick looks
   * every interval; the member also looks before each message from a peer counts as contact
   * (member.ts), so that a lease that ran out while the event loop stood still is seen before
   * the first message renews it.
   */
  checkLease(): void {
    if (this.#slots.runningCount > 0 && !this.#o.holdsLease()) this.#interruptRunning();
  }

  /**
   * This member has not heard from a leader for longer than its lease: another member may be
   * given its slots, so its runs in progress stop (their fencing tokens would soon be stale).
   * Runs not yet started stay armed; when they fire, they check the lease again.
   */
  #interruptRunning(): void {
    for (const armed of this.#armed.values()) {
      if (armed.phase === 'running' && armed.mode === 'one') armed.abort.abort(new RunAbortedError('interrupted', 'this member lost contact with the leader for longer than its lease'));
    }
  }

  /** Proposes what the planner says is due; returns how soon to plan again with the whole look-ahead, or null. */
  #plan(): number | null {
    const members = new Map<NodeId, { load: number }>();
    const eligible = this.#o.eligibleMembers();
    for (const id of eligible) members.set(id, { load: this.state.assigned.get(id) ?? 0 });
    const settled = this.#leaderSinceMs !== null && this.#o.clock.now() - this.#leaderSinceMs >= this.#o.reassignGraceMs;
    const moves = !settled ? [] : planReassignments(this.state, {
      nowMs: this.#o.clock.now(),
      eligible: new Set(eligible),
      horizonMs: this.#o.reassignHorizonMs,
      maxCommands: this.#o.maxClaimsPerPlan,
    });
    // While a slot instant is near, the slots at the far end of the look-ahead wait until it
    // passed (see quiet-window.ts): the planner looks one plan interval less far ahead (half as
    // far at most), and plans again once the instant passed. Moves, skips and claims due sooner go now.
    const quietInMs = this.#msUntilQuiet(this.#o.planIntervalMs);
    const commands = [...moves, ...plan(this.state, {
      nowMs: this.#o.clock.now(),
      lookaheadMs: quietInMs >= 1 ? Math.max(this.#o.lookaheadMs / 2, this.#o.lookaheadMs - this.#o.planIntervalMs) : this.#o.lookaheadMs,
      members,
      maxClaims: this.#o.maxClaimsPerPlan,
      horizonMs: this.#o.reassignHorizonMs,
    })];
    for (const command of commands) {
      const key = inflightKey(command);
      if (this.#inflight.has(key)) continue;
      this.#inflight.add(key);
      this.#o.propose(command).catch(() => this.#inflight.delete(key));
    }
    return quietInMs >= 1 ? quietInMs : null;
  }

  /** Sets this member's timer for a claim it was assigned, if it has the handler. */
  #arm(claim: ClaimRecord): void {
    if (!claim.assignees.includes(this.#o.self) || this.#stopped || this.#draining) return;
    const job = this.#jobs.get(claim.job);
    const key = claimKey(claim.job, claim.slotMs);
    if (this.#armed.has(key) || this.#o.clock.now() - claim.slotMs > ARM_HORIZON_MS) return;
    if (job === undefined) {
      this.#armMissingHandler(claim);
      return;
    }
    const abort = new AbortController();
    // The claim's token and attempt as of now: a later reassignment must not change this run's.
    const held = { ...claim, assignees: [...claim.assignees] };
    const delayMs = Math.max(0, claim.slotMs - this.#o.clock.now());
    // A claim applied at or after its instant was not made ahead: this member may be replaying
    // its log after a restart, or catching up, and a later reassignment or outcome may not have
    // reached it yet. It runs only after a read barrier shows it still holds the claim.
    const appliedLate = delayMs === 0;
    // The cluster's time may be corrected after arming (this member's first sync, a new
    // leader's estimate): a timer that fires early sets itself again for what is left, and
    // each plan tick brings forward a timer that would now fire late (see #rearm).
    const fire = (): void => {
      if (entry.phase === 'armed' && this.#o.clockReady?.() === false) {
        entry.timer = this.#o.timers.setTimeout(fire, CLOCK_WAIT_MS);
        entry.firesAt = this.#o.timers.now() + CLOCK_WAIT_MS;
        return;
      }
      const early = claim.slotMs - this.#o.clock.now();
      // Never before the instant, even by a millisecond (timers round to whole ones): a
      // handler that reads the clock must find its slot's time, not the day before midnight.
      if (early > FIRE_EARLY_TOLERANCE_MS && entry.phase === 'armed') {
        entry.timer = this.#o.timers.setTimeout(fire, early);
        entry.firesAt = this.#o.timers.now() + early;
        return;
      }
      entry.timer = null;
      // A timer that fires well after its instant (the cluster's time was corrected after it
      // was armed, or the process stalled) is late like a claim applied late: this member may
      // have restarted since and not applied the slot's latest state yet, so a barrier first.
      const late = appliedLate || -early > LATE_FIRE_MS;
      this.#track(this.#run(held, job, abort, late));
    };
    const entry: Armed = {
      job: claim.job,
      slotMs: claim.slotMs,
      token: claim.token,
      mode: job.options.mode ?? 'one',
      // The replicated policy, which the leader planned by (a member whose own differs is never assigned the job).
      overlap: this.state.jobs.get(claim.job)?.policy.overlap ?? job.options.overlap ?? DEFAULT_OVERLAP,
      priority: job.options.priority ?? 0,
      timeoutMs: job.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      abort,
      timer: null,
      firesAt: this.#o.timers.now() + delayMs,
      fire,
      phase: 'armed',
      resume: null,
      startedAtMs: undefined,
    };
    entry.timer = this.#o.timers.setTimeout(fire, delayMs);
    this.#armed.set(key, entry);
  }

  /**
   * Brings forward the timers of slots that, by the cluster's time as now corrected, are due
   * sooner than their timer says (a timer that fires early re-arms itself). Runs every plan tick.
   */
  #rearm(): void {
    const now = this.#o.timers.now();
    for (const armed of this.#armed.values()) {
      const fire = armed.fire;
      if (armed.phase !== 'armed' || armed.timer === null || fire === null) continue;
      const dueAt = now + Math.max(0, armed.slotMs - this.#o.clock.now());
      if (dueAt >= armed.firesAt - REARM_TOLERANCE_MS) continue;
      this.#o.timers.clearTimeout(armed.timer);
      armed.firesAt = dueAt;
      armed.timer = this.#o.timers.setTimeout(fire, dueAt - now);
    }
  }

  /**
   * A claim for a job this member has no handler for (removed from its code, unscheduled, or
   * not scheduled again yet after a restart). At the slot's instant, if the handler is still
   * missing, the member reports the run interrupted so the leader moves the slot; otherwise the
   * slot would wait for a run that never comes.
   */
  #armMissingHandler(claim: ClaimRecord): void {
    const held = { ...claim, assignees: [...claim.assignees] };
    const delayMs = Math.max(0, claim.slotMs - this.#o.clock.now());
    this.#o.timers.setTimeout(() => {
      if (this.#stopped || this.#draining) return;
      const current = this.state.claims.get(claimKey(held.job, held.slotMs));
      if (current === undefined || current.token !== held.token || this.#alreadyReported(held)) return;
      const job = this.#jobs.get(held.job);
      if (job !== undefined) {
        this.#arm(current);
        return;
      }
      this.#track(this.#report(held, 'interrupted', 'no handler for the job on this member'));
    }, delayMs);
  }

  /** Keeps a run or an outcome report in the set a graceful stop waits for; never rejects. */
  #track(work: Promise<void>): void {
    const tracked = work.catch(() => undefined).finally(() => this.#inFlightRuns.delete(tracked));
    this.#inFlightRuns.add(tracked);
  }

  async #run(claim: ClaimRecord, job: LocalJob, abort: AbortController, late: boolean): Promise<void> {
    const key = claimKey(claim.job, claim.slotMs);
    const forget = (): void => {
      if (this.#armed.get(key)?.abort === abort) this.#armed.delete(key);
    };
    // Replaying the log after a restart re-applies claims this member already ran: their
    // outcome, applied since, says so. A late claim also waits for a read barrier first.
    if (this.#alreadyReported(claim)) {
      forget();
      return;
    }
    if (late) {
      const held = await this.#stillHeld(claim, abort);
      if (held !== 'held') {
        forget();
        // No leader confirmed the claim in time: say so, so that the slot moves rather than waits.
        if (held === 'unconfirmed' && !this.#stopped && !this.#draining) await this.#report(claim, 'interrupted', 'no leader confirmed the claim');
        return;
      }
      if (this.#stopped || this.#draining) return;
    }
    const armed = this.#armed.get(key);
    // Its claim moved, or the member stops, while the barrier was awaited.
    if (armed === undefined || armed.abort !== abort) return;
    const replacedBefore = this.state.claims.get(key)?.cancelled?.token === claim.token || isReason(abort.signal.reason, 'replaced');
    const admission: Admission = replacedBefore
      ? { outcome: 'replaced', reason: 'replaced by a later slot before it started' }
      : abort.signal.aborted
        ? 'dropped'
        : await this.#admit(armed);
    if (admission !== 'run') {
      this.#slots.settle(armed);
      forget();
      if (admission !== 'dropped' && !this.#stopped) await this.#report(claim, admission.outcome, admission.reason);
      return;
    }
    await this.#execute(claim, job, armed);
  }

  /**
   * Decides, as the slot fires, whether it runs now, waits, or is not run at all (its overlap
   * policy), then waits for a free run permit (maxConcurrent). Resolves with 'run' once the
   * run may start (it then counts against maxConcurrent).
   *
   * Other runs of the job are known from two sources. This member's own, at once. Other
   * members', from the log (`started` without an outcome), so a replication lag shows: a run
   * that started elsewhere less than a commit ago is not seen yet (both run), and one whose
   * outcome is not applied here yet still looks in progress (this slot is skipped, queued or
   * replaces it). The lag is a commit round, milliseconds, far below a slot's period.
   */
  async #admit(armed: Armed): Promise<Admission> {
    // Decided at once, from what the log says now. (Waiting for news of another member's run
    // would let several waiting slots start together when it ends, before their own start
    // records reach one another: a burst that 'skip' is meant to prevent.)
    const others = this.#othersInProgress(armed);
    const queuedOfJob = [...this.#slots.activeOf(armed.job)].filter((a) => a.phase === 'queued').length;
    const decision = decideOverlap(armed.overlap, armed.slotMs, others, queuedOfJob);
    if (decision.action === 'skip') return { outcome: 'skipped', reason: decision.reason };
    if (decision.action === 'run') for (const other of decision.replace) this.#replace(other, armed);
    const go = this.#slots.wait(armed, decision.action === 'wait' ? 'queued' : 'ready');
    // An overloaded member hands the slot back, so that the leader may give it to another.
    if (go === null) return { outcome: 'interrupted', reason: `this member already had ${MAX_WAITING_RUNS} runs waiting for a free run permit` };
    const onAbort = (): void => this.#slots.drop(armed);
    armed.abort.signal.addEventListener('abort', onAbort, { once: true });
    this.#slots.pump();
    const started = await go;
    armed.abort.signal.removeEventListener('abort', onAbort);
    if (started) return 'run';
    const reason: unknown = armed.abort.signal.reason;
    return reason instanceof RunAbortedError && reason.reason === 'replaced' ? { outcome: 'replaced', reason: reason.message } : 'dropped';
  }

  /**
   * The job's other runs in progress: this member's own, and (mode 'one') other members' per the
   * log. A run this member started before a crash and now runs again (the log holds its start
   * under the same token) counts only the other members' runs that started before it, in the
   * order of their start records (at the same time: of an earlier slot). Counting the later ones
   * made two such runs, each late next to the other, wait for each other until their timeouts,
   * neither running (found by the simulator: seed 9400063, five members); an order has no cycle.
   * The price: a later run that is running indeed (its member started it while this one was cut
   * off, so it did not count this one) runs alongside the resumed one, which the log cannot tell
   * from a later run that waits. A resumed run is already at least once.
   */
  #othersInProgress(armed: Armed): OtherRun[] {
    const out: OtherRun[] = [];
    for (const other of this.#slots.activeOf(armed.job)) if (other !== armed) out.push({ slotMs: other.slotMs, startedAtMs: other.startedAtMs, local: other });
    if (armed.mode === 'one') {
      const filter = { nowMs: this.#o.clock.now(), timeoutMs: armed.timeoutMs, exceptSlotMs: armed.slotMs, exceptMember: this.#o.self };
      const ownStart = this.state.claims.get(claimKey(armed.job, armed.slotMs))?.starts.get(this.#o.self);
      const resumedFromMs = ownStart?.token === armed.token ? ownStart.atMs : undefined;
      for (const run of runsInProgress(this.state, armed.job, filter)) {
        if (this.#o.peerConnected?.(run.member) === false) continue;
        if (resumedFromMs !== undefined && !(run.startedAtMs < resumedFromMs || (run.startedAtMs === resumedFromMs && run.slotMs < armed.slotMs))) continue;
        out.push({ slotMs: run.slotMs, startedAtMs: run.startedAtMs, remote: run });
      }
    }
    return out;
  }

  /** Ends another run of the job for `by` (overlap 'replace'): here at once, elsewhere through the log. */
  #replace(other: { readonly local?: Armed; readonly remote?: RunInProgress }, by: Armed): void {
    const reason = `replaced by the run of slot ${new Date(by.slotMs).toISOString()}`;
    if (other.local !== undefined) {
      other.local.abort.abort(new RunAbortedError('replaced', reason));
      return;
    }
    const run = other.remote;
    if (run === undefined) return;
    const command: SchedulerCommand = { type: 'cancel', job: run.job, slotMs: run.slotMs, token: run.token, bySlotMs: by.slotMs, atMs: this.#o.clock.now() };
    // Not awaited: the new run starts now. Retried until applied or moot (the run ended or moved).
    this.#track(
      this.#proposeUntil(command, () => {
        const claim = this.state.claims.get(claimKey(run.job, run.slotMs));
        return claim === undefined || claim.token !== run.token || claim.cancelled?.token === run.token || claim.outcomes.get(run.member)?.token === run.token;
      }),
    );
  }

  /** Runs the handler of an admitted run, then records its outcome. */
  async #execute(claim: ClaimRecord, job: LocalJob, armed: Armed): Promise<void> {
    const key = claimKey(claim.job, claim.slotMs);
    const abort = armed.abort;
    // Without a live leader this member cannot know it still holds the claim: do not start.
    if ((job.options.mode ?? 'one') === 'one' && !this.#o.holdsLease()) {
      abort.abort(new RunAbortedError('interrupted', 'no leader was reachable at the slot instant'));
    }
    const timeoutMs = armed.timeoutMs;
    const timeout = this.#o.timers.setTimeout(() => abort.abort(new RunAbortedError('timeout', `the run exceeded its timeout of ${timeoutMs} ms`)), timeoutMs);
    const startedAtMs = this.#o.clock.now();
    let outcome: RunOutcome = 'succeeded';
    let error: string | undefined;
    try {
      if (abort.signal.aborted) throw abort.signal.reason as Error;
      // The handler starts first, synchronously up to its first await: recording the start
      // proposes through the driver, whose turn would otherwise run before the handler.
      const handled = (async () => job.handler({ job: claim.job, slot: new Date(claim.slotMs), fencingToken: claim.token, attempt: claim.attempt, signal: abort.signal }))();
      try {
        this.#o.onRunStart?.({ job: claim.job, slotMs: claim.slotMs, fencingToken: claim.token, member: this.#o.self, startedAtMs });
      } catch {
        // A listener's error must not keep the run going unrecorded.
      }
      // Not awaited: the handler runs now, and the log learns of it a commit later.
      this.#track(this.#recordStart(claim, startedAtMs));
      await Promise.race([handled, new Promise((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason as Error), { once: true }))]);
    } catch (e) {
      const reason: unknown = abort.signal.reason;
      outcome = isReason(reason, 'interrupted') ? 'interrupted' : isReason(reason, 'replaced') ? 'replaced' : abort.signal.aborted ? 'aborted' : 'failed';
      error = e instanceof Error ? e.message : String(e);
    } finally {
      this.#o.timers.clearTimeout(timeout);
      this.#unrecorded.set(key, claim.token);
      if (this.#armed.get(key)?.abort === abort) this.#armed.delete(key);
      // Its run permit is free, and the job's queued runs may go, before the outcome commits.
      this.#slots.release(armed);
    }
    const endedAtMs = this.#o.clock.now();
    const record: RunRecord = {
      job: claim.job,
      slotMs: claim.slotMs,
      fencingToken: claim.token,
      member: this.#o.self,
      startedAtMs,
      endedAtMs,
      outcome,
      ...(error === undefined ? {} : { error }),
    };
    try {
      this.#o.onRun?.(record);
    } catch {
      // A listener's error must not keep the outcome from being recorded.
    }
    try {
      await this.#recordOutcome({ ...record, outcome });
    } finally {
      if (this.#unrecorded.get(key) === claim.token) this.#unrecorded.delete(key);
    }
  }

  /** Records in the log that the run started, until applied or moot (the run ended or moved). */
  #recordStart(claim: ClaimRecord, startedAtMs: number): Promise<void> {
    const key = claimKey(claim.job, claim.slotMs);
    const command: SchedulerCommand = { type: 'started', job: claim.job, slotMs: claim.slotMs, token: claim.token, member: this.#o.self, atMs: startedAtMs };
    return this.#recordSoon(command, () => {
      const current = this.state.claims.get(key);
      return current === undefined || current.token !== claim.token || current.starts.get(this.#o.self)?.token === claim.token || current.outcomes.get(this.#o.self)?.token === claim.token;
    });
  }

  /**
   * Proposes a run's record (as #proposeUntil does) once no slot instant is near, within
   * MAX_RECORD_DELAY_MS: see record-batcher.ts. While draining, at once.
   */
  #recordSoon(command: SchedulerCommand, settled: () => boolean): Promise<void> {
    if (this.#draining || this.#stopped) return this.#proposeUntil(command, settled);
    return new Promise<void>((done) => this.#records.hold({ command, settled, done }));
  }

  /**
   * Milliseconds until no slot instant is near (0: none is), at most `limitMs`. The instants
   * are every open claim's, whoever holds it (a commit round costs every member work), and
   * this member's own.
   */
  #msUntilQuiet(limitMs: number): number {
    const nowMs = this.#o.clock.now();
    return quietAt(nowMs, this.#slotInstants(), limitMs) - nowMs;
  }

  *#slotInstants(): Iterable<number> {
    for (const claim of this.state.openClaims()) yield claim.slotMs;
    for (const armed of this.#armed.values()) yield armed.slotMs;
  }

  /**
   * For a late claim: waits for a read barrier (one shared by all claims waiting, retried while
   * no leader answers, within the plan interval), then says whether this member still holds the
   * claim under the same token and has not already reported a run of it.
   */
  async #stillHeld(claim: ClaimRecord, abort: AbortController): Promise<'held' | 'lost' | 'unconfirmed'> {
    for (let attempt = 0; attempt < BARRIER_ATTEMPTS_MAX && !this.#stopped && !abort.signal.aborted; attempt++) {
      try {
        this.#sharedBarrier ??= this.#o.barrier().finally(() => {
          this.#sharedBarrier = null;
        });
        await this.#sharedBarrier;
        const current = this.state.claims.get(claimKey(claim.job, claim.slotMs));
        return current !== undefined && current.token === claim.token && !abort.signal.aborted && !this.#alreadyReported(claim) ? 'held' : 'lost';
      } catch {
        await new Promise<void>((resolve) => this.#o.timers.setTimeout(resolve, this.#o.planIntervalMs));
      }
    }
    return abort.signal.aborted || this.#stopped ? 'lost' : 'unconfirmed';
  }

  /** Whether this member already reported a run of this claim (same token). */
  #alreadyReported(claim: ClaimRecord): boolean {
    return this.state.claims.get(claimKey(claim.job, claim.slotMs))?.outcomes.get(this.#o.self)?.token === claim.token;
  }

  async #recordOutcome(run: Omit<RunRecord, 'outcome'> & { readonly outcome: RunOutcome }): Promise<void> {
    const command: SchedulerCommand = {
      type: 'outcome',
      job: run.job,
      slotMs: run.slotMs,
      token: run.fencingToken,
      member: run.member,
      outcome: run.outcome,
      atMs: run.endedAtMs,
      ...(run.error === undefined ? {} : { error: run.error.slice(0, 500) }),
    };
    // Retried until the log has it, the claim moved on, or the member stops: an outcome that is
    // never recorded would leave its slot waiting. Recording twice is harmless (first one wins).
    const settled = (): boolean => {
      const current = this.state.claims.get(claimKey(run.job, run.slotMs));
      return current === undefined || current.token !== run.fencingToken || current.outcomes.get(run.member)?.token === run.fencingToken;
    };
    // An interrupted run is one the leader must move to another member: that waits for nothing.
    await (run.outcome === 'interrupted' ? this.#proposeUntil(command, settled) : this.#recordSoon(command, settled));
  }

  /**
   * Records a slot this member did not run: interrupted (the leader moves it), skipped or
   * replaced (its overlap policy; never run again).
   */
  #report(claim: ClaimRecord, outcome: 'interrupted' | 'skipped' | 'replaced', reason: string): Promise<void> {
    const atMs = this.#o.clock.now();
    return this.#recordOutcome({ job: claim.job, slotMs: claim.slotMs, fencingToken: claim.token, member: this.#o.self, startedAtMs: atMs, endedAtMs: atMs, outcome, error: reason });
  }
}

const isReason = (reason: unknown, which: RunAbortedError['reason']): boolean => reason instanceof RunAbortedError && reason.reason === which;

/** The replicated form of a job's options (what the leader plans by). */
function policyOf(options: JobOptions): JobPolicy {
  const c = options.catchUp;
  const catchUp: CatchUp = c === undefined || c === 'latest' ? { policy: 'latest' } : c === 'none' ? { policy: 'none' } : { policy: 'all', windowMs: c.windowMs, maxSlots: c.maxSlots };
  return { retries: options.retries ?? 0, retryDelayMs: options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, catchUp, overlap: options.overlap ?? DEFAULT_OVERLAP };
}

function inflightKey(command: SchedulerCommand): string {
  if (command.type === 'claim') return `claim ${claimKey(command.job, command.slotMs)}`;
  if (command.type === 'skip') return `skip ${claimKey(command.job, command.throughMs)}`;
  if (command.type === 'reassign') return `reassign ${claimKey(command.job, command.slotMs)} ${command.fromToken}`;
  if (command.type === 'expire') return `expire ${claimKey(command.job, command.slotMs)} ${command.fromToken}`;
  return command.type;
}
