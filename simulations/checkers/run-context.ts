import { RunAbortedError } from '../../src/errors.js';
import type { JobContext } from '../../src/runtime/scheduler/job-types.js';
import type { NodeId } from '../../src/raft/types.js';
import { claimKey, type ApplyResult } from '../../src/scheduler/records.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import type { SchedulerChecker } from '../scheduler-checker.js';
import type { Report } from '../violations.js';
import type { MemberWatch } from './members.js';

/** A timer set for an instant fires at it; this is rounding only (ms). */
const SLACK_MS = 1;

/** The codes of a run's abort reasons, as the README's "Errors" table lists them. */
const ABORT_CODES: Readonly<Record<RunAbortedError['reason'], string>> = {
  timeout: 'CRONRAFT_RUN_TIMEOUT',
  reassigned: 'CRONRAFT_RUN_REASSIGNED',
  interrupted: 'CRONRAFT_RUN_INTERRUPTED',
  replaced: 'CRONRAFT_RUN_REPLACED',
  cancelled: 'CRONRAFT_RUN_CANCELLED',
  stopping: 'CRONRAFT_RUN_STOPPING',
  ended: 'CRONRAFT_RUN_ENDED',
};

/** What the reasons are checked against: the job as replicated, and as its members scheduled it. */
export interface JobFacts {
  readonly mode: (job: string) => 'one' | 'all' | undefined;
  readonly overlap: (job: string) => string | undefined;
  readonly timeoutMs: (job: string) => number;
}

/**
 * What a handler is given, against the committed log (`run-context`): its slot is a claimed
 * one, its fencing token one the log gave its member for that slot, and its attempt the claim's
 * (1, and one more per move). And why its signal aborts (`abort-reason`): a RunAbortedError
 * whose code the README lists, for a cause that holds: `timeout` once the run has lasted its
 * timeoutMs, `reassigned` once the slot's claim has moved on from the run's token, `replaced`
 * only for a job whose overlap policy is 'replace', `cancelled` only once the log marked the
 * run's token cancelled (an operator's cancel), `interrupted` only in mode 'one' (the cluster
 * took the slot back), `stopping` only as its member stops (its process, or the member for good:
 * removed, say).
 */
export class RunContextChecker {
  readonly #report: Report;
  readonly #slots: SchedulerChecker;
  readonly #watch: MemberWatch;
  readonly #jobs: JobFacts;
  /** Per slot, the attempt of each token the log gave it. */
  readonly #attempts = new Map<string, Map<number, number>>();
  /** Per process life, the context of the handler that just started, until its run's start is reported. */
  readonly #starting = new Map<string, JobContext>();
  /** Aborts not judged yet (see onAbort). */
  readonly #aborts: Array<{ readonly t: number; readonly member: NodeId; readonly incarnation: number; readonly ctx: JobContext; readonly reason: unknown }> = [];
  /** The claim key of each handler's run, once its start is reported. */
  readonly #keyOf = new WeakMap<JobContext, string>();
  /** When each handler started (true ms), and where. */
  readonly #started = new WeakMap<JobContext, { readonly t: number; readonly member: NodeId; readonly incarnation: number }>();

  constructor(report: Report, slots: SchedulerChecker, watch: MemberWatch, jobs: JobFacts) {
    this.#report = report;
    this.#slots = slots;
    this.#watch = watch;
    this.#jobs = jobs;
  }

  /** A command's first application anywhere (after the scheduler checker took it in). */
  onFirstApplied(index: number, command: SchedulerCommand, result: ApplyResult): void {
    if (!result.ok || (command.type !== 'claim' && command.type !== 'reassign')) return;
    const key = claimKey(command.job, command.slotMs);
    // The scheduler checker counts the attempts from the commands themselves.
    const attempt = this.#slots.slots.get(key)?.attempt;
    if (attempt === undefined) return;
    let byToken = this.#attempts.get(key);
    if (byToken === undefined) this.#attempts.set(key, (byToken = new Map()));
    byToken.set(index, attempt);
  }

  /** A handler started: its context is checked as the run's start is reported, right after. */
  onStart(t: number, member: NodeId, incarnation: number, ctx: JobContext): void {
    this.#started.set(ctx, { t, member, incarnation });
    this.#starting.set(`${member}#${incarnation}`, ctx);
  }

  /** The run whose handler just started, as the runtime reports it: the handler's context must be its claim's. */
  onRunStart(t: number, member: NodeId, incarnation: number, run: { readonly job: string; readonly slotMs: number }): void {
    const life = `${member}#${incarnation}`;
    const ctx = this.#starting.get(life);
    this.#starting.delete(life);
    const key = claimKey(run.job, run.slotMs);
    if (ctx === undefined) return this.#report(t, 'run-context', `${member} started ${key} without calling its handler`);
    this.#keyOf.set(ctx, key);
    const what = `${member} was given ${ctx.job}@${slotOf(ctx)} under token ${ctx.fencingToken}, attempt ${ctx.attempt}, for ${key}`;
    // A Date holds whole milliseconds: a slot instant (the cluster's time) may have a fraction.
    if (ctx.job !== run.job || slotOf(ctx) !== Math.trunc(run.slotMs)) return this.#report(t, 'run-context', `${what}: not its slot`);
    const slot = this.#slots.slots.get(key);
    if (slot === undefined) return this.#report(t, 'run-context', `${what}: no such slot was claimed`);
    if (!slot.grants.has(`${member} ${ctx.fencingToken}`)) return this.#report(t, 'run-context', `${what}: the log never gave it that token for the slot`);
    const attempt = this.#attempts.get(key)?.get(ctx.fencingToken);
    if (attempt !== ctx.attempt) this.#report(t, 'run-context', `${what}: the claim under that token is attempt ${attempt ?? 'unknown'}`);
  }

  /**
   * A handler's signal aborted. Judged once the instant's events are done (`afterEvent`): the
   * command that moved its claim, applied as it aborted, reaches the log's view right after.
   */
  onAbort(t: number, member: NodeId, incarnation: number, ctx: JobContext, reason: unknown): void {
    this.#aborts.push({ t, member, incarnation, ctx, reason });
  }

  afterEvent(): void {
    if (this.#aborts.length === 0) return;
    for (const { t, member, incarnation, ctx, reason } of this.#aborts.splice(0)) {
      const run = `${member}'s run of ${ctx.job}@${slotOf(ctx)} under token ${ctx.fencingToken}`;
      if (!(reason instanceof RunAbortedError) || reason.code !== ABORT_CODES[reason.reason]) {
        const code = (reason as { code?: unknown } | null)?.code;
        this.#report(t, 'abort-reason', `${run} aborted with ${String(code ?? reason)}, not one of the run abort codes`);
        continue;
      }
      const cause = this.#cause(t, member, incarnation, ctx, reason.reason, this.#started.get(ctx)?.t ?? t);
      if (cause !== null) this.#report(t, 'abort-reason', `${run} aborted with ${reason.code}, but ${cause}`);
    }
  }

  /** Why `reason` does not hold for this run now, or null when it does. */
  #cause(t: number, member: NodeId, incarnation: number, ctx: JobContext, reason: RunAbortedError['reason'], startT: number): string | null {
    switch (reason) {
      case 'timeout': {
        const timeoutMs = this.#jobs.timeoutMs(ctx.job);
        return t - startT >= timeoutMs - SLACK_MS ? null : `it ran ${(t - startT).toFixed(1)} ms of its ${timeoutMs} ms timeout`;
      }
      case 'reassigned': {
        const key = this.#keyOf.get(ctx);
        const slot = key === undefined ? undefined : this.#slots.slots.get(key);
        return slot === undefined || slot.token !== ctx.fencingToken || !slot.assignees.includes(member) ? null : `the log still gives it the slot under token ${slot.token}`;
      }
      case 'replaced':
        return this.#jobs.overlap(ctx.job) === 'replace' ? null : `the job's overlap policy is ${this.#jobs.overlap(ctx.job) ?? 'unknown'}`;
      case 'cancelled': {
        const key = this.#keyOf.get(ctx);
        const slot = key === undefined ? undefined : this.#slots.slots.get(key);
        return slot !== undefined && slot.cancelledToken === ctx.fencingToken ? null : 'the log cancelled no run under its token';
      }
      case 'interrupted':
        return this.#jobs.mode(ctx.job) === 'one' ? null : `the job runs in mode ${this.#jobs.mode(ctx.job) ?? 'unknown'}`;
      case 'stopping':
        return this.#watch.isStopped(member, incarnation) ? null : `${member} is not stopping`;
      case 'ended':
        return 'a run ended refuses its ctx.emit with it; its signal never aborts with it';
    }
  }
}

/** The slot instant a handler was given (NaN if it was given no Date). */
function slotOf(ctx: JobContext): number {
  return ctx.slot instanceof Date ? ctx.slot.getTime() : Number.NaN;
}
