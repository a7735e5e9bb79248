import { AT_CATCH_UP_VERSION } from '../version/versions.js';
import { runsOf, type ClaimRecord } from './records.js';
import type { JobSpec } from './spec.js';

/*
 * The rules SchedulerState.apply decides by, each a pure function of a record and a command's
 * values: where a new job's mark starts, whether a move or an operator's cancel still applies
 * to a claim, and whether a claim has a run in progress.
 */

/**
 * Where a new job's high-water mark starts: at its first registration's time, so that no slot
 * before it is claimed, but for an `{ at }` job from AT_CATCH_UP_VERSION on, whose instant may
 * have passed while its registration waited for a leader, the cluster's time or a commit: its
 * mark starts just before the instant, so that the slot is due at once, like a slot missed while
 * no claim could be made, and its catch-up policy decides (runs it late, or records it missed).
 * Before that version a member of an earlier release applies the registration, and keeps the
 * registration's time as the mark, as every member then must. Pure.
 */
export function initialHighWaterMs(spec: JobSpec, registeredAtMs: number, version: number): number {
  return spec.kind === 'at' && version >= AT_CATCH_UP_VERSION ? Math.min(registeredAtMs, spec.atMs - 1) : registeredAtMs;
}

/**
 * Whether the outcome under the claim's current token is still one the planner moves for
 * `reason` (planReassignments): none, or interrupted, for a lost assignee; a failure, for a retry.
 */
export function moveStillDue(claim: ClaimRecord, reason: 'assignee-lost' | 'retry'): boolean {
  const assignee = claim.assignees[0];
  const reported = assignee === undefined ? undefined : claim.outcomes.get(assignee);
  const outcome = reported?.token === claim.token ? reported.outcome : undefined;
  return reason === 'assignee-lost' ? outcome === undefined || outcome === 'interrupted' : outcome === 'failed' || outcome === 'aborted';
}

/**
 * Whether an operator's cancel asked at `atMs` ends the claim's runs: it is not ended already
 * under its current token, and it has a run in progress per the log, or it was due by then (a
 * slot claimed ahead is not a run; members' clocks differ a little, which a start in the log
 * overrides) and some assignee has reported nothing under its token (running with its start
 * not applied yet, about to, or queued; a slot whose failure waits for its retry has its
 * outcome, and is not a run in progress).
 */
export function cancellable(claim: ClaimRecord, atMs: number): boolean {
  if (claim.cancelled?.token === claim.token) return false;
  if (isInProgress(claim)) return true;
  return claim.slotMs <= atMs && claim.assignees.some((id) => claim.outcomes.get(id)?.token !== claim.token);
}

/** Whether the claim has a run in progress per the log (see runsOf). */
export function isInProgress(claim: ClaimRecord): boolean {
  return runsOf(claim).length > 0;
}
