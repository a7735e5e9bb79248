import type { NodeId } from '../../src/raft/types.js';
import { claimKey, type ApplyResult, type ClaimRecord } from '../../src/scheduler/records.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import type { Report, ViolationKind } from '../violations.js';
import type { MemberWatch } from './members.js';
import type { RunsInProgress } from './runs.js';

/**
 * A run was let go on past what ends it, by this much (ms): a timer set for an instant fires at
 * it, and what its abort sets off settles before time moves, so this is rounding only.
 */
const SLACK_MS = 1;

/**
 * The README's lease: a member that has not heard from a leader for two election timeouts
 * aborts its runs (`Member.holdsLease`).
 */
export const LEASE_ELECTION_TIMEOUTS = 2;

/** A run that must have ended once true time passes `dueT`. */
interface Due {
  readonly id: string;
  readonly dueT: number;
  readonly kind: ViolationKind;
  readonly why: string;
}

/** What ends a job's runs, as its members were told. */
export interface RunLimits {
  /** The replicated assignment mode: only mode 'one' runs are bound to the lease. */
  readonly mode: (job: string) => 'one' | 'all' | undefined;
  /** The job's timeoutMs as the members scheduled it. */
  readonly timeoutMs: (job: string) => number;
  readonly electionTimeoutMs: number;
  /** How often a member looks at its lease (the scheduler's plan interval). */
  readonly planIntervalMs: number;
}

/**
 * Every run ends by the time something must end it, checked after every event (runs are looked at
 * once the earliest deadline can have passed):
 * - its timeoutMs (`run-timeout`), counted from its start, or from the end of a stall of its
 *   process that covered that instant (the timer fires then);
 * - for mode 'one', its member's lease (`lease`): once the member has neither led nor heard from
 *   the leader it follows for two election timeouts, at its next look at the lease (a plan
 *   interval) its runs stop;
 * - the move or replacement of its claim (`stale-run`): when its member applies a reassignment
 *   under a new token, or a replacement of its token, the run stops then;
 * - its member stopping (`stopping`).
 * Each run that goes on past one is reported once.
 */
export class RunDeadlines {
  readonly #report: Report;
  readonly #runs: RunsInProgress;
  readonly #watch: MemberWatch;
  readonly #limits: RunLimits;
  /** Runs that must have ended once true time passes `dueT`, with why. */
  #due: Due[] = [];
  /**
   * No run's timeout or lease can end before this true time: deadlines only move later (a
   * member hears from its leader again, a stall is made longer), so runs are looked at only once
   * it passed, and then it is set to the earliest deadline found.
   */
  #nextCheckT = Number.POSITIVE_INFINITY;

  constructor(report: Report, runs: RunsInProgress, watch: MemberWatch, limits: RunLimits) {
    this.#report = report;
    this.#runs = runs;
    this.#watch = watch;
    this.#limits = limits;
  }

  /** `member` applied `command`: a run of its whose claim moved on, or was replaced, must stop now. */
  onApplied(t: number, member: NodeId, index: number, command: SchedulerCommand, result: ApplyResult): void {
    if (result.ok && command.type === 'cancel-runs') {
      this.#cancelled(t, member, result.cancelled ?? []);
      return;
    }
    if (!result.ok || (command.type !== 'reassign' && command.type !== 'cancel')) return;
    const incarnation = this.#watch.member(member)?.incarnation ?? 0;
    const key = claimKey(command.job, command.slotMs);
    for (const [id, run] of this.#runs.of(member, incarnation)) {
      if (claimKey(run.job, run.slotMs) !== key) continue;
      // A move gives the slot this entry's index as its token: a run under an older one lost it.
      if (command.type === 'reassign' && run.token < index) {
        this.#due.push({ id, dueT: t, kind: 'stale-run', why: `${member} applied the move of its slot (token ${index})` });
      } else if (command.type === 'cancel' && run.token === command.token) {
        this.#due.push({ id, dueT: t, kind: 'stale-run', why: `${member} applied its replacement by slot ${command.bySlotMs}` });
      }
    }
  }

  /** `member` applied an operator's cancel of `claims`: its runs of them under their tokens must stop now. */
  #cancelled(t: number, member: NodeId, claims: readonly ClaimRecord[]): void {
    if (claims.length === 0) return;
    const incarnation = this.#watch.member(member)?.incarnation ?? 0;
    const tokens = new Map(claims.map((c) => [claimKey(c.job, c.slotMs), c.token]));
    for (const [id, run] of this.#runs.of(member, incarnation)) {
      if (tokens.get(claimKey(run.job, run.slotMs)) === run.token) this.#due.push({ id, dueT: t, kind: 'stale-run', why: `${member} applied an operator's cancel of its run` });
    }
  }

  /** `member`'s process life `incarnation` stops now: its runs must end at once. */
  onStop(t: number, member: NodeId, incarnation: number): void {
    for (const [id] of this.#runs.of(member, incarnation)) this.#due.push({ id, dueT: t, kind: 'stopping', why: `${member} stopped` });
  }

  /** A run started at true time `t`: its deadlines are at least its timeout or lease away. */
  onRunStart(t: number, job: string): void {
    const leaseMs = this.#limits.mode(job) === 'one' ? this.#leaseMs() : Number.POSITIVE_INFINITY;
    this.#nextCheckT = Math.min(this.#nextCheckT, t + Math.min(this.#limits.timeoutMs(job), leaseMs));
  }

  /** From the last contact with a leader, how long until a run that lost it must have stopped. */
  #leaseMs(): number {
    return LEASE_ELECTION_TIMEOUTS * this.#limits.electionTimeoutMs + this.#limits.planIntervalMs;
  }

  afterEvent(t: number): void {
    if (this.#due.length > 0) {
      const left: Due[] = [];
      for (const d of this.#due) {
        if (d.dueT >= t) left.push(d);
        else if (this.#runs.get(d.id) !== undefined) this.#fail(t, d.id, d.kind, `${d.why} at ${d.dueT.toFixed(1)} ms`);
      }
      this.#due = left;
    }
    if (t <= this.#nextCheckT) return;
    let next = Number.POSITIVE_INFINITY;
    for (const [id, run] of this.#runs.all) {
      // A stopped life's runs are the `stopping` check's, made above.
      if (this.#watch.isOver(run.member, run.incarnation)) continue;
      const stallEnd = this.#watch.pauseEnd(run.member);
      const timeoutMs = this.#limits.timeoutMs(run.job);
      const timeoutT = Math.max(run.startT + timeoutMs, stallEnd) + SLACK_MS;
      if (t > timeoutT) {
        this.#fail(t, id, 'run-timeout', `it started at ${run.startT.toFixed(1)} ms with a timeout of ${timeoutMs} ms`);
        continue;
      }
      next = Math.min(next, timeoutT);
      if (this.#limits.mode(run.job) !== 'one') continue;
      const heard = Math.max(this.#leaseFrom(run.member) ?? run.startT, run.startT);
      const leaseEnd = heard + LEASE_ELECTION_TIMEOUTS * this.#limits.electionTimeoutMs;
      const leaseT = Math.max(leaseEnd, stallEnd) + this.#limits.planIntervalMs + SLACK_MS;
      if (t > leaseT) {
        this.#fail(t, id, 'lease', `${run.member} last led, or sent an answer a leader took in, at ${heard.toFixed(1)} ms: its lease ended at ${leaseEnd.toFixed(1)} ms`);
        continue;
      }
      next = Math.min(next, leaseT);
    }
    this.#nextCheckT = next;
  }

  /**
   * The latest true time the lease of `id` may count from: when it last led; following, when it
   * last heard from its leader, and, from wire protocol 2, no later than it sent the latest of its
   * messages a leader took in (its lease counts from the answer its leader says it took in);
   * while it was at protocol 1, when it heard its leader.
   */
  #leaseFrom(id: NodeId): number | undefined {
    const heard = this.#watch.heardLeader(id);
    if (heard === undefined) return undefined;
    const followed = Math.min(heard, Math.max(this.#watch.answered(id) ?? Number.NEGATIVE_INFINITY, this.#watch.leaseByMessages(id) ?? Number.NEGATIVE_INFINITY));
    return Math.max(this.#watch.led(id) ?? Number.NEGATIVE_INFINITY, followed);
  }

  #fail(t: number, id: string, kind: ViolationKind, why: string): void {
    this.#report(t, kind, `the run ${id} goes on: ${why}`);
    this.#runs.forget(id, t);
  }
}
