import { RunAbortedError } from '../../errors.js';
import type { NodeId } from '../../raft/types.js';
import type { SchedulerState } from '../../scheduler/state.js';
import type { TimerHandle, Timers } from '../../time/clock.js';
import type { Assignee } from './assignee.js';
import type { Registrations } from './registrations.js';
import type { RuntimeContext } from './runtime-context.js';

/** How often a graceful stop looks again at what it waits for (the log's applied state). */
export const HANDOVER_POLL_MS = 10;
/**
 * Rounds of unregistrations a graceful stop proposes at most: a registration proposed before
 * the stop may be applied after the first round and make this member a handler again.
 */
const MAX_UNREGISTER_ROUNDS = 3;

/** What a graceful stop of the scheduler is given. */
export interface HandoverParts {
  readonly ctx: RuntimeContext;
  readonly assignee: Assignee;
  readonly registrations: Registrations;
}

/**
 * Hands this member's work over as it stops gracefully, so that a rolling restart misses and
 * doubles no slot:
 *
 * 1. Nothing new is armed, claims armed and not yet fired are dropped, and the records of its
 *    runs go at once; it waits until every run it started shows in the log (its start or its
 *    outcome applied), so that no leader moves a slot it runs.
 * 2. It unregisters every job the log has it handle: leaders give it no more work, and move at
 *    once every claim it holds and did not start (planReassignments' `released`). Its app
 *    registers them again when it schedules its jobs at its next start.
 * 3. Runs in progress may finish and record their outcomes, within `timeoutMs` from the start.
 * 4. Runs still going are aborted as interrupted, and their outcomes (the leader moves their
 *    slots at once) awaited for at most `settleMs`.
 * 5. It waits, at most `settleMs`, until no claim it was given and did not run is still its own
 *    (a claim whose job nobody else handles stays: nobody could take it).
 *
 * Every wait is bounded; a stop that times out leaves what it could not hand over to the leader
 * finding this member lost, as a crash would.
 */
export async function handOver(p: HandoverParts, timeoutMs: number, settleMs: number): Promise<void> {
  const { ctx, assignee, registrations } = p;
  const timers = ctx.options.timers;
  const deadline = timers.now() + timeoutMs;
  const left = (): number => Math.max(0, deadline - timers.now());
  ctx.drain();
  assignee.drain();
  await waitUntil(timers, () => registrations.inFlight === 0 && assignee.runsAnnounced(), left());
  for (let round = 0; round < MAX_UNREGISTER_ROUNDS && !registrations.handlesNone() && left() > 0; round++) {
    await within(timers, registrations.unregisterAll(), left());
  }
  await within(timers, Promise.allSettled([...ctx.inFlightRuns]), left());
  if (assignee.interruptRunning(new RunAbortedError('stopping', 'the member is stopping gracefully')) > 0) {
    await within(timers, Promise.allSettled([...ctx.inFlightRuns]), settleMs);
  }
  await waitUntil(timers, () => !holdsReleasedClaim(ctx.state, ctx.options.self), settleMs);
}

/**
 * Whether a claim (mode 'one') is still assigned to `self` though it neither started nor
 * reported a run of it under its token, while another member handles its job: a claim it
 * released and the leader has not moved yet.
 */
export function holdsReleasedClaim(state: SchedulerState, self: NodeId): boolean {
  for (const claim of state.openClaims()) {
    if (claim.assignees[0] !== self || claim.cancelled?.token === claim.token) continue;
    const job = state.jobs.get(claim.job);
    if (job === undefined || job.mode !== 'one') continue;
    if (claim.outcomes.get(self)?.token === claim.token || claim.starts.get(self)?.token === claim.token) continue;
    for (const id of job.handlers) if (id !== self) return true;
  }
  return false;
}

/** Resolves true once `done()` holds, looked at every `pollMs`; false after `timeoutMs`. */
export function waitUntil(timers: Timers, done: () => boolean, timeoutMs: number, pollMs = HANDOVER_POLL_MS): Promise<boolean> {
  if (done()) return Promise.resolve(true);
  const giveUpAt = timers.now() + timeoutMs;
  return new Promise((resolve) => {
    const look = (): void => {
      if (done()) resolve(true);
      else if (timers.now() >= giveUpAt) resolve(false);
      else timers.setTimeout(look, Math.min(pollMs, giveUpAt - timers.now()));
    };
    timers.setTimeout(look, Math.min(pollMs, timeoutMs));
  });
}

/** Waits for `work`, at most `timeoutMs`. */
export async function within(timers: Timers, work: Promise<unknown>, timeoutMs: number): Promise<void> {
  let timer: TimerHandle | null = null;
  await Promise.race([work, new Promise<void>((resolve) => (timer = timers.setTimeout(resolve, timeoutMs)))]);
  if (timer !== null) timers.clearTimeout(timer);
}
