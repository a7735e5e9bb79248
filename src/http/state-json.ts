import type { ClusterState } from '../api/state.js';

/** The content type of every JSON answer. */
export const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

type Job = ClusterState['jobs'][number];

/**
 * `state()` and its jobs as JSON text, each job's written once: `state()` hands out a job's
 * frozen view again until the job changes (api/job-states.ts), and the list itself again while
 * nothing changed, so the text of each is kept beside it (weakly: a view no longer handed out
 * takes its text with it). With thousands of jobs, the jobs are nearly all of the text.
 */
export class StateJson {
  readonly #jobs = new WeakMap<Job, string>();
  readonly #lists = new WeakMap<ClusterState['jobs'], string>();

  /** The state as JSON: as JSON.stringify writes it, its jobs last. */
  state(state: ClusterState): string {
    const { jobs, ...rest } = state;
    const head = JSON.stringify(rest);
    return `${head.slice(0, -1)},"jobs":${this.jobs(jobs)}}`;
  }

  /** A list of jobs as a JSON array. */
  jobs(list: ClusterState['jobs']): string {
    let text = this.#lists.get(list);
    if (text === undefined) {
      text = `[${list.map((job) => this.job(job)).join(',')}]`;
      this.#lists.set(list, text);
    }
    return text;
  }

  /** One job's view as JSON. */
  job(job: Job): string {
    let text = this.#jobs.get(job);
    if (text === undefined) {
      text = JSON.stringify(job);
      this.#jobs.set(job, text);
    }
    return text;
  }
}
