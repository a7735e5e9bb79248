import { setPriority } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BenchChild } from './bench-child.js';
import type { ScraperRequest } from './scraper-child.js';
import type { ScrapeStats } from './scraper.js';

const childScript = join(dirname(fileURLToPath(import.meta.url)), 'scraper-child.js');

/** Bound on one request to the scraper's process (turning it off waits for the scrapes under way, each bounded by SCRAPE_TIMEOUT_MS). */
const SCRAPER_REQUEST_TIMEOUT_MS = 30_000;

/**
 * The scraper's scheduling priority (a nice value; lower runs first): it stands for a Prometheus
 * or a dashboard on another machine, and on this one it would otherwise wait its turn for a CPU
 * behind the members it times, which its answers' times would then count as theirs. Raising it
 * needs root; without, it runs as the others do (`prioritized` says which).
 */
export const SCRAPER_NICE = -10;

/** How long the scraper's process may take to start. */
const SCRAPER_READY_TIMEOUT_MS = 10_000;

/**
 * A Scraper (scraper.ts) in a process of its own (scraper-child.ts), as the bench's scrapes are
 * timed: in the bench's process, its own event loop, held by the bench's work, made most of the
 * answers over the target late (bench/scrape-lateness.ts puts each down to what held it).
 */
export class ScraperProcess {
  readonly #child: BenchChild<ScraperRequest>;
  #closed = false;
  /** Whether its priority was raised to SCRAPER_NICE. */
  readonly prioritized: boolean;

  private constructor(child: BenchChild<ScraperRequest>, prioritized: boolean) {
    this.#child = child;
    this.prioritized = prioritized;
  }

  /** Forks the scraper of `addresses` (HTTP `host:port`) and waits until it is ready. */
  static async start(addresses: readonly string[]): Promise<ScraperProcess> {
    const child = new BenchChild<ScraperRequest>(childScript, [JSON.stringify(addresses)], 'scraper', SCRAPER_REQUEST_TIMEOUT_MS);
    try {
      await child.ready(SCRAPER_READY_TIMEOUT_MS);
    } catch (error) {
      await child.kill();
      throw error;
    }
    let prioritized = false;
    const pid = child.child.pid;
    try {
      // (A pid of 0 would be this process's own.)
      if (pid !== undefined) {
        setPriority(pid, SCRAPER_NICE);
        prioritized = true;
      }
    } catch {
      // Not root: it runs at the members' priority.
    }
    return new ScraperProcess(child, prioritized);
  }

  on(): Promise<void> {
    return this.#child.request({ cmd: 'on' });
  }

  /** Resolves once the scrapes under way have ended. */
  off(): Promise<void> {
    return this.#child.request({ cmd: 'off' });
  }

  stats(): Promise<ScrapeStats> {
    return this.#child.request({ cmd: 'stats' });
  }

  /** Its stats, and from now on it counts anew (Scraper.takeStats). */
  takeStats(): Promise<ScrapeStats> {
    return this.#child.request({ cmd: 'take-stats' });
  }

  /** Ends its connections and the process (killed if it does not end so); again, nothing. */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const exited = new Promise<void>((resolve) => this.#child.child.once('exit', () => resolve()));
    try {
      await this.#child.request({ cmd: 'close' });
      this.#child.child.disconnect();
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, SCRAPER_READY_TIMEOUT_MS).unref())]);
    } finally {
      await this.#child.kill();
    }
  }
}
