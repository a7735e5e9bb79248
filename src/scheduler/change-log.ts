/**
 * Entries a ChangeLog keeps at least: a reader that looks again within this many changes of
 * jobs learns which changed; one that looks less often is told to look at every job.
 */
export const CHANGE_LOG_KEPT = 4096;

/**
 * The jobs changed lately, in the order of their changes, each with the count of its change
 * (SchedulerState.changes): a reader of every job (JobStates, for state()) asks which changed
 * since it last looked, rather than asking each job. Not part of a state's contents. Holds at
 * most twice CHANGE_LOG_KEPT entries: past that, it drops the older half.
 */
export class ChangeLog {
  #names: string[] = [];
  #counts: number[] = [];
  /** Every change counted after this is in the log (a change counted at it may have been dropped). */
  #from: number;

  constructor(from = 0) {
    this.#from = from;
  }

  /** `job` changed (or was registered) at change `count`; counts never decrease. */
  record(job: string, count: number): void {
    if (this.#names.length >= 2 * CHANGE_LOG_KEPT) {
      this.#from = this.#counts[CHANGE_LOG_KEPT - 1] as number;
      this.#names = this.#names.slice(CHANGE_LOG_KEPT);
      this.#counts = this.#counts.slice(CHANGE_LOG_KEPT);
    }
    this.#names.push(job);
    this.#counts.push(count);
  }

  /** Forgets everything: changes after `count` are recorded from now on (a restore). */
  clear(count: number): void {
    this.#names = [];
    this.#counts = [];
    this.#from = count;
  }

  /**
   * The jobs that changed after change `count`, in order (a job once per change), or null when
   * the log no longer reaches back that far.
   */
  since(count: number): readonly string[] | null {
    if (count < this.#from) return null;
    // The first entry counted after `count`: the counts are in order.
    let lo = 0;
    let hi = this.#counts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((this.#counts[mid] as number) <= count) lo = mid + 1;
      else hi = mid;
    }
    return this.#names.slice(lo);
  }
}
