import { ClockUnsyncedError, InvalidArgumentError, TimeoutError, UnknownJobError } from '../../errors.js';
import type { OperationCommand } from '../../scheduler/command.js';
import { planTrigger } from '../../scheduler/operations.js';
import { runsOf, type ApplyResult, type JobRecord } from '../../scheduler/records.js';
import type { RuntimeContext } from './runtime-context.js';

/**
 * Times a trigger looks again, a plan interval apart, while the job's due slot is not claimed
 * yet or this member has not learned the cluster's time: then it rejects with TimeoutError (or
 * ClockUnsyncedError). A cancel waits as many intervals for the cluster's time.
 */
export const MAX_TRIGGER_ATTEMPTS = 20;

/** What `cluster.trigger()` resolves with: the extra slot, claimed once through the log. */
export interface TriggeredSlot {
  readonly job: string;
  /** The slot's instant: the cluster's time when it was asked for. */
  readonly slot: Date;
  /** The claim's log index, as any slot's (a move gives a new one). */
  readonly fencingToken: number;
}

/** One slot whose runs `cluster.cancel()` ended. */
export interface CancelledSlot {
  readonly slot: Date;
  /** The claim's token, under which its runs were cancelled. */
  readonly fencingToken: number;
  /**
   * The members whose run of it the log showed in progress (started, no outcome yet) as the
   * call resolved; a run whose start was not in the log yet ends all the same.
   */
  readonly running: readonly string[];
}

/**
 * What `cluster.cancel()` resolves with, once applied on this member: the slots whose runs it
 * ended, none when nothing of the job was running (not an error).
 */
export interface CancelledRuns {
  readonly job: string;
  readonly cancelled: readonly CancelledSlot[];
}

/** What `cluster.pause()` and `cluster.resume()` resolve with, once applied on this member. */
export interface JobPause {
  readonly job: string;
  readonly paused: boolean;
}

/**
 * An operator's actions on one job (`cluster.pause`, `resume`, `trigger`, `cancel`): each proposes one
 * command of cluster version 3 (OPERATIONS_VERSION) through the log, from any member (the
 * driver forwards it to the leader), and resolves once it is applied here. The commands are
 * pure (SchedulerState.apply, scheduler/operations.ts); this only checks, proposes and retries.
 */
export class JobOperations {
  readonly #ctx: RuntimeContext;
  /**
   * The instant of the last slot this member triggered: the next is after it, though the stamp
   * clock held the time there (a step back of the cluster's time), where the two were the same
   * instant and the second waited for the time to pass it.
   */
  #lastTriggeredMs = Number.NEGATIVE_INFINITY;

  constructor(ctx: RuntimeContext) {
    this.#ctx = ctx;
  }

  /**
   * Pauses (`paused` true) or resumes the job across the cluster; idempotent.
   * @throws VersionNotActiveError when cluster version 3 does not come (version-waits.ts), UnknownJobError, and the proposal's errors
   */
  async setPaused(name: string, paused: boolean): Promise<JobPause> {
    const ops = await this.#operations(paused ? 'cluster.pause()' : 'cluster.resume()');
    await this.#known(name);
    const command: OperationCommand = { type: paused ? 'pause' : 'resume', job: name, atMs: this.#ctx.stampClock.now() };
    const { result } = await ops.propose(command);
    if ((result as ApplyResult | undefined)?.ok !== true) throw new UnknownJobError(name);
    return { job: name, paused };
  }

  /**
   * Claims one extra slot of the job now (the cluster's time), run by the job's assignment
   * rules, and resolves with it once the claim is applied here.
   * @throws VersionNotActiveError when cluster version 3 does not come (version-waits.ts), UnknownJobError, InvalidArgumentError
   *   (no member has a handler for the job), TimeoutError, ClockUnsyncedError, and the proposal's errors
   */
  async trigger(name: string): Promise<TriggeredSlot> {
    const ops = await this.#operations('cluster.trigger()');
    const o = this.#ctx.options;
    let job = await this.#known(name);
    for (let attempt = 0; attempt < MAX_TRIGGER_ATTEMPTS && !this.#ctx.stopped; attempt++) {
      if (attempt > 0) {
        await new Promise<void>((resolve) => o.timers.setTimeout(resolve, o.planIntervalMs));
        job = await this.#known(name);
      }
      if (job.handlers.size === 0) throw new InvalidArgumentError('name', name, 'a job that some member has a handler for');
      // The slot's instant is compared with the job's scheduled ones: the cluster's time, not this clock's.
      if (o.clockReady?.() === false) continue;
      // Only the leader knows which members may be given work: a follower counts itself alone
      // (a mode 'all' slot triggered there ran on it alone), so it assigns every handler, and
      // the leader moves a lost assignee's claim as it moves any.
      const eligible = o.isLeader() ? new Set(o.eligibleMembers()) : null;
      // A whole millisecond, as a registration's stamp (registrations.ts): the slot's ctx.slot, a Date, holds no fraction.
      const plan = planTrigger(this.#ctx.state, job, Math.max(Math.floor(this.#ctx.stampClock.now()), this.#lastTriggeredMs + 1), eligible);
      // A due slot waits for the leader to claim it: with no leader, it would wait for good, so
      // a read barrier says so (CRONRAFT_NOT_LEADER) rather than the call timing out as if one
      // might have taken effect.
      if (plan === 'wait') {
        await o.barrier();
        continue;
      }
      const { index, result } = await ops.propose(plan.command);
      const applied = result as ApplyResult | undefined;
      if (applied?.ok === true) {
        this.#lastTriggeredMs = Math.max(this.#lastTriggeredMs, plan.command.slotMs);
        return { job: name, slot: new Date(plan.command.slotMs), fencingToken: index };
      }
      if (applied?.reason === 'unknown-job') throw new UnknownJobError(name);
      // Stale (a claim at that instant, or a mark that moved back in a state this member had
      // not applied): planned again from the state now applied.
    }
    if (o.clockReady?.() === false) throw new ClockUnsyncedError(MAX_TRIGGER_ATTEMPTS * o.planIntervalMs);
    throw new TimeoutError(`Triggering job ${JSON.stringify(name)}`, MAX_TRIGGER_ATTEMPTS * o.planIntervalMs);
  }

  /**
   * Cancels the job's runs in progress across the cluster (only that of `slotMs`, when given):
   * see the `cancel-runs` command. Its time is the cluster's, which says which slots were due,
   * so it waits (a plan interval at a time, MAX_TRIGGER_ATTEMPTS at most) while this member
   * has not learned it.
   * @throws VersionNotActiveError when cluster version 3 does not come (version-waits.ts), UnknownJobError, ClockUnsyncedError, and the proposal's errors
   */
  async cancel(name: string, slotMs?: number): Promise<CancelledRuns> {
    const ops = await this.#operations('cluster.cancel()');
    const o = this.#ctx.options;
    await this.#known(name);
    for (let attempt = 0; o.clockReady?.() === false; attempt++) {
      if (attempt >= MAX_TRIGGER_ATTEMPTS || this.#ctx.stopped) throw new ClockUnsyncedError(MAX_TRIGGER_ATTEMPTS * o.planIntervalMs);
      await new Promise<void>((resolve) => o.timers.setTimeout(resolve, o.planIntervalMs));
    }
    // Not before the last slot this member triggered, which may be a millisecond past its stamp
    // (two triggers in one): a cancel right after a trigger covers its slot.
    const atMs = Math.max(this.#ctx.stampClock.now(), this.#lastTriggeredMs);
    const command: OperationCommand = { type: 'cancel-runs', job: name, ...(slotMs === undefined ? {} : { slotMs }), member: o.self, atMs };
    const { result } = await ops.propose(command);
    const applied = result as ApplyResult | undefined;
    if (applied?.ok !== true) throw new UnknownJobError(name);
    const cancelled = (applied.cancelled ?? []).map((claim) => {
      // The runs of it the log shows in progress as the call resolves, the cancel's mark aside.
      const running = runsOf({ ...claim, cancelled: null }).map((run) => run.member);
      return { slot: new Date(claim.slotMs), fencingToken: claim.token, running };
    });
    return { job: name, cancelled };
  }

  /**
   * The version gate first: before cluster version 3, every call waits for it alike (a new
   * cluster raises its version within seconds), or is refused (version-waits.ts).
   */
  async #operations(feature: string): Promise<NonNullable<RuntimeContext['options']['operations']>> {
    const ops = this.#ctx.options.operations;
    if (ops === undefined) throw new TypeError(`${feature}: this member proposes no operations`);
    await ops.require(feature);
    return ops;
  }

  /** The job's record, after a read barrier when this member has not applied its registration yet. */
  async #known(name: string): Promise<JobRecord> {
    let job = this.#ctx.state.jobs.get(name);
    if (job === undefined) {
      await this.#ctx.options.barrier();
      job = this.#ctx.state.jobs.get(name);
    }
    if (job === undefined) throw new UnknownJobError(name);
    return job;
  }
}
