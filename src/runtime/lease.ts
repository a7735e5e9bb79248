/**
 * A member's lease: how long it goes on running work once it no longer knows that a leader hears
 * it, and how long a leader waits before it counts a silent member lost (MemberReach.lost) and
 * moves its work. The two must measure one silence: the member counts from the latest of its
 * own answers a leader said it took in (PeerContact.leaderHeardMe), which the leader took in no
 * earlier than it was sent, so its lease ends before the leader's count of its silence reaches
 * the lease.
 */

/** The lease, in election timeouts (README, "Failures"). */
export const LEASE_ELECTION_TIMEOUTS = 2;

/** A member's lease for an election timeout of `electionTimeoutMs`. */
export function leaseMs(electionTimeoutMs: number): number {
  return LEASE_ELECTION_TIMEOUTS * electionTimeoutMs;
}

/** How often a member that runs fan-out's items looks whether it still holds its lease (consumer.ts). */
export const LEASE_CHECK_MS = 100;

/**
 * How long after a member's silence reaches its lease a leader counts it lost: the member looks at
 * its lease once a plan interval (its scheduler's runs) or once LEASE_CHECK_MS (fan-out's items)
 * while nothing reaches it, and its runs end at that look, not at the lease's end.
 */
export function lostAfterMs(timing: { readonly electionTimeoutMs: number; readonly planIntervalMs: number }): number {
  return leaseMs(timing.electionTimeoutMs) + Math.max(timing.planIntervalMs, LEASE_CHECK_MS);
}
