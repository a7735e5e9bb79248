import type { NodeId } from '../../src/raft/types.js';
import { claimKey } from '../../src/scheduler/records.js';

/** A run as the checkers follow it, from its handler's start to its end. */
export interface TrackedRun {
  readonly member: NodeId;
  /** The member's process life the run belongs to. */
  readonly incarnation: number;
  readonly job: string;
  readonly slotMs: number;
  readonly token: number;
  /** True time (simulated ms) it started. */
  readonly startT: number;
}

/** A run that ended, kept to tell whether a slot had reason to start late. */
interface EndedRun {
  readonly member: NodeId;
  readonly startT: number;
  readonly endT: number;
}

/** Bound on the ended runs kept per job (a long run keeps the latest). */
const MAX_ENDED_RUNS_KEPT = 4096;

/**
 * The runs in progress on every member, as the members report their starts and ends, and the
 * latest ended runs per job. Shared by the run checkers.
 */
export class RunsInProgress {
  readonly #runs = new Map<string, TrackedRun>();
  readonly #ended = new Map<string, EndedRun[]>();

  static idOf(member: NodeId, incarnation: number, run: { readonly job: string; readonly slotMs: number; readonly fencingToken: number }): string {
    return `${member}#${incarnation} ${claimKey(run.job, run.slotMs)} ${run.fencingToken}`;
  }

  get all(): IterableIterator<[string, TrackedRun]> {
    return this.#runs.entries();
  }

  get(id: string): TrackedRun | undefined {
    return this.#runs.get(id);
  }

  start(t: number, member: NodeId, incarnation: number, run: { readonly job: string; readonly slotMs: number; readonly fencingToken: number }): void {
    this.#runs.set(RunsInProgress.idOf(member, incarnation, run), { member, incarnation, job: run.job, slotMs: run.slotMs, token: run.fencingToken, startT: t });
  }

  end(t: number, member: NodeId, incarnation: number, run: { readonly job: string; readonly slotMs: number; readonly fencingToken: number }): TrackedRun | undefined {
    const id = RunsInProgress.idOf(member, incarnation, run);
    const tracked = this.#runs.get(id);
    if (tracked === undefined) return undefined;
    this.#runs.delete(id);
    this.#keepEnded(tracked, t);
    return tracked;
  }

  /** Forgets a run that a checker reported as going on when it must not (reported once). */
  forget(id: string, t: number): void {
    const tracked = this.#runs.get(id);
    if (tracked === undefined) return;
    this.#runs.delete(id);
    this.#keepEnded(tracked, t);
  }

  /** The runs of `member`'s process life `incarnation` in progress. */
  *of(member: NodeId, incarnation: number): Iterable<[string, TrackedRun]> {
    for (const entry of this.#runs) if (entry[1].member === member && entry[1].incarnation === incarnation) yield entry;
  }

  /**
   * Whether another run of `job` than the slot's own was in progress, on `member` when given,
   * within `marginMs` of true time `slotT`: a slot that fires then may wait or be skipped by its
   * job's overlap policy, or wait for a free run permit.
   */
  busyAt(job: string, slotMs: number, slotT: number, marginMs: number, member?: NodeId): boolean {
    const overlaps = (r: { readonly member: NodeId; readonly startT: number }, endT: number): boolean =>
      (member === undefined || r.member === member) && r.startT <= slotT + marginMs && endT >= slotT - marginMs;
    for (const run of this.#runs.values()) if (run.job === job && run.slotMs !== slotMs && overlaps(run, Number.POSITIVE_INFINITY)) return true;
    return (this.#ended.get(job) ?? []).some((r) => overlaps(r, r.endT));
  }

  /**
   * The most runs of any job `member` ran at once at some instant of true time [fromT, toT] (a
   * member at its maxConcurrent holds that many). A run that ends at the instant another starts
   * (its permit handed on) does not count with it.
   */
  mostAtOnce(member: NodeId, fromT: number, toT: number): number {
    const changes: Array<[number, number]> = [];
    const add = (startT: number, endT: number): void => {
      if (startT > toT || endT < fromT) return;
      changes.push([Math.max(startT, fromT), 1]);
      if (endT <= toT) changes.push([endT, -1]);
    };
    for (const run of this.#runs.values()) if (run.member === member) add(run.startT, Number.POSITIVE_INFINITY);
    for (const ended of this.#ended.values()) for (const r of ended) if (r.member === member) add(r.startT, r.endT);
    // At one instant, ends before starts.
    changes.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    let now = 0;
    let most = 0;
    for (const [, change] of changes) most = Math.max(most, (now += change));
    return most;
  }

  /** Whether `member` has a run of its process life `incarnation` in progress at true time `t`, or ended one within `withinMs` before it. */
  ranLately(member: NodeId, incarnation: number, t: number, withinMs: number): boolean {
    for (const run of this.#runs.values()) if (run.member === member && run.incarnation === incarnation) return true;
    for (const ended of this.#ended.values()) for (const r of ended) if (r.member === member && r.endT >= t - withinMs) return true;
    return false;
  }

  /** The latest true time `member` (any member, when undefined) was running `job`: `t` if it still is. */
  lastRan(member: NodeId | undefined, job: string, t: number): number | undefined {
    for (const run of this.#runs.values()) if ((member === undefined || run.member === member) && run.job === job) return t;
    let last: number | undefined;
    for (const r of this.#ended.get(job) ?? []) if ((member === undefined || r.member === member) && (last === undefined || r.endT > last)) last = r.endT;
    return last;
  }

  #keepEnded(run: TrackedRun, endT: number): void {
    let list = this.#ended.get(run.job);
    if (list === undefined) this.#ended.set(run.job, (list = []));
    list.push({ member: run.member, startT: run.startT, endT });
    if (list.length > MAX_ENDED_RUNS_KEPT) list.splice(0, list.length - MAX_ENDED_RUNS_KEPT);
  }
}
