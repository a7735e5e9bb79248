import type { NodeId } from '../raft/types.js';
import { horizonFromMs, type ClaimRecord } from './records.js';

/**
 * How far ahead of the leader's clock a time stamped on a record may be and still count, for
 * the leader's planning: a run's start or outcome, a cancel (stamped by the member that
 * proposed it), and a claim's time (by the leader that made it). An honest stamp is the
 * cluster's time as a member estimated it, within milliseconds of the leader's. One further
 * ahead (a member's bug, a leader's clock that was far off, a forged entry) would put a retry's
 * back-off, the claim's reassignment horizon and a fixed-delay job's next slot as far off: the
 * claim would never end and the job never run again. The log keeps such a time as it was
 * written (history shows it); the planner counts it as not there (believedReportMs).
 */
export const STAMP_AHEAD_LIMIT_MS = 60_000;

/** Whether a stamp counts at the leader's `nowMs` (always, without one: a member arming its own claim). */
export function believable(atMs: number, nowMs: number | undefined): boolean {
  return nowMs === undefined || atMs <= nowMs + STAMP_AHEAD_LIMIT_MS;
}

/** horizonFromMs of the claim, its claim time left out if that is further ahead of `nowMs` than believable. */
export function believedHorizonFromMs(claim: ClaimRecord, nowMs: number | undefined): number {
  return claim.claimedAtMs === undefined || believable(claim.claimedAtMs, nowMs) ? horizonFromMs(claim) : claim.slotMs;
}

/**
 * The time `member` stamped `atMs` on what it reported under the claim (its run's outcome), as
 * the leader at `nowMs` counts it: as stamped, or, further ahead than believable, the latest
 * believable time known before it: the member's start of the run, or the claim's (its instant,
 * or when it was made or moved). Never now: a fixed-delay job's next slot and a retry's back-off
 * count from it, and from now they would move on with every plan.
 */
export function believedReportMs(claim: ClaimRecord, member: NodeId, atMs: number, nowMs: number | undefined): number {
  if (believable(atMs, nowMs)) return atMs;
  const start = claim.starts.get(member);
  const startMs = start !== undefined && start.token === claim.token && believable(start.atMs, nowMs) ? start.atMs : Number.NEGATIVE_INFINITY;
  return Math.max(believedHorizonFromMs(claim, nowMs), startMs);
}
