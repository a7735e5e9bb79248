import { prepareGzip } from './gzip-pieces.js';
import type { StateJson } from './state-json.js';
import type { ClusterState } from '../api/state.js';

/** How often the warmer looks for jobs changed since it last wrote their JSON. */
export const STATE_WARM_EVERY_MS = 100;

/**
 * Blocks of jobs (STATE_JSON_BLOCK_JOBS each) written and compressed in one turn of the event
 * loop: a block that no job of which was written before costs about a millisecond, so a turn
 * stays well within what a slot due then may wait.
 */
export const STATE_WARM_BLOCKS_PER_TURN = 2;

/**
 * Keeps the JSON of the jobs, and its gzip, ready for the next answer of /v1/state and /v1/jobs:
 * every STATE_WARM_EVERY_MS it writes the blocks of the jobs changed since (state-json.ts) and
 * compresses them (gzip-pieces.ts), STATE_WARM_BLOCKS_PER_TURN blocks a turn. Without it, the
 * first answer after many jobs came (registered at start, or a snapshot installed) wrote and
 * compressed them all at once, holding the event loop, and any slot due, for tens of
 * milliseconds at ten thousand jobs. An answer still writes what the warmer has not reached yet.
 */
export class StateWarmer {
  readonly #jobs: () => ClusterState['jobs'];
  readonly #json: StateJson;
  #timer: NodeJS.Timeout | null = null;
  /** The list whose blocks are all written and compressed, and the warming under way. */
  #warmed: ClusterState['jobs'] | null = null;
  #warming = false;
  #stopped = false;

  constructor(jobs: () => ClusterState['jobs'], json: StateJson) {
    this.#jobs = jobs;
    this.#json = json;
  }

  start(): void {
    if (this.#timer !== null) return;
    this.#stopped = false;
    // A warm that fails (state() threw) leaves the answers to write the jobs, and to answer the
    // error: it must not end the process as an unhandled rejection.
    this.#timer = setInterval(() => void this.warm().catch(() => undefined), STATE_WARM_EVERY_MS);
    // The warmer keeps nothing alive: an app that ends its work ends the process.
    this.#timer.unref();
  }

  stop(): void {
    this.#stopped = true;
    if (this.#timer !== null) clearInterval(this.#timer);
    this.#timer = null;
  }

  /**
   * Writes and compresses the blocks of the jobs as they are now; resolves when done (or
   * stopped). A list changed meanwhile is the next look's: its blocks whose jobs did not change
   * are kept, and an answer writes whatever is left.
   */
  async warm(): Promise<void> {
    if (this.#warming) return;
    this.#warming = true;
    try {
      const list = this.#jobs();
      if (list === this.#warmed) return;
      for (let from: number | null = 0; from !== null; ) {
        const { written, next } = this.#json.warm(list, from, STATE_WARM_BLOCKS_PER_TURN);
        for (const piece of written) prepareGzip(piece);
        from = next;
        if (from !== null) {
          await new Promise<void>((resolve) => setImmediate(resolve));
          if (this.#stopped) return;
        }
      }
      this.#warmed = list;
    } finally {
      this.#warming = false;
    }
  }
}
