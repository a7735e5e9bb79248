import type { NodeId } from '../raft/types.js';
import { ChangeLog } from './change-log.js';
import { specKey } from './spec.js';
import { cancellable, claimTime, expirable, initialHighWaterMs, moveStillDue } from './apply-rules.js';
import { AT_CATCH_UP_VERSION, CLAIM_BYTES_VERSION, FIRST_CLUSTER_VERSION, JOB_ROOM_VERSION, JOB_TAKEOVER_VERSION, RETRY_COUNT_VERSION, SNAPSHOT_SHARES_VERSION } from '../version/versions.js';
import { SNAPSHOT_SHARES } from '../snapshot-shares.js';
import { MISSED, MISSED_REASONS, policyKey, runError, sameForm, withOverlap, type SchedulerCommand } from './command.js';
import { HandlerSets, NO_HANDLERS } from './handler-sets.js';
import { conflictBytes, handlerListBytes, jobBytes } from './job-footprint.js';
import { takenOver } from './job-takeover.js';
import { countAssigned } from './assigned-counts.js';
import { KeptClaims } from './kept-claims.js';
import { KeptLocks } from './kept-locks.js';
import { claimKey, NO_CONFLICTS, type ApplyResult, type ClaimRecord, type JobRecord, type LockRecord, type SchedulerStateParts } from './records.js';

export const SCHEDULER_DEFAULTS = {
  /** Claims kept for inspection and outcomes; older ones are dropped first. */
  maxClaimsKept: 10_000,
  /**
   * Bytes the kept claims take in a snapshot (claim-footprint.ts), from CLAIM_BYTES_VERSION on:
   * past it, older ones are dropped first, as past maxClaimsKept. Claims of mode 'all' jobs on
   * many members, with long errors, reach it before the count; most claims never do.
   */
  maxClaimBytes: SNAPSHOT_SHARES.claims,
  /** Jobs the cluster accepts. */
  maxJobs: 10_000,
  /**
   * Bytes the jobs take in a snapshot, with their handlers and conflicts (job-footprint.ts), from
   * SNAPSHOT_SHARES_VERSION on: a new job, or a member's handler for one, past it is refused as
   * past maxJobs. Long names and many members reach it before the count.
   */
  maxJobBytes: SNAPSHOT_SHARES.jobs,
  /** Named locks kept (runExclusive); expired ones are forgotten to make room. */
  maxLocks: 10_000,
  /** Bytes the locks take in a snapshot (job-footprint.ts), from SNAPSHOT_SHARES_VERSION on: bounded as maxLocks bounds their number. */
  maxLockBytes: SNAPSHOT_SHARES.locks,
} as const;


/** The bounds a SchedulerState keeps to (SCHEDULER_DEFAULTS): by number, and by what the records take in a snapshot. */
export interface SchedulerLimits {
  readonly maxClaimsKept: number;
  readonly maxClaimBytes: number;
  readonly maxJobs: number;
  readonly maxJobBytes: number;
  readonly maxLocks: number;
  readonly maxLockBytes: number;
}

/**
 * The scheduler's replicated state: jobs, their high-water marks and recent claims. `apply` is
 * pure and deterministic: every member applies the same commands in log order and reaches the
 * same state. A slot is claimed at most once, ever: a claim at or before the job's high-water
 * mark is refused, which survives leader changes and, since the mark is state, compaction.
 */
export class SchedulerState {
  readonly jobs = new Map<string, JobRecord>();
  readonly #kept = new KeptClaims(this.jobs);
  /** Recent claims by `${job}@${slotMs}`, in claim order (a Map keeps insertion order). */
  readonly claims: ReadonlyMap<string, ClaimRecord> = this.#kept.byKey;
  readonly #locks: KeptLocks;
  /** Named locks (runExclusive), by name: see KeptLocks. */
  readonly locks: Map<string, LockRecord>;
  /** Claims ever assigned to each member: the planner balances by it. */
  readonly assigned = new Map<NodeId, number>();
  /**
   * Per job, the number of the change that last touched it (its record, its claims or their
   * runs), counted over all changes (commands applied and restores): a view derived from a job
   * (`state().jobs`) is built again only once it moved. Not part of the contents (a snapshot
   * leaves it out): a restore starts it over, with new records, of which views are kept apart.
   */
  readonly #changed = new Map<string, number>();
  #changes = 0;
  /**
   * Jobs no member has a handler for (each unregistered it): at the cap of jobs, the first of
   * them in `jobs` with no claim open or in progress makes room for a new one (#makeRoom).
   * Derived from the jobs, and counted again by a restore.
   */
  #orphans = 0;
  /** Jobs forgotten to make room (#makeRoom), or taken over (#takeOver), so far: a reader of the list of jobs builds it anew when it moved. */
  #forgotten = 0;
  /** Restores so far (restoreFrom): a reader holding records of before one holds none of now's. */
  #restores = 0;
  /** The jobs changed lately, with their counts (see jobsChangedSince). */
  readonly #changeLog = new ChangeLog();
  /** The jobs' handler sets, shared (handler-sets.ts). */
  readonly #handlerSets = new HandlerSets();
  readonly #maxClaimsKept: number;
  readonly #maxClaimBytes: number;
  readonly #maxJobs: number;
  readonly #maxJobBytes: number;
  readonly #maxLocks: number;
  readonly #maxLockBytes: number;
  /** What the jobs take in a snapshot, at most (jobBytes, summed as they change): maxJobBytes bounds it. */
  #jobBytes = 0;
  /** Whether the changes of jobs are kept for readers (#changed, #changeLog); see the constructor. */
  readonly #tracksChanges: boolean;

  /**
   * `tracksChanges` false: a state no reader of jobs' changes reads (a snapshot's mirror, see
   * SchedulerMirror), which then keeps none of them; changeOf and jobsChangedSince then say that
   * every job may have changed.
   */
  constructor(limits: Partial<SchedulerLimits> = {}, options: { readonly tracksChanges?: boolean } = {}) {
    this.#maxClaimsKept = limits.maxClaimsKept ?? SCHEDULER_DEFAULTS.maxClaimsKept;
    this.#maxClaimBytes = limits.maxClaimBytes ?? SCHEDULER_DEFAULTS.maxClaimBytes;
    this.#maxJobs = limits.maxJobs ?? SCHEDULER_DEFAULTS.maxJobs;
    this.#maxJobBytes = limits.maxJobBytes ?? SCHEDULER_DEFAULTS.maxJobBytes;
    this.#maxLocks = limits.maxLocks ?? SCHEDULER_DEFAULTS.maxLocks;
    this.#maxLockBytes = limits.maxLockBytes ?? SCHEDULER_DEFAULTS.maxLockBytes;
    this.#locks = new KeptLocks(this.#maxLocks, this.#maxLockBytes);
    this.locks = this.#locks.byName;
    this.#tracksChanges = options.tracksChanges ?? true;
  }

  /** The bounds this state keeps to; a snapshot restored into it must fit them. */
  get limits(): SchedulerLimits {
    return { maxClaimsKept: this.#maxClaimsKept, maxClaimBytes: this.#maxClaimBytes, maxJobs: this.#maxJobs, maxJobBytes: this.#maxJobBytes, maxLocks: this.#maxLocks, maxLockBytes: this.#maxLockBytes };
  }

  /** What the jobs take in a snapshot, at most (job-footprint.ts), which maxJobBytes bounds. */
  get jobBytes(): number {
    return this.#jobBytes;
  }

  /** What the locks take in a snapshot, at most (job-footprint.ts), which maxLockBytes bounds. */
  get lockBytes(): number {
    return this.#locks.bytes;
  }

  /** What the kept claims take in a snapshot, at most (claim-footprint.ts), which maxClaimBytes bounds. */
  get claimBytes(): number {
    return this.#kept.bytes;
  }

  /**
   * Replaces the whole contents of this state with `parts` (a decoded snapshot), in place: the
   * runtime holds this instance. The derived indexes are rebuilt as applying the claims would
   * (KeptClaims.restore), then put in `parts.indexOrder`. Nothing is forgotten: a snapshot taken
   * before the claims were bounded in bytes is kept whole, as its leader keeps it. Takes the
   * records as they are (not copied; a job's handlers become an equal set the jobs share, see
   * HandlerSets) and validates nothing: decode and check a snapshot fully before calling this,
   * so that a bad one leaves the state as it was (restoreSchedulerSnapshot does).
   */
  restoreFrom(parts: SchedulerStateParts): void {
    this.jobs.clear();
    this.#handlerSets.clear();
    this.#orphans = 0;
    this.#jobBytes = 0;
    for (const job of parts.jobs) {
      job.handlers = this.#handlerSets.of(job.handlers);
      if (job.handlers.size === 0) this.#orphans++;
      this.jobs.set(job.name, job);
      this.#jobBytes += jobBytes(job);
    }
    this.#locks.restore(parts.locks);
    this.assigned.clear();
    for (const [member, count] of parts.assigned) this.assigned.set(member, count);
    this.#changes++;
    this.#restores++;
    this.#changed.clear();
    this.#changeLog.clear(this.#changes);
    this.#kept.restore(parts.claims, parts.indexOrder);
  }

  /** When `job` last changed, as a count of changes (see #changed): equal counts, the same job. */
  changeOf(job: string): number {
    return this.#tracksChanges ? (this.#changed.get(job) ?? 0) : this.#changes;
  }

  /**
   * The names of the jobs changed or registered after change `count` (`changes` then), in the
   * order of their changes, a job as often as it changed; or null when that is no longer known
   * (long ago, or before a restore): every job may have changed.
   */
  jobsChangedSince(count: number): readonly string[] | null {
    return this.#tracksChanges ? this.#changeLog.since(count) : null;
  }

  /** Jobs forgotten so far to make room for new ones (see #makeRoom), or whose record a take-over replaced (#takeOver); not part of the contents. */
  get jobsForgotten(): number {
    return this.#forgotten;
  }

  /** Restores so far (see #restores); not part of the contents. */
  get restores(): number {
    return this.#restores;
  }

  /** Changes so far, of any kind (see #changed): equal counts, the same state. */
  get changes(): number {
    return this.#changes;
  }

  /** The job's kept claims with a run in progress (see `runsInProgress` for the runs). */
  claimsInProgress(job: string): ReadonlySet<ClaimRecord> {
    return this.#kept.inProgressOf(job);
  }

  /**
   * Applies `command`, the entry at `index`, under `version`, the cluster version in force at
   * that index (the same there on every member), which decides whether a new job at the cap of
   * jobs may take the place of one no member has a handler for (#makeRoom, JOB_ROOM_VERSION) and
   * where a new `{ at }` job's high-water mark starts (initialHighWaterMs, AT_CATCH_UP_VERSION).
   */
  apply(index: number, command: SchedulerCommand, version: number = FIRST_CLUSTER_VERSION): ApplyResult {
    const change = ++this.#changes;
    // A job's first registration needs no count of its own (nothing was derived from it yet),
    // and a command naming no job changes none: the counts stay bounded by the jobs.
    // The command's job, looked up once for the count and for the command.
    const job = 'job' in command ? this.jobs.get(command.job) : undefined;
    if (job !== undefined) this.#touch(job.name, change);
    const result = this.#applyCommand(index, command, job, version);
    this.#trim(version, result);
    return result;
  }

  /** Applies `command` (see apply), whose job's record is `job` if it names one that is kept. */
  #applyCommand(index: number, command: SchedulerCommand, job: JobRecord | undefined, version: number): ApplyResult {
    switch (command.type) {
      case 'register':
        return this.#register(command, job, version);
      case 'unregister': {
        if (job === undefined) return { ok: false, reason: 'unknown-job' };
        this.#setHandlers(job, this.#handlerSets.of([...job.handlers].filter((id) => id !== command.member)));
        this.#withoutConflict(job, command.member);
        return { ok: true };
      }
      case 'claim':
        return this.#claim(index, command, job, version);
      case 'pause':
      case 'resume': {
        if (job === undefined) return { ok: false, reason: 'unknown-job' };
        job.paused = command.type === 'pause';
        return { ok: true };
      }
      case 'trigger': {
        if (job === undefined) return { ok: false, reason: 'unknown-job' };
        // The proposer saw no scheduled instant in (fromMs, slotMs]; a mark at or past fromMs
        // leaves none in (mark, slotMs] either. A mark before it is a state the proposer never saw.
        if (command.fromMs > job.highWaterMs) return { ok: false, reason: 'stale-token' };
        if (this.claims.has(claimKey(command.job, command.slotMs))) return { ok: false, reason: 'duplicate-slot' };
        // Past the mark, the slot moves it: a scheduled claim, always after the mark, can never
        // take the triggered slot's key. At or before it, no scheduled claim comes there again.
        if (command.slotMs > job.highWaterMs) job.highWaterMs = command.slotMs;
        return { ok: true, claim: this.#newClaim(index, command.job, command.slotMs, command.assignees, version, true) };
      }
      case 'cancel-runs':
        if (job === undefined) return { ok: false, reason: 'unknown-job' };
        return { ok: true, cancelled: this.#cancelRuns(command) };
      case 'lock':
        return this.#locks.lock(index, command, version);
      case 'unlock':
        return this.#locks.unlock(command);
      case 'reassign': {
        const claim = this.claims.get(claimKey(command.job, command.slotMs));
        if (claim === undefined) return { ok: false, reason: 'unknown-job' };
        if (claim.token !== command.fromToken) return { ok: false, reason: 'stale-token' };
        // A replaced run's slot is over: a leader that planned the move before the replacement
        // was applied must not run it again.
        if (claim.cancelled?.token === claim.token) return { ok: false, reason: 'ended' };
        // The leader plans from the state it has applied, which lags its log: an outcome
        // committed meanwhile may have ended the slot (a success moved would run again) or
        // made it a retry, which waits for its back-off and counts against the job's retries.
        if (!moveStillDue(claim, command.reason)) return { ok: false, reason: 'ended' };
        claim.token = index;
        claim.assignees = [...command.assignees];
        claim.attempt += 1;
        if (command.reason === 'retry' || version < RETRY_COUNT_VERSION) claim.retried += 1;
        const movedAtMs = claimTime(command.atMs, claim.slotMs, version);
        if (movedAtMs !== undefined && movedAtMs > (claim.claimedAtMs ?? claim.slotMs)) claim.claimedAtMs = movedAtMs;
        // Outcomes of the previous attempt stay visible; the new attempt's replace them per member.
        countAssigned(this.assigned, claim.assignees, version);
        // Runs started under the old token no longer hold the slot.
        this.#kept.index(claim);
        return { ok: true, claim };
      }
      case 'expire': {
        const claim = this.claims.get(claimKey(command.job, command.slotMs));
        if (claim === undefined) return { ok: false, reason: 'unknown-job' };
        if (claim.token !== command.fromToken) return { ok: false, reason: 'stale-token' };
        const assignee = claim.assignees[0];
        if (assignee === undefined || this.jobs.get(claim.job)?.mode !== 'one' || !expirable(claim, version)) return { ok: false, reason: 'ended' };
        claim.token = index;
        claim.outcomes.set(assignee, { outcome: MISSED, atMs: command.atMs, token: index, error: MISSED_REASONS[command.reason] });
        this.#kept.index(claim);
        return { ok: true, claim };
      }
      case 'forfeit': {
        const claim = this.claims.get(claimKey(command.job, command.slotMs));
        if (claim === undefined) return { ok: false, reason: 'unknown-job' };
        if (claim.token !== command.token) return { ok: false, reason: 'stale-token' };
        if (!claim.assignees.includes(command.member)) return { ok: false, reason: 'unknown-job' };
        if (claim.outcomes.get(command.member)?.token === claim.token) return { ok: false, reason: 'ended' };
        // A mode 'one' slot moves to another member instead, unless a later slot replaced its run.
        if (this.jobs.get(claim.job)?.mode !== 'all' && claim.cancelled?.token !== claim.token) return { ok: false, reason: 'unknown-job' };
        claim.outcomes.set(command.member, { outcome: MISSED, atMs: command.atMs, token: claim.token, error: MISSED_REASONS['member-removed'] });
        this.#kept.index(claim);
        return { ok: true, claim };
      }
      case 'started': {
        const claim = this.claims.get(claimKey(command.job, command.slotMs));
        if (claim === undefined) return { ok: false, reason: 'unknown-job' };
        if (claim.token !== command.token) return { ok: false, reason: 'stale-token' };
        if (claim.starts.get(command.member)?.token === command.token) return { ok: false, reason: 'duplicate-slot' };
        // A start applied after the member's outcome (a retried report) must not make the run
        // look in progress again.
        if (claim.outcomes.get(command.member)?.token === command.token) return { ok: false, reason: 'ended' };
        claim.starts.set(command.member, { atMs: command.atMs, token: command.token });
        this.#kept.index(claim);
        return { ok: true, claim };
      }
      case 'cancel': {
        const claim = this.claims.get(claimKey(command.job, command.slotMs));
        if (claim === undefined) return { ok: false, reason: 'unknown-job' };
        if (claim.token !== command.token) return { ok: false, reason: 'stale-token' };
        if (claim.cancelled?.token === command.token) return { ok: false, reason: 'duplicate-slot' };
        if (claim.assignees.every((id) => claim.outcomes.get(id)?.token === command.token)) return { ok: false, reason: 'ended' };
        claim.cancelled = { token: command.token, bySlotMs: command.bySlotMs, atMs: command.atMs };
        this.#kept.index(claim);
        return { ok: true, claim };
      }
      case 'skip': {
        if (job === undefined) return { ok: false, reason: 'unknown-job' };
        if (command.throughMs <= job.highWaterMs) return { ok: false, reason: 'duplicate-slot' };
        // A claim applied between the plan and this entry moved the mark: the count would include
        // a claimed slot. Refused; the next plan counts again. (Applying never computes instants:
        // members with other time-zone data would count differently and their states diverge.)
        if (command.fromMs !== job.highWaterMs) return { ok: false, reason: 'stale-token' };
        job.missedSlots += command.count;
        job.highWaterMs = command.throughMs;
        return { ok: true };
      }
      case 'outcome': {
        const claim = this.claims.get(claimKey(command.job, command.slotMs));
        if (claim === undefined) return { ok: false, reason: 'unknown-job' };
        // An outcome reported under an older claim of the slot (a run that lost its claim) is refused.
        if (claim.token !== command.token) return { ok: false, reason: 'stale-token' };
        // The first outcome a member reports for a token stands: a retried or repeated report
        // (after a lost acknowledgement, or a replay) cannot turn a success into anything else.
        if (claim.outcomes.get(command.member)?.token === command.token) return { ok: false, reason: 'duplicate-slot' };
        // From CLAIM_BYTES_VERSION, an error is kept within MAX_RUN_ERROR_LENGTH, as every member reports it.
        const error = command.error === undefined || version < CLAIM_BYTES_VERSION ? command.error : runError(command.error);
        claim.outcomes.set(command.member, { outcome: command.outcome, atMs: command.atMs, token: command.token, ...(error === undefined ? {} : { error }) });
        if (command.outcome === 'skipped' && job !== undefined) job.skippedRuns += 1;
        this.#kept.index(claim);
        return { ok: true, claim };
      }
    }
  }

  /**
   * The cluster version in force became `version` at an entry (every member applies it at the
   * same index, so this runs at the same point of the log everywhere): what the version changes
   * in the state already kept happens here. At AT_CATCH_UP_VERSION, an `{ at }` job registered
   * before it whose instant had passed when its registration applied (so its mark stands at the
   * registration, with nothing ever claimed or counted missed) has that slot due, as a job
   * registered under the version would (initialHighWaterMs): on a new cluster, whose version
   * rises a step at a time as it starts, the jobs an app schedules at start apply before it.
   */
  versionRaised(version: number): void {
    const change = ++this.#changes;
    // The claims kept under an earlier version may take more than maxClaimBytes: they are
    // forgotten down to it as the version that bounds them comes into force.
    this.#trim(version);
    if (version !== AT_CATCH_UP_VERSION) return;
    for (const job of this.jobs.values()) {
      // Nothing claimed or counted since the registration: the mark starts where it would now.
      if (job.highWaterMs !== job.anchorMs) continue;
      const mark = initialHighWaterMs(job.spec, job.anchorMs, version);
      if (mark === job.highWaterMs) continue;
      job.highWaterMs = mark;
      this.#touch(job.name, change);
    }
  }

  /** Counts the job as changed by the change numbered `change` (see #changed), when changes are tracked. */
  #touch(name: string, change: number): void {
    if (!this.#tracksChanges) return;
    this.#changed.set(name, change);
    this.#changeLog.record(name, change);
  }

  /** `existing`: the job's record, if it has one; `version`: the cluster version in force (see apply). */
  #register(command: Extract<SchedulerCommand, { type: 'register' }>, existing: JobRecord | undefined, version: number): ApplyResult {
    const bounded = version >= SNAPSHOT_SHARES_VERSION;
    if (existing === undefined) {
      if (this.jobs.size >= this.#maxJobs && !(version >= JOB_ROOM_VERSION && this.#makeRoom())) return { ok: false, reason: 'too-many-jobs' };
      const job: JobRecord = {
        name: command.job,
        spec: command.spec,
        mode: command.mode,
        policy: withOverlap(command.policy),
        anchorMs: command.atMs,
        handlers: this.#handlerSets.with(NO_HANDLERS, command.member),
        conflicts: NO_CONFLICTS,
        highWaterMs: initialHighWaterMs(command.spec, command.atMs, version),
        missedSlots: 0,
        skippedRuns: 0,
        paused: false,
      };
      const bytes = jobBytes(job);
      // Jobs no member handles make room, as at the count.
      if (bounded && !this.#roomForJobBytes(bytes)) return { ok: false, reason: 'too-many-jobs' };
      this.jobs.set(command.job, job);
      this.#jobBytes += bytes;
      // New, it comes last in `jobs`: a reader of the changes adds it there.
      if (this.#tracksChanges) this.#changeLog.record(command.job, this.#changes);
      return { ok: true };
    }
    // The first registration's spec stays; a member that registers another keeps no handler for
    // it (its handler expects other slots), and the conflict is visible in state(). The texts
    // are compared only when the fields differ (equal fields make equal texts): building them
    // for every member's registration of every job cost more than the rest of applying it.
    const theirs = sameForm(existing, command) ? null : `${specKey(command.spec)} (${command.mode}, ${policyKey(command.policy)})`;
    if (theirs !== null && theirs !== `${specKey(existing.spec)} (${existing.mode}, ${policyKey(existing.policy)})`) {
      const others = [...existing.handlers].filter((id) => id !== command.member);
      // No other member has a handler for the job (its last one changed its own): it takes it
      // over, but for its mode, which its kept claims are indexed by (KeptClaims.open).
      if (version >= JOB_TAKEOVER_VERSION && others.length === 0 && command.mode === existing.mode) return this.#takeOver(existing, command, theirs, version);
      this.#setHandlers(existing, this.#handlerSets.of(others));
      // The conflict is shown in state() while there is room for it (a member's earlier one keeps
      // its place, replaced); the refusal stands either way.
      const previous = existing.conflicts.get(command.member);
      const bytes = conflictBytes(command.member, theirs) - (previous === undefined ? 0 : conflictBytes(command.member, previous));
      if (!bounded || this.#jobBytes + bytes <= this.#maxJobBytes) {
        existing.conflicts = new Map(existing.conflicts).set(command.member, theirs);
        this.#jobBytes += bytes;
      } else this.#withoutConflict(existing, command.member);
      return { ok: false, reason: 'spec-conflict' };
    }
    this.#withoutConflict(existing, command.member);
    if (existing.handlers.has(command.member)) return { ok: true };
    const handlers = this.#handlerSets.with(existing.handlers, command.member);
    // A member's handler for a job past the share is refused as a new job is, once jobs no
    // member handles (but this one) made what room they could: the job runs on the members
    // that have one, if any.
    const grows = handlerListBytes(handlers) - handlerListBytes(existing.handlers);
    if (bounded && !this.#roomForJobBytes(grows, existing.name)) return { ok: false, reason: 'too-many-jobs' };
    this.#setHandlers(existing, handlers);
    return { ok: true };
  }

  /** A registration of another form takes over a job no member has a handler for (job-takeover.ts). */
  #takeOver(existing: JobRecord, command: Extract<SchedulerCommand, { type: 'register' }>, form: string, version: number): ApplyResult {
    const job = takenOver(existing, command, form, version, (members) => this.#handlerSets.of(members));
    const grows = jobBytes(job) - jobBytes(existing);
    if (!this.#roomForJobBytes(grows, existing.name)) {
      // Refused for room, the member is no handler of the old form either, as for a conflict.
      this.#setHandlers(existing, NO_HANDLERS);
      return { ok: false, reason: 'too-many-jobs' };
    }
    // Another record, at the end of `jobs` as a new job: a reader of the list builds it anew.
    this.jobs.delete(job.name);
    this.jobs.set(job.name, job);
    this.#forgotten++;
    if (this.#tracksChanges) this.#changeLog.record(job.name, this.#changes);
    this.#jobBytes += grows;
    // It has the registering member's handler now.
    if (existing.handlers.size === 0) this.#orphans--;
    return { ok: true };
  }

  /**
   * Whether `bytes` more fit the jobs' share (maxJobBytes), once jobs no member handles (but
   * `spare`) made what room they could (#makeRoom).
   */
  #roomForJobBytes(bytes: number, spare?: string): boolean {
    while (this.#jobBytes + bytes > this.#maxJobBytes && this.#makeRoom(spare));
    return this.#jobBytes + bytes <= this.#maxJobBytes;
  }

  #setHandlers(job: JobRecord, handlers: ReadonlySet<NodeId>): void {
    this.#orphans += (handlers.size === 0 ? 1 : 0) - (job.handlers.size === 0 ? 1 : 0);
    this.#jobBytes += handlerListBytes(handlers) - handlerListBytes(job.handlers);
    job.handlers = handlers;
  }

  /** Takes `member`'s conflict off the job, if it has one (see JobRecord.conflicts). */
  #withoutConflict(job: JobRecord, member: NodeId): void {
    const theirs = job.conflicts.get(member);
    if (theirs === undefined) return;
    const rest = new Map(job.conflicts);
    rest.delete(member);
    job.conflicts = rest.size === 0 ? NO_CONFLICTS : rest;
    this.#jobBytes -= conflictBytes(member, theirs);
  }

  /**
   * Forgets the first job in `jobs` but `spare` that no member has a handler for and that has no
   * claim open or in progress, to make room for a new job at the cap (or, past maxJobBytes, for
   * a new job or a handler of `spare`); returns whether it did. The choice
   * follows from the state alone (a snapshot keeps the order of `jobs`, and every kept claim has
   * its job), so every member forgets the same job. Its kept claims go with it: a claim without
   * its job could not be read back from a snapshot, would be indexed by another job's mode after
   * a restore, and would show in the history of a new job of the same name. Registered again
   * later, it is a new job, anchored then. Looks at every job and kept claim only while one
   * without a handler exists: at the cap with none, a registration is refused at once.
   */
  #makeRoom(spare?: string): boolean {
    if (this.#orphans === 0) return false;
    const busy = this.#kept.busyJobs();
    for (const [name, job] of this.jobs) {
      if (job.handlers.size !== 0 || busy.has(name) || name === spare) continue;
      this.jobs.delete(name);
      this.#jobBytes -= jobBytes(job);
      this.#kept.forgetJob(name);
      this.#orphans--;
      this.#forgotten++;
      if (this.#tracksChanges) {
        this.#changed.delete(name);
        this.#changeLog.record(name, this.#changes);
      }
      return true;
    }
    return false;
  }

  /**
   * Marks cancelled, under their tokens, the job's claims that `command` reaches (see the
   * command's comment), in claim order, and returns them. Looks at every kept claim (bounded by
   * maxClaimsKept; an operator's action is rare). A slot named matches to the millisecond, as
   * history shows it: a triggered slot's instant, the cluster's time, may have a fraction.
   */
  #cancelRuns(command: Extract<SchedulerCommand, { type: 'cancel-runs' }>): ClaimRecord[] {
    const slotMs = command.slotMs === undefined ? undefined : Math.trunc(command.slotMs);
    const cancelled: ClaimRecord[] = [];
    for (const claim of this.claims.values()) {
      if (claim.job !== command.job || (slotMs !== undefined && Math.trunc(claim.slotMs) !== slotMs) || !cancellable(claim, command.atMs)) continue;
      claim.cancelled = { token: claim.token, atMs: command.atMs, byMember: command.member };
      this.#kept.index(claim);
      cancelled.push(claim);
    }
    return cancelled;
  }

  /** `job`: the claim's job's record, if it has one; `version`: the cluster version in force (see apply). */
  #claim(index: number, command: Extract<SchedulerCommand, { type: 'claim' }>, job: JobRecord | undefined, version: number): ApplyResult {
    if (job === undefined) return { ok: false, reason: 'unknown-job' };
    if (command.slotMs <= job.highWaterMs) return { ok: false, reason: 'duplicate-slot' };
    if (command.fromMs !== undefined && command.fromMs !== job.highWaterMs) return { ok: false, reason: 'stale-token' };
    job.highWaterMs = command.slotMs;
    const claimedAtMs = claimTime(command.atMs, command.slotMs, version);
    return { ok: true, claim: this.#newClaim(index, command.job, command.slotMs, command.assignees, version, false, claimedAtMs) };
  }

  /** Keeps a new claim of the slot under the entry's index and counts its assignments (apply then forgets old claims past the bounds). */
  #newClaim(index: number, job: string, slotMs: number, assignees: readonly NodeId[], version: number, trigger: boolean, claimedAtMs?: number): ClaimRecord {
    const claim: ClaimRecord = {
      job,
      slotMs,
      token: index,
      assignees: [...assignees],
      attempt: 1,
      retried: 0,
      outcomes: new Map(),
      starts: new Map(),
      cancelled: null,
      ...(trigger ? { trigger: true } : {}),
      ...(claimedAtMs === undefined ? {} : { claimedAtMs }),
    };
    this.#kept.add(claim);
    countAssigned(this.assigned, claim.assignees, version);
    return claim;
  }

  /**
   * Claims (mode 'one') whose story may not be over: no success, skip or replacement under
   * their current token. The leader looks for claims to move or retry among these only, on
   * every plan. Bounded by maxClaimsKept, like the claims.
   */
  openClaims(): ReadonlySet<ClaimRecord> {
    return this.#kept.open;
  }

  /**
   * Forgets the oldest kept claims past maxClaimsKept and, under `version` from
   * CLAIM_BYTES_VERSION on (every member alike), past maxClaimBytes (KeptClaims.trim), sparing
   * those the command's `result` hands back: after every command, since a new claim adds to both
   * and a start, an outcome or a move to the bytes. Each forgotten claim changes its job.
   */
  #trim(version: number, result?: ApplyResult): void {
    const bounded = version >= CLAIM_BYTES_VERSION;
    // From the same version, the claims the command hands back stay (an assignee arms the claim
    // it was given, an operator is told the runs cancelled): before it, a member of an earlier
    // release could forget one, as every member then must.
    const handed = bounded && result?.ok === true ? (result.cancelled ?? (result.claim === undefined ? undefined : [result.claim])) : undefined;
    const spared = handed === undefined || handed.length === 0 ? undefined : new Set(handed);
    const forgotten = this.#kept.trim(this.#maxClaimsKept, bounded ? this.#maxClaimBytes : undefined, spared);
    if (!this.#tracksChanges) return;
    for (const claim of forgotten) {
      this.#changed.set(claim.job, this.#changes);
      this.#changeLog.record(claim.job, this.#changes);
    }
  }
}


