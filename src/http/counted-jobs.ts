import type { ClusterState } from '../api/state.js';

type Job = ClusterState['jobs'][number];
type Jobs = ClusterState['jobs'];

/**
 * The jobs of `state()` with a missed or skipped slot, for the per-job counters of `/metrics`,
 * kept between scrapes so that a scrape reads only the views that changed since the last one.
 * `state()` hands out the same list while nothing changed, and a job's same frozen view until
 * the job changes (api/job-states.ts); nearly every job of thousands counts 0 of both, and
 * reading both counts of every view on every scrape was most of a scrape's work at ten thousand
 * jobs. A changed list is compared with the last one place by place, which touches the list
 * alone, not the views; only a view not at its place before is read.
 */
export class CountedJobs {
  #list: Jobs = [];
  /** The views with a count above 0, by job name. */
  readonly #counted = new Map<string, Job>();

  /** The views of `list` whose missed or skipped slots are above 0. */
  update(list: Jobs): ReadonlyMap<string, Job> {
    const last = this.#list;
    if (list === last) return this.#counted;
    const places = Math.max(list.length, last.length);
    // Every view that left its place first, then every one that came: a view that only moved
    // (a job before it was removed) is dropped where it was and counted where it is.
    for (let i = 0; i < places; i++) {
      const was = last[i];
      if (was !== undefined && was !== list[i] && this.#counted.get(was.name) === was) this.#counted.delete(was.name);
    }
    for (let i = 0; i < places; i++) {
      const now = list[i];
      if (now !== undefined && now !== last[i] && (now.missedSlots > 0 || now.skippedRuns > 0)) this.#counted.set(now.name, now);
    }
    this.#list = list;
    return this.#counted;
  }
}
