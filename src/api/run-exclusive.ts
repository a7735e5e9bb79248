import { ClockUnsyncedError, InvalidArgumentError, NotLeaderError, RunAbortedError, TimeoutError } from '../errors.js';
import { validateName } from '../job-options.js';
import type { NodeId } from '../raft/types.js';
import { encodeCommand } from '../runtime/commands.js';
import type { RaftDriver } from '../runtime/driver.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import type { TimerHandle, Timers } from '../time/clock.js';

/** What `Cluster.runExclusive` takes besides the lock's name. */
export interface ExclusiveOptions {
  /** The lock expires this many ms after it was taken, even if its holder died. */
  readonly atMostFor: number;
  /** The lock is held at least this many ms, even if the task returns sooner. */
  readonly atLeastFor?: number;
}

/** What the task gets: the lock's fencing token, and a signal that aborts when `atMostFor` runs out. */
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
  /** How often to look whether the clock has synced (it is learned from the leader's heartbeats). */
  readonly clockSyncPollMs: number;
  /** The tasks running under a lock here, which a graceful stop waits for (ExclusiveTasks). */
  readonly tasks: ExclusiveTasks;
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

  /** Runs `task` with `abort`'s signal, counted until it settles. */
  track<T>(abort: AbortController, task: Promise<T>): Promise<T> {
    this.#running.set(abort, task);
    return task.finally(() => this.#running.delete(abort));
  }

  /**
   * Waits for the tasks in progress and their releases up to `timeoutMs`, then aborts the
   * signals of those left and waits up to EXCLUSIVE_RELEASE_WAIT_MS more for a task that heeds
   * its signal to release its lock.
   */
  async settle(timers: Timers, timeoutMs: number): Promise<void> {
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
  validateName(name);
  const atMostFor = options?.atMostFor;
  const atLeastFor = options?.atLeastFor ?? 0;
  if (!Number.isInteger(atMostFor) || atMostFor <= 0) throw new InvalidArgumentError('atMostFor', atMostFor, 'a positive integer of milliseconds');
  if (!Number.isInteger(atLeastFor) || atLeastFor < 0 || atLeastFor > atMostFor) {
    throw new InvalidArgumentError('atLeastFor', atLeastFor, `an integer of milliseconds from 0 to atMostFor (${atMostFor})`);
  }
  if (typeof fn !== 'function') throw new InvalidArgumentError('fn', fn, 'a function');
  const driver = ctx.driver();
  const { timers } = ctx;
  // Lock times are compared on every member: they are the cluster's time, not this clock's.
  // A member that has not learned it yet would stamp its own clock, which may be far off
  // (ahead, it could take a lock still held): it waits for the leader's heartbeats to teach it.
  if (!driver.clockSynced) {
    if (driver.node.leader === null) throw new NotLeaderError(null);
    const synced = await ctx.waitFor(() => driver.clockSynced, ctx.clockSyncTimeoutMs, ctx.clockSyncPollMs);
    if (!synced) throw new ClockUnsyncedError(ctx.clockSyncTimeoutMs);
  }
  // The stamp clock: a lock taken again by this member after it let the last one go is not
  // stamped before that one's end when the cluster's time stepped back between the two.
  const clock = driver.stampClock();
  const startMs = clock.now();
  const lock: SchedulerCommand = { type: 'lock', name, member: ctx.self, atMs: startMs, untilMs: startMs + atMostFor };
  const taken = (await driver.propose(encodeCommand({ kind: 'scheduler', command: lock }))).result as { ok: boolean; lock?: { token: number } } | undefined;
  if (taken?.ok !== true || taken.lock === undefined) return false;
  // Granted after its end (its commit took longer than atMostFor): another member may take it
  // now, so the task does not run under it. It has ended: nothing to release.
  if (clock.now() >= startMs + atMostFor) return false;
  const token = taken.lock.token;
  const abort = new AbortController();
  const timer = timers.setTimeout(() => abort.abort(new TimeoutError('The exclusive task', atMostFor)), Math.max(0, startMs + atMostFor - clock.now()));
  // Tracked with its release, which a graceful stop waits for.
  const held = (async (): Promise<void> => {
    try {
      await fn({ fencingToken: token, signal: abort.signal });
    } finally {
      timers.clearTimeout(timer);
      const unlock: SchedulerCommand = { type: 'unlock', name, token, untilMs: Math.max(clock.now(), startMs + atLeastFor) };
      // If this fails the lock simply expires at atMostFor.
      await driver.propose(encodeCommand({ kind: 'scheduler', command: unlock })).catch(() => undefined);
    }
  })();
  await ctx.tasks.track(abort, held);
  return true;
}
