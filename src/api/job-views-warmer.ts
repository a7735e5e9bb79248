import type { JobStates } from './job-states.js';
import type { SchedulerState } from '../scheduler/state.js';
import type { TimerHandle, Timers } from '../time/clock.js';

/**
 * How often the warmer looks for work when it has none left: a snapshot installed, a next slot
 * that came. Jobs changed by a command bring a turn at once (changed()).
 */
export const JOB_VIEWS_WARM_EVERY_MS = 25;

/**
 * Views built in one turn of the event loop, at most, and the time a turn may take (on the
 * timers' clock): a slot due then waits for little, and a turn follows at once while any are
 * left. The time bounds a turn on a busy machine, where each view takes longer; the count bounds
 * it where the timers' clock does not move while code runs (simulated time). The turn right
 * after commands applied builds a view for each of them first, whatever the time (changed()).
 */
export const JOB_VIEWS_WARM_BUILDS_PER_TURN = 2048;
export const JOB_VIEWS_WARM_TURN_MS = 2;

/**
 * How long after the last read of the jobs the warmer goes on: an app that read state() once,
 * at start, say, is not made to build every changed view for the rest of its life. The next
 * read arms it again (and builds what changed meanwhile itself).
 */
export const JOB_VIEWS_WARM_IDLE_MS = 60_000;

/** What the warmer builds views of: the scheduler's state and the cluster's time now; null while the member is not running. */
export type JobViewsSource = () => { readonly state: SchedulerState; readonly nowMs: number } | null;

/**
 * Makes the next list of state().jobs ahead of the next call (JobStates.warm), a bounded turn at
 * a time, so that a call after many jobs changed (registered at start, or a snapshot installed)
 * finds it made rather than building the views and looking at every job changed, holding the
 * event loop for as long (tens of milliseconds at ten thousand jobs). It runs once armed by a call of state() (or by
 * the `http` option's warmer, which reads the jobs every 100 ms), until JOB_VIEWS_WARM_IDLE_MS
 * pass with no call: a member whose state() nobody reads builds no views.
 */
export class JobViewsWarmer {
  readonly #timers: Timers;
  readonly #views: JobStates;
  readonly #source: JobViewsSource;
  #timer: TimerHandle | null = null;
  /** Whether the timer set is for a turn at once (changed()), not the next look. */
  #atOnce = false;
  /** When the jobs were last read (arm()), on the timers' clock. */
  #readAtMs = 0;
  #stopped = false;
  /** Whether a turn is queued for when the code that changed jobs returns (see changed()). */
  #turnQueued = false;
  /** Commands applied since that turn was queued: the views it builds whatever the time. */
  #owed = 0;

  constructor(timers: Timers, views: JobStates, source: JobViewsSource) {
    this.#timers = timers;
    this.#views = views;
    this.#source = source;
  }

  /** The jobs are read now: starts warming, if not under way (and not stopped), for JOB_VIEWS_WARM_IDLE_MS more. */
  arm(): void {
    this.#readAtMs = this.#timers.now();
    if (this.#timer === null && !this.#stopped) this.#next(JOB_VIEWS_WARM_EVERY_MS);
  }

  /**
   * Jobs changed (a command applied): while armed, a turn is taken as soon as the code that
   * applied the commands returns (a microtask), and the next one comes at once rather than at the
   * next look, so that a call soon after finds their views built. A turn that waited for the next
   * turn of the event loop came after whatever was due by then: three members in one process each
   * applying a batch of registrations, or an app's timer that reads state(), and the call built
   * thousands of views itself. Called once for each command applied: the turn right after them
   * builds a view for each (a command changes one job, mostly) before its time bound counts, so
   * that the views keep up with the commands however busy the loop is. A turn bounded by time
   * alone fell behind registrations applied by the thousand on a busy loop, and the next call
   * built the thousands left itself. What that adds to the loop's turn is at most a view per
   * command applied (of the jobs changed since the last list: after a snapshot installed, of any
   * job), each cheaper than a command's apply.
   */
  changed(): void {
    if (this.#timer === null) return;
    this.#owed++;
    if (!this.#turnQueued) {
      this.#turnQueued = true;
      queueMicrotask(() => {
        this.#turnQueued = false;
        const owed = this.#owed;
        this.#owed = 0;
        if (this.#timer !== null) this.turn(owed);
      });
    }
    if (this.#atOnce) return;
    this.#timers.clearTimeout(this.#timer);
    this.#next(0);
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) this.#timers.clearTimeout(this.#timer);
    this.#timer = null;
  }

  /**
   * One turn: builds `owed` views whatever the time, then on up to JOB_VIEWS_WARM_BUILDS_PER_TURN
   * within JOB_VIEWS_WARM_TURN_MS; returns whether none are left.
   */
  turn(owed = 0): boolean {
    const source = this.#source();
    if (source === null) return true;
    const untilMs = this.#timers.now() + JOB_VIEWS_WARM_TURN_MS;
    const before = this.#views.builds;
    const outOfTime = (): boolean => this.#views.builds - before >= owed && this.#timers.now() >= untilMs;
    return this.#views.warm(source.state, source.nowMs, Math.max(owed, JOB_VIEWS_WARM_BUILDS_PER_TURN), outOfTime);
  }

  #next(delayMs: number): void {
    this.#atOnce = delayMs === 0;
    this.#timer = this.#timers.setTimeout(() => {
      this.#timer = null;
      this.#atOnce = false;
      if (this.#stopped || this.#timers.now() - this.#readAtMs > JOB_VIEWS_WARM_IDLE_MS) return;
      this.#next(this.turn() ? JOB_VIEWS_WARM_EVERY_MS : 0);
    }, delayMs);
  }
}
