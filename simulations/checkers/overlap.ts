import type { Report } from '../violations.js';
import type { MemberWatch } from './members.js';
import type { RunsInProgress, TrackedRun } from './runs.js';

/**
 * What a member runs at once, checked once time moves on after a run started, from its own runs (what it knows at
 * once of them, so no replication lag excuses anything here):
 * - `overlap`: two runs of one job at once on one member, unless the job's overlap policy is
 *   'allow'. 'skip' skips a slot that fires meanwhile or lets it wait, 'queue' lets it wait, and
 *   'replace' aborts the other run before the new one starts, all in the same instant.
 * - `max-concurrent`: more runs at once on one member than its maxConcurrent.
 * Runs that started in the current instant are left out until time moves, so that a run ending
 * and another starting in one instant (a replacement, a free run permit taken) never count as both.
 */
export class ConcurrencyChecker {
  readonly #report: Report;
  readonly #runs: RunsInProgress;
  readonly #watch: MemberWatch;
  readonly #overlap: (job: string) => string | undefined;
  readonly #maxConcurrent: number;
  /** Runs already reported, so that each is reported once. */
  readonly #reported = new Set<string>();
  /** The latest instant a run started at, until it is checked (only a start makes runs overlap). */
  #startedAt: number | null = null;

  constructor(report: Report, runs: RunsInProgress, watch: MemberWatch, overlap: (job: string) => string | undefined, maxConcurrent: number) {
    this.#report = report;
    this.#runs = runs;
    this.#watch = watch;
    this.#overlap = overlap;
    this.#maxConcurrent = maxConcurrent;
  }

  /** A run started at true time `t`: once time moves on, what runs with it is checked. */
  onRunStart(t: number): void {
    this.#startedAt = t;
  }

  afterEvent(t: number): void {
    if (this.#startedAt === null || t <= this.#startedAt) return;
    this.#startedAt = null;
    const byLife = new Map<string, Array<[string, TrackedRun]>>();
    for (const [id, run] of this.#runs.all) {
      if (run.startT >= t || this.#watch.isOver(run.member, run.incarnation)) continue;
      const life = `${run.member}#${run.incarnation}`;
      const list = byLife.get(life);
      if (list === undefined) byLife.set(life, [[id, run]]);
      else list.push([id, run]);
    }
    for (const id of this.#reported) if (this.#runs.get(id) === undefined) this.#reported.delete(id);
    for (const [life, runs] of byLife) {
      if (runs.length > this.#maxConcurrent) {
        const [id] = runs[runs.length - 1] as [string, TrackedRun];
        this.#once(id, () => this.#report(t, 'max-concurrent', `${life} runs ${runs.length} at once (${runs.map(([r]) => r).join(', ')}), over its maxConcurrent of ${this.#maxConcurrent}`));
      }
      const byJob = new Map<string, string[]>();
      for (const [id, run] of runs) byJob.set(run.job, [...(byJob.get(run.job) ?? []), id]);
      for (const [job, ids] of byJob) {
        const policy = this.#overlap(job) ?? 'skip';
        if (ids.length < 2 || policy === 'allow') continue;
        this.#once(ids[ids.length - 1] as string, () => this.#report(t, 'overlap', `${life} runs ${ids.join(' and ')} at once, under overlap '${policy}'`));
      }
    }
  }

  #once(id: string, report: () => void): void {
    if (this.#reported.has(id)) return;
    this.#reported.add(id);
    report();
  }
}
