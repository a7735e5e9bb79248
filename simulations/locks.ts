import { exclusiveAbortMarginMs, runExclusive, type ExclusiveContext, type ExclusiveTasks } from '../src/api/run-exclusive.js';
import type { UnansweredLocks } from '../src/api/unanswered-locks.js';
import { NotRunningError } from '../src/errors.js';
import type { NodeId } from '../src/raft/types.js';
import type { Member } from '../src/runtime/member.js';
import { waitUntil } from '../src/runtime/scheduler/handover.js';
import { heartbeatIntervalMs, type MemberSettings } from '../src/runtime/member-settings.js';
import type { Timers } from '../src/time/clock.js';
import { SeededRandom, type Random } from '../src/time/random.js';
import { seedDraws } from './seed-share.js';

/**
 * `runExclusive` in the swarm: every member calls it now and then for one of a few lock names,
 * and runs a task under the lock it is granted for a drawn time, stopping when its signal
 * aborts, as the README asks of a task. checkers/locks.ts judges what the callers tell: no two
 * tasks hold one name at once, and each grant's fencing token is greater than the last.
 */
export interface SimLocks {
  readonly names: readonly string[];
  /** A member's calls come a drawn time apart, up to this (ms). */
  readonly callEveryMs: number;
  /** Each call's atMostFor is drawn in this range (ms). */
  readonly atMostForMs: readonly [number, number];
  /** How long a task runs if its signal does not abort first, drawn in this range (ms): some outlast atMostFor. */
  readonly taskMs: readonly [number, number];
}

/** What a member's caller tells the checker, as it happens. */
export type LockEvent =
  | { readonly type: 'start'; readonly name: string; readonly token: number; readonly atMostFor: number }
  /** The task's signal aborted, or the task returned: either way it holds the lock no more. */
  | { readonly type: 'end'; readonly name: string; readonly token: number; readonly aborted: boolean };

/** The share of the seeds that run the default jobs whose runs call runExclusive (drawLocksMode). */
export const LOCKS_SHARE = 0.25;

/** Whether a run of seed `seed` calls runExclusive, drawn from a stream of its own. */
export function drawLocksMode(seed: number): boolean {
  return seedDraws(seed, 57_287, 41, LOCKS_SHARE);
}

/** The stream the run's lock plan is drawn from, apart from every other. */
export function locksRandom(seed: number): SeededRandom {
  return new SeededRandom(seed * 68_111 + 43);
}

/** Draws a run's lock names and times. */
export function drawLocks(random: Random): SimLocks {
  const count = random.int(1, 2);
  const atMostFor = random.int(2000, 8000);
  return {
    names: Array.from({ length: count }, (_, i) => `lock-${i + 1}`),
    callEveryMs: random.int(1000, 4000),
    atMostForMs: [Math.round(atMostFor / 2), atMostFor],
    taskMs: [100, Math.round(atMostFor * 1.5)],
  };
}

/**
 * A member's process life calls runExclusive as the plan says, until `stopped()`, through the
 * context Cluster.runExclusive gives it (its own tasks and unanswered locks, which the life's
 * Member hooks let go of as Cluster's wiring does: sim member.ts).
 */
export function callLocks(
  member: Member,
  self: NodeId,
  plan: SimLocks,
  settings: MemberSettings,
  timers: Timers,
  random: Random,
  life: { readonly unanswered: UnansweredLocks; readonly tasks: ExclusiveTasks },
  stopped: () => boolean,
  observe: (event: LockEvent) => void,
): void {
  const { timing } = settings;
  const ctx: ExclusiveContext = {
    self,
    // As Cluster's: refused once the member stops, gracefully or not.
    driver: () => {
      if (stopped() || life.tasks.stopping) throw new NotRunningError(stopped() ? 'stopped' : 'stopping');
      return member.driver;
    },
    timers,
    clockSyncTimeoutMs: timing.requestTimeoutMs,
    clockSyncPollMs: heartbeatIntervalMs(timing),
    waitFor: (done, timeoutMs, pollMs) => waitUntil(timers, () => done() || stopped(), timeoutMs, pollMs).then((ok) => ok && !stopped()),
    tasks: life.tasks,
    abortMarginMs: exclusiveAbortMarginMs(timing.maxClockSkewMs),
    unanswered: life.unanswered,
    locks: () => member.scheduler.state.locks,
  };
  const call = (): void => {
    if (stopped()) return;
    const name = plan.names[random.int(0, plan.names.length - 1)] as string;
    const atMostFor = random.int(...plan.atMostForMs);
    const atLeastFor = random.int(0, Math.floor(atMostFor / 4));
    const taskMs = random.int(...plan.taskMs);
    runExclusive(ctx, name, { atMostFor, atLeastFor }, ({ fencingToken, signal }) => task(timers, taskMs, signal, { name, token: fencingToken, atMostFor }, observe)).catch(() => undefined);
    timers.setTimeout(call, random.int(1, plan.callEveryMs));
  };
  timers.setTimeout(call, random.int(1, plan.callEveryMs));
}

/** A task of `taskMs` under `lock` that stops when its signal aborts, telling `observe` when it starts and ends. */
function task(timers: Timers, taskMs: number, signal: AbortSignal, lock: { readonly name: string; readonly token: number; readonly atMostFor: number }, observe: (event: LockEvent) => void): Promise<void> {
  const { name, token } = lock;
  observe({ type: 'start', ...lock });
  return new Promise<void>((resolve) => {
    const end = (aborted: boolean): void => {
      timers.clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
      observe({ type: 'end', name, token, aborted });
      resolve();
    };
    const onAbort = (): void => end(true);
    const timer = timers.setTimeout(() => end(false), taskMs);
    if (signal.aborted) end(true);
    else signal.addEventListener('abort', onAbort, { once: true });
  });
}
