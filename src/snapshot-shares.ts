/**
 * How a member snapshot's bytes are shared out (issue 16, "a member never adopts a value it
 * could not survive"). A member behind the leader takes in a snapshot of at most
 * MAX_SNAPSHOT_BYTES (transport/constants.ts); the replicated state it holds is bounded part by
 * part in what each part takes in a snapshot, and these shares together come to no more than
 * that, so that every part full at once still makes a snapshot a member takes in. Each part
 * counts its records at most as their encoding takes them (claim-footprint.ts, job-footprint.ts,
 * fanout/footprint.ts); past its share, what can be forgotten is (old claims, old dead letters,
 * expired locks) and anything new is refused (a job, a handler, a lock, an emit, a topic, a
 * consumer) or waits (a lease). A state restored from a snapshot taken before the shares held
 * (an earlier cluster version) is kept whole.
 */

const MiB = 1024 * 1024;

export const SNAPSHOT_SHARES = {
  /**
   * Fan-out's unsettled items and their batches, but the members their leases name
   * (FANOUT_DEFAULTS.maxUnsettledBytes): an emit of 100,000 items of 100 bytes from a slot whose
   * job's name has up to 29 characters (issue 19's bench) fits.
   */
  unsettledItems: 21.5 * MiB,
  /** The members fan-out's leases name, on their items and in their topics' counts in flight (FANOUT_DEFAULTS.maxLeaseBytes). */
  leases: MiB / 2,
  /** Fan-out's dead letters (FANOUT_DEFAULTS.maxDeadLetterBytes). */
  deadLetters: 1.5 * MiB,
  /** Fan-out's topics: their names, consumers and counts (FANOUT_DEFAULTS.maxTopicBytes). */
  topics: MiB,
  /** The scheduler's kept claims (SCHEDULER_DEFAULTS.maxClaimBytes). */
  claims: 2 * MiB,
  /** The scheduler's jobs, with their handlers and conflicts (SCHEDULER_DEFAULTS.maxJobBytes). */
  jobs: 3.5 * MiB,
  /** The scheduler's locks (SCHEDULER_DEFAULTS.maxLockBytes). */
  locks: 1.5 * MiB,
  /**
   * The rest, which the members' number and the length of their names bound: the cluster's part
   * (each member's versions, up to MAX_MEMBERS_SAVED of them), the scheduler's counts of claims
   * per member (MAX_ASSIGNED_MEMBERS of them) and the snapshot's frames.
   */
  rest: MiB / 2,
} as const;
