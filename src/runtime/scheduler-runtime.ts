import type { NodeId } from '../raft/types.js';
import type { Clock, TimerHandle, Timers } from '../time/clock.js';
import { plan, planReassignments, type CatchUp } from '../scheduler/planner.js';
import type { JobSpec } from '../scheduler/spec.js';
import { claimKey, SchedulerState, type ApplyResult, type AssignMode, type ClaimRecord, type JobPolicy, type SchedulerCommand } from '../scheduler/state.js';

/** What a handler is given for one run of a slot. */
export interface JobContext {
  readonly job: string;
  /** The slot's scheduled instant. */
  readonly slot: Date;
  /** The claim's log index: strictly increasing across the cluster. Pass it to stores that reject older tokens. */
  readonly fencingToken: number;
  readonly attempt: number;
  /** Aborted when the run no longer holds its claim: its timeout passed, or the member stops. */
  readonly signal: AbortSignal;
}

export type JobHandler = (ctx: JobContext) => unknown;

export interface JobOptions {
  /** `'one'`: one member runs each slot (default); `'all'`: every member with a handler does. */
  readonly mode?: AssignMode;
  /** A run is aborted (its signal fires) after this long. @default 60000 */
  readonly timeoutMs?: number;
  /** Slots missed while no claim could be made: `'latest'` (default), `'none'`, or all within a window. */
  readonly catchUp?: 'latest' | 'none' | { readonly windowMs: number; readonly maxSlots: number };
  /** A failed or timed-out run is retried this many times, on another member when there is one. @default 0 */
  readonly retries?: number;
  /** The first retry waits this long after the failure; each next one twice as long. @default 1000 */
  readonly retryDelayMs?: number;
}

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
   * Whether this member still knows a live leader (it leads, or heard from the leader within
   * an election timeout). A member that lost it aborts its runs: its claims may be moved.
   */
  readonly holdsLease: () => boolean;
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
  /** Called as a run's handler starts (after its checks), before `onRun` reports its end. */
  readonly onRunStart?: (run: Pick<RunRecord, 'job' | 'slotMs' | 'fencingToken' | 'member' | 'startedAtMs'>) => void;
  readonly onRun?: (run: RunRecord) => void;
}

/** One run of a slot on this member, as reported to `onRun` and kept in history. */
export interface RunRecord {
  readonly job: string;
  readonly slotMs: number;
  readonly fencingToken: number;
  readonly member: NodeId;
  readonly startedAtMs: number;
  readonly endedAtMs: number;
  readonly outcome: 'succeeded' | 'failed' | 'aborted' | 'interrupted';
  readonly error?: string;
}

/** Bound on read-barrier attempts for a late claim when no leader answers (about two seconds). */
const BARRIER_ATTEMPTS_MAX = 20;
const DEFAULT_TIMEOUT_MS = 60_000;
const DEFAULT_RETRY_DELAY_MS = 1000;
/** Claims older than this when applied are history, not work: they are not armed at all. */
const ARM_HORIZON_MS = 10 * 60_000;

interface LocalJob {
  readonly spec: JobSpec;
  readonly handler: JobHandler;
  readonly options: JobOptions;
  registered: boolean;
}

/**
 * The scheduler on one member: applies the replicated commands to SchedulerState, lets the
 * leader plan claims, and runs this member's claimed slots on its own timers at their instants,
 * so no consensus round sits between the instant and the handler's start.
 */
export class SchedulerRuntime {
  readonly state = new SchedulerState();
  readonly #o: SchedulerRuntimeOptions;
  readonly #jobs = new Map<string, LocalJob>();
  /** Commands proposed and not yet applied or failed, so one plan does not repeat the last one's. */
  readonly #inflight = new Set<string>();
  /** This member's armed or running claims, by claimKey, with the token they hold. */
  readonly #armed = new Map<string, { timer: TimerHandle; abort: AbortController; token: number; mode: AssignMode; running: boolean }>();
  #planTimer: TimerHandle | null = null;
  /** Runs started and their outcomes not yet recorded: a graceful stop waits for them. */
  readonly #inFlightRuns = new Set<Promise<void>>();
  /** One read barrier in flight, shared by every late claim waiting for it. */
  #sharedBarrier: Promise<unknown> | null = null;
  /** When this member last became leader (clock ms), or null while it follows. */
  #leaderSinceMs: number | null = null;
  #stopped = false;
  /** Set by drain(): nothing new is armed. */
  #draining = false;

  constructor(options: SchedulerRuntimeOptions) {
    this.#o = options;
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
    for (const [key, armed] of this.#armed) {
      if (armed.running) continue;
      this.#o.timers.clearTimeout(armed.timer);
      this.#armed.delete(key);
    }
    if (this.#inFlightRuns.size === 0) return;
    let timer: TimerHandle | null = null;
    await Promise.race([Promise.allSettled([...this.#inFlightRuns]), new Promise<void>((resolve) => (timer = this.#o.timers.setTimeout(resolve, timeoutMs)))]);
    if (timer !== null) this.#o.timers.clearTimeout(timer);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#planTimer !== null) this.#o.timers.clearTimeout(this.#planTimer);
    for (const { timer, abort } of this.#armed.values()) {
      this.#o.timers.clearTimeout(timer);
      abort.abort(new Error('the member is stopping'));
    }
    this.#armed.clear();
  }

  /** Adds a local handler and registers the job through the log (retried until a leader takes it). */
  schedule(name: string, spec: JobSpec, handler: JobHandler, options: JobOptions): void {
    this.#jobs.set(name, { spec, handler, options, registered: false });
    this.#register(name);
    // Claims already assigned to this member (e.g. before a restart's schedule() call) run now.
    for (const claim of this.state.claims.values()) if (claim.job === name) this.#arm(claim);
  }

  unschedule(name: string): boolean {
    if (!this.#jobs.delete(name)) return false;
    // Slots already armed here do not run; their claims are reported interrupted at their instant.
    for (const [key, armed] of this.#armed) {
      if (key.slice(0, key.lastIndexOf('@')) !== name || armed.running) continue;
      this.#o.timers.clearTimeout(armed.timer);
      this.#armed.delete(key);
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

  #register(name: string): void {
    const job = this.#jobs.get(name);
    if (job === undefined || job.registered || this.#stopped) return;
    const command: SchedulerCommand = { type: 'register', job: name, spec: job.spec, mode: job.options.mode ?? 'one', policy: policyOf(job.options), member: this.#o.self, atMs: this.#o.clock.now() };
    this.#o.propose(command).then(
      () => {
        job.registered = true;
      },
      // No leader yet, or it changed: the next plan interval tries again.
      () => undefined,
    );
  }

  /** Called for every scheduler command applied, in log order, on every member. */
  apply(index: number, command: SchedulerCommand): ApplyResult {
    const result = this.state.apply(index, command);
    if (command.type === 'claim' || command.type === 'skip' || command.type === 'reassign') this.#inflight.delete(inflightKey(command));
    if ((command.type === 'claim' || command.type === 'reassign') && result.ok && result.claim !== undefined) {
      const claim = result.claim;
      const key = claimKey(claim.job, claim.slotMs);
      const mine = this.#armed.get(key);
      // A run whose claim moved no longer holds it: its signal aborts (the fencing token it has is now stale).
      if (mine !== undefined && mine.token !== claim.token) {
        this.#o.timers.clearTimeout(mine.timer);
        mine.abort.abort(new Error(`the slot was reassigned (token ${claim.token})`));
        this.#armed.delete(key);
      }
      this.#arm(claim);
    }
    return result;
  }

  #schedulePlan(): void {
    if (this.#stopped) return;
    this.#planTimer = this.#o.timers.setTimeout(() => {
      this.#planTimer = null;
      for (const name of this.#jobs.keys()) this.#register(name);
      if (!this.#o.holdsLease()) this.#interruptRunning();
      if (this.#o.isLeader()) {
        this.#leaderSinceMs ??= this.#o.clock.now();
        this.#plan();
      } else {
        this.#leaderSinceMs = null;
      }
      this.#schedulePlan();
    }, this.#o.planIntervalMs);
  }

  /**
   * This member has not heard from a leader for longer than its lease: another member may be
   * given its slots, so its runs in progress stop (their fencing tokens would soon be stale).
   * Runs not yet started stay armed; when they fire, they check the lease again.
   */
  #interruptRunning(): void {
    for (const armed of this.#armed.values()) {
      if (armed.running && armed.mode === 'one') armed.abort.abort(new InterruptedError('this member lost contact with the leader for longer than its lease'));
    }
  }

  #plan(): void {
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
    const commands = [...moves, ...plan(this.state, {
      nowMs: this.#o.clock.now(),
      lookaheadMs: this.#o.lookaheadMs,
      members,
      maxClaims: this.#o.maxClaimsPerPlan,
    })];
    for (const command of commands) {
      const key = inflightKey(command);
      if (this.#inflight.has(key)) continue;
      this.#inflight.add(key);
      this.#o.propose(command).catch(() => this.#inflight.delete(key));
    }
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
    const timer = this.#o.timers.setTimeout(() => this.#track(this.#run(held, job, abort, appliedLate)), delayMs);
    this.#armed.set(key, { timer, abort, token: claim.token, mode: job.options.mode ?? 'one', running: false });
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
      this.#track(this.#reportInterrupted(held, 'no handler for the job on this member'));
    }, delayMs);
  }

  /** Keeps a run or an outcome report in the set a graceful stop waits for; never rejects. */
  #track(work: Promise<void>): void {
    const tracked = work.catch(() => undefined).finally(() => this.#inFlightRuns.delete(tracked));
    this.#inFlightRuns.add(tracked);
  }

  async #run(claim: ClaimRecord, job: LocalJob, abort: AbortController, late: boolean): Promise<void> {
    const key = claimKey(claim.job, claim.slotMs);
    // Replaying the log after a restart re-applies claims this member already ran: their
    // outcome, applied since, says so. A late claim also waits for a read barrier first.
    if (this.#alreadyReported(claim)) {
      if (this.#armed.get(key)?.abort === abort) this.#armed.delete(key);
      return;
    }
    if (late) {
      const held = await this.#stillHeld(claim, abort);
      if (held !== 'held') {
        if (this.#armed.get(key)?.abort === abort) this.#armed.delete(key);
        // No leader confirmed the claim in time: say so, so that the slot moves rather than waits.
        if (held === 'unconfirmed' && !this.#stopped && !this.#draining) await this.#reportInterrupted(claim, 'no leader confirmed the claim');
        return;
      }
      if (this.#stopped || this.#draining) return;
    }
    const armed = this.#armed.get(key);
    if (armed !== undefined) armed.running = true;
    // Without a live leader this member cannot know it still holds the claim: do not start.
    if ((job.options.mode ?? 'one') === 'one' && !this.#o.holdsLease()) {
      abort.abort(new InterruptedError('no leader was reachable at the slot instant'));
    }
    const timeoutMs = job.options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    const timeout = this.#o.timers.setTimeout(() => abort.abort(new Error(`the run exceeded its timeout of ${timeoutMs} ms`)), timeoutMs);
    const startedAtMs = this.#o.clock.now();
    if (!abort.signal.aborted) {
      try {
        this.#o.onRunStart?.({ job: claim.job, slotMs: claim.slotMs, fencingToken: claim.token, member: this.#o.self, startedAtMs });
      } catch {
        // A listener's error must not keep the run from starting.
      }
    }
    let outcome: RunRecord['outcome'] = 'succeeded';
    let error: string | undefined;
    try {
      if (abort.signal.aborted) throw abort.signal.reason as Error;
      await Promise.race([
        Promise.resolve().then(() => job.handler({ job: claim.job, slot: new Date(claim.slotMs), fencingToken: claim.token, attempt: claim.attempt, signal: abort.signal })),
        new Promise((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason as Error), { once: true })),
      ]);
    } catch (e) {
      outcome = abort.signal.reason instanceof InterruptedError ? 'interrupted' : abort.signal.aborted ? 'aborted' : 'failed';
      error = e instanceof Error ? e.message : String(e);
    } finally {
      this.#o.timers.clearTimeout(timeout);
      if (this.#armed.get(key)?.abort === abort) this.#armed.delete(key);
    }
    const endedAtMs = this.#o.clock.now();
    const record: RunRecord = { job: claim.job, slotMs: claim.slotMs, fencingToken: claim.token, member: this.#o.self, startedAtMs, endedAtMs, outcome, ...(error === undefined ? {} : { error }) };
    try {
      this.#o.onRun?.(record);
    } catch {
      // A listener's error must not keep the outcome from being recorded.
    }
    await this.#recordOutcome(record);
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

  async #recordOutcome(run: RunRecord): Promise<void> {
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
    await this.#proposeUntil(command, () => {
      const current = this.state.claims.get(claimKey(run.job, run.slotMs));
      return current === undefined || current.token !== run.fencingToken || current.outcomes.get(run.member)?.token === run.fencingToken;
    });
  }

  /** Reports a claim this member will not run, so that the leader moves its slot. */
  #reportInterrupted(claim: ClaimRecord, reason: string): Promise<void> {
    const atMs = this.#o.clock.now();
    return this.#recordOutcome({ job: claim.job, slotMs: claim.slotMs, fencingToken: claim.token, member: this.#o.self, startedAtMs: atMs, endedAtMs: atMs, outcome: 'interrupted', error: reason });
  }
}

/** The reason a run stops when the cluster, not the job, ends it. */
class InterruptedError extends Error {}

/** The replicated form of a job's options (what the leader plans by). */
function policyOf(options: JobOptions): JobPolicy {
  const c = options.catchUp;
  const catchUp: CatchUp = c === undefined || c === 'latest' ? { policy: 'latest' } : c === 'none' ? { policy: 'none' } : { policy: 'all', windowMs: c.windowMs, maxSlots: c.maxSlots };
  return { retries: options.retries ?? 0, retryDelayMs: options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, catchUp };
}

function inflightKey(command: SchedulerCommand): string {
  if (command.type === 'claim') return `claim ${claimKey(command.job, command.slotMs)}`;
  if (command.type === 'skip') return `skip ${claimKey(command.job, command.throughMs)}`;
  if (command.type === 'reassign') return `reassign ${claimKey(command.job, command.slotMs)} ${command.fromToken}`;
  return command.type;
}
