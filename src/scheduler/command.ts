import type { NodeId } from '../raft/types.js';
import type { JobSpec } from './spec.js';

export type AssignMode = 'one' | 'all';

/** A command of the scheduler's replicated state machine; one per committed log entry. */
export type SchedulerCommand =
  | {
      readonly type: 'register';
      readonly job: string;
      readonly spec: JobSpec;
      readonly mode: AssignMode;
      /** How failed runs and missed slots are handled; replicated so every leader plans alike. */
      readonly policy: JobPolicy;
      /** The member that has a handler for the job. */
      readonly member: NodeId;
      /** Cluster time of the registration; the first one anchors fixed intervals. */
      readonly atMs: number;
    }
  | { readonly type: 'unregister'; readonly job: string; readonly member: NodeId }
  | {
      readonly type: 'claim';
      readonly job: string;
      /** The scheduled instant of the slot. */
      readonly slotMs: number;
      readonly assignees: readonly NodeId[];
      /**
       * The job's high-water mark the planner claimed after: the claim applies only if it still
       * is, so a claim can never jump over instants that are neither claimed nor counted missed
       * (when a plan was made on a state that another plan's entries have moved since). The
       * planner always sets it; a hand-made claim without it is checked only against the mark.
       */
      readonly fromMs?: number;
      /**
       * The cluster's time the leader made the claim at, when that is after the slot's instant
       * (a slot caught up late): its reassignment horizon counts from it (ClaimRecord.claimedAtMs,
       * from CLAIM_TIME_VERSION; a member of an earlier release reads past it, so one that is not
       * a time is ignored, not refused).
       */
      readonly atMs?: number;
    }
  | {
      /**
       * Moves a claimed slot to other assignees under a new fencing token (this entry's index):
       * its assignee was lost, or its run failed and the job retries. Applies only if the claim
       * still has `fromToken`, so two leaders cannot both move it.
       */
      readonly type: 'reassign';
      readonly job: string;
      readonly slotMs: number;
      readonly fromToken: number;
      readonly assignees: readonly NodeId[];
      readonly reason: 'assignee-lost' | 'retry';
      /**
       * The cluster's time the leader moved the claim at: when that is after the slot's instant,
       * the claim's reassignment horizon counts from it (ClaimRecord.claimedAtMs, from
       * CLAIM_TIME_VERSION), so that its new assignee arms a run moved late (a long run's retry).
       * A member of an earlier release reads past it, so one that is not a time is ignored, not refused.
       */
      readonly atMs?: number;
    }
  | {
      /**
       * Records a claimed slot (mode 'one') as missed: nobody ran it and nobody will. The leader
       * plans it for a claim past the reassignment horizon whose assignee reported nothing under
       * its token and has no run of it in progress on a member that may take work (it was lost,
       * and no member took the slot over in time). Gives the claim a new token (this entry's
       * index), so that a run under the old one is stale, and records under it, for the
       * assignee, the outcome 'missed' with the reason. Applies only from `fromToken`, while no
       * outcome is recorded under it.
       */
      readonly type: 'expire';
      readonly job: string;
      readonly slotMs: number;
      readonly fromToken: number;
      readonly reason: ExpireReason;
      readonly atMs: number;
    }
  | {
      /**
       * Records a member's share of a claimed slot as missed, for the reason 'member-removed':
       * the member left the configuration with no outcome reported under the claim's token, and
       * never will report one. The leader plans it (departures.ts) for a mode 'all' slot, and
       * for a mode 'one' slot whose run a later slot replaced (any other moves instead); the
       * claim's token stays, so the other assignees' runs hold it still. Applies only under
       * `token`, to an assignee with no outcome under it. A command of cluster version 2
       * (FORFEIT_VERSION): only the version-2 form of an entry carries it.
       */
      readonly type: 'forfeit';
      readonly job: string;
      readonly slotMs: number;
      readonly token: number;
      readonly member: NodeId;
      readonly atMs: number;
    }
  | {
      /**
       * Pauses the job (cluster version 3, OPERATIONS_VERSION): from the time a member applies
       * it, that member runs none of the job's slots but triggered ones; each that fires there
       * is recorded as skipped, with PAUSED_REASON. Runs already started go on. The planner
       * claims its slots as ever, so that every slot has its record and none counts as missed.
       */
      readonly type: 'pause';
      readonly job: string;
      readonly atMs: number;
    }
  | {
      /** Ends a pause (cluster version 3): slots that fire from then on run again. */
      readonly type: 'resume';
      readonly job: string;
      readonly atMs: number;
    }
  | {
      /**
       * One extra slot of the job, now (cluster version 3): a claim at `slotMs` (the cluster's
       * time when it was asked for) marked as triggered, under this entry's index as its fencing
       * token, run by `assignees` like any claim, paused or not. Applies only if no claim of
       * the job is kept at `slotMs`, and if `fromMs` is not past the job's high-water mark: a
       * slot past the mark moves it there, which the proposer checked skips no scheduled
       * instant after `fromMs` (so none after the mark either). See scheduler/operations.ts.
       */
      readonly type: 'trigger';
      readonly job: string;
      readonly slotMs: number;
      readonly fromMs: number;
      readonly assignees: readonly NodeId[];
    }
  | {
      /**
       * An operator cancels the job's runs in progress (cluster version 3, `cluster.cancel()`):
       * every kept claim of the job (only the one of `slotMs`, to the millisecond, when given)
       * that is not cancelled or replaced under its current token and has a run in progress per
       * the log, or was due by `atMs` (the cluster's time when it was asked for) with an
       * assignee that reported no outcome under that token. Each is marked
       * cancelled under its token, like a replaced run: a member running it aborts it (reason
       * `cancelled`) and records the outcome `cancelled`; an assignee whose run has not started
       * records it without running; the slot is never moved or retried. Slots claimed after
       * this entry, and claims whose instant is after `atMs` (the leader claims ahead) with no
       * run started, are not touched. Leaves no state of its own: what it did is in the claims it marked, which the
       * snapshot carries and which are bounded with the claims.
       */
      readonly type: 'cancel-runs';
      readonly job: string;
      /** Only the runs of this slot (its instant truncated to the millisecond); absent: every run of the job in progress. */
      readonly slotMs?: number;
      /** The member that asked (history() shows it). */
      readonly member: NodeId;
      readonly atMs: number;
    }
  | {
      /** Takes the named lock if it is free or expired at `atMs`; the entry's index is its fencing token. */
      readonly type: 'lock';
      readonly name: string;
      readonly member: NodeId;
      readonly atMs: number;
      /** The lock expires then even if its holder never releases it (the holder died). */
      readonly untilMs: number;
    }
  | {
      /** Ends the holder's lock at `untilMs` (not before its at-least-for). Ignored unless `token` still holds it. */
      readonly type: 'unlock';
      readonly name: string;
      readonly token: number;
      readonly untilMs: number;
    }
  | {
      /** Slots up to `throughMs` that the catch-up policy drops: recorded as missed, never run. */
      readonly type: 'skip';
      readonly job: string;
      readonly throughMs: number;
      /** The job's high-water mark the planner counted from: the skip applies only if it still is. */
      readonly fromMs: number;
      /** The instants in (fromMs, throughMs]. */
      readonly count: number;
    }
  | {
      /**
       * A run's handler started on `member` under `token` (proposed as it starts, not awaited, so
       * no consensus round sits before the handler). Until the member's outcome, every member
       * knows the run is in progress.
       */
      readonly type: 'started';
      readonly job: string;
      readonly slotMs: number;
      readonly token: number;
      readonly member: NodeId;
      readonly atMs: number;
    }
  | {
      /**
       * A later slot of the job replaces this run (overlap 'replace'): the member running it
       * aborts it when it applies this, and the slot is never moved or retried. Ignored unless
       * `token` is still the claim's and the run has not ended.
       */
      readonly type: 'cancel';
      readonly job: string;
      readonly slotMs: number;
      readonly token: number;
      /** The slot that replaces it. */
      readonly bySlotMs: number;
      readonly atMs: number;
    }
  | {
      readonly type: 'outcome';
      readonly job: string;
      readonly slotMs: number;
      /** The fencing token of the claim the run held. */
      readonly token: number;
      readonly member: NodeId;
      /**
       * `aborted`: the run exceeded its timeout. `interrupted`: the cluster, not the job, ended
       * it (its member lost the leader); such a slot is always moved to another member.
       * `skipped`: the slot was not run because another run of the job was in progress (its
       * overlap policy), and `replaced`: a later slot's run replaced it; neither is retried.
       * `cancelled`: an operator cancelled it (`cancel-runs`, cluster version 3); not retried.
       */
      readonly outcome: RunOutcome;
      readonly atMs: number;
      readonly error?: string;
    };

/**
 * The longest error a run's outcome keeps (UTF-16 code units): a member reports at most so
 * much, and from CLAIM_BYTES_VERSION every member keeps at most so much of a longer one.
 */
export const MAX_RUN_ERROR_LENGTH = 500;

/** `error` cut to MAX_RUN_ERROR_LENGTH code units, never between the two of a surrogate pair. */
export function runError(error: string): string {
  if (error.length <= MAX_RUN_ERROR_LENGTH) return error;
  const last = error.charCodeAt(MAX_RUN_ERROR_LENGTH - 1);
  return error.slice(0, last >= 0xd800 && last <= 0xdbff ? MAX_RUN_ERROR_LENGTH - 1 : MAX_RUN_ERROR_LENGTH);
}

/** How a run of a slot ended, as recorded in the log. */
export type RunOutcome = 'succeeded' | 'failed' | 'aborted' | 'interrupted' | 'skipped' | 'replaced' | 'cancelled';

/**
 * Why a claimed slot was recorded as missed, and what its outcome's error says. `expired`
 * (`expire`): it passed the reassignment horizon with no run and no outcome. `member-removed`
 * (`forfeit`, cluster version 2): its assignee left the configuration before it reported one.
 */
export const MISSED_REASONS = {
  expired: 'expired: no member ran the slot before it passed the reassignment horizon',
  'member-removed': 'member-removed: the member was removed from the cluster before it reported an outcome for the slot',
} as const;

export type MissedReason = keyof typeof MISSED_REASONS;

/**
 * The error of a slot recorded as skipped because its job was paused when it fired: the
 * outcome is `skipped`, and history shows the reason in `error` (its first word, `paused`).
 */
export const PAUSED_REASON = 'paused: the job was paused when its slot fired';

/**
 * The error of a slot recorded as cancelled (`cancel-runs`): the outcome is `cancelled`, and
 * history shows the reason in `error` (its first word, `cancelled`), with who asked in the claim.
 */
export const CANCELLED_REASON = 'cancelled: an operator cancelled the run';

/** The commands of cluster version 3 (OPERATIONS_VERSION): an operator's actions on one job. */
export type OperationCommand = Extract<SchedulerCommand, { type: 'pause' | 'resume' | 'trigger' | 'cancel-runs' }>;

/** The reasons an `expire` may give: those of cronraft 0.1.0, which reads every `expire` the log holds. */
export type ExpireReason = 'expired';

/** The outcome an `expire` records: the slot was never run, and never will be. */
export const MISSED = 'missed';

/**
 * What a slot does when it fires while another run of its job is in progress: `skip` it
 * (recorded as skipped), `allow` both, `queue` it until the other ends, or `replace` the other.
 */
export type OverlapPolicy = 'skip' | 'allow' | 'queue' | 'replace';

/** The parts of a job's options that the leader plans by, as replicated in the log. */
export interface JobPolicy {
  readonly retries: number;
  readonly retryDelayMs: number;
  readonly catchUp: { readonly policy: 'latest' } | { readonly policy: 'none' } | { readonly policy: 'all'; readonly windowMs: number; readonly maxSlots: number };
  /** Absent in registrations written before overlap policies existed: those mean the default, 'skip'. */
  readonly overlap?: OverlapPolicy;
}

/** The default overlap policy: a slot whose job is still running elsewhere is skipped. */
export const DEFAULT_OVERLAP: OverlapPolicy = 'skip';

/**
 * A registration's policy as its job's record keeps it, its overlap filled in: the command's own
 * object when complete, so that the live state and the mirror share it (never changed).
 */
export function withOverlap(policy: JobPolicy): JobPolicy & { readonly overlap: OverlapPolicy } {
  return policy.overlap !== undefined ? (policy as JobPolicy & { readonly overlap: OverlapPolicy }) : { ...policy, overlap: DEFAULT_OVERLAP };
}

/** What a registration says of its job besides its name and member (a job's record holds it too). */
export interface RegistrationForm {
  readonly spec: JobSpec;
  readonly mode: AssignMode;
  readonly policy: JobPolicy;
}

/**
 * Whether two registrations' forms are equal field for field (a policy without an overlap has
 * the default one), which makes their texts (specKey, policyKey) equal: compared without
 * building the texts, which for every registration of every job cost more than the rest of
 * applying it.
 */
export function sameForm(a: RegistrationForm, b: RegistrationForm): boolean {
  if (!sameSpec(a.spec, b.spec) || a.mode !== b.mode) return false;
  const p = a.policy;
  const q = b.policy;
  if (p.retries !== q.retries || p.retryDelayMs !== q.retryDelayMs || (p.overlap ?? DEFAULT_OVERLAP) !== (q.overlap ?? DEFAULT_OVERLAP) || p.catchUp.policy !== q.catchUp.policy) return false;
  return p.catchUp.policy !== 'all' || (q.catchUp.policy === 'all' && p.catchUp.windowMs === q.catchUp.windowMs && p.catchUp.maxSlots === q.catchUp.maxSlots);
}

function sameSpec(a: JobSpec, b: JobSpec): boolean {
  if (a === b) return true;
  switch (a.kind) {
    case 'cron':
      return b.kind === 'cron' && a.expression === b.expression && a.tz === b.tz && (a.dst === b.dst || (a.dst?.gap === b.dst?.gap && a.dst?.overlap === b.dst?.overlap));
    case 'every':
      return b.kind === 'every' && a.everyMs === b.everyMs;
    case 'at':
      return b.kind === 'at' && a.atMs === b.atMs;
    case 'delay':
      return b.kind === 'delay' && a.delayMs === b.delayMs && a.initialDelayMs === b.initialDelayMs;
  }
}

export function policyKey(p: JobPolicy): string {
  const c = p.catchUp.policy === 'all' ? `all ${p.catchUp.windowMs} ${p.catchUp.maxSlots}` : p.catchUp.policy;
  // The default overlap is left out, so a registration that predates overlap policies (which
  // has none) and one that asks for the default compare equal.
  const overlap = p.overlap ?? DEFAULT_OVERLAP;
  return `retries ${p.retries} delay ${p.retryDelayMs} catch-up ${c}${overlap === DEFAULT_OVERLAP ? '' : ` overlap ${overlap}`}`;
}
