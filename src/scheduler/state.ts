import type { NodeId } from '../raft/types.js';
import { specKey, type JobSpec } from './spec.js';

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
      readonly count: number;
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
       */
      readonly outcome: 'succeeded' | 'failed' | 'aborted' | 'interrupted';
      readonly atMs: number;
      readonly error?: string;
    };

/** The parts of a job's options that the leader plans by, as replicated in the log. */
export interface JobPolicy {
  readonly retries: number;
  readonly retryDelayMs: number;
  readonly catchUp: { readonly policy: 'latest' } | { readonly policy: 'none' } | { readonly policy: 'all'; readonly windowMs: number; readonly maxSlots: number };
}

export function policyKey(p: JobPolicy): string {
  const c = p.catchUp.policy === 'all' ? `all ${p.catchUp.windowMs} ${p.catchUp.maxSlots}` : p.catchUp.policy;
  return `retries ${p.retries} delay ${p.retryDelayMs} catch-up ${c}`;
}

export interface JobRecord {
  readonly name: string;
  /** The spec of the first registration: it wins over later, different ones. */
  readonly spec: JobSpec;
  readonly mode: AssignMode;
  readonly policy: JobPolicy;
  readonly anchorMs: number;
  /** Members with a handler for the job. */
  readonly handlers: Set<NodeId>;
  /** Members that registered a different spec under this name (a rolling deploy), with it. */
  readonly conflicts: Map<NodeId, string>;
  /** The latest slot ever claimed or skipped: no slot at or before it can be claimed again. */
  highWaterMs: number;
  /** Slots dropped by the catch-up policy, in all. */
  missedSlots: number;
}

export interface ClaimRecord {
  readonly job: string;
  readonly slotMs: number;
  /** The claim's log index: strictly increasing across the cluster, handed to the handler. A reassignment gives a new one. */
  token: number;
  assignees: readonly NodeId[];
  /** 1 for the first claim; one more per reassignment. */
  attempt: number;
  /** Outcome per assignee, once reported, with the token it ran under. */
  readonly outcomes: Map<NodeId, { readonly outcome: string; readonly atMs: number; readonly token: number; readonly error?: string }>;
}

export interface LockRecord {
  readonly holder: NodeId;
  readonly token: number;
  untilMs: number;
}

export type ApplyResult =
  | { readonly ok: true; readonly claim?: ClaimRecord; readonly lock?: LockRecord }
  | { readonly ok: false; readonly reason: 'duplicate-slot' | 'unknown-job' | 'stale-token' | 'spec-conflict' | 'locked' };

export const SCHEDULER_DEFAULTS = {
  /** Claims kept for inspection and outcomes; older ones are dropped first. */
  maxClaimsKept: 10_000,
  /** Jobs the cluster accepts. */
  maxJobs: 10_000,
  /** Named locks kept (runExclusive); expired ones are forgotten to make room. */
  maxLocks: 10_000,
} as const;

/**
 * The scheduler's replicated state: jobs, their high-water marks and recent claims. `apply` is
 * pure and deterministic: every member applies the same commands in log order and reaches the
 * same state. A slot is claimed at most once, ever: a claim at or before the job's high-water
 * mark is refused, which survives leader changes and, since the mark is state, compaction.
 */
export class SchedulerState {
  readonly jobs = new Map<string, JobRecord>();
  /** Recent claims by `${job}@${slotMs}`, in claim order (a Map keeps insertion order). */
  readonly claims = new Map<string, ClaimRecord>();
  /** Named locks (runExclusive). An expired lock stays until taken again; bounded by maxLocks. */
  readonly locks = new Map<string, LockRecord>();
  /** Claims ever assigned to each member: the planner balances by it. */
  readonly assigned = new Map<NodeId, number>();
  readonly #maxClaimsKept: number;
  readonly #maxJobs: number;
  readonly #maxLocks: number;

  constructor(limits: { maxClaimsKept?: number; maxJobs?: number; maxLocks?: number } = {}) {
    this.#maxClaimsKept = limits.maxClaimsKept ?? SCHEDULER_DEFAULTS.maxClaimsKept;
    this.#maxJobs = limits.maxJobs ?? SCHEDULER_DEFAULTS.maxJobs;
    this.#maxLocks = limits.maxLocks ?? SCHEDULER_DEFAULTS.maxLocks;
  }

  /** Forgets one expired lock (the oldest in insertion order), to make room. */
  #dropExpiredLock(atMs: number): void {
    for (const [name, lock] of this.locks) {
      if (lock.untilMs <= atMs) {
        this.locks.delete(name);
        return;
      }
    }
  }

  apply(index: number, command: SchedulerCommand): ApplyResult {
    switch (command.type) {
      case 'register':
        return this.#register(command);
      case 'unregister': {
        const job = this.jobs.get(command.job);
        if (job === undefined) return { ok: false, reason: 'unknown-job' };
        job.handlers.delete(command.member);
        job.conflicts.delete(command.member);
        return { ok: true };
      }
      case 'claim':
        return this.#claim(index, command);
      case 'lock': {
        const held = this.locks.get(command.name);
        if (held !== undefined && held.untilMs > command.atMs) return { ok: false, reason: 'locked' };
        if (held === undefined && this.locks.size >= this.#maxLocks) this.#dropExpiredLock(command.atMs);
        if (held === undefined && this.locks.size >= this.#maxLocks) return { ok: false, reason: 'locked' };
        const lock: LockRecord = { holder: command.member, token: index, untilMs: command.untilMs };
        this.locks.set(command.name, lock);
        return { ok: true, lock };
      }
      case 'unlock': {
        const held = this.locks.get(command.name);
        if (held === undefined || held.token !== command.token) return { ok: false, reason: 'stale-token' };
        held.untilMs = Math.min(held.untilMs, command.untilMs);
        return { ok: true, lock: held };
      }
      case 'reassign': {
        const claim = this.claims.get(claimKey(command.job, command.slotMs));
        if (claim === undefined) return { ok: false, reason: 'unknown-job' };
        if (claim.token !== command.fromToken) return { ok: false, reason: 'stale-token' };
        claim.token = index;
        claim.assignees = [...command.assignees];
        claim.attempt += 1;
        // Outcomes of the previous attempt stay visible; the new attempt's replace them per member.
        for (const id of claim.assignees) this.assigned.set(id, (this.assigned.get(id) ?? 0) + 1);
        return { ok: true, claim };
      }
      case 'skip': {
        const job = this.jobs.get(command.job);
        if (job === undefined) return { ok: false, reason: 'unknown-job' };
        if (command.throughMs <= job.highWaterMs) return { ok: false, reason: 'duplicate-slot' };
        job.highWaterMs = command.throughMs;
        job.missedSlots += command.count;
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
        claim.outcomes.set(command.member, { outcome: command.outcome, atMs: command.atMs, token: command.token, ...(command.error === undefined ? {} : { error: command.error }) });
        return { ok: true, claim };
      }
    }
  }

  #register(command: Extract<SchedulerCommand, { type: 'register' }>): ApplyResult {
    const existing = this.jobs.get(command.job);
    if (existing === undefined) {
      if (this.jobs.size >= this.#maxJobs) return { ok: false, reason: 'unknown-job' };
      this.jobs.set(command.job, {
        name: command.job,
        spec: command.spec,
        mode: command.mode,
        policy: command.policy,
        anchorMs: command.atMs,
        handlers: new Set([command.member]),
        conflicts: new Map(),
        highWaterMs: command.atMs,
        missedSlots: 0,
      });
      return { ok: true };
    }
    // The first registration's spec stays; a member that registers another keeps no handler for
    // it (its handler expects other slots), and the conflict is visible in state().
    const theirs = `${specKey(command.spec)} (${command.mode}, ${policyKey(command.policy)})`;
    if (theirs !== `${specKey(existing.spec)} (${existing.mode}, ${policyKey(existing.policy)})`) {
      existing.handlers.delete(command.member);
      existing.conflicts.set(command.member, theirs);
      return { ok: false, reason: 'spec-conflict' };
    }
    existing.handlers.add(command.member);
    existing.conflicts.delete(command.member);
    return { ok: true };
  }

  #claim(index: number, command: Extract<SchedulerCommand, { type: 'claim' }>): ApplyResult {
    const job = this.jobs.get(command.job);
    if (job === undefined) return { ok: false, reason: 'unknown-job' };
    if (command.slotMs <= job.highWaterMs) return { ok: false, reason: 'duplicate-slot' };
    job.highWaterMs = command.slotMs;
    const claim: ClaimRecord = { job: command.job, slotMs: command.slotMs, token: index, assignees: [...command.assignees], attempt: 1, outcomes: new Map() };
    this.claims.set(claimKey(command.job, command.slotMs), claim);
    for (const id of claim.assignees) this.assigned.set(id, (this.assigned.get(id) ?? 0) + 1);
    while (this.claims.size > this.#maxClaimsKept) {
      const oldest = this.claims.keys().next().value as string;
      this.claims.delete(oldest);
    }
    return { ok: true, claim };
  }
}

export function claimKey(job: string, slotMs: number): string {
  return `${job}@${slotMs}`;
}
