import type { NodeId } from '../src/raft/types.js';
import { MAX_INTERRUPTED_ATTEMPTS } from '../src/scheduler/planner.js';
import { instantsBetween, type JobSpec } from '../src/scheduler/spec.js';
import { claimKey, type ApplyResult } from '../src/scheduler/records.js';
import { MISSED, sameForm, type AssignMode, type JobPolicy, type SchedulerCommand } from '../src/scheduler/command.js';
import { AT_CATCH_UP_VERSION, FIRST_CLUSTER_VERSION, RETRY_COUNT_VERSION } from '../src/version/versions.js';
import { SIM_EPOCH_MS } from './scheduler.js';
import type { Report } from './violations.js';

/** A slot as the committed log tells it, with what the checkers saw run. */
export interface SlotRecord {
  readonly job: string;
  readonly slotMs: number;
  /** The current claim's token, and every earlier one with when (true ms) it was superseded. */
  token: number;
  assignees: readonly NodeId[];
  attempt: number;
  /**
   * The moves counted against the job's retries: those that retry a failed run from
   * RETRY_COUNT_VERSION on, every move before it.
   */
  retried: number;
  /** Committed outcomes by `${member} ${token}`, with when they were first applied (true ms). */
  readonly outcomes: Map<string, string>;
  readonly outcomeAt: Map<string, number>;
  /** True time the first run of the slot started, whatever its token. */
  firstStartT: number | null;
  /** Runs of the slot started, under any token. */
  runs: number;
  /** Every `${member} ${token}` the log ever gave this slot: a run must hold one of them. */
  readonly grants: Set<string>;
  /** Each member the log ever gave this slot, with the true time it was first seen given it. */
  readonly givenAt: Map<NodeId, number>;
  /** The token whose run a later slot replaced (overlap 'replace') or an operator cancelled: the slot's story is over. */
  cancelledToken: number | null;
}

export interface JobInfo {
  readonly spec: JobSpec;
  readonly mode: AssignMode;
  /** As the first registration replicated it. */
  readonly policy: JobPolicy;
  readonly anchorMs: number;
  /** Every instant after this is claimed or counted missed once it is at or before the high-water mark. */
  countFromMs: number;
  claims: number;
  missed: number;
  highWaterMs: number;
}

/** A run in progress, as the members report them. */
interface RunningRun {
  readonly member: NodeId;
  readonly incarnation: number;
  readonly token: number;
}

/**
 * The scheduler's properties, checked from what members apply and run:
 * - a slot is claimed at most once, ever;
 * - a run holds a fencing token the log gave that member for that slot (tokens are log
 *   indexes, so each move of a slot gives a greater one); no two runs hold the same claim at
 *   the same time; a run never starts for a claim whose outcome there was committed before
 *   its process started;
 * - every instant up to a job's high-water mark is either claimed or counted missed by the
 *   catch-up policy, and no claim is for an instant the spec does not have;
 * - after faults heal, every slot due runs within a lateness bound and gets an outcome.
 * The committed log is observed once per index (the Raft checker already shows that every
 * member applies the same entry at each index).
 */
export class SchedulerChecker {
  readonly #report: Report;
  readonly jobs = new Map<string, JobInfo>();
  readonly slots = new Map<string, SlotRecord>();
  readonly #running = new Map<string, RunningRun[]>();
  #lastIndex = 0;
  /** Commands of the entry at #lastIndex sighted so far (more than one in a batch). */
  #seenAtLast = 0;
  /** Per member, the index it applied last and that command's place in its entry (0: the first). */
  readonly #position = new Map<NodeId, { readonly index: number; readonly position: number }>();
  /** The cluster version of the last command seen. */
  #version = FIRST_CLUSTER_VERSION;
  /** Runs started under a claim the log had already moved to another token (fencing covers them). */
  staleStarts = 0;
  /** Runs started again after a crash whose previous run's outcome was still in flight (at least once). */
  reRuns = 0;
  /** The jobs a registration of another form took over (a rolling deploy's, job-takeover.ts), each once. */
  readonly takenOver = new Set<string>();
  readonly #startedAt = new Map<NodeId, number>();

  constructor(report: Report) {
    this.#report = report;
  }

  /**
   * `member` applied `command` at `index`, under cluster version `version`. Returns whether this
   * was the first sighting of the command (the timeline records only those): the first member to
   * apply an index has applied every earlier one, so first sightings come in log order. An entry
   * of a batch holds several commands (registrations, command-batch.ts), which its member applies
   * one after the other under the index: each is a sighting of its own.
   */
  onApplied(t: number, member: NodeId, index: number, command: SchedulerCommand, result: ApplyResult, version: number): boolean {
    const prior = this.#position.get(member);
    const position = prior?.index === index ? prior.position + 1 : 0;
    this.#position.set(member, { index, position });
    if (index < this.#lastIndex || (index === this.#lastIndex && position < this.#seenAtLast)) return false;
    this.#seenAtLast = index === this.#lastIndex ? this.#seenAtLast + 1 : 1;
    this.#lastIndex = index;
    // Once AT_CATCH_UP_VERSION is in force, an `{ at }` job registered before it whose instant
    // had passed (nothing ever claimed or counted) has that instant due too. Seen here before the
    // first command under it, which is soon enough: the instant matters to a claim or a skip.
    if (version >= AT_CATCH_UP_VERSION && this.#version < AT_CATCH_UP_VERSION) {
      for (const job of this.jobs.values()) {
        if (job.spec.kind !== 'at' || job.highWaterMs !== job.anchorMs || job.spec.atMs > job.anchorMs) continue;
        job.countFromMs = job.spec.atMs - 1;
        job.highWaterMs = job.spec.atMs - 1;
      }
    }
    this.#version = version;
    if (result.ok) this.#observe(t, index, command, result, version);
    return true;
  }

  #observe(t: number, index: number, command: SchedulerCommand, result: ApplyResult & { readonly ok: true }, version: number): void {
    switch (command.type) {
      case 'register': {
        const known = this.jobs.get(command.job);
        if (known !== undefined && sameForm(known, command)) return;
        // From AT_CATCH_UP_VERSION an `{ at }` instant that passed before the job's first
        // registration is still due: claimed, or counted missed by the catch-up policy.
        const { spec, atMs } = command;
        const initialMs = spec.kind === 'at' && version >= AT_CATCH_UP_VERSION && spec.atMs <= atMs ? spec.atMs - 1 : atMs;
        // A registration of another form applied took the job over (job-takeover.ts): its
        // instants count from the mark, which never goes back.
        const countFromMs = known === undefined ? initialMs : Math.max(known.highWaterMs, initialMs) + 1;
        if (known !== undefined) this.takenOver.add(command.job);
        this.jobs.set(command.job, { spec, mode: command.mode, policy: command.policy, anchorMs: atMs, countFromMs, claims: 0, missed: 0, highWaterMs: countFromMs });
        return;
      }
      case 'claim':
        return this.#onClaim(t, index, command);
      case 'reassign': {
        const slot = this.slots.get(claimKey(command.job, command.slotMs));
        if (slot === undefined) return this.#report(t, 'token', `reassign of unclaimed slot ${command.job}@${command.slotMs}`);
        if (index <= slot.token) this.#report(t, 'fencing', `fencing token of ${command.job}@${command.slotMs} went from ${slot.token} to ${index}`);
        slot.token = index;
        slot.assignees = command.assignees;
        slot.attempt++;
        if (command.reason === 'retry' || version < RETRY_COUNT_VERSION) slot.retried++;
        for (const member of command.assignees) {
          slot.grants.add(`${member} ${index}`);
          if (!slot.givenAt.has(member)) slot.givenAt.set(member, t);
        }
        return;
      }
      case 'skip': {
        const job = this.jobs.get(command.job);
        if (job === undefined) return;
        job.missed += countInstants(job.spec, job.anchorMs, job.highWaterMs, command.throughMs);
        job.highWaterMs = Math.max(job.highWaterMs, command.throughMs);
        return;
      }
      case 'cancel': {
        const slot = this.slots.get(claimKey(command.job, command.slotMs));
        if (slot !== undefined) slot.cancelledToken = command.token;
        return;
      }
      case 'cancel-runs': {
        // An operator's cancel ends each slot it marked, as a replacement does: an outcome, not a loss.
        for (const claim of result.cancelled ?? []) {
          const slot = this.slots.get(claimKey(claim.job, claim.slotMs));
          if (slot !== undefined) slot.cancelledToken = claim.token;
        }
        return;
      }
      case 'outcome': {
        const slot = this.slots.get(claimKey(command.job, command.slotMs));
        slot?.outcomes.set(`${command.member} ${command.token}`, command.outcome);
        slot?.outcomeAt.set(`${command.member} ${command.token}`, t);
        return;
      }
      case 'forfeit': {
        // A removed member's share, recorded missed under the claim's token (which stays).
        const slot = this.slots.get(claimKey(command.job, command.slotMs));
        slot?.outcomes.set(`${command.member} ${command.token}`, MISSED);
        slot?.outcomeAt.set(`${command.member} ${command.token}`, t);
        return;
      }
      case 'expire': {
        // The slot's new token, under which its assignee's outcome is 'missed': no run holds it.
        const slot = this.slots.get(claimKey(command.job, command.slotMs));
        if (slot === undefined) return this.#report(t, 'token', `expiry of unclaimed slot ${command.job}@${command.slotMs}`);
        if (index <= slot.token) this.#report(t, 'fencing', `fencing token of ${command.job}@${command.slotMs} went from ${slot.token} to ${index}`);
        slot.token = index;
        for (const member of slot.assignees) {
          slot.outcomes.set(`${member} ${index}`, MISSED);
          slot.outcomeAt.set(`${member} ${index}`, t);
        }
        return;
      }
      default:
        return;
    }
  }

  #onClaim(t: number, index: number, command: Extract<SchedulerCommand, { type: 'claim' }>): void {
    const key = claimKey(command.job, command.slotMs);
    const earlier = this.slots.get(key);
    if (earlier !== undefined) this.#report(t, 'claimed-twice', `slot ${key} claimed twice (tokens ${earlier.token} and ${index})`);
    const job = this.jobs.get(command.job);
    if (job !== undefined) {
      job.claims++;
      job.highWaterMs = Math.max(job.highWaterMs, command.slotMs);
      if (job.spec.kind !== 'delay' && !instantsBetween(job.spec, job.anchorMs, command.slotMs - 1, command.slotMs, 1).includes(command.slotMs)) {
        this.#report(t, 'spec-instant', `slot ${key} is not an instant of the job's spec`);
      }
    }
    const grants = new Set(command.assignees.map((member) => `${member} ${index}`));
    this.slots.set(key, { job: command.job, slotMs: command.slotMs, token: index, assignees: command.assignees, attempt: 1, retried: 0, outcomes: new Map(), outcomeAt: new Map(), firstStartT: null, runs: 0, grants, givenAt: new Map(command.assignees.map((member) => [member, t])), cancelledToken: null });
  }

  onRunStart(t: number, member: NodeId, incarnation: number, run: { job: string; slotMs: number; fencingToken: number }): void {
    const key = claimKey(run.job, run.slotMs);
    const slot = this.slots.get(key);
    if (slot === undefined) return this.#report(t, 'token', `${member} started ${key} which was never claimed`);
    slot.firstStartT ??= t;
    slot.runs++;
    if (!slot.grants.has(`${member} ${run.fencingToken}`)) this.#report(t, 'token', `${member} started ${key} under token ${run.fencingToken}, which the log never gave it`);
    if (run.fencingToken < slot.token) this.staleStarts++;
    // Its own outcome committed before this process started: its replay, or the read barrier a
    // late slot waits for, shows it. (One committed after the restart began may have been in
    // flight from the previous life: that re-run is the documented at-least-once case.)
    const committedAt = slot.outcomeAt.get(`${member} ${run.fencingToken}`);
    if (committedAt !== undefined && committedAt < (this.#startedAt.get(member) ?? 0)) {
      this.#report(t, 're-run', `${member} started ${key} again under token ${run.fencingToken}, whose outcome was committed before this process started`);
    }
    if (committedAt !== undefined) this.reRuns++;
    const running = this.#running.get(key) ?? [];
    const twin = running.find((r) => r.token === run.fencingToken && r.member === member);
    if (twin !== undefined) this.#report(t, 'twin-run', `${key} runs twice at once under token ${run.fencingToken} (${twin.member}#${twin.incarnation} and ${member}#${incarnation})`);
    running.push({ member, incarnation, token: run.fencingToken });
    this.#running.set(key, running);
  }

  onRunEnd(member: NodeId, incarnation: number, run: { job: string; slotMs: number; fencingToken: number }): void {
    const key = claimKey(run.job, run.slotMs);
    const running = (this.#running.get(key) ?? []).filter((r) => !(r.member === member && r.incarnation === incarnation && r.token === run.fencingToken));
    if (running.length === 0) this.#running.delete(key);
    else this.#running.set(key, running);
  }

  /** A member's process (re)started at true time `t`. */
  onMemberStart(t: number, member: NodeId): void {
    this.#startedAt.set(member, t);
    // A life starts applying again from its snapshot: what it applies is no batch's next command.
    this.#position.delete(member);
  }

  /** A crashed process's runs died with it. */
  onCrash(member: NodeId): void {
    for (const [key, runs] of this.#running) {
      const left = runs.filter((r) => r.member !== member);
      if (left.length === 0) this.#running.delete(key);
      else this.#running.set(key, left);
    }
  }

  /**
   * Accounting: every instant up to each job's high-water mark is claimed or counted missed.
   * Liveness: every instant in [fromT, toT] (true ms) started within `latenessMs`, unless
   * `excused` (its overlap policy or a full member kept it waiting, or from running); every slot
   * at or before `settledT` has an outcome under its current claim, unless `underway` (its run
   * is still going, or waits its turn in a queue its member is working through). Neither for the
   * jobs in `dropped` (a deploy dropped them: no member runs them, and a slot of one claimed for
   * a member killed with it in its code stays interrupted, once no member is left to move it to,
   * until the leader records it missed past the reassignment horizon), which deploys.ts's
   * checkDropped looks at instead.
   */
  finish(
    t: number,
    window: {
      fromT: number;
      toT: number;
      latenessMs: number;
      settledT: number;
      excused?: (job: string, slotMs: number) => boolean;
      underway?: (job: string, slotMs: number, member: NodeId) => boolean;
      dropped?: ReadonlySet<string>;
    },
  ): void {
    for (const [name, job] of this.jobs) {
      if (job.spec.kind === 'delay') continue;
      const instants = countInstants(job.spec, job.anchorMs, job.countFromMs, job.highWaterMs);
      if (instants !== job.claims + job.missed) {
        this.#report(t, 'accounting', `job ${name}: ${instants} instants up to its high-water mark, but ${job.claims} claimed and ${job.missed} counted missed`);
      }
      if (window.dropped?.has(name) === true) continue;
      const due = instantsBetween(job.spec, job.anchorMs, SIM_EPOCH_MS + window.fromT - 1, SIM_EPOCH_MS + window.toT, 100_000);
      for (const slotMs of due) {
        const slot = this.slots.get(claimKey(name, slotMs));
        const slotT = slotMs - SIM_EPOCH_MS;
        if (slot === undefined) this.#report(t, 'lateness', `${name}@${slotT} (true ms) due after healing was never claimed`);
        else if (window.excused?.(name, slotMs) === true) continue;
        else if (slot.firstStartT === null) this.#report(t, 'lateness', `${name}@${slotT} due after healing never ran`);
        else if (Math.abs(slot.firstStartT - slotT) > window.latenessMs) {
          this.#report(t, 'lateness', `${name}@${slotT} started ${(slot.firstStartT - slotT).toFixed(1)} ms off its instant (bound ${window.latenessMs} ms)`);
        }
      }
    }
    for (const slot of this.slots.values()) {
      if (slot.slotMs - SIM_EPOCH_MS > window.settledT) continue;
      // Replaced by a later slot: never moved or retried, whatever its run reported.
      if (slot.cancelledToken === slot.token || window.dropped?.has(slot.job) === true) continue;
      for (const member of slot.assignees) {
        const outcome = slot.outcomes.get(`${member} ${slot.token}`);
        const stuck = outcome === undefined || (outcome === 'interrupted' && slot.attempt < MAX_INTERRUPTED_ATTEMPTS && this.jobs.get(slot.job)?.mode === 'one');
        if (stuck && window.underway?.(slot.job, slot.slotMs, member) !== true) this.#report(t, 'outcome', `slot ${slot.job}@${slot.slotMs - SIM_EPOCH_MS} (true ms) has no final outcome from ${member} under token ${slot.token} (${outcome ?? 'none'})`);
      }
    }
  }
}

/** Instants of `spec` in (afterMs, untilMs], counted in bounded chunks. */
function countInstants(spec: JobSpec, anchorMs: number, afterMs: number, untilMs: number): number {
  let count = 0;
  let from = afterMs;
  for (;;) {
    const chunk = instantsBetween(spec, anchorMs, from, untilMs, 10_000);
    count += chunk.length;
    if (chunk.length < 10_000) return count;
    from = chunk[chunk.length - 1] as number;
  }
}
