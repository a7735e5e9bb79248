import { MembershipChangeRefusedError, NotLeaderError } from '../errors.js';
import type { Timers } from '../time/clock.js';
import { waitUntil } from './scheduler/handover.js';

export interface LeaveContext {
  readonly timers: Timers;
  /** Proposes this member's removal (Member.proposeConfChange): on the leader, or forwarded to it. */
  readonly proposeRemoval: () => Promise<unknown>;
  /** Whether this member is in the configuration it applied. */
  readonly isMember: () => boolean;
  /** How long to wait before asking again after a refusal that passes (a leader just elected, a change pending). */
  readonly retryMs: number;
}

/**
 * Refusals that pass by themselves: no leader known yet (a handover under way), a leader that
 * has not yet committed an entry of its term, or an earlier change not yet applied.
 */
function passes(error: unknown): boolean {
  if (error instanceof NotLeaderError) return true;
  return error instanceof MembershipChangeRefusedError && (error.reason === 'not-committed-in-term' || error.reason === 'pending' || error.reason === 'transferring');
}

/**
 * Removes this member from the configuration (`cluster.stop({ leave: true })`), asking again
 * after a refusal that passes, within `timeoutMs`. Resolves with whether the removal was
 * applied here; false when it could not be (the last voter, a cluster before version 2) or the
 * time ran out, in which case the removal may still commit later.
 */
export async function leaveConfiguration(ctx: LeaveContext, timeoutMs: number): Promise<boolean> {
  const deadline = ctx.timers.now() + timeoutMs;
  while (ctx.isMember()) {
    const left = deadline - ctx.timers.now();
    if (left <= 0) return false;
    let retry = false;
    let proposed: Promise<unknown>;
    try {
      proposed = ctx.proposeRemoval();
    } catch {
      // Refused at once: the cluster runs a version without configuration changes.
      return false;
    }
    const removal = proposed.then(
      () => true,
      (error: unknown) => {
        retry = passes(error);
        return false;
      },
    );
    let settled = false;
    void removal.then(() => (settled = true));
    await waitUntil(ctx.timers, () => settled || !ctx.isMember(), left, ctx.retryMs);
    if (!ctx.isMember()) return true;
    if (!settled || !retry) return false;
    await waitUntil(ctx.timers, () => false, Math.min(ctx.retryMs, Math.max(0, deadline - ctx.timers.now())), ctx.retryMs);
  }
  return true;
}
