import type { VersionExtension } from './extension.js';

/** A closed range of versions, `min` to `max`. */
export interface VersionRange {
  readonly min: number;
  readonly max: number;
}

/**
 * What a member can read: the wire's frame formats (`protocol`) and the cluster versions of the
 * replicated state machine (`stateMachine`: what the log's entries and the snapshots mean).
 * `extension`, in tests only, reads the commands of `stateMachine.max` when that is a version
 * this release does not know (see extension.ts).
 */
export interface VersionSupport {
  readonly protocol: VersionRange;
  readonly stateMachine: VersionRange;
  readonly extension?: VersionExtension;
}

/**
 * The cluster version of a log or snapshot that says none: every entry written before the
 * version gate existed (cronraft 0.1.0), and every entry of this version's commands.
 */
export const FIRST_CLUSTER_VERSION = 1;

/**
 * Cluster version 2, "membership": configuration changes (conf-change entries in the log, a
 * snapshot's configuration), carried on the wire by protocol 2; and registrations in batches
 * (BATCH_VERSION).
 */
export const MEMBERSHIP_VERSION = 2;

/**
 * The cluster version from which a log entry may carry a batch of registrations (many jobs'
 * `register` or `unregister` in one entry, see commands.ts): a member of cronraft 0.1.0 reads
 * none, so a member proposes them only once the cluster runs this version.
 */
export const BATCH_VERSION = MEMBERSHIP_VERSION;

/**
 * The cluster version from which the log may carry a `forfeit` (a removed member's share of a
 * mode 'all' slot recorded as missed, see departures.ts): a member of cronraft 0.1.0 reads
 * none, and members leave the configuration only from this version on.
 */
export const FORFEIT_VERSION = MEMBERSHIP_VERSION;

/**
 * Cluster version 3, "fanout": fan-out's commands (src/fanout/: topics, work items, their leases
 * and outcomes) in entries `[KIND_FANOUT, command, 3]`, and fan-out's state in a member snapshot
 * of format 3. No wire change: they ride in Normal entries. Every member applies a lease within
 * the member's parallelism and a prefetch of up to seven times as much again (fanout/prefetch.ts),
 * raised from three before this version was released: a release that applies another bound
 * needs a version of its own. A lease may name its topic (then it leases only that topic's
 * items), added before this version was released too.
 */
export const FANOUT_VERSION = 3;

/**
 * The cluster version from which the log may carry the scheduler's operations on a job
 * (`pause`, `resume`, `trigger` and `cancel-runs`, see scheduler/operations.ts) in entries
 * `[KIND_SCHEDULER, command, 3]`, and a scheduler snapshot a paused job, a triggered claim or
 * a cancelled run; and with them the outcome `cancelled`, which only a `cancel-runs` leads a
 * member to report: a member of an earlier release reads none, so a member proposes them only
 * once the cluster runs this version. Released with fan-out's, in the same version (not
 * released yet when `cancel-runs` joined it, so no member reads version 3 without it).
 */
export const OPERATIONS_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which a new job at the cap of jobs takes the place of one that no
 * member has a handler for (SchedulerState.apply): a member of an earlier release refuses it,
 * so the members make room only once the cluster runs this version, all alike. Released with
 * fan-out's, in the same version (not released yet when this joined it).
 */
export const JOB_ROOM_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which a new `{ at }` job whose instant passed before its first
 * registration applied still has that slot due (SchedulerState's initialHighWaterMs): its
 * catch-up policy runs it late or records it missed, where a member of an earlier release
 * starts the job's high-water mark at the registration and never claims nor records the slot.
 * Every member must start the mark alike, so the members do so only once the cluster runs this
 * version. Released with fan-out's, in the same version (not released yet when this joined it).
 */
export const AT_CATCH_UP_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which a claim made or moved after its slot's instant (a slot caught
 * up after an outage, an `{ at }` job registered late, a run moved or retried) keeps the
 * cluster's time it was made or last moved at (ClaimRecord.claimedAtMs, from the claim's or the
 * reassignment's `atMs`), from which its reassignment horizon counts: before, the horizon
 * counted from the instant alone, so a slot caught up more than the horizon late was recorded
 * missed as soon as it was claimed, never run, and a run moved that late (a long run's retry)
 * was not armed by its new assignee. A member of an earlier release
 * keeps no such time, so the members keep it only once the cluster runs this version. Released
 * with fan-out's, in the same version (not released yet when this joined it).
 */
export const CLAIM_TIME_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which only the moves of a claim that retry a failed run count against
 * its job's `retries` (ClaimRecord.retried): before, every move did, so a run interrupted by a
 * failover used up a retry. A member of an earlier release counts every move, so the members
 * count apart only once the cluster runs this version. Released with fan-out's, in the same
 * version (not released yet when this joined it).
 */
export const RETRY_COUNT_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which a claim past the reassignment horizon ends alike on every path.
 * The leader counts the horizon from the claim's latest news (its move, its run's start and
 * outcome, when its retry is due, when it last saw the run's member: the planner's
 * horizonStartMs), so that a long run is moved or retried as a short one is; before, from the
 * instant, as members of earlier releases arm claims (a run moved later is not armed there).
 * Its assignee, which does not run such a claim, reports it interrupted (every member of this
 * release does), so the leader leaves the claim of a reachable assignee to it, as within the
 * horizon: before, it recorded missed any such claim with nothing reported, a run queued behind
 * a long one (overlap 'queue') included. And a claim whose run was interrupted and that no move
 * ran is recorded missed (`expire`), as a claim nobody ran is: before, it kept `interrupted` as its
 * last outcome for good. A member of an earlier release neither reports nor applies such an
 * `expire`, so the leader does both only once the cluster runs this version. Released with
 * fan-out's, in the same version (not released yet when this joined it).
 */
export const PAST_HORIZON_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which the scheduler's kept claims are bounded by what they take in a
 * snapshot (SCHEDULER_DEFAULTS.maxClaimBytes) as well as by their number, and a run's error is
 * kept within MAX_RUN_ERROR_LENGTH: before, the claims of a mode 'all' job on many members, with
 * long errors, made a snapshot larger than a member behind takes in. A member of an earlier
 * release keeps every claim up to the count, so the members forget by bytes only once the
 * cluster runs this version, all alike. Released with fan-out's, in the same version (not
 * released yet when this joined it).
 */
export const CLAIM_BYTES_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which the scheduler's jobs and locks, and fan-out's topics and the
 * members its leases name, are bounded by what they take in a snapshot (their shares of
 * MAX_SNAPSHOT_BYTES, snapshot-shares.ts) as well as by their number: a new job, handler, lock,
 * topic or consumer past its share is refused, and a lease leaves an item pending. Before, with
 * long names and many members, they could make a snapshot larger than a member behind takes in.
 * A member of an earlier release refuses by number only, so the members refuse by bytes once the
 * cluster runs this version, all alike. Released with fan-out's, in the same version (not
 * released yet when this joined it).
 */
export const SNAPSHOT_SHARES_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which a registration of a job that no other member has a handler
 * for, of another spec or policy, takes the job over with its own (job-takeover.ts): a member of an
 * earlier release refuses it as a conflict, and the job, its old registration dropped by every
 * member as they were deployed anew, ran no more. Every member must decide alike, so the members
 * take it over only once the cluster runs this version. Released with fan-out's, in the same
 * version (not released yet when this joined it).
 */
export const JOB_TAKEOVER_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which the log's entries are read with every text string as it was
 * written (bytes/cbor-decode.ts): cborg's decoder, which cronraft 0.1.0 reads them with, drops a
 * leading U+FEFF, so that a job, topic, lock or key so named became another's (`'\ufeffx'` was
 * `'x'`). A member of 0.1.0 drops it, so the members keep it only once the cluster runs this
 * version, all alike: read apart, a name registered while both releases run would have been two
 * names in one log. Released with fan-out's, in the same version (not released yet when this
 * joined it).
 */
export const EXACT_TEXT_VERSION = FANOUT_VERSION;

/**
 * The cluster version from which a member's LevelDB store seals its values with their CRC-32
 * (storage format 3, which a release before it refuses): before it, a downgrade to the release
 * before must find the data directory as that release wrote it.
 */
export const SEALED_STORE_VERSION = FANOUT_VERSION;

/**
 * Bound on any version number read from the log, a snapshot or a peer: a hostile or damaged
 * value past it is malformed, not a version to wait for.
 */
export const MAX_VERSION = 1_000;

/**
 * What this release reads. The promise (README, "Upgrading"): `stateMachine.min` stays 1 until a
 * major release says otherwise, one major release ahead, so a member of any later release
 * joins a cluster of this one and the cluster's version rises once all have been upgraded.
 */
export const SUPPORTED: VersionSupport = {
  protocol: { min: 1, max: 2 },
  stateMachine: { min: FIRST_CLUSTER_VERSION, max: FANOUT_VERSION },
};

/**
 * The wire protocol every link must speak once a cluster version is active: a wire message of
 * a newer protocol is sent only when the active version's protocol allows it. Protocol 2 comes
 * with cluster version 2 (codec.ts: conf changes and a snapshot's configuration); a later
 * version that adds to the wire raises it again.
 */
export function protocolOf(clusterVersion: number): number {
  return clusterVersion >= MEMBERSHIP_VERSION ? 2 : 1;
}

export function inRange(range: VersionRange, version: number): boolean {
  return version >= range.min && version <= range.max;
}

/** Whether a value read from the log, a snapshot or a peer is a version number within MAX_VERSION. */
export function isVersion(value: unknown): value is number {
  return Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= MAX_VERSION;
}
