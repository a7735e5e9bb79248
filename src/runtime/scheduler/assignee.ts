import { RunAbortedError } from '../../errors.js';
import type { TimerHandle } from '../../time/clock.js';
import { horizonStartMs } from '../../scheduler/planner.js';
import { quietAt } from '../../scheduler/quiet-window.js';
import { claimKey, horizonFromMs, isCancelledRun, type ApplyResult, type ClaimRecord } from '../../scheduler/records.js';
import { CANCELLED_REASON, DEFAULT_OVERLAP, type SchedulerCommand } from '../../scheduler/command.js';
import { isReason, LEASE_LOST, type Armed } from './armed-claim.js';
import type { LocalJob, Registrations } from './registrations.js';
import { RunAdmission, type Admission } from './run-admission.js';
import { RunExecution } from './run-execution.js';
import { RunPermits } from './run-permits.js';
import { RunRecords } from './run-records.js';
import type { RuntimeContext, SchedulerRuntimeOptions } from './runtime-context.js';
import { FIRST_CLUSTER_VERSION, PAST_HORIZON_VERSION } from '../../version/versions.js';

/** Bound on read-barrier attempts for a late claim when no leader answers (about two seconds). */
const BARRIER_ATTEMPTS_MAX = 20;
/** A run's timeout when its job sets none (JobOptions.timeoutMs). */
export const DEFAULT_TIMEOUT_MS = 60_000;
/** A slot whose timer fires this long after its instant is confirmed by a read barrier first. */
const LATE_FIRE_MS = 100;
/** How often slots that fired before this member learned the cluster's time look again, all on one timer. */
const CLOCK_WAIT_MS = 10;
/** A slot's timer is set again when the cluster's time says it is off by more than this. */
const REARM_TOLERANCE_MS = 2;
/**
 * A slot fires once the cluster's time is within this of its instant: floating-point slack
 * only (it must exceed the rounding of time sums, or a timer set for less could never move
 * time forward in a simulation).
 */
const FIRE_EARLY_TOLERANCE_MS = 0.01;
/** Why a claim past the reassignment horizon was not run (Assignee.#reportPastHorizon). */
const PAST_HORIZON_STARTED = 'its run ended with an earlier process of this member, which learned of that past the reassignment horizon';
const PAST_HORIZON_UNRUN = 'this member learned of the slot past the reassignment horizon (it was down or cut off), too late to run it';

/**
 * The assignee's side of the scheduler on one member: the claims it was given, each armed on
 * its own timer for its instant on the cluster's time, so no consensus round sits between the
 * instant and the handler's start; as one fires, a read barrier first if it is late, then its
 * admission (run-admission.ts), its run (run-execution.ts) and its records (run-records.ts).
 * Its runs stop when their claims move, or when this member loses its lease.
 */
export class Assignee {
  readonly #ctx: RuntimeContext;
  readonly #o: SchedulerRuntimeOptions;
  readonly #jobs: Registrations;
  /**
   * Jobs scheduled in this turn whose claims are yet to be armed (see #armScheduled): bounded by
   * the jobs scheduled here, and emptied within the turn.
   */
  readonly #toArm = new Set<string>();
  /** This member's armed, waiting or running claims, by claimKey, with the token they hold. */
  readonly #armed = new Map<string, Armed>();
  /** Claims past the reassignment horizon whose report is under way (#reportPastHorizon), by key: the token reported under, one report each. */
  readonly #pastHorizon = new Map<string, number>();
  /** This member's runs from their firing to their end: queued, ready (maxConcurrent) or running. */
  readonly #permits: RunPermits<Armed>;
  readonly #admission: RunAdmission;
  readonly #execution: RunExecution;
  readonly #records: RunRecords;
  /** One read barrier in flight, shared by every late claim waiting for it. */
  #sharedBarrier: Promise<unknown> | null = null;
  /**
   * Armed claims that fired before this member learned the cluster's time, and the one timer
   * that looks for it again for all of them (see #waitForClock): a subset of `#armed` (an entry
   * leaves it as it is disarmed, see #unset), and the timer set only while it holds any.
   */
  readonly #clockWaiters = new Set<Armed>();
  #clockWait: TimerHandle | null = null;
  /** See the constructor. */
  readonly #noHandler: (job: string) => void;

  /**
   * `maxConcurrent`: checked by the caller (a positive integer, or Infinity). `noHandler`: told
   * of a job when a claim of it reached this member, which has no handler for it, at the slot's
   * instant (see #armMissingHandler).
   */
  constructor(ctx: RuntimeContext, jobs: Registrations, maxConcurrent: number, noHandler: (job: string) => void = () => undefined) {
    this.#noHandler = noHandler;
    this.#ctx = ctx;
    this.#o = ctx.options;
    this.#jobs = jobs;
    const o = ctx.options;
    this.#permits = new RunPermits<Armed>({
      maxConcurrent,
      monotonicNow: () => o.timers.now(),
      clusterNow: () => o.clock.now(),
      blocked: (armed) => this.#admission.othersInProgress(armed).some((other) => other.local === undefined || other.local.phase !== 'queued') || (armed.overlap === 'queue' && this.#admission.earlierElsewhere(armed)),
      open: () => !ctx.stopped && !ctx.draining,
    });
    this.#records = new RunRecords(ctx, (limitMs) => this.msUntilQuiet(limitMs));
    this.#admission = new RunAdmission(ctx, this.#permits);
    this.#execution = new RunExecution(ctx, this.#permits, this.#records, (key, abort) => this.#forget(key, abort));
  }

  /**
   * A job was scheduled here: claims already assigned to this member (e.g. before a restart's
   * schedule() call) run now.
   */
  scheduled(name: string): void {
    // Looked for once for every job scheduled in this turn, since a look through every claim
    // for each job cost the product of their numbers (an app schedules all its jobs at start).
    // With no claims, there is none to look for (a claim applied later is armed as it applies).
    if (this.#ctx.state.claims.size === 0) return;
    if (this.#toArm.size === 0) queueMicrotask(() => this.#armScheduled());
    this.#toArm.add(name);
  }

  /** A job was unscheduled here: its slots already armed do not run; their claims are reported interrupted at their instant. */
  unscheduled(name: string): void {
    this.#toArm.delete(name);
    for (const [key, armed] of this.#armed) {
      if (armed.job !== name || armed.phase === 'running') continue;
      this.#unset(armed);
      this.#armed.delete(key);
      this.#permits.drop(armed);
      const claim = this.#ctx.state.claims.get(key);
      if (claim !== undefined) this.#armMissingHandler(claim);
    }
  }

  /**
   * Records go at once, and the runs waiting for their turn (not started) are dropped like ones
   * not yet fired; running ones go on (the runtime waits for them).
   */
  drain(): void {
    // Records go at once from now on: the runs' outcomes are what a graceful stop waits for.
    this.#records.flush();
    for (const [key, armed] of this.#armed) {
      if (armed.phase === 'running') continue;
      this.#unset(armed);
      this.#armed.delete(key);
      // A run waiting for its turn has not started: it is dropped like one not yet fired.
      this.#permits.drop(armed);
    }
  }

  /**
   * Whether every run started here shows in the log (its start or outcome applied, or its
   * claim moved on), those of `job` only when given: until then a leader that saw this member
   * give up the job could move a slot it runs.
   */
  runsAnnounced(job?: string): boolean {
    for (const [key, armed] of this.#armed) {
      if (armed.phase === 'running' && (job === undefined || armed.job === job) && !this.#records.announced(key, armed.token)) return false;
    }
    return this.#records.endedAnnounced();
  }

  /**
   * Whether this member's run of the claim `key` under `token` is not over as the log will tell
   * it: it fired and waits to start (behind another run of its job, or for a free run permit),
   * runs, or ended and its outcome is on its way. The simulator's checkers ask, to tell a slot
   * that waits its turn on a busy member from one that was lost.
   */
  unsettled(key: string, token: number): boolean {
    const armed = this.#armed.get(key);
    if (armed?.token === token && (armed.phase === 'queued' || armed.phase === 'ready' || armed.phase === 'running')) return true;
    return this.#records.endedUnrecorded(key, token);
  }

  /** Sends the records of runs held back (record-batcher.ts) now. */
  flushRecords(): void {
    this.#records.flush();
  }

  /**
   * Aborts the runs in progress with `reason` (their outcomes say interrupted, and the leader
   * moves their slots at once): a graceful stop whose time ran out (`stopping`), or this
   * member's removal (`stopping` too: the leader moves its claims as it applies the removal).
   * Returns how many it aborted.
   */
  interruptRunning(reason: RunAbortedError): number {
    let n = 0;
    for (const armed of this.#armed.values()) {
      if (armed.phase !== 'running') continue;
      armed.abort.abort(reason);
      n++;
    }
    return n;
  }

  /** Stops every timer and aborts every run: the member is stopping. */
  stop(): void {
    // Stopped, the member proposes nothing more: records still held settle now, unsent.
    this.#records.flush();
    for (const armed of this.#armed.values()) {
      this.#unset(armed);
      armed.abort.abort(new RunAbortedError('stopping', 'the member is stopping'));
    }
    this.#armed.clear();
  }

  /**
   * A scheduler command was applied (to the state, with `result`): a claim of this member's
   * that moved aborts its run, one given to it is armed, a cancel of its run replaces it, an
   * operator's cancel ends it, and a run that ended, started or moved elsewhere may let a
   * queued run of its job go.
   */
  applied(command: SchedulerCommand, result: ApplyResult): void {
    if ((command.type === 'claim' || command.type === 'trigger' || command.type === 'reassign' || command.type === 'expire') && result.ok && result.claim !== undefined) {
      const claim = result.claim;
      const key = claimKey(claim.job, claim.slotMs);
      const mine = this.#armed.get(key);
      // A run whose claim moved (or was recorded missed) no longer holds it: its signal aborts
      // (the fencing token it has is now stale).
      if (mine !== undefined && mine.token !== claim.token) {
        this.#unset(mine);
        const why = command.type === 'expire' ? `the slot was recorded missed (${command.reason})` : `the slot was reassigned (token ${claim.token})`;
        mine.abort.abort(new RunAbortedError('reassigned', why));
        this.#armed.delete(key);
      }
      if (command.type !== 'expire') this.#arm(claim);
    }
    if (command.type === 'cancel' && result.ok && result.claim !== undefined) this.#ended(result.claim, 'replaced', `replaced by the run of slot ${new Date(command.bySlotMs).toISOString()}`);
    if (command.type === 'cancel-runs' && result.ok) for (const claim of result.cancelled ?? []) this.#ended(claim, 'cancelled', cancelledMessage(claim));
    // A run that ended, started or moved elsewhere may let a queued run of its job go.
    if (this.#permits.queuedCount > 0 && (command.type === 'outcome' || command.type === 'started' || command.type === 'cancel' || command.type === 'cancel-runs' || command.type === 'reassign' || command.type === 'expire')) this.#permits.pump();
  }

  /**
   * The state was replaced by a snapshot's: a run whose claim the snapshot moved or ended no
   * longer holds it, one an operator cancelled (an entry this member never applied one by one)
   * ends as that entry would have ended it, and every claim of this member's that it holds is
   * armed as an applied claim would be (one it already ran is recognised when it fires).
   */
  restored(): void {
    const self = this.#o.self;
    // Claims whose cancel this restore just told (reported, if not fired): not armed again below.
    const told = new Set<string>();
    for (const [key, mine] of this.#armed) {
      const claim = this.#ctx.state.claims.get(key);
      if (claim !== undefined && claim.token === mine.token && claim.assignees.includes(self)) {
        // Ended for good in the entries this member skipped: cancelled by an operator, or
        // replaced by a later slot (overlap 'replace'), as applying the entry would have ended it.
        const ended = claim.cancelled;
        if (ended !== null && ended.token === mine.token) {
          if (isCancelledRun(ended)) this.#ended(claim, 'cancelled', cancelledMessage(claim));
          else this.#ended(claim, 'replaced', `replaced by the run of slot ${new Date(ended.bySlotMs).toISOString()}`);
          told.add(key);
        }
        continue;
      }
      this.#unset(mine);
      mine.abort.abort(new RunAbortedError('reassigned', 'a snapshot from the leader shows the slot claimed under another token'));
      this.#armed.delete(key);
    }
    for (const [key, claim] of this.#ctx.state.claims) {
      // A run that ended here, its outcome recorded or on its way, is not run again (#arm).
      if (claim.assignees.includes(self) && !told.has(key) && !this.#records.alreadyReported(claim)) this.#arm(claim);
    }
    // Runs queued behind another member's may go, if the snapshot shows that run ended.
    if (this.#permits.queuedCount > 0) this.#permits.pump();
  }

  /** The look of every plan interval: the lease, runs queued behind another member's, timers against the cluster's time. */
  tick(): void {
    this.checkLease();
    // Runs queued behind another member's run also go once that run's timeout passes.
    if (this.#permits.queuedCount > 0) this.#permits.pump();
    this.#rearm();
  }

  /**
   * Aborts the runs in progress if this member no longer holds its lease. The plan tick looks
   * every interval; the member also looks before each message from a peer counts as contact
   * (member.ts), so that a lease that ran out while the event loop stood still is seen before
   * the first message renews it.
   */
  checkLease(): void {
    if (this.#permits.runningCount > 0 && !this.#o.holdsLease()) this.#interruptRunning();
  }

  /**
   * Milliseconds until no slot instant is near (0: none is), at most `limitMs`. The instants
   * are every open claim's, whoever holds it (a commit round costs every member work), and
   * this member's own.
   */
  msUntilQuiet(limitMs: number): number {
    const nowMs = this.#o.clock.now();
    return quietAt(nowMs, this.#slotInstants(), limitMs) - nowMs;
  }

  *#slotInstants(): Iterable<number> {
    for (const claim of this.#ctx.state.openClaims()) yield claim.slotMs;
    for (const armed of this.#armed.values()) yield armed.slotMs;
  }

  /** Arms the claims of the jobs scheduled since the last call (#toArm), in one pass over the claims. */
  #armScheduled(): void {
    const names = this.#toArm;
    if (names.size === 0) return;
    for (const claim of this.#ctx.state.claims.values()) if (names.has(claim.job)) this.#arm(claim);
    names.clear();
  }

  /**
   * This member's run of the claim was ended for good through the log: a later slot replaced it
   * (overlap 'replace', from another member), or an operator cancelled it. Running, its signal
   * aborts with a RunAbortedError of `why` (its outcome says it); not started, it is not run and says so.
   */
  #ended(claim: ClaimRecord, why: 'replaced' | 'cancelled', message: string): void {
    const reason = new RunAbortedError(why, message);
    const key = claimKey(claim.job, claim.slotMs);
    const mine = this.#armed.get(key);
    if (mine === undefined || mine.token !== claim.token) return;
    if (mine.phase === 'armed') {
      // Not fired yet: it never runs, and says so.
      this.#unset(mine);
      this.#armed.delete(key);
      mine.abort.abort(reason);
      this.#ctx.track(this.#records.report({ ...claim, assignees: [...claim.assignees] }, why, message));
      return;
    }
    mine.abort.abort(reason);
  }

  /**
   * This member lost its lease (see LEASE_LOST): another member may be given its slots, so its
   * runs in progress stop (their fencing tokens would soon be stale). Runs not yet started stay
   * armed; when they fire, they check the lease again.
   */
  #interruptRunning(): void {
    for (const armed of this.#armed.values()) {
      if (armed.phase === 'running' && armed.mode === 'one') armed.abort.abort(new RunAbortedError('interrupted', LEASE_LOST));
    }
  }

  /** Sets this member's timer for a claim it was assigned, if it has the handler. */
  #arm(claim: ClaimRecord): void {
    if (!claim.assignees.includes(this.#o.self) || this.#ctx.stopped || this.#ctx.draining) return;
    const job = this.#jobs.get(claim.job);
    const key = claimKey(claim.job, claim.slotMs);
    // A run of it under this token ended here, its outcome on its way: armed again (its job
    // scheduled again meanwhile, a snapshot without the outcome), it would run again once a read
    // barrier shows the claim still held, which it may before the outcome commits.
    if (this.#records.endedUnrecorded(key, claim.token)) return;
    if (this.#armed.has(key)) return;
    // A claim past the reassignment horizon when applied (counted as the leader counts it,
    // horizonStartMs) is history, not work: the leader no longer moves it. Only a clock that has
    // learned the cluster's time may call a claim history: a member that restarted with its
    // clock far ahead would otherwise drop every claim it replays. Armed now, it fires once the
    // clock is synced (see #fire).
    const record = this.#ctx.state.jobs.get(claim.job);
    const sinceMs = record?.mode === 'one' ? horizonStartMs(claim, record) : horizonFromMs(claim);
    if (this.#o.clockReady?.() !== false && this.#o.clock.now() - sinceMs > this.#o.reassignHorizonMs) {
      this.#reportPastHorizon(claim, sinceMs);
      return;
    }
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
        this.#waitForClock(entry);
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
      this.#ctx.track(this.#run(held, job, abort, late));
    };
    const entry: Armed = {
      job: claim.job,
      slotMs: claim.slotMs,
      token: claim.token,
      mode: job.options.mode ?? 'one',
      // The replicated policy, which the leader planned by (a member whose own differs is never assigned the job).
      overlap: this.#ctx.state.jobs.get(claim.job)?.policy.overlap ?? job.options.overlap ?? DEFAULT_OVERLAP,
      priority: job.options.priority ?? 0,
      timeoutMs: job.options.timeoutMs ?? DEFAULT_TIMEOUT_MS,
      abort,
      timer: null,
      firesAt: this.#o.timers.now() + delayMs,
      fire,
      phase: 'armed',
      resume: null,
      startedAtMs: undefined,
      waited: false,
    };
    entry.timer = this.#o.timers.setTimeout(fire, delayMs);
    this.#armed.set(key, entry);
  }

  /**
   * Holds `entry`, which fired before this member learned the cluster's time, until it has: one
   * timer looks every CLOCK_WAIT_MS for all such claims, since a member that restarted replays
   * every claim of its log (it cannot tell which are history yet), and a timer each cost a
   * wake-up per claim every CLOCK_WAIT_MS for as long as no leader was reachable.
   */
  #waitForClock(entry: Armed): void {
    entry.timer = null;
    this.#clockWaiters.add(entry);
    if (this.#clockWait === null) this.#clockWait = this.#o.timers.setTimeout(this.#lookAtClock, CLOCK_WAIT_MS);
  }

  readonly #lookAtClock = (): void => {
    this.#clockWait = null;
    if (this.#clockWaiters.size === 0) return;
    if (this.#o.clockReady?.() === false) {
      this.#clockWait = this.#o.timers.setTimeout(this.#lookAtClock, CLOCK_WAIT_MS);
      return;
    }
    const waiters = [...this.#clockWaiters];
    this.#clockWaiters.clear();
    for (const entry of waiters) entry.fire?.();
  };

  /** Stops `entry`'s timer, or its wait for the clock (the shared timer with it once none waits): it is being disarmed. */
  #unset(entry: Armed): void {
    if (entry.timer !== null) this.#o.timers.clearTimeout(entry.timer);
    entry.timer = null;
    if (!this.#clockWaiters.delete(entry) || this.#clockWaiters.size > 0 || this.#clockWait === null) return;
    this.#o.timers.clearTimeout(this.#clockWait);
    this.#clockWait = null;
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
   * A claim of this member's past the reassignment horizon when applied (it was down or cut off,
   * and caught up), which it does not run: reported interrupted, unless a read barrier shows the
   * claim moved, so that no slot waits for it. Nobody else records its share of a mode
   * 'all' slot, nor a slot whose run the log shows started here and never ended (this member's
   * earlier process ran it and died: the leader takes the run as going on); and from
   * PAST_HORIZON_VERSION the leader leaves any claim of a reachable assignee to it (before, it
   * records missed a claim of mode 'one' that nothing of ran, which is not reported then).
   * Reported as of `sinceMs`, where the claim's horizon counts from (its run's start, say): the
   * report is no news of the run, so it must not start the horizon again, and the leader, which
   * would then move the slot, records it missed (PAST_HORIZON_VERSION).
   */
  #reportPastHorizon(claim: ClaimRecord, sinceMs: number): void {
    const self = this.#o.self;
    const key = claimKey(claim.job, claim.slotMs);
    if (claim.outcomes.get(self)?.token === claim.token || this.#pastHorizon.get(key) === claim.token || this.#ctx.stopped || this.#ctx.draining) return;
    const started = claim.starts.get(self)?.token === claim.token;
    // Before that version the leader records missed a claim of mode 'one' that nothing of ran,
    // as a member of an earlier release expects.
    const byLeader = (this.#o.clusterVersion?.() ?? FIRST_CLUSTER_VERSION) < PAST_HORIZON_VERSION && this.#ctx.state.jobs.get(claim.job)?.mode !== 'all';
    if (!started && byLeader) return;
    const held = { ...claim, assignees: [...claim.assignees] };
    this.#pastHorizon.set(key, held.token);
    // Reported also when no leader confirmed the claim within the barrier's tries (as a late
    // run's claim is, see #run): from PAST_HORIZON_VERSION the leader leaves it to this member,
    // which nothing would arm again, and a report under a token moved since is refused.
    const report = async (): Promise<void> => {
      if ((await this.#stillHeld(held, new AbortController())) === 'lost' || this.#ctx.stopped || this.#ctx.draining) return;
      await this.#records.report(held, 'interrupted', started ? PAST_HORIZON_STARTED : PAST_HORIZON_UNRUN, sinceMs);
    };
    this.#ctx.track(
      report().finally(() => {
        if (this.#pastHorizon.get(key) === held.token) this.#pastHorizon.delete(key);
      }),
    );
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
      if (this.#ctx.stopped || this.#ctx.draining) return;
      const current = this.#ctx.state.claims.get(claimKey(held.job, held.slotMs));
      if (current === undefined || current.token !== held.token || this.#records.alreadyReported(held)) return;
      const job = this.#jobs.get(held.job);
      if (job !== undefined) {
        this.#arm(current);
        return;
      }
      this.#ctx.track(this.#records.report(held, 'interrupted', 'no handler for the job on this member'));
      this.#noHandler(held.job);
    }, delayMs);
  }

  async #run(claim: ClaimRecord, job: LocalJob, abort: AbortController, late: boolean): Promise<void> {
    const key = claimKey(claim.job, claim.slotMs);
    const forget = (): void => this.#forget(key, abort);
    // Replaying the log after a restart re-applies claims this member already ran: their
    // outcome, applied since, says so. A late claim also waits for a read barrier first.
    if (this.#records.alreadyReported(claim)) {
      forget();
      return;
    }
    if (late) {
      const held = await this.#stillHeld(claim, abort);
      if (held !== 'held') {
        forget();
        // No leader confirmed the claim in time: say so, so that the slot moves rather than waits.
        if (held === 'unconfirmed' && !this.#ctx.stopped && !this.#ctx.draining) await this.#records.report(claim, 'interrupted', 'no leader confirmed the claim');
        return;
      }
      if (this.#ctx.stopped || this.#ctx.draining) return;
    }
    const armed = this.#armed.get(key);
    // Its claim moved, or the member stops, while the barrier was awaited.
    if (armed === undefined || armed.abort !== abort) return;
    const ended = this.#ctx.state.claims.get(key)?.cancelled;
    const cancelledBefore = (ended?.token === claim.token && isCancelledRun(ended)) || isReason(abort.signal.reason, 'cancelled');
    const replacedBefore = !cancelledBefore && (ended?.token === claim.token || isReason(abort.signal.reason, 'replaced'));
    // Given back: the log no longer has this member handle the job (it unregistered it, as a
    // graceful stop does, or unschedule(); or it registered another form of it, a conflict: a
    // member that was the last to stop finds its claims so as it starts again, until its
    // registration applies), and a leader moves a claim whose run's start the log does not show
    // (planner.ts, released). A run started now would run the slot beside the one the move
    // makes, until the move reached this member. Reported, so that the slot has an outcome here
    // (mode 'all') and moves at once (mode 'one') if no move came first; decided before the
    // admission, which would hold a place in the job's queue and a run permit for it.
    const givenBack = this.#ctx.state.jobs.get(claim.job)?.handlers.has(this.#o.self) === false;
    const admission: Admission = cancelledBefore
      ? { outcome: 'cancelled', reason: `${CANCELLED_REASON} before it started` }
      : replacedBefore
        ? { outcome: 'replaced', reason: 'replaced by a later slot before it started' }
        : abort.signal.aborted
        ? 'dropped'
        : givenBack
        ? { outcome: 'interrupted', reason: 'this member no longer handles the job: it unregistered it (a stop, unschedule()) or registered another form of it' }
        : await this.#admission.admit(armed);
    if (admission !== 'run') {
      this.#permits.settle(armed);
      forget();
      if (admission !== 'dropped' && !this.#ctx.stopped) await this.#records.report(claim, admission.outcome, admission.reason);
      return;
    }
    await this.#execution.execute(claim, job, armed);
  }

  /**
   * For a late claim: waits for a read barrier (one shared by all claims waiting, retried while
   * no leader answers, within the plan interval), then says whether this member still holds the
   * claim under the same token and has not already reported a run of it.
   */
  async #stillHeld(claim: ClaimRecord, abort: AbortController): Promise<'held' | 'lost' | 'unconfirmed'> {
    for (let attempt = 0; attempt < BARRIER_ATTEMPTS_MAX && !this.#ctx.stopped && !abort.signal.aborted; attempt++) {
      try {
        this.#sharedBarrier ??= this.#o.barrier().finally(() => {
          this.#sharedBarrier = null;
        });
        await this.#sharedBarrier;
        const current = this.#ctx.state.claims.get(claimKey(claim.job, claim.slotMs));
        return current !== undefined && current.token === claim.token && !abort.signal.aborted && !this.#records.alreadyReported(claim) ? 'held' : 'lost';
      } catch {
        await new Promise<void>((resolve) => this.#o.timers.setTimeout(resolve, this.#o.planIntervalMs));
      }
    }
    return abort.signal.aborted || this.#ctx.stopped ? 'lost' : 'unconfirmed';
  }

  /** Forgets the armed claim under `key`, if it is still the one `abort` belongs to (not a later arming). */
  #forget(key: string, abort: AbortController): void {
    if (this.#armed.get(key)?.abort === abort) this.#armed.delete(key);
  }
}

/** The reason of a run an operator cancelled (the claim's `cancelled` says who asked, and when). */
function cancelledMessage(claim: ClaimRecord): string {
  return isCancelledRun(claim.cancelled) ? `${CANCELLED_REASON} (asked of member ${claim.cancelled.byMember})` : CANCELLED_REASON;
}
