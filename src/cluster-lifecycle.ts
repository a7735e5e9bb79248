import type { ClusterState } from './api/state.js';
import { CronraftError, NotRunningError } from './errors.js';

export type Status = ClusterState['status'];

/** What starting and stopping a member do, in the Cluster's parts (cluster-start.ts). */
export interface LifecycleSteps {
  /**
   * Opens every part and joins the cluster. Between its steps it asks `Lifecycle.starting` and,
   * once a stop has come, throws rather than open more.
   */
  start(): Promise<void>;
  /** A graceful stop's first part: the member hands its work over (and leaves, asked to). */
  handOver(leave: boolean): Promise<void>;
  /** Closes whatever is open; called again, it closes what is left. */
  close(): Promise<void>;
}

/**
 * The Cluster's status and the order of its start and stop. A stop that comes while the member
 * starts ends the start at its next step and waits for it, then stops what it opened: before,
 * the start went on past the stop, and a member stopped early in its start kept running, its
 * port and data directory held, with both calls resolved. start() resolves only once the member
 * runs, so such a start rejects (NotRunningError, state 'stopping').
 */
export class Lifecycle {
  #status: Status = 'new';
  /** The start once called: it settles with null once the member runs, or with why it does not. */
  #starting: Promise<unknown> | null = null;
  /** The stop under way, which a second stop() call waits for. */
  #stopping: Promise<void> | null = null;
  readonly #steps: LifecycleSteps;
  /** The first fatal error, which a start under way rejects with. */
  #fatal: unknown = null;

  constructor(steps: LifecycleSteps) {
    this.#steps = steps;
  }

  get status(): Status {
    return this.#status;
  }

  /** Whether the start is still under way and no stop has come. */
  get starting(): boolean {
    return this.#status === 'starting';
  }

  /** The fatal error that failed the member; null unless it failed. */
  get fatal(): unknown {
    return this.#status === 'failed' ? this.#fatal : null;
  }

  /** The error of a call that needs the member running, as it is now: a failed member's names the fatal error. */
  notRunning(): NotRunningError {
    return new NotRunningError(this.#status, this.#status === 'failed' && this.#fatal !== null ? { cause: this.#fatal } : undefined);
  }

  /** A fatal error stopped the member (its error is told as an 'error' event). */
  failed(error: unknown): void {
    this.#status = 'failed';
    this.#fatal ??= error;
  }

  async start(): Promise<void> {
    if (this.#status !== 'new') throw new CronraftError('CRONRAFT_ALREADY_STARTED', this.#status === 'stopped' || this.#status === 'stopping' ? `A Cluster starts once, and this one was stopped (it is ${this.#status}): make a new one` : `start() was already called (the member is ${this.#status})`);
    this.#status = 'starting';
    this.#starting = this.#start();
    const notStarted = await this.#starting;
    if (notStarted !== null) throw notStarted;
  }

  async #start(): Promise<unknown> {
    try {
      await this.#steps.start();
    } catch (error) {
      // A stop came: it closes what the start opened, once this returns.
      if (this.#status === 'stopping') return new NotRunningError('stopping', { cause: error });
      // Why it failed, for state().failure and the calls refused after, as a fatal error's.
      this.failed(error);
      try {
        await this.#steps.close();
      } catch (closeError) {
        return closeError;
      }
      return error;
    }
    // A fatal error during the start (a listener's, a disk's) failed the member: it does not run.
    // Before, the start resolved and set the status to running, over the failure.
    if (this.#status === 'failed') {
      await this.#steps.close().catch(() => undefined);
      return this.#fatal;
    }
    // Every part is open, but a stop came after the start's last step: it stops them gracefully.
    if (this.#status === 'stopping') return new NotRunningError('stopping');
    this.#status = 'running';
    return null;
  }

  stop(leave: boolean): Promise<void> {
    // A second call while the first is under way waits for it: an app that stops from two
    // places (a signal handler and a shutdown hook) must not exit mid-run on the second's word.
    if (this.#stopping !== null) return this.#stopping;
    switch (this.#status) {
      case 'stopped':
        return Promise.resolve();
      case 'new':
        this.#status = 'stopped';
        return Promise.resolve();
      case 'failed':
        // A member that failed (its error told, as an 'error' event and to what waited on it) has
        // nothing left to hand over: what it still holds is closed, and a close that fails as
        // well (the disk that failed it) is no news. Its status stays 'failed'.
        // A start that failed may still be closing what it opened: the stop resolves after it.
        this.#stopping = (async () => {
          await this.#starting;
          await this.#steps.close().catch(() => undefined);
        })();
        return this.#stopping;
      case 'starting': {
        this.#status = 'stopping';
        const started = this.#starting;
        this.#stopping = (async () => {
          await started;
          // A start that failed closed what it opened, and the member stays failed.
          if (this.#status !== 'failed') await this.#stopGracefully(leave);
        })();
        return this.#stopping;
      }
      default:
        this.#status = 'stopping';
        this.#stopping = this.#stopGracefully(leave);
        return this.#stopping;
    }
  }

  async #stopGracefully(leave: boolean): Promise<void> {
    try {
      await this.#steps.handOver(leave);
      await this.#steps.close();
    } catch (error) {
      // A stop that failed (a disk that fails as the store closes) leaves the member failed, not
      // stopping for good; stop() rejects with why.
      this.#status = 'failed';
      throw error;
    }
    this.#status = 'stopped';
  }
}
