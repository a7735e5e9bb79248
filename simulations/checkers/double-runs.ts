import type { NodeId } from '../../src/raft/types.js';
import { claimKey } from '../../src/scheduler/records.js';
import type { Report } from '../violations.js';
import type { MemberWatch } from './members.js';
import { LEASE_ELECTION_TIMEOUTS } from './run-deadlines.js';
import type { RunsInProgress } from './runs.js';

/** What the double-run check knows of the run. */
export interface DoubleRunFacts extends LeaseFacts {
  /** The replicated assignment mode: only a mode 'one' slot runs on one member. */
  readonly mode: (job: string) => 'one' | 'all' | undefined;
}

/** What a check of runs on two members knows of the lease: its length, and the links cut. */
export interface LeaseFacts {
  readonly electionTimeoutMs: number;
  /** How often a member looks at its lease (the scheduler's plan interval). */
  readonly planIntervalMs: number;
  /** The latest true time a link to or from a member was blocked (SimNetwork.lastCut). */
  readonly lastCut: (id: NodeId) => number | undefined;
}

/** From when a fault excuses a run on two members at once: a lease and a plan interval before true time `t`. */
export function leaseWindowFrom(facts: LeaseFacts, t: number): number {
  return t - LEASE_ELECTION_TIMEOUTS * facts.electionTimeoutMs - facts.planIntervalMs;
}

/** Whether a blocked link or a stall touched member `id` from true time `since` (a closed connection, or a process that stood still). */
export function cutOrStalledSince(facts: LeaseFacts, watch: MemberWatch, id: NodeId, since: number): boolean {
  return (facts.lastCut(id) ?? Number.NEGATIVE_INFINITY) >= since || watch.pauseEnd(id) >= since;
}

/**
 * One slot of a mode 'one' job runs on one member at a time (README, "Failures"), checked as a run
 * starts against the runs of its slot in progress on other members (`double-run`): of two runs
 * at once, the one under the older token must have been aborted before the other started, as
 * its member lost its lease before the leader counted it lost. The design leaves three ways for
 * the older run to go on a while, each excused only if it touched that run's member within a
 * lease and a plan interval before the older run started, or since:
 * - one of its links was blocked: a blocked link is a closed connection, which moves the slot at
 *   once, while the member's lease runs on;
 * - its process stood still: it looks at its lease only as it resumes;
 * - it was on wire protocol 1, whose heartbeats say nothing of its answers, so that its lease
 *   counts from the leader's messages (a cluster that may hold a member of 0.1.0).
 * A run whose handler never started (its member found its lease gone at the instant) is no run.
 */
export class DoubleRunChecker {
  readonly #report: Report;
  readonly #runs: RunsInProgress;
  readonly #watch: MemberWatch;
  readonly #facts: DoubleRunFacts;

  constructor(report: Report, runs: RunsInProgress, watch: MemberWatch, facts: DoubleRunFacts) {
    this.#report = report;
    this.#runs = runs;
    this.#watch = watch;
    this.#facts = facts;
  }

  /** A run of `job`'s slot `slotMs` started on `member` under `token` at true time `t` (RunsInProgress holds it already). */
  onRunStart(t: number, member: NodeId, run: { readonly job: string; readonly slotMs: number; readonly fencingToken: number }): void {
    if (this.#facts.mode(run.job) !== 'one') return;
    const key = claimKey(run.job, run.slotMs);
    for (const [, other] of this.#runs.all) {
      if (other.member === member || other.token === run.fencingToken || claimKey(other.job, other.slotMs) !== key) continue;
      if (this.#watch.isOver(other.member, other.incarnation)) continue;
      // The run under the older token is the stale one, whichever started first.
      const stale = other.token < run.fencingToken ? { member: other.member, token: other.token, startT: other.startT } : { member, token: run.fencingToken, startT: t };
      const fresh = stale.member === member ? { member: other.member, token: other.token } : { member, token: run.fencingToken };
      const since = leaseWindowFrom(this.#facts, Math.min(other.startT, t));
      if (this.#excused(stale.member, since)) continue;
      this.#report(
        t,
        'double-run',
        `${key} runs on ${stale.member} under token ${stale.token} (since ${stale.startT.toFixed(1)} ms) and on ${fresh.member} under token ${fresh.token} at once: no link of ${stale.member} was blocked, nor did it stand still or hold its lease by messages alone, from ${since.toFixed(1)} ms`,
      );
    }
  }

  /** Whether the design lets `id`'s stale run go on: a blocked link, a stall or protocol 1 touched it from true time `since`. */
  #excused(id: NodeId, since: number): boolean {
    return cutOrStalledSince(this.#facts, this.#watch, id, since) || (this.#watch.leaseByMessages(id) ?? Number.NEGATIVE_INFINITY) >= since;
  }
}
