import { AT_CATCH_UP_VERSION, CLAIM_TIME_VERSION, PAST_HORIZON_VERSION } from '../version/versions.js';
import { MAX_INTERRUPTED_ATTEMPTS, runsOf, type ClaimRecord } from './records.js';
import type { JobSpec } from './spec.js';

/*
 * The rules SchedulerState.apply decides by, each a pure function of a record and a command's
 * values: where a new job's mark starts, whether a move, a leader's expiry or an operator's
 * cancel still applies to a claim, and whether a claim has a run in progress.
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
 * The time a claim or a reassignment's `atMs` gives the claim (ClaimRecord.claimedAtMs): kept only
 * where every member keeps it (CLAIM_TIME_VERSION), and only after the slot's instant (a claim
 * made ahead, as nearly all are, keeps none). Its shape is checked here, not as the entry is
 * read: a member of cronraft 0.1.0 reads past the field, so a command with a bad one must apply,
 * as on that member, without it.
 */
export function claimTime(atMs: unknown, slotMs: number, version: number): number | undefined {
  return version >= CLAIM_TIME_VERSION && typeof atMs === 'number' && Number.isFinite(atMs) && atMs > slotMs ? atMs : undefined;
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
 * Whether a leader's `expire` (planReassignments, past the reassignment horizon) still records
 * the claim missed: it was not replaced, and its assignee reported nothing under its current
 * token, or, from PAST_HORIZON_VERSION, reported its run interrupted (the cluster, not the
 * job, ended it, and no move ran it since) before the last attempt. Any other outcome under the
 * token is final, and so is an interrupted run of the last attempt (MAX_INTERRUPTED_ATTEMPTS).
 */
export function expirable(claim: ClaimRecord, version: number): boolean {
  if (claim.cancelled?.token === claim.token) return false;
  const assignee = claim.assignees[0];
  const reported = assignee === undefined ? undefined : claim.outcomes.get(assignee);
  if (reported?.token !== claim.token) return true;
  return reported.outcome === 'interrupted' && claim.attempt < MAX_INTERRUPTED_ATTEMPTS && version >= PAST_HORIZON_VERSION;
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
