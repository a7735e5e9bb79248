import { BackpressureError, ClockUnsyncedError, InvalidArgumentError, NotLeaderError, NotRunningError, OutcomeUnknownError, RunAbortedError, TimeoutError } from '../errors.js';
import { validateName } from '../job-options.js';
import { optionsObject } from '../option-checks.js';
import type { NodeId } from '../raft/types.js';
import { encodeCommand } from '../runtime/commands.js';
import type { RaftDriver } from '../runtime/driver.js';
import { driverStopped } from '../runtime/driver-options.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import type { LockRecord } from '../scheduler/records.js';
import { SCHEDULER_DEFAULTS } from '../scheduler/state.js';
import type { TimerHandle, Timers } from '../time/clock.js';
import { MAX_STAMP_HOLD_MS } from '../time/stamp-clock.js';
import { letGoHeldUnanswered, type UnansweredLocks } from './unanswered-locks.js';

/** What `Cluster.runExclusive` takes besides the lock's name. */
export interface ExclusiveOptions {
  /** The lock expires this many ms after it was taken, even if its holder died. */
  readonly atMostFor: number;
  /** The lock is held at least this many ms, even if the task returns sooner. */
  readonly atLeastFor?: number | undefined;
}

/**
 * What the task gets: the lock's fencing token, and a signal that aborts before `atMostFor` runs
 * out, by the lock's abort margin (ExclusiveContext.abortMarginMs).
 */
export interface ExclusiveLock {
  readonly fencingToken: number;
  readonly signal: AbortSignal;
}

/** The member's parts the lock protocol uses. */
export interface ExclusiveContext {
  readonly self: NodeId;
  /** The member's driver; throws NotRunningError when the member is not running (asked once the arguments are checked). */
  readonly driver: () => RaftDriver;
  readonly timers: Timers;
  /** How long to wait for this member to learn the cluster's time before refusing. */
  readonly clockSyncTimeoutMs: number;
  /** Resolves with whether `done()` came to hold within `timeoutMs`, checked every `pollMs`. */
  readonly waitFor: (done: () => boolean, timeoutMs: number, pollMs: number) => Promise<boolean>;
  /**
   * How often to look whether the clock has synced (it is learned from the leader's heartbeats),
   * and, while a task runs, whether the cluster's time has reached its abort point.
   */
  readonly clockSyncPollMs: number;
  /** The tasks running under a lock here, which a graceful stop waits for (ExclusiveTasks). */
  readonly tasks: ExclusiveTasks;
  /**
   * How long before the lock's end, by this member's clock, its task's signal aborts (at most
   * half the lock's atMostFor): another member takes the lock once its own estimate of the
   * cluster's time reaches the end, and the members' estimates differ (see exclusiveAbortMarginMs).
   */
  readonly abortMarginMs: number;
  /** Lock proposals that failed without an answer, let go if they commit after all (UnansweredLocks). */
  readonly unanswered: UnansweredLocks;
  /** The locks of the member's scheduler state as it stands (null while it has none). */
  readonly locks: () => ReadonlyMap<string, LockRecord> | null;
}

/**
 * The abort margin of a member whose clock may be `maxClockSkewMs` off the cluster's time
 * before it is given no work: the members' estimates of the cluster's time differ by up to
 * about that (the median of the clocks moves as much when members come and go), and a
 * member's stamps, the one another member's lock is granted by included, may be held up to
 * MAX_STAMP_HOLD_MS ahead of its estimate (after a step back). Without it a lock was granted
 * elsewhere while its holder's task still ran, its signal not yet aborted.
 */
export function exclusiveAbortMarginMs(maxClockSkewMs: number): number {
  return maxClockSkewMs + MAX_STAMP_HOLD_MS;
}

/**
 * The tasks running under a lock on this member, for a graceful stop: it waits for them within
 * its time, as for runs, and then aborts their signals (`CRONRAFT_RUN_STOPPING`), so that each
 * releases its lock while the member can still propose. A stop that let them go on left their
 * locks held until `atMostFor`, the whole cluster locked out of them meanwhile. Bounded by the
 * calls in progress.
 */
export class ExclusiveTasks {
  readonly #running = new Map<AbortController, Promise<unknown>>();
  #stopping = false;

  /** Whether a graceful stop began: a lock granted from then on runs no task, and is released at once. */
  get stopping(): boolean {
    return this.#stopping;
  }

  /**
   * Runs `call` (a call of runExclusive, from its lock's proposal to its release) with
   * `abort`'s signal, counted until it settles: a stop waits for a lock still being proposed
   * too, which would otherwise commit after the stop looked, and stay held until atMostFor.
   */
  track<T>(abort: AbortController, call: Promise<T>): Promise<T> {
    this.#running.set(abort, call);
    return call.finally(() => this.#running.delete(abort));
  }

  /**
   * Waits for the calls in progress and their releases up to `timeoutMs`, then aborts the
   * signals of those left and waits up to EXCLUSIVE_RELEASE_WAIT_MS more for a task that heeds
   * its signal to release its lock.
   */
  async settle(timers: Timers, timeoutMs: number): Promise<void> {
    this.#stopping = true;
    await this.#within(timers, timeoutMs);
    if (this.#running.size === 0) return;
    for (const abort of this.#running.keys()) abort.abort(new RunAbortedError('stopping', 'the member is stopping: the lock is released'));
    await this.#within(timers, EXCLUSIVE_RELEASE_WAIT_MS);
  }

  async #within(timers: Timers, timeoutMs: number): Promise<void> {
    if (this.#running.size === 0) return;
    let timer: TimerHandle | null = null;
    const outOfTime = new Promise<void>((resolve) => (timer = timers.setTimeout(resolve, timeoutMs)));
    await Promise.race([Promise.allSettled([...this.#running.values()]), outOfTime]);
    if (timer !== null) timers.clearTimeout(timer);
  }
}

/** How long a graceful stop waits, after aborting them, for tasks under a lock to release it. */
export const EXCLUSIVE_RELEASE_WAIT_MS = 1000;

/** Tries of a lock's release (an unlock proposed), a heartbeat interval apart. */
export const EXCLUSIVE_RELEASE_ATTEMPTS = 5;

/**
 * The longest a lock may be held (`atMostFor`, and so `atLeastFor`): a year. A lock is held for
 * a task's run; up to 2^53 ms was taken, which held a name for many thousands of years and put
 * its end past the integers a double holds exactly.
 */
export const MAX_LOCK_HOLD_MS = 365 * 86_400_000;

/**
 * A lock's name and options checked (InvalidArgumentError naming the bad one), with atLeastFor's
 * default: by runExclusive at each call, and by `@exclusive` as its class is defined.
 */
export function exclusiveArguments(name: unknown, options: ExclusiveOptions): { readonly atMostFor: number; readonly atLeastFor: number } {
  validateName(name);
  // A misspelt option (`atLeastfor`) would be dropped unsaid: the lock then held no minimum.
  const given = optionsObject(options, ['atMostFor', 'atLeastFor']);
  const atMostFor = given.atMostFor;
  const atLeastFor = given.atLeastFor ?? 0;
  if (atMostFor === undefined || !Number.isInteger(atMostFor) || atMostFor <= 0 || atMostFor > MAX_LOCK_HOLD_MS) {
    throw new InvalidArgumentError('atMostFor', atMostFor, `a positive integer of milliseconds, at most ${MAX_LOCK_HOLD_MS} (a year)`);
  }
  if (!Number.isInteger(atLeastFor) || atLeastFor < 0 || atLeastFor > atMostFor) {
    throw new InvalidArgumentError('atLeastFor', atLeastFor, `an integer of milliseconds from 0 to atMostFor (${atMostFor})`);
  }
  return { atMostFor, atLeastFor };
}

/**
 * ShedLock's contract over the log: a `lock` command takes `name` until `atMostFor` from now
 * (cluster time) unless another member holds it; the task runs with the lock's token; an
 * `unlock` command then keeps it until `atLeastFor` after it was taken. Resolves with whether
 * the task ran; rejects with the task's error after releasing the lock.
 */
export async function runExclusive(
  ctx: ExclusiveContext,
  name: string,
  options: ExclusiveOptions,
  fn: (lock: ExclusiveLock) => unknown,
): Promise<boolean> {
  const { atMostFor, atLeastFor } = exclusiveArguments(name, options);
  if (typeof fn !== 'function') throw new InvalidArgumentError('fn', fn, 'a function');
  const driver = ctx.driver();
  if (ctx.tasks.stopping) throw new NotRunningError('stopping');
  const abort = new AbortController();
  return ctx.tasks.track(abort, exclusiveCall(ctx, driver, abort, { name, atMostFor, atLeastFor }, fn));
}

/** runExclusive once its arguments are checked: the lock taken, the task run, the lock released. */
async function exclusiveCall(
  ctx: ExclusiveContext,
  driver: RaftDriver,
  abort: AbortController,
  o: { readonly name: string; readonly atMostFor: number; readonly atLeastFor: number },
  fn: (lock: ExclusiveLock) => unknown,
): Promise<boolean> {
  const { name, atMostFor, atLeastFor } = o;
  const { timers } = ctx;
  // Lock times are compared on every member: they are the cluster's time, not this clock's.
  // A member that has not learned it yet would stamp its own clock, which may be far off
  // (ahead, it could take a lock still held): it waits for the leader's heartbeats to teach it.
  if (!driver.clockSynced) {
    if (driver.node.leader === null) throw new NotLeaderError(null);
    const synced = await ctx.waitFor(() => driver.clockSynced, ctx.clockSyncTimeoutMs, ctx.clockSyncPollMs);
    // A member that stopped meanwhile says so, rather than that it did not learn the time.
    if (!synced) throw ctx.tasks.stopping ? new NotRunningError('stopping') : new ClockUnsyncedError(ctx.clockSyncTimeoutMs);
  }
  // The stamp clock: a lock taken again by this member after it let the last one go is not
  // stamped before that one's end when the cluster's time stepped back between the two.
  const clock = driver.stampClock();
  const startMs = ctx.unanswered.proposing(name, clock.now());
  const lock: Extract<SchedulerCommand, { type: 'lock' }> = { type: 'lock', name, member: ctx.self, atMs: startMs, untilMs: startMs + atMostFor };
  let taken: { ok: boolean; reason?: string; lock?: { token: number } } | undefined;
  try {
    taken = (await driver.propose(encodeCommand({ kind: 'scheduler', command: lock }))).result as typeof taken;
    ctx.unanswered.settled(lock, true, clock.now());
  } catch (error) {
    // No answer, so the lock may commit yet: it is let go then (the member watches for it),
    // rather than held with no task until atMostFor. It may be held already, brought by the
    // snapshot from the leader that covered the proposal (and answered it so): let go now.
    const answered = !(error instanceof TimeoutError || error instanceof OutcomeUnknownError);
    ctx.unanswered.settled(lock, answered, clock.now());
    const locks = answered ? null : ctx.locks();
    if (locks !== null) letGoHeldUnanswered(ctx.self, locks, ctx.unanswered, clock.now(), (data) => driver.propose(data), (run) => void timers.setTimeout(run, ctx.clockSyncPollMs));
    throw error;
  }
  if (taken?.ok === false && taken.reason === 'too-many-locks') throw new BackpressureError(`No lock is free to take "${name}": the cluster holds as many locks as it keeps (${SCHEDULER_DEFAULTS.maxLocks}, or ${SCHEDULER_DEFAULTS.maxLockBytes} bytes of them as the snapshots take them), each held or not yet expired`);
  if (taken?.ok !== true || taken.lock === undefined) return false;
  const token = taken.lock.token;
  const release = async (untilMs: number): Promise<void> => {
    const unlock = encodeCommand({ kind: 'scheduler', command: { type: 'unlock', name, token, untilMs } });
    // Tried again while the member runs (a leader handing over as it stops refuses it for a
    // moment); an unlock applied twice changes nothing. If all fail, the lock expires at atMostFor.
    for (let attempt = 1; ; attempt++) {
      try {
        await driver.propose(unlock);
        return;
      } catch (error) {
        if (attempt >= EXCLUSIVE_RELEASE_ATTEMPTS || driverStopped(error)) return;
        await new Promise<void>((resolve) => timers.setTimeout(resolve, ctx.clockSyncPollMs));
      }
    }
  };
  // The signal aborts by the margin before the lock's end, so that the task has been told to
  // stop before another member can be granted the lock.
  const abortAtMs = startMs + atMostFor - Math.min(ctx.abortMarginMs, Math.floor(atMostFor / 2));
  // Granted past that (its commit took that long): the task does not run under it. Granted while
  // the member stops: no task starts, and the lock is let go at once.
  if (ctx.tasks.stopping) {
    await release(clock.now());
    throw new NotRunningError('stopping');
  }
  if (clock.now() >= abortAtMs) {
    if (clock.now() < startMs + atMostFor) await release(clock.now());
    return false;
  }
  // By this member's monotonic clock, and by the cluster's time, looked at every poll: a forward
  // step of the cluster's time (a majority of clocks put right) brings the lock's end closer for
  // every member at once, and another member could be granted the lock while the timer waited.
  const monoAbortAt = timers.now() + (abortAtMs - clock.now());
  let timer: TimerHandle | null = null;
  const watch = (): void => {
    timer = null;
    const leftMs = Math.min(abortAtMs - clock.now(), monoAbortAt - timers.now());
    if (leftMs <= 0) abort.abort(new RunAbortedError('timeout', `The exclusive task ran as long as its lock lets it: atMostFor (${atMostFor} ms) less the abort margin (${atMostFor - (abortAtMs - startMs)} ms), which keeps it from running beside the lock's next holder`));
    else timer = timers.setTimeout(watch, Math.min(leftMs, ctx.clockSyncPollMs));
  };
  watch();
  try {
    await fn({ fencingToken: token, signal: abort.signal });
  } finally {
    if (timer !== null) timers.clearTimeout(timer);
    await release(Math.max(clock.now(), startMs + atLeastFor));
  }
  return true;
}
