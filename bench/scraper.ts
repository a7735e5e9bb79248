/**
 * A scraper for the scheduler bench: every SCRAPE_EVERY_MS it GETs `/metrics` and `/v1/state`
 * of every member (one after the other on each member), as Prometheus and a dashboard polling
 * the state would, on kept-alive connections. As Prometheus spreads its targets' scrapes over
 * the interval, each member is scraped at its own offset in it (the members at once put three
 * answers, and this process reading them, on the machine's two cores in the same instant).
 * Each answer's time is from the request sent to its whole body read, on this process (so it
 * includes this process's own delays, which are small: it runs in a process of its own that does
 * nothing else, scraper-process.ts; its stalls are recorded, to tell them apart); its first byte's,
 * to the answer's head read, is mostly the member's (its loop reaching the request, and the work
 * before the first write), the rest the body's transfer; the member's own part, from the
 * request read to the answer's head, it says in `Server-Timing` (http/server.ts), which is
 * recorded beside. It asks for gzip, as Prometheus and
 * browsers do; the time ends with the last byte of the body as sent. One gzipped body in
 * GUNZIP_EVERY is then decompressed, off the clock, its size counted to check it is whole:
 * decompressing every one (megabytes, thirty times a second) would load the machine the
 * members share with this process.
 */
import { Agent, get } from 'node:http';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { gunzip } from 'node:zlib';
import { SERVER_TIMING_METRIC } from '../src/http/server.js';
import { LoopStalls, type StallSpan } from '../test/fixtures/loop-stalls.js';
import { wallMs } from '../test/fixtures/member-probe.js';
import { summarize } from './stats.js';

/** How often every member is scraped (issue 20: every 100 ms). */
export const SCRAPE_EVERY_MS = 100;

/** One gzipped body in this many is decompressed and checked (see above). */
export const GUNZIP_EVERY = 20;

/** How many of the slowest answers stats() names, to tell a first answer (caches cold) from the rest. */
export const SLOWEST_KEPT = 8;

/** The longest a scrape's request may take before it is abandoned and counted as an error. */
export const SCRAPE_TIMEOUT_MS = 5000;

/** The endpoints scraped on each member, in order. */
export const SCRAPED_PATHS = ['/metrics', '/v1/state'] as const;
export type ScrapedPath = (typeof SCRAPED_PATHS)[number];

export interface EndpointStats {
  readonly ms: ReturnType<typeof summarize>;
  /** From the request sent to the answer's head read. */
  readonly firstByteMs: ReturnType<typeof summarize>;
  /** The member's own time on each answer, as its Server-Timing says. */
  readonly memberMs: ReturnType<typeof summarize>;
  /** Requests that failed, timed out or were not answered 200. */
  readonly errors: number;
  /** The slowest answers (SLOWEST_KEPT), slowest first: which member, its how-manieth answer there, ms, and the member's own part of them. */
  readonly slowest: readonly AnswerTiming[];
  /** Every answer, in the order they were asked for. */
  readonly answers: readonly AnswerTiming[];
  /** The largest body read, in bytes, decompressed. */
  readonly maxBytes: number;
  /** The largest body read, in bytes as sent (gzipped when the member chose to). */
  readonly maxWireBytes: number;
}

/** One answer: which member (its index), its how-manieth answer there, when it was asked for (wall clock, ms), its time and the member's own part of it. */
export interface AnswerTiming {
  readonly member: number;
  readonly nth: number;
  readonly at: number;
  readonly ms: number;
  readonly memberMs: number;
}

export interface ScrapeStats {
  readonly endpoints: Record<ScrapedPath, EndpointStats>;
  /** Ticks at which a member was not scraped because its last scrape had not finished. */
  readonly skipped: number;
  /**
   * This process's own event-loop delay while scraping, the worst window's p99 and the max (ms): an answer read late
   * because this process was busy counts as slow, and this tells the two apart.
   */
  readonly ownLoopDelayMs: { readonly p99: number; readonly max: number };
  /** When this process's own event loop stood still while scraping (loop-stalls.ts), to line up with the slow answers. */
  readonly ownStalls: readonly StallSpan[];
}

interface Answer {
  readonly ok: boolean;
  /** The body as sent, and whether it is gzipped. */
  readonly body: Buffer;
  readonly gzipped: boolean;
  /** performance.now() as the head was read. */
  readonly headAt: number;
  /** The member's own time, from its Server-Timing (NaN when it sent none). */
  readonly memberMs: number;
}

/** The duration of the member's metric in a Server-Timing header (http/server.ts), or NaN. */
function memberTiming(header: string | undefined): number {
  const match = header === undefined ? null : new RegExp(`(?:^|,)\\s*${SERVER_TIMING_METRIC};dur=([0-9.]+)`).exec(header);
  return match === null ? Number.NaN : Number(match[1]);
}

function fetchOnce(agent: Agent, address: string, path: string): Promise<Answer> {
  const [host, port] = address.split(/:(?=\d+$)/);
  return new Promise((resolve) => {
    const headers = { 'accept-encoding': 'gzip' };
    const req = get({ host, port: Number(port), path, agent, headers, timeout: SCRAPE_TIMEOUT_MS }, (res) => {
      const headAt = performance.now();
      const memberMs = memberTiming(res.headers['server-timing']?.toString());
      const chunks: Buffer[] = [];
      const gzipped = res.headers['content-encoding'] === 'gzip';
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => resolve({ ok: res.statusCode === 200, body: Buffer.concat(chunks), gzipped, headAt, memberMs }));
      res.on('error', () => resolve({ ok: false, body: Buffer.alloc(0), gzipped, headAt, memberMs }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve({ ok: false, body: Buffer.alloc(0), gzipped: false, headAt: 0, memberMs: Number.NaN }));
  });
}

/** What a scraper saw of one endpoint. */
interface SeenEndpoint {
  readonly answers: AnswerTiming[];
  readonly firstByteMs: number[];
  errors: number;
  maxBytes: number;
  maxWireBytes: number;
}

interface Seen {
  readonly endpoints: Record<ScrapedPath, SeenEndpoint>;
  skipped: number;
  loopDelayMs: { p99: number; max: number };
  readonly stalls: LoopStalls;
}

function seenNothing(): Seen {
  const endpoint = (): SeenEndpoint => ({ answers: [], firstByteMs: [], errors: 0, maxBytes: 0, maxWireBytes: 0 });
  return { endpoints: { '/metrics': endpoint(), '/v1/state': endpoint() }, skipped: 0, loopDelayMs: { p99: 0, max: 0 }, stalls: new LoopStalls(wallMs) };
}

/**
 * Scrapes `addresses` (HTTP `host:port`) while on (between `on()` and `off()`, as often as
 * wanted); `stats()` sums every time it was on (since the last `takeStats()`). `close()` ends its connections.
 */
export class Scraper {
  readonly #addresses: readonly string[];
  readonly #agent = new Agent({ keepAlive: true, maxSockets: 1 });
  /** What was seen since the scraper was made or its stats were last taken (takeStats). */
  #seen = seenNothing();
  readonly #nth = new Map<string, number>();
  readonly #busy = new Map<string, Promise<void>>();
  /**
   * This process's loop delay: watched while on (resolution 1 ms, finer than the answers it is
   * read beside), a histogram each time it is on, so that the time off is not counted; the
   * worst p99 of those and the longest delay are kept (in #seen).
   */
  #loop: IntervalHistogram | null = null;
  #gzipped = 0;
  /** Each member's timer: its offset in the interval first, then the interval. */
  readonly #timers: NodeJS.Timeout[] = [];

  constructor(addresses: readonly string[]) {
    this.#addresses = addresses;
  }

  /** Scrapes the k-th of n members from k/n of SCRAPE_EVERY_MS on, and every SCRAPE_EVERY_MS after. */
  on(): void {
    if (this.#timers.length > 0) return;
    this.#loop = monitorEventLoopDelay({ resolution: 1 });
    this.#loop.enable();
    this.#seen.stalls.start();
    this.#addresses.forEach((address, k) => {
      const offsetMs = (k * SCRAPE_EVERY_MS) / this.#addresses.length;
      this.#timers.push(
        setTimeout(() => {
          this.#tick(address);
          this.#timers[k] = setInterval(() => this.#tick(address), SCRAPE_EVERY_MS);
        }, offsetMs),
      );
    });
  }

  /** Stops scraping; resolves once the scrapes under way have ended. */
  async off(): Promise<void> {
    // A member's timer is its offset's timeout or its interval: clearTimeout clears either.
    for (const timer of this.#timers.splice(0)) clearTimeout(timer);
    await Promise.all(this.#busy.values());
    const seen = this.#seen;
    seen.stalls.stop();
    if (this.#loop !== null) {
      this.#loop.disable();
      seen.loopDelayMs = { p99: Math.max(seen.loopDelayMs.p99, this.#loop.percentile(99) / 1e6), max: Math.max(seen.loopDelayMs.max, this.#loop.max / 1e6) };
      this.#loop = null;
    }
  }

  /** What it saw since it was made, or since the last takeStats(). */
  stats(): ScrapeStats {
    const seen = this.#seen;
    const endpoint = (path: ScrapedPath): EndpointStats => {
      const e = seen.endpoints[path];
      const slowest = [...e.answers].sort((a, b) => b.ms - a.ms).slice(0, SLOWEST_KEPT);
      return { ms: summarize(e.answers.map((a) => a.ms)), firstByteMs: summarize(e.firstByteMs), memberMs: summarize(e.answers.map((a) => a.memberMs)), errors: e.errors, slowest, answers: e.answers, maxBytes: e.maxBytes, maxWireBytes: e.maxWireBytes };
    };
    return { endpoints: { '/metrics': endpoint('/metrics'), '/v1/state': endpoint('/v1/state') }, skipped: seen.skipped, ownLoopDelayMs: seen.loopDelayMs, ownStalls: seen.stalls.spans };
  }

  /** stats(), and from now on counts anew (its connections stay open: a warm-up's stats are taken so). Only while off. */
  takeStats(): ScrapeStats {
    const stats = this.stats();
    this.#seen = seenNothing();
    return stats;
  }

  async close(): Promise<void> {
    await this.off();
    this.#agent.destroy();
  }

  #tick(address: string): void {
    if (this.#busy.has(address)) {
      this.#seen.skipped++;
      return;
    }
    this.#busy.set(address, this.#scrape(address).finally(() => this.#busy.delete(address)));
  }

  async #scrape(address: string): Promise<void> {
    for (const path of SCRAPED_PATHS) {
      const started = performance.now();
      const at = wallMs(started);
      const answer = await fetchOnce(this.#agent, address, path);
      const ms = performance.now() - started;
      const body = !answer.gzipped ? answer.body : this.#gzipped++ % GUNZIP_EVERY === 0 ? await gunzipped(answer.body) : undefined;
      const e = this.#seen.endpoints[path];
      if (answer.ok && body !== null) {
        const nth = (this.#nth.get(`${address}${path}`) ?? 0) + 1;
        this.#nth.set(`${address}${path}`, nth);
        e.answers.push({ member: this.#addresses.indexOf(address), nth, at, ms, memberMs: answer.memberMs });
        e.firstByteMs.push(answer.headAt - started);
      } else e.errors++;
      e.maxBytes = Math.max(e.maxBytes, body?.length ?? 0);
      e.maxWireBytes = Math.max(e.maxWireBytes, answer.body.length);
    }
  }
}

/** A gzipped body decompressed, or null when it is not valid gzip (counted as an error). */
function gunzipped(body: Buffer): Promise<Buffer | null> {
  return new Promise((resolve) => gunzip(body, (error, out) => resolve(error === null ? out : null)));
}
