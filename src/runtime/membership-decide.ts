import type { Configuration, NodeId } from '../raft/types.js';

/**
 * A learner within this many entries of the leader's commit index counts as caught up: promoted,
 * it would not hold back commits while it fetches the rest (a heartbeat's worth of proposals).
 */
export const PROMOTE_LAG_ENTRIES = 100;

/**
 * How long a learner must have been live and caught up without a break before it is promoted
 * (autopilot's stabilization time): a member that flaps, or one just started, does not become a
 * voter the cluster then has to wait for.
 */
export const PROMOTE_STABLE_MS = 10_000;

/**
 * The fewest voters a dead voter is removed down to when no learner can take its place: below
 * three, a removal buys no tolerance of a further failure (two voters need both, as three with
 * one down do), and the dead member, should it come back, could no longer help.
 */
export const MIN_VOTERS_WITHOUT_REPLACEMENT = 3;

/** What the leader knows of one member other than itself (see MembershipInput). */
export interface MemberView {
  /** Heard from within an election timeout and connected. */
  readonly live: boolean;
  /** The leader's match index for it (null: not tracked). */
  readonly match: number | null;
  /** How long it has been live and within PROMOTE_LAG_ENTRIES of the commit index without a break (0 when not now). */
  readonly caughtUpForMs: number;
  /** How long it has not been heard from, counted at most from when this leader took office. */
  readonly silentForMs: number;
}

export interface MembershipInput {
  /** The leader deciding, never removed nor judged. */
  readonly self: NodeId;
  readonly conf: Configuration;
  /** Every member but `self`; a member missing is neither live nor dead (nothing is known of it yet). */
  readonly views: ReadonlyMap<NodeId, MemberView>;
  /** The number of voters wanted (odd): learners are promoted up to it (option `voters`). */
  readonly targetVoters: number;
  /** A member silent this long is removed (option `deadMemberAfterMs`). */
  readonly deadMemberAfterMs: number;
  /** How long a learner must have been live and caught up to be promoted. @default PROMOTE_STABLE_MS */
  readonly promoteStableMs?: number;
}

/** The one change the leader should propose now, if any (see nextMembershipChange). */
export type MembershipDecision =
  | { readonly kind: 'promote'; readonly id: NodeId }
  | { readonly kind: 'remove'; readonly id: NodeId; readonly voter: boolean }
  | { readonly kind: 'none' };

/**
 * The next change of the configuration, pure (Consul autopilot's rules, one member at a time):
 *
 * 1. A voter silent for `deadMemberAfterMs` is removed, if the voters left keep a majority of
 *    live ones (the leader counting itself) and either a learner is ready to take its place at
 *    the next step (rule 2 would promote it) or at least MIN_VOTERS_WITHOUT_REPLACEMENT voters
 *    are left. Removal comes first: it lowers the quorum the promotion that follows must reach.
 * 2. A learner caught up (within PROMOTE_LAG_ENTRIES of the commit index) and live for
 *    PROMOTE_STABLE_MS is promoted while the voters number fewer than `targetVoters`, so that
 *    their count ends odd: from an even count one is enough, from an odd count only when a
 *    second learner is ready for the step after (an even count tolerates no more failures than
 *    the odd count below it, and needs one more for each quorum).
 * 3. A learner silent for `deadMemberAfterMs` is removed: it counts in no quorum, so this is
 *    always safe, and work stops waiting on it.
 *
 * Ties go to the lowest id, so that the decision is the same however the map is ordered.
 */
export function nextMembershipChange(input: MembershipInput): MembershipDecision {
  const { self, conf, views, targetVoters, deadMemberAfterMs } = input;
  const stableMs = input.promoteStableMs ?? PROMOTE_STABLE_MS;
  const view = (id: NodeId): MemberView => views.get(id) ?? UNKNOWN;
  const dead = (id: NodeId): boolean => id !== self && view(id).silentForMs >= deadMemberAfterMs;
  const ready = [...conf.learners].sort().filter((id) => id !== self && view(id).live && view(id).caughtUpForMs >= stableMs);
  for (const id of [...conf.voters].sort()) {
    if (!dead(id)) continue;
    const left = conf.voters.filter((v) => v !== id);
    const liveLeft = left.filter((v) => v === self || view(v).live).length;
    if (liveLeft < Math.floor(left.length / 2) + 1) continue;
    if (left.length < MIN_VOTERS_WITHOUT_REPLACEMENT && !promotes(left.length, ready.length, targetVoters)) continue;
    return { kind: 'remove', id, voter: true };
  }
  if (promotes(conf.voters.length, ready.length, targetVoters)) return { kind: 'promote', id: ready[0] as NodeId };
  for (const id of [...conf.learners].sort()) if (dead(id)) return { kind: 'remove', id, voter: false };
  return NONE;
}

/** Whether rule 2 promotes a learner, with `voters` voters and `ready` learners ready. */
function promotes(voters: number, ready: number, target: number): boolean {
  if (voters >= target || ready === 0) return false;
  return voters % 2 === 0 || (ready >= 2 && voters + 2 <= target);
}

const UNKNOWN: MemberView = { live: false, match: null, caughtUpForMs: 0, silentForMs: 0 };
const NONE: MembershipDecision = { kind: 'none' };
