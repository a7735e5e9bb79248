import { MAX_WAITING_RUNS, RunQueue } from '../../scheduler/run-queue.js';

/** What RunPermits needs of a run: its job, its priority, and where it stands. */
export interface PermittedRun {
  readonly job: string;
  readonly priority: number;
  /**
   * `armed`: its timer is set (before RunPermits sees it). `queued`: it fired and waits for
   * another run of its job to end (overlap 'queue'). `ready`: it waits for a free run permit
   * (maxConcurrent). `running`: it was let start. `done`: over, or dropped.
   */
  phase: 'armed' | 'queued' | 'ready' | 'running' | 'done';
  /** While queued or ready: lets the run start (true) or drops it (false). */
  resume: ((go: boolean) => void) | null;
  /** When it was let start (the cluster's time), once running: a slot due before that did not overlap it. */
  startedAtMs: number | undefined;
}

export interface RunPermitsOptions<T> {
  /** Runs at once on this member; more wait, by priority. */
  readonly maxConcurrent: number;
  /** The timers' monotonic time: how long a run waited is measured on it (priority aging). */
  readonly monotonicNow: () => number;
  /** The cluster's time: a run is stamped with it as it is let start. */
  readonly clusterNow: () => number;
  /** Whether a queued run must still wait: another run of its job, not itself queued, is in progress. */
  readonly blocked: (run: T) => boolean;
  /** Whether runs may start at all now (not once the member drains or stops). */
  readonly open: () => boolean;
}

const NONE: ReadonlySet<never> = new Set();

/**
 * The permits to run on this member, and the runs that wait for one or hold one, between their
 * slot's firing and their end: queued behind another run of
 * their job, ready and waiting for a free run permit (at most `maxConcurrent` run at once; the
 * rest wait in a RunQueue, by priority with aging), and running. What it holds per job is what
 * this member knows at once of its own overlap.
 */
export class RunPermits<T extends PermittedRun> {
  readonly #o: RunPermitsOptions<T>;
  /** Per job, the runs that are queued, ready or running. */
  readonly #active = new Map<string, Set<T>>();
  /** Runs waiting for another run of their job to end (overlap 'queue'), in the order they fired. */
  readonly #queued = new Set<T>();
  /** Runs waiting for a free run permit, by priority; their waits are aged on the monotonic time. */
  readonly #ready = new RunQueue<T>();
  /** Runs let start and not yet released: at most maxConcurrent. */
  #running = 0;

  constructor(options: RunPermitsOptions<T>) {
    this.#o = options;
  }

  /** This member's runs of `job` that are queued, ready or running. */
  activeOf(job: string): ReadonlySet<T> {
    return this.#active.get(job) ?? NONE;
  }

  /** Runs let start and not yet released. */
  get runningCount(): number {
    return this.#running;
  }

  /** How many runs wait behind another run of their job. */
  get queuedCount(): number {
    return this.#queued.size;
  }

  /**
   * Lets `run` wait, `queued` behind another run of its job or `ready` for a run permit. Resolves
   * true once it may start (it then holds a run permit until `release`), false if it was dropped
   * first. Null, and nothing changed, when MAX_WAITING_RUNS runs are ready already: the caller
   * hands the slot back rather than let the member's backlog grow.
   */
  wait(run: T, phase: 'queued' | 'ready'): Promise<boolean> | null {
    if (phase === 'ready' && this.#ready.size >= MAX_WAITING_RUNS) return null;
    run.phase = phase;
    if (phase === 'queued') this.#queued.add(run);
    else this.#ready.push(run, run.priority, this.#o.monotonicNow());
    let set = this.#active.get(run.job);
    if (set === undefined) this.#active.set(run.job, (set = new Set()));
    set.add(run);
    return new Promise<boolean>((resolve) => (run.resume = resolve));
  }

  /**
   * Lets waiting runs go: queued ones whose job has nothing else in progress move on to wait for
   * a run permit (in the order they fired, one per job at a time), and the best ready ones start
   * while run permits are free.
   */
  pump(): void {
    if (!this.#o.open()) return;
    const blockedJobs = new Set<string>();
    for (const run of this.#queued) {
      if (blockedJobs.has(run.job) || this.#o.blocked(run)) {
        blockedJobs.add(run.job);
        continue;
      }
      // Ahead of the job's other queued runs (it fired first), and nothing else of the job runs.
      this.#queued.delete(run);
      run.phase = 'ready';
      this.#ready.push(run, run.priority, this.#o.monotonicNow());
      blockedJobs.add(run.job);
    }
    while (this.#running < this.#o.maxConcurrent) {
      const next = this.#ready.shift();
      if (next === undefined) break;
      next.phase = 'running';
      next.startedAtMs = this.#o.clusterNow();
      this.#running += 1;
      const resume = next.resume;
      next.resume = null;
      resume?.(true);
    }
  }

  /** Drops a run that waits (queued or ready): it does not start, and its place may let another go. */
  drop(run: T): void {
    if (run.phase !== 'queued' && run.phase !== 'ready') return;
    this.#queued.delete(run);
    this.#ready.remove(run);
    this.settle(run);
    const resume = run.resume;
    run.resume = null;
    resume?.(false);
    this.pump();
  }

  /** A run that was let start has ended: its run permit is free, and its job's queued runs may go. */
  release(run: T): void {
    this.#running -= 1;
    this.settle(run);
    this.pump();
  }

  /** The run is over (or never started): it no longer counts as in progress here. */
  settle(run: T): void {
    run.phase = 'done';
    const set = this.#active.get(run.job);
    set?.delete(run);
    if (set?.size === 0) this.#active.delete(run.job);
  }
}
