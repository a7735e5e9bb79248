import type { SchedulerChecker } from './scheduler-checker.js';
import { SIM_EPOCH_MS } from './scheduler.js';

/** What became of one job's slots in a run. */
export interface JobSummary {
  readonly name: string;
  readonly claimed: number;
  /** Slots dropped by the catch-up policy. */
  readonly missed: number;
  /** Slots with at least one successful run under their current claim. */
  readonly succeeded: number;
  /** Claimed slots whose final outcome is not a success (failed, aborted, or none). */
  readonly unsuccessful: number;
  /**
   * Those slots by their outcome under their current claim: a run's (`failed`, `aborted`,
   * `interrupted`), or the slot's when it was not run (`skipped`, `replaced`, `missed`), or
   * `none` (not recorded by the end of the run: the last slots' runs may still be going).
   */
  readonly unsuccessfulBy: Readonly<Record<string, number>>;
  /** Start of a slot's first run minus its instant, true time: p50, p99 and max in ms. */
  readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number };
}

/** Summaries of the slots due by `endT` (true ms): later ones were claimed ahead and never had their turn. */
export function summarizeJobs(names: readonly string[], checker: SchedulerChecker, endT: number): JobSummary[] {
  return names.map((name) => {
    const job = checker.jobs.get(name);
    const lateness: number[] = [];
    let succeeded = 0;
    let claimed = 0;
    const unsuccessfulBy: Record<string, number> = {};
    for (const slot of checker.slots.values()) {
      if (slot.job !== name || slot.slotMs - SIM_EPOCH_MS > endT) continue;
      claimed++;
      if (slot.firstStartT !== null) lateness.push(slot.firstStartT - (slot.slotMs - SIM_EPOCH_MS));
      const outcomes = slot.assignees.flatMap((member) => slot.outcomes.get(`${member} ${slot.token}`) ?? []);
      if (outcomes.includes('succeeded')) succeeded++;
      else {
        const outcome = outcomes[0] ?? 'none';
        unsuccessfulBy[outcome] = (unsuccessfulBy[outcome] ?? 0) + 1;
      }
    }
    lateness.sort((a, b) => a - b);
    // The same percentiles as the HTML report's table, so the two agree on a run.
    return {
      name,
      claimed,
      missed: job?.missed ?? 0,
      succeeded,
      unsuccessful: claimed - succeeded,
      unsuccessfulBy,
      latenessMs: { p50: percentile(lateness, 0.5), p99: percentile(lateness, 0.99), max: lateness[lateness.length - 1] ?? 0 },
    };
  });
}

/** Nearest-rank percentile (q in 0..1) of a sorted array: a value that actually occurred; 0 when empty. */
export function percentile(sorted: readonly number[], q: number): number {
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? 0;
}
