import type { NodeId } from '../../src/raft/types.js';
import { claimKey } from '../../src/scheduler/records.js';
import { SIM_EPOCH_MS } from '../scheduler.js';
import type { Report } from '../violations.js';
import type { MemberWatch } from './members.js';
import { cutOrStalledSince, leaseWindowFrom, type LeaseFacts } from './double-runs.js';
import { CLOCK_SLACK_MS } from './retries.js';
import { RunsInProgress } from './runs.js';

/** What the check of waited runs knows of the jobs and the members. */
export interface WaitedRunFacts extends LeaseFacts {
  readonly mode: (job: string) => 'one' | 'all' | undefined;
  readonly overlap: (job: string) => string | undefined;
}

/** Bound on the starts remembered to tell a run its member resumes after a restart. */
const MAX_STARTS_KEPT = 4096;

/**
 * How long two such runs may go on together before it counts (ms): a member takes another's run
 * as ended once its timeout passed by its own reading of the cluster's time, while that run ends
 * by its member's timer, and the two readings stand apart by up to half a round trip each
 * (found by the simulation-deploy test: a slot waiting behind a run started 2 ms before that run
 * timed out on its member).
 */
export const WAITED_OVERLAP_GRACE_MS = CLOCK_SLACK_MS;

/** Two waited runs at once, reported if both go on past the grace. */
interface Pair {
  readonly t: number;
  readonly ids: readonly [string, string];
  readonly detail: string;
}

/**
 * Under overlap 'skip', at most one slot of a mode 'one' job waits behind late runs (README,
 * "Overlap"): a slot that would wait is skipped while another slot of the job that came
 * already, claimed for another member, has not started there. Under 'queue', a slot that waits
 * does so, besides the runs in progress, until every earlier slot of the job claimed for another
 * member has ended there: the job's slots run one at a time (the defect of 2d53a89, which a
 * stranger saw: a slot waiting on one member behind a run on another started beside the next
 * run of that member's backlog, run after run). Either way, checked as a run that waited
 * starts (`overlap-waited`): no other run of its job that waited too is going on another member,
 * for another slot (one slot on two members is the double-run checker's, with the ways the
 * design lets a stale run go on). Two such runs are two at once that no replication lag
 * explains: neither started on schedule, and each waited while the other's slot, claimed and
 * not started, was in its member's log. This is the failover defect of 81f1a4b, which no other
 * checker saw: after a slot moved, a slot on each of two members waited behind the moved run,
 * and both started as it ended.
 *
 * Where the design lets it happen, a pair is excused:
 * - the two go on together for no longer than WAITED_OVERLAP_GRACE_MS (a run taken as ended by
 *   its timeout a moment before its member's timer ends it);
 * - one of the two members had a link blocked, or stood still, within a lease and a plan interval
 *   before the earlier slot's instant, or since: a member does not count a member it is not
 *   connected to, and a member that stood still looked at the log as it was;
 * - a run its member resumes after a restart (it started it under the same token in an earlier
 *   life): such a run waits without looking elsewhere, as it already started once.
 */
export class WaitedRunsChecker {
  readonly #report: Report;
  readonly #runs: RunsInProgress;
  readonly #watch: MemberWatch;
  readonly #facts: WaitedRunFacts;
  /** The runs in progress that waited, not resumed (RunsInProgress ids). */
  readonly #waited = new Set<string>();
  /** Starts seen, by member, slot and token: the process life of the first (a later one resumes it). */
  readonly #starts = new Map<string, number>();
  /** Pairs of such runs at once, kept until both went on past the grace (reported) or one ended. */
  #pairs: Pair[] = [];

  constructor(report: Report, runs: RunsInProgress, watch: MemberWatch, facts: WaitedRunFacts) {
    this.#report = report;
    this.#runs = runs;
    this.#watch = watch;
    this.#facts = facts;
  }

  /** A run started on `member` at true time `t` (RunsInProgress holds it already); `waited` as its member reported (absent: it did not). */
  onRunStart(t: number, member: NodeId, incarnation: number, run: { readonly job: string; readonly slotMs: number; readonly fencingToken: number; readonly waited?: boolean }): void {
    const startKey = `${member} ${claimKey(run.job, run.slotMs)} ${run.fencingToken}`;
    const firstLife = this.#starts.get(startKey);
    if (firstLife === undefined) this.#remember(startKey, incarnation);
    const resumed = firstLife !== undefined && firstLife < incarnation;
    const overlap = this.#facts.overlap(run.job);
    if (run.waited !== true || resumed || this.#facts.mode(run.job) !== 'one' || (overlap !== 'skip' && overlap !== 'queue')) return;
    for (const id of this.#waited) if (this.#runs.get(id) === undefined) this.#waited.delete(id);
    for (const id of this.#waited) {
      const other = this.#runs.get(id);
      if (other === undefined || other.member === member || other.job !== run.job || other.slotMs === run.slotMs || this.#watch.isOver(other.member, other.incarnation)) continue;
      const since = leaseWindowFrom(this.#facts, Math.min(other.slotMs, run.slotMs) - SIM_EPOCH_MS);
      if (cutOrStalledSince(this.#facts, this.#watch, member, since) || cutOrStalledSince(this.#facts, this.#watch, other.member, since)) continue;
      this.#pairs.push({
        t,
        ids: [id, RunsInProgress.idOf(member, incarnation, run)],
        detail: `${run.job} runs slot ${run.slotMs} on ${member} (since ${t.toFixed(1)} ms) and slot ${other.slotMs} on ${other.member} (since ${other.startT.toFixed(1)} ms) at once under overlap '${overlap}', each having waited behind another run of the job: ${overlap === 'skip' ? 'at most one slot waits behind late runs' : 'a queued slot runs once the runs before it ended'}`,
      });
    }
    this.#waited.add(RunsInProgress.idOf(member, incarnation, run));
  }

  /** After every event: the pairs whose runs both went on past the grace are reported, once. */
  afterEvent(t: number): void {
    if (this.#pairs.length === 0) return;
    const going = (id: string): boolean => {
      const run = this.#runs.get(id);
      return run !== undefined && !this.#watch.isOver(run.member, run.incarnation);
    };
    this.#pairs = this.#pairs.filter((pair) => {
      if (!pair.ids.every(going)) return false;
      if (t - pair.t <= WAITED_OVERLAP_GRACE_MS) return true;
      this.#report(t, 'overlap-waited', pair.detail);
      return false;
    });
  }

  #remember(startKey: string, incarnation: number): void {
    this.#starts.set(startKey, incarnation);
    if (this.#starts.size > MAX_STARTS_KEPT) this.#starts.delete(this.#starts.keys().next().value as string);
  }
}
