/**
 * What a checker found, by kind: each kind is one promise (docs/PROMISES.md lists them, with the
 * checker and the planted bug that shows it is not vacuous). A planted-bug test asserts the kind
 * it expects, so a checker that catches a bug only by accident, through another promise, shows.
 */
export const VIOLATION_KINDS = [
  // Raft (checker.ts, run-loop.ts, after-healing.ts)
  /** An event threw inside the protocol or the driver. */
  'exception',
  /** Two leaders in one term. */
  'two-leaders',
  /** A member applied an index out of order (skipped one, or went back). */
  'apply-order',
  /** Two members applied different entries at one index. */
  'divergence',
  /** A new leader lacks an entry committed in an earlier term. */
  'leader-completeness',
  /** An acknowledged proposal is not where it was acknowledged. */
  'lost-ack',
  /** A proposal whose client was told CRONRAFT_PROPOSAL_DROPPED (it will never commit) committed. */
  'dropped-committed',
  /** A member believes durable what its disk does not hold. */
  'durability',
  /** After healing, a new entry was not applied on every member in time. */
  'raft-liveness',
  /** A member holds more than a named bound allows (in memory or on disk). */
  'bounds',
  // The scheduler's log (scheduler-checker.ts)
  /** A slot was claimed twice. */
  'claimed-twice',
  /** A claim for an instant the job's spec does not have. */
  'spec-instant',
  /** A move did not give the slot a greater fencing token. */
  'fencing',
  /** A run of a slot never claimed, or under a token the log never gave its member. */
  'token',
  /** Two runs of one claim on one member at once. */
  'twin-run',
  /** A run started again whose outcome was committed before its process started. */
  're-run',
  /** An instant up to a job's high-water mark neither claimed nor counted missed. */
  'accounting',
  /** After healing, a slot due was not claimed, did not run, or started off its instant. */
  'lateness',
  /** After healing, a claimed slot has no final outcome. */
  'outcome',
  /** A member's history() shows a claimed slot, older than the bound, with no outcome under its token and no run of it in progress (history-checker.ts). */
  'history-outcome',
  // Runs, as their handlers see them (checkers/)
  /** A handler's context (slot, token, attempt) is not the claim's. */
  'run-context',
  /** A run's signal aborted with a reason its cause does not give. */
  'abort-reason',
  /** A run went on past its timeoutMs. */
  'run-timeout',
  /** A run of mode 'one' went on on a member cut off from the leader past its lease. */
  'lease',
  /** A run went on after its member applied the move or replacement of its claim. */
  'stale-run',
  /** A run went on after its member stopped. */
  'stopping',
  /** A slot of a mode 'one' job ran on two members at once where the design does not let it (checkers/double-runs.ts). */
  'double-run',
  /** Two runs of a job whose overlap policy forbids it, at once on one member. */
  'overlap',
  /** Two runs of a mode 'one' job under overlap 'skip' at once on two members, each having waited behind another run (checkers/waited-runs.ts). */
  'overlap-waited',
  /** More runs at once on a member than its maxConcurrent. */
  'max-concurrent',
  /** A failed run not retried while it had retries left, retried too soon, beyond them, or on the member that failed. */
  'retry',
  /** After healing, a slot of a mode 'all' job did not start on every member in time. */
  'mode-all',
  // What members refuse, and fail on (refusal-checker.ts): no fault of the simulator forges or
  // corrupts a message, so among its members each count moves only for a bug.
  /** A message threw inside the protocol (RaftDriver.invalidMessages). */
  'invalid-message',
  /** A message the protocol ignored as contradicting it, e.g. a second leader in one term (RaftNode.protocolViolations). */
  'protocol-violation',
  /** A message the transport refused to send (RaftDriver.unsendableMessages). */
  'unsendable-message',
  /** A leader's snapshot the state machine could not read (RaftDriver.invalidSnapshots). */
  'invalid-snapshot',
  /** A chunk of a snapshot no honest leader sends (RaftDriver.invalidSnapshotChunks). */
  'invalid-snapshot-chunk',
  /** A clock stamp malformed, out of bounds or inconsistent (RaftDriver.invalidClockStamps). */
  'invalid-clock-stamp',
  /** A log entry a member skipped as malformed (Member.skippedEntries.malformed): an encoder and the decoder disagree. */
  'malformed-entry',
  /** A member stopped after a fatal error (a broken invariant of its state, a failed write). */
  'fatal',
  // Mixed versions, in a rolling upgrade (version-checker.ts)
  /** Two members decided differently at one index (applied or skipped, the version after it, the cluster's state). */
  'state-divergence',
  /** An entry of a cluster version above the one in force at its index was committed. */
  'inactive-version',
  /** A member, never downgraded, stopped on an entry or a snapshot of a version it cannot read (CRONRAFT_VERSION_TOO_OLD). */
  'version-too-old',
  /** After healing, with every member upgraded, the version did not rise, or no command of it committed, in time. */
  'version-liveness',
  // Configuration changes (configuration-checker.ts)
  /** A configuration the log committed has a voter majority disjoint from one of the configuration before it. */
  'disjoint-majorities',
  /** A member's configuration in force is not the committed one as of what it applied (applied before it commits, or lost on a restart), or a member stopped as removed while the committed configuration holds it. */
  'configuration',
  /** A member removed (or never added) moved a member's term, or was granted a vote, by a member whose configuration does not hold it. */
  'removed-disruption',
  // A rolling deploy that changes jobs' specs and policies (deploys.ts)
  /** After healing, with every member deployed, a job the deploy changed is not in its new form on a member, or not handled by every member. */
  'deploy',
  // Graceful stops (handover.ts)
  /** During a rolling restart of graceful stops, a slot was missed, started twice, or started late. */
  'handover',
  // Fan-out (checkers/fanout.ts, after-healing.ts)
  /** An item of an emit applied is neither done, dead, nor unsettled in a member's state. */
  'fanout-lost',
  /** An item's success was recorded twice (at two indexes). */
  'fanout-double-success',
  /** An attempt started under a lease that is not its item's current one on its member, or under a token not greater than its last, or went on after its member applied the lease's end. */
  'fanout-token',
  /** A member ran more items of a topic at once than its parallelism. */
  'fanout-parallelism',
  /** A leader leased more items of a topic within a second than its rate plus its burst. */
  'fanout-rate',
  /** After healing, an item did not settle (done or dead) within its bound. */
  'fanout-settle',
  /** Members that applied the last fan-out command hold different fan-out states (counts per topic). */
  'fanout-agreement',
  // barrier() (checkers/reads.ts)
  /** A read barrier resolved below an index some member had applied before it was asked, or above what its member had applied. */
  'stale-read',
  /** After healing, a read barrier asked on a member did not resolve within the liveness bound. */
  'read-liveness',
  // runExclusive (checkers/locks.ts)
  /** A task started under a lock while another's task under the same name ran unaborted. */
  'lock-overlap',
  /** A task under a lock ran on, unaborted, past its lock's atMostFor from its start. */
  'lock-deadline',
  /** A task started under a fencing token not greater than the last one of its lock's name. */
  'lock-token',
] as const;

export type ViolationKind = (typeof VIOLATION_KINDS)[number];

/** Records a violation of `kind` at true time `t` (simulated ms). */
export type Report = (t: number, kind: ViolationKind, what: string) => void;
