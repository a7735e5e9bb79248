import type { NodeId } from '../raft/types.js';
import type { JobSpec } from './spec.js';
import { MISSED, type AssignMode, type JobPolicy, type OverlapPolicy } from './command.js';

export interface JobRecord {
  readonly name: string;
  /** The spec of the first registration: it wins over later, different ones. */
  readonly spec: JobSpec;
  readonly mode: AssignMode;
  /** The first registration's policy, with its overlap filled in. */
  readonly policy: JobPolicy & { readonly overlap: OverlapPolicy };
  readonly anchorMs: number;
  /**
   * Members with a handler for the job. Replaced on a change, never changed in place: jobs with
   * the same handlers, registered alike, share one set (see HandlerSets, handler-sets.ts).
   */
  handlers: ReadonlySet<NodeId>;
  /**
   * Members that registered a different spec under this name (a rolling deploy), with it.
   * Replaced on a change, never changed in place: NO_CONFLICTS while there are none.
   */
  conflicts: ReadonlyMap<NodeId, string>;
  /** The latest slot ever claimed or skipped: no slot at or before it can be claimed again. */
  highWaterMs: number;
  /** Slots dropped by the catch-up policy, in all. */
  missedSlots: number;
  /** Runs recorded as skipped (overlap, or paused), in all. */
  skippedRuns: number;
  /** Whether the job is paused (`pause`, cluster version 3): its slots that fire are recorded as skipped, not run. */
  paused: boolean;
}

/**
 * The conflicts of every job that has none, which is nearly every job: one map shared, never
 * changed, rather than a map per job in every member's memory (twice: see SchedulerMirror).
 */
export const NO_CONFLICTS: ReadonlyMap<NodeId, string> = new Map();

export interface ClaimRecord {
  readonly job: string;
  readonly slotMs: number;
  /** The claim's log index: strictly increasing across the cluster, handed to the handler. A reassignment gives a new one. */
  token: number;
  assignees: readonly NodeId[];
  /** 1 for the first claim; one more per reassignment. */
  attempt: number;
  /**
   * The reassignments counted against the job's `retries`: those that retry a failed run, from
   * RETRY_COUNT_VERSION on (a move after an interruption or a lost member is not the job's
   * failure), every one before (as a member of an earlier release counts). At most attempt − 1.
   */
  retried: number;
  /**
   * When the claim was made or last moved, by the cluster's time, if after the slot's instant (a
   * slot caught up late, a run moved or retried; from CLAIM_TIME_VERSION on): the claim's
   * reassignment horizon counts from it (horizonFromMs). Absent for a claim made ahead of its
   * instant and never moved, as nearly all are.
   */
  claimedAtMs?: number;
  /**
   * Outcome per assignee, once reported, with the token it ran under: a RunOutcome, or MISSED
   * (recorded by the leader, under the token its `expire` gave).
   */
  readonly outcomes: Map<NodeId, { readonly outcome: string; readonly atMs: number; readonly token: number; readonly error?: string }>;
  /** Runs started per assignee (`started`), with the token they started under. */
  readonly starts: Map<NodeId, { readonly atMs: number; readonly token: number }>;
  /**
   * Set once the run under `token` was ended for good: a later slot replaced it (overlap
   * 'replace', `bySlotMs`), or an operator cancelled it (`cancel-runs`, `byMember`: who asked).
   */
  cancelled: ReplacedRun | CancelledRun | null;
  /** Present, true, on a claim made by `trigger` (cluster version 3): an extra slot, run even while its job is paused. */
  readonly trigger?: true;
}

/** A claim's run under `token` that a later slot replaced (overlap 'replace'). */
export interface ReplacedRun {
  readonly token: number;
  readonly bySlotMs: number;
  readonly atMs: number;
}

/** A claim's runs under `token` that an operator cancelled (`cancel-runs`, cluster version 3). */
export interface CancelledRun {
  readonly token: number;
  readonly atMs: number;
  /** The member the cancel was asked of. */
  readonly byMember: NodeId;
}

/** Whether a claim's end was an operator's cancel (rather than a replacement). */
export function isCancelledRun(ended: ReplacedRun | CancelledRun | null | undefined): ended is CancelledRun {
  return ended !== null && ended !== undefined && 'byMember' in ended;
}

export interface LockRecord {
  readonly holder: NodeId;
  readonly token: number;
  untilMs: number;
}

export type ApplyResult =
  | { readonly ok: true; readonly claim?: ClaimRecord; readonly lock?: LockRecord; readonly cancelled?: readonly ClaimRecord[] }
  | { readonly ok: false; readonly reason: 'duplicate-slot' | 'unknown-job' | 'stale-token' | 'spec-conflict' | 'locked' | 'too-many-locks' | 'ended' | 'too-many-jobs' };

/**
 * The whole contents of a SchedulerState, as a snapshot holds them (state-snapshot.ts encodes
 * and decodes it): every Map and Set as an array in its iteration order, which is part of the
 * state (claims are forgotten oldest first, expired locks likewise).
 */
export interface SchedulerStateParts {
  /** In registration order; each is kept under its name. */
  readonly jobs: readonly JobRecord[];
  /** In claim order; each is kept under claimKey(job, slotMs). */
  readonly claims: readonly ClaimRecord[];
  /** In insertion order. */
  readonly locks: readonly (readonly [name: string, lock: LockRecord])[];
  /** In insertion order. */
  readonly assigned: readonly (readonly [member: NodeId, claims: number])[];
  /**
   * The order of the derived indexes, as applying the log left it: a claim that reopened (moved
   * after it settled, which logs written before such moves were refused hold) or whose run
   * restarts (after a reassignment) goes to the end of its index,
   * not to its place in claim order, and the planner looks at open claims in index order.
   * Membership is always rebuilt from the claims; this only orders it. Absent: claim order.
   */
  readonly indexOrder?: {
    readonly open: readonly ClaimRecord[];
    /** Every claim in progress, the claims of one job in the order of that job's index. */
    readonly inProgress: readonly ClaimRecord[];
  };
}

/** The key of a slot's claim in SchedulerState.claims. */
export function claimKey(job: string, slotMs: number): string {
  return `${job}@${slotMs}`;
}

/** A run that started under the claim's current token, on `member`, and has not ended. */
export interface RunInProgress {
  readonly job: string;
  readonly slotMs: number;
  readonly token: number;
  readonly member: NodeId;
  readonly startedAtMs: number;
}

/** The claim's runs in progress: started under its current token, no outcome yet from that member, not replaced or cancelled. */
export function runsOf(claim: ClaimRecord): RunInProgress[] {
  if (claim.cancelled?.token === claim.token) return [];
  const out: RunInProgress[] = [];
  for (const [member, start] of claim.starts) {
    if (start.token !== claim.token || claim.outcomes.get(member)?.token === claim.token) continue;
    out.push({ job: claim.job, slotMs: claim.slotMs, token: claim.token, member, startedAtMs: start.atMs });
  }
  return out;
}

/**
 * The retries `job`'s policy still allows `claim` after a failure of its current attempt: none
 * in mode 'all' (each member runs its share once), else the retries not yet used (see the
 * planner's planReassignments, which makes them). Pure.
 */
export function retriesLeft(job: JobRecord | undefined, claim: ClaimRecord): number {
  if (job === undefined || job.mode === 'all') return 0;
  return Math.max(0, job.policy.retries - claim.retried);
}

/**
 * Where a claim's reassignment horizon (and an assignee's horizon for arming it) counts from:
 * its slot's instant, or when it was made or last moved if that was later (a slot caught up late,
 * a long run's retry), so that a slot claimed or moved late is run rather than taken for
 * history. (The leader counts from its run's start and outcome too: see planReassignments.) Pure.
 */
export function horizonFromMs(claim: ClaimRecord): number {
  return claim.claimedAtMs === undefined ? claim.slotMs : Math.max(claim.slotMs, claim.claimedAtMs);
}

/**
 * Bound on attempts of a slot whose runs the cluster keeps interrupting: an interrupted run of
 * the last attempt is the slot's final outcome (nothing moves it, nor records it missed).
 */
export const MAX_INTERRUPTED_ATTEMPTS = 10;

/** Whether an outcome ends its slot's story: it is never moved or retried after it. */
export function isSettling(outcome: string): boolean {
  return outcome === 'succeeded' || outcome === 'skipped' || outcome === 'replaced' || outcome === 'cancelled' || outcome === MISSED;
}
