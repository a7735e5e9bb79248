import type { NodeId } from '../../src/raft/types.js';
import { claimKey, type ApplyResult } from '../../src/scheduler/records.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';
import type { SchedulerChecker } from '../scheduler-checker.js';
import { SIM_EPOCH_MS } from '../scheduler.js';
import type { Report } from '../violations.js';
import { FIRST_CLUSTER_VERSION, PAST_HORIZON_VERSION } from '../../src/version/versions.js';

/**
 * How far the cluster's time may stand from true time once faults healed and clocks settled:
 * each member's estimate is good to half a round trip (ms).
 */
export const CLOCK_SLACK_MS = 60;
/** After a retry was due, how long the leader has to plan it and the log to commit it, without faults (ms). */
const RETRY_GRACE_MS = 1000;
const FAILED = new Set(['failed', 'aborted']);

/**
 * A failed or timed-out run is retried as its job's `retries` say (`retry`), from the log:
 * - every retry follows a failed or aborted run, and only while the job has retries left (the
 *   claim's retries so far, not counting its moves after a lost member from RETRY_COUNT_VERSION
 *   on, are fewer than `retries`);
 * - without faults (after healing, once clocks settled): a retry comes no sooner than
 *   `retryDelayMs` × 2^(retries so far) after the run it retries ended, and on another member than
 *   the one that failed, when one of the configuration handles the job (a member stopping
 *   gracefully unregisters its jobs first, and the last handler gets the retry); and at the end, no slot is left failed with retries left (a failure
 *   during the faults is due its retry from when they healed, unless the reassignment horizon
 *   from when it was due passed before they did).
 */
export class RetryChecker {
  readonly #report: Report;
  readonly #slots: SchedulerChecker;
  /** The members of the configuration now. */
  readonly #members: () => readonly NodeId[];
  /** Per job, the members that handle it, as the log registered and unregistered them. */
  readonly #handlers = new Map<string, Set<NodeId>>();
  /** Per slot, the assignee of its current claim (mode 'one'). */
  readonly #assignee = new Map<string, NodeId>();
  /** When each run ended (true ms), by `${member} ${key} ${token}`. */
  readonly #endedAt = new Map<string, number>();
  /**
   * Each failure's outcome, by the same key: the cluster version under which it applied (how the
   * leader counts the horizon) and the end its member stamped (true ms of the cluster's time it
   * read: where the leader counts the horizon from).
   */
  readonly #failures = new Map<string, { readonly version: number; readonly stampT: number }>();
  /** The members' reassignment horizon: a retry not made within it is given up (the planner's horizonStartMs). */
  readonly #horizonMs: number;
  /** True time from which no fault is injected and clocks have settled. */
  #calmFromT = Number.POSITIVE_INFINITY;

  constructor(report: Report, slots: SchedulerChecker, members: () => readonly NodeId[], horizonMs: number) {
    this.#report = report;
    this.#slots = slots;
    this.#members = members;
    this.#horizonMs = horizonMs;
  }

  /** From true time `t` on, nothing is injected and clocks have settled. */
  calmFrom(t: number): void {
    this.#calmFromT = t;
  }

  onRunEnd(t: number, member: NodeId, run: { readonly job: string; readonly slotMs: number; readonly fencingToken: number }): void {
    this.#endedAt.set(`${member} ${claimKey(run.job, run.slotMs)} ${run.fencingToken}`, t);
  }

  /** A command's first application anywhere (after the scheduler checker took it in). */
  onFirstApplied(t: number, command: SchedulerCommand, result: ApplyResult, version: number): void {
    if (result.ok && command.type === 'register') {
      const handlers = this.#handlers.get(command.job) ?? new Set<NodeId>();
      this.#handlers.set(command.job, handlers.add(command.member));
    } else if (result.ok && command.type === 'unregister') {
      this.#handlers.get(command.job)?.delete(command.member);
    }
    if (result.ok && command.type === 'outcome' && FAILED.has(command.outcome)) {
      this.#failures.set(`${command.member} ${claimKey(command.job, command.slotMs)} ${command.token}`, { version, stampT: command.atMs - SIM_EPOCH_MS });
    }
    if (!result.ok || (command.type !== 'claim' && command.type !== 'reassign')) return;
    const key = claimKey(command.job, command.slotMs);
    const failed = this.#assignee.get(key);
    const assignee = command.assignees[0];
    if (assignee !== undefined) this.#assignee.set(key, assignee);
    if (command.type !== 'reassign' || command.reason !== 'retry' || failed === undefined) return;
    const slot = this.#slots.slots.get(key);
    const policy = this.#policy(command.job);
    if (slot === undefined || policy === undefined) return;
    // The scheduler checker has counted this move already: the retries before it are one fewer.
    const before = slot.retried - 1;
    const outcome = slot.outcomes.get(`${failed} ${command.fromToken}`);
    const what = `${key} was retried (attempt ${slot.attempt}, retry ${before + 1}) on ${assignee ?? 'nobody'}`;
    if (outcome === undefined || !FAILED.has(outcome)) return this.#report(t, 'retry', `${what} after ${failed} reported ${outcome ?? 'nothing'} under token ${command.fromToken}`);
    if (before >= policy.retries) return this.#report(t, 'retry', `${what}, beyond the job's ${policy.retries} retries`);
    const endT = this.#endedAt.get(`${failed} ${key} ${command.fromToken}`);
    if (endT === undefined || endT < this.#calmFromT) return;
    const backOffMs = policy.retryDelayMs * 2 ** before;
    if (t < endT + backOffMs - CLOCK_SLACK_MS) this.#report(t, 'retry', `${what} ${(t - endT).toFixed(1)} ms after ${failed}'s run ended, before its back-off of ${backOffMs} ms`);
    const handlers = this.#handlers.get(command.job);
    const others = this.#members().filter((id) => id !== failed && handlers?.has(id) === true);
    if (assignee === failed && others.length > 0) this.#report(t, 'retry', `${what}, the member whose run failed, with others to take it (${others.join(', ')})`);
  }

  /** At the end: no slot (mode 'one', due by `settledT`) is left failed with retries left and time to make them. */
  finish(t: number, settledT: number): void {
    for (const slot of this.#slots.slots.values()) {
      const slotT = slot.slotMs - SIM_EPOCH_MS;
      const policy = this.#policy(slot.job);
      if (slotT > settledT || policy === undefined || slot.retried >= policy.retries || this.#slots.jobs.get(slot.job)?.mode !== 'one') continue;
      // A later slot replaced its run (overlap 'replace'), however that run ended: its story is over.
      if (slot.cancelledToken === slot.token) continue;
      const member = slot.assignees[0];
      const outcome = member === undefined ? undefined : slot.outcomes.get(`${member} ${slot.token}`);
      if (outcome === undefined || !FAILED.has(outcome)) continue;
      const endT = this.#endedAt.get(`${member} ${claimKey(slot.job, slot.slotMs)} ${slot.token}`);
      if (endT === undefined) continue;
      // A failure during the faults may wait for them to heal: its retry is due from then.
      const backOffMs = policy.retryDelayMs * 2 ** slot.retried;
      if (Math.max(endT, this.#calmFromT) + backOffMs + RETRY_GRACE_MS > t) continue;
      // Not made within the horizon, the retry is given up, by design: the faults held the whole
      // of its window. The leader counts the horizon from when the retry is due from
      // PAST_HORIZON_VERSION, before from the slot's instant; due from the failure as its member
      // stamped it, by the cluster's time as that member read it. A member whose cluster time
      // was a bad clock's (as the clock promise allows: a cluster forming with two clocks seen,
      // one of them a minute behind) stamped it that far back, and the horizon ended that much
      // sooner (found by a census with custom jobs, where a leader back from a crash read its own
      // clock, 62 s behind; such a leader now counts the time its followers hold, clock-sync.ts).
      const failure = this.#failures.get(`${member} ${claimKey(slot.job, slot.slotMs)} ${slot.token}`);
      const version = failure?.version ?? FIRST_CLUSTER_VERSION;
      const failedT = Math.min(endT, failure?.stampT ?? endT);
      if (this.#calmFromT > (version >= PAST_HORIZON_VERSION ? failedT + backOffMs : slotT) + this.#horizonMs) continue;
      this.#report(t, 'retry', `${claimKey(slot.job, slot.slotMs)} ${outcome} on ${member} under token ${slot.token} (attempt ${slot.attempt}, ${slot.retried} retries so far) and was never retried, with ${policy.retries} retries`);
    }
  }

  #policy(job: string): JobPolicy | undefined {
    return this.#slots.jobs.get(job)?.policy;
  }
}
