/**
 * Part of `npm run bench -- scheduler`: whether scraping delays slots (issue 20). Slot lateness
 * is measured in alternating windows without and with a scraper (bench/scraper.ts, in a process
 * of its own: scraper-process.ts) hitting `/metrics` and `/v1/state` of every member every 100 ms,
 * so that both see the same machine; the scraper's response times are its own figures. `benchScrapeManyJobs` does the same on
 * members that each hold 10,000 jobs, where the answers are largest.
 */
import { ProcessCluster } from '../test/fixtures/process-cluster.js';
import { SUPPORTED } from '../src/version/versions.js';
import { JOBS_TARGETS } from './jobs-registered.js';
import { EVERY_MS, httpAddresses, now, schedule, sleep, starts } from './member-runs.js';
import { SCRAPED_PATHS, SLOWEST_KEPT, type AnswerTiming, type ScrapedPath, type ScrapeStats } from './scraper.js';
import { SCRAPER_NICE, ScraperProcess } from './scraper-process.js';
import { fmt, summarize } from './stats.js';
import { overlapMs, overlapWaitMs } from './tail.js';
import type { ProbeReport } from '../test/fixtures/member-probe.js';
import type { StallSpan } from '../test/fixtures/loop-stalls.js';

/** Each window's length: two bursts of slots, without the scraper, then two with it, and so on. */
export const SCRAPE_WINDOW_MS = 2 * EVERY_MS;

/** The target (issue 20): each answer of `/metrics` and `/v1/state` within this, at 10,000 jobs. */
export const SCRAPE_TARGET_MS = 10;

/** How long the members may take to agree on the version, and to show the many jobs registered, before the bench gives up. */
const REGISTER_GIVE_UP_MS = 120_000;

/** How long the members may take to stop cleanly before they are killed. */
const STOP_WAIT_MS = 10_000;

/**
 * How long the scraper scrapes before the windows, not counted in them: each member's first
 * answers open its connection and run its answers' code for the first time (the member's first
 * scrapes, once in its life), and are shown on a row of their own.
 */
export const SCRAPE_WARMUP_MS = 1000;

/** Jobs every second beside the many: their lateness is what the scraping may delay. */
const EVERY_SECOND_JOBS = 5;

export interface WithAndWithout {
  readonly without: ReturnType<typeof summarize>;
  readonly with: ReturnType<typeof summarize>;
  readonly scrape: ScrapeStats;
  /** The scrapes of the warm-up before the windows (SCRAPE_WARMUP_MS), not counted in `scrape`. */
  readonly warmup: ScrapeStats;
  /** Whether the scraper's process ran at a raised priority (scraper-process.ts, SCRAPER_NICE). */
  readonly prioritized: boolean;
  /**
   * The members' CPU time (user and system, all three) in the windows with the scraper less the
   * same in the windows without, per member scraped: what a scrape of both costs a member, a
   * figure that the machine's load stretches less than the answers' times.
   */
  readonly cpuPerScrapeMs: number;
}

/** The members' CPU time so far, in all. */
async function cpuOf(cluster: ProcessCluster): Promise<number> {
  const cpu = await Promise.all(cluster.members.map((m) => m.request<{ cpuMs: number }>('cpu')));
  return cpu.reduce((sum, c) => sum + c.cpuMs, 0);
}

/**
 * Lateness of the first attempts of the slots of jobs `prefix`… over `seconds` without the
 * scraper and `seconds` with it, in alternating windows. The windows begin half a period after
 * a burst of slots, so that turning the scraper on or off falls between bursts.
 */
export async function latenessWithAndWithout(cluster: ProcessCluster, scraper: ScraperProcess, seconds: number, prefix: string): Promise<WithAndWithout> {
  const seen = starts(cluster, 0).filter((r) => r.job.startsWith(prefix));
  if (seen.length === 0) throw new Error(`no run of ${prefix}… seen yet`);
  await scraper.on();
  await sleep(SCRAPE_WARMUP_MS);
  await scraper.off();
  const warmup = await scraper.takeStats();
  const phase = Math.max(...seen.map((r) => r.slotMs)) % EVERY_MS;
  let t = Math.ceil((now() - phase) / EVERY_MS) * EVERY_MS + phase + EVERY_MS / 2;
  const windows: Array<{ from: number; to: number; scraped: boolean }> = [];
  const cpuMs = { with: 0, without: 0 };
  for (let i = 0; i < Math.ceil((seconds * 1000) / SCRAPE_WINDOW_MS); i++) {
    for (const scraped of [false, true]) {
      await sleep(t - now());
      const cpuBefore = await cpuOf(cluster);
      if (scraped) await scraper.on();
      windows.push({ from: t, to: t + SCRAPE_WINDOW_MS, scraped });
      t += SCRAPE_WINDOW_MS;
      await sleep(t - now());
      if (scraped) await scraper.off();
      cpuMs[scraped ? 'with' : 'without'] += (await cpuOf(cluster)) - cpuBefore;
    }
  }
  // The last window's runs report their start within their lateness.
  await sleep(EVERY_MS);
  const runs = starts(cluster, windows[0]!.from).filter((r) => r.job.startsWith(prefix) && r.attempt === 1);
  const lateness = (scraped: boolean): number[] =>
    runs.filter((r) => windows.some((w) => w.scraped === scraped && r.slotMs >= w.from && r.slotMs < w.to)).map((r) => r.at - r.slotMs);
  const scrape = await scraper.stats();
  const memberScrapes = scrape.endpoints['/v1/state'].ms.n + scrape.endpoints['/v1/state'].errors;
  return { without: summarize(lateness(false)), with: summarize(lateness(true)), scrape, warmup, prioritized: scraper.prioritized, cpuPerScrapeMs: (cpuMs.with - cpuMs.without) / memberScrapes };
}

/** Polls `done` every half second until it holds; throws after REGISTER_GIVE_UP_MS. */
async function until(done: () => Promise<boolean>, what: string): Promise<void> {
  const deadline = now() + REGISTER_GIVE_UP_MS;
  while (!(await done())) {
    if (now() > deadline) throw new Error(`not ${what} within ${REGISTER_GIVE_UP_MS} ms`);
    await sleep(500);
  }
}

export interface ScrapeManyJobsResult {
  readonly jobs: number;
  /** From the first schedule-many request until the leader showed every job with three handlers. */
  readonly registerMs: number;
  readonly everySecondJobs: number;
  readonly lateness: WithAndWithout;
  /** What each member's probe saw meanwhile (its event loop's stalls, its GC pauses), to line the slow answers up with. */
  readonly members: readonly Pick<ProbeReport, 'stalls' | 'gc'>[];
}

/**
 * Three member processes with the `http` option, each registering the same JOBS_TARGETS.jobs
 * jobs (the most a cluster holds: EVERY_SECOND_JOBS every second, the rest { every: '1h' }, as
 * bench/jobs-registered.ts registers them in one process); then the every-second jobs' lateness
 * without and with the scraper.
 */
export async function benchScrapeManyJobs(seconds: number): Promise<ScrapeManyJobsResult> {
  const jobs = JOBS_TARGETS.jobs;
  const cluster = await ProcessCluster.create(3, { http: { listen: '127.0.0.1:0' } });
  let scraper: ScraperProcess | null = null;
  try {
    await cluster.startAll();
    await cluster.waitForLeader();
    // As bench/jobs-registered-run.ts: every member has learned the cluster's time and runs this
    // release's version, so that the registrations go in batches as on any start after the first.
    await until(async () => (await Promise.all(cluster.members.map((m) => m.state()))).every((s) => s.clock.synced && s.version.active === SUPPORTED.stateMachine.max), 'the members synced, on the current version');
    await schedule(cluster.members, EVERY_SECOND_JOBS, 'tick');
    const started = now();
    await Promise.all(cluster.members.map((m) => m.request('schedule-many', { prefix: 'many', count: jobs - EVERY_SECOND_JOBS, every: '1h' })));
    await until(async () => {
      const state = await (await cluster.waitForLeader()).state();
      return state.jobs.length === jobs && state.jobs.every((j) => j.handlers.length === 3);
    }, `${jobs} jobs registered`);
    const registerMs = now() - started;
    // Snapshots that the registrations began finish, and the every-second jobs run meanwhile.
    await sleep(3000);
    scraper = await ScraperProcess.start(httpAddresses(cluster));
    await Promise.all(cluster.members.map((m) => m.request('probe-start', { stalls: true })));
    const lateness = await latenessWithAndWithout(cluster, scraper, seconds, 'tick');
    const members = await Promise.all(cluster.members.map((m) => m.request<ProbeReport>('probe-stop')));
    return { jobs, registerMs, everySecondJobs: EVERY_SECOND_JOBS, lateness, members: members.map(({ stalls, gc }) => ({ stalls, gc })) };
  } finally {
    await scraper?.close();
    // A clean stop, so that a member run with --cpu-prof (CRONRAFT_MEMBER_EXEC_ARGV) writes its profile.
    await Promise.race([Promise.all(cluster.members.map((m) => m.stop())), sleep(STOP_WAIT_MS)]);
    await cluster.cleanup();
  }
}

const ms = (s: ReturnType<typeof summarize>): string => `${fmt(s.p50)} / ${fmt(s.p99)} / ${fmt(s.max)} ms`;

/** Rows of a lateness without and with the scraper: p50 and p99 of each, their ratio, and the scraper's answers. */
export function withAndWithoutRows(label: string, r: WithAndWithout): string[][] {
  const rows = [
    [`${label}: start lateness p50 / p99 without scraping (${r.without.n} slots)`, `${fmt(r.without.p50)} / ${fmt(r.without.p99)} ms`, ''],
    [`${label}: start lateness p50 / p99 scraped every 100 ms (${r.with.n} slots)`, `${fmt(r.with.p50)} / ${fmt(r.with.p99)} ms`, ''],
    [`${label}: ratio scraped / without, p50 and p99`, `${fmt(r.with.p50 / r.without.p50)} / ${fmt(r.with.p99 / r.without.p99)}`, ''],
  ];
  for (const [path, e] of Object.entries(r.scrape.endpoints)) {
    rows.push([`${label}: ${path} answer p50 / p99 / max (${e.ms.n} answers, ${e.errors} errors, ${fmt(e.maxBytes / 1024, 0)} KiB, ${fmt(e.maxWireBytes / 1024, 0)} KiB as sent)`, ms(e.ms), '']);
    rows.push([`${label}: ${path} its first byte p50 / p99 / max (the rest: the body's transfer)`, ms(e.firstByteMs), '']);
    rows.push([`${label}: ${path} the member's own time p50 / p99 / max (its Server-Timing: request read to answer's head)`, ms(e.memberMs), '']);
    const slowest = e.slowest.map((a) => `${fmt(a.ms)} (m${a.member + 1} #${a.nth}, own ${fmt(a.memberMs)})`).join(', ');
    rows.push([`${label}: ${path} slowest answers, ms (member, its n-th answer, the member's own time)`, slowest, '']);
  }
  const warm = (path: ScrapedPath): string => {
    const e = r.warmup.endpoints[path];
    return `${path} ${fmt(e.ms.max)} (own ${fmt(e.memberMs.max)})`;
  };
  rows.push([`${label}: the first ${SCRAPE_WARMUP_MS / 1000} s of scraping, not counted above: answers max, ms (the member's own time)`, SCRAPED_PATHS.map(warm).join(', '), '']);
  rows.push([`${label}: scrapes skipped (the last not finished)`, String(r.scrape.skipped), '']);
  const priority = r.prioritized ? `its own process at nice ${SCRAPER_NICE}` : 'its own process, at the members\' priority (not root)';
  rows.push([`${label}: the scraper's own event-loop delay, worst window's p99 / max (its part of an answer's time; ${priority})`, `${fmt(r.scrape.ownLoopDelayMs.p99)} / ${fmt(r.scrape.ownLoopDelayMs.max)} ms`, '']);
  rows.push([`${label}: member CPU per scrape of both (CPU scraped less CPU not, per member scraped)`, `${fmt(r.cpuPerScrapeMs)} ms`, '']);
  return rows;
}

/**
 * The answers over the target, each put down to what held it, where something did: within the
 * target but for the scraper's own stalls meanwhile (this process, not the member), else but for
 * the member's (its event loop stood still: a GC pause, other work, or its thread waiting for a
 * CPU the machine gave to other threads: counted apart when that wait alone held it past the
 * target), else to neither (the machine's scheduler, or work too short to count as a stall).
 */
export function slowAnswerCauses(answers: readonly AnswerTiming[], own: readonly StallSpan[], members: ScrapeManyJobsResult['members']): SlowAnswers {
  const counts = { over: 0, scraper: 0, member: 0, memberGc: 0, memberWaited: 0, neither: 0, each: [] as string[] };
  for (const a of answers) {
    if (a.ms <= SCRAPE_TARGET_MS) continue;
    counts.over++;
    const excess = a.ms - SCRAPE_TARGET_MS;
    const to = a.at + a.ms;
    const member = members[a.member];
    const ownStalled = overlapMs(own, a.at, to);
    const memberStalled = member === undefined ? 0 : overlapMs(member.stalls, a.at, to);
    const memberGc = member === undefined ? 0 : overlapMs(member.gc, a.at, to);
    const memberWaited = member === undefined ? 0 : overlapWaitMs(member.stalls, a.at, to);
    counts.each.push(`${fmt(a.ms)} (m${a.member + 1} #${a.nth}, own ${fmt(a.memberMs)}: the scraper stalled ${fmt(ownStalled)}, the member ${fmt(memberStalled)}, its GC ${fmt(memberGc)}, its wait for a CPU ${fmt(memberWaited)})`);
    if (ownStalled >= excess) counts.scraper++;
    else if (memberStalled >= excess) {
      counts.member++;
      if (memberGc > 0) counts.memberGc++;
      if (memberWaited >= excess) counts.memberWaited++;
    } else counts.neither++;
  }
  return counts;
}

/** The answers over the target: how many, what held them, and each with the stalls it overlapped (ms). */
interface SlowAnswers {
  readonly over: number;
  readonly scraper: number;
  readonly member: number;
  readonly memberGc: number;
  /** Of the member's, those its wait for a CPU alone held past the target. */
  readonly memberWaited: number;
  readonly neither: number;
  readonly each: readonly string[];
}

export function scrapeManyJobsRows(r: ScrapeManyJobsResult): string[][] {
  const label = `${r.jobs} jobs`;
  const rows = withAndWithoutRows(`${label}, ${r.everySecondJobs} every 1 s`, r.lateness);
  rows.unshift([`${label}: time until the leader shows all, 3 handlers each (3 processes)`, `${fmt(r.registerMs / 1000)} s`, '']);
  for (const [path, e] of Object.entries(r.lateness.scrape.endpoints)) {
    const met = e.errors === 0 && e.ms.max <= SCRAPE_TARGET_MS;
    rows.push([`${label}: ${path} every answer within the target`, met ? 'met' : `not met (max ${fmt(e.ms.max)} ms, p99 ${fmt(e.ms.p99)} ms)`, `<= ${SCRAPE_TARGET_MS} ms`]);
    const c = slowAnswerCauses(e.answers, r.lateness.scrape.ownStalls, r.members);
    const causes = c.over === 0 ? 'none' : `${c.over}: the scraper's own stalls ${c.scraper}, the member's ${c.member} (a GC pause in ${c.memberGc}, its wait for a CPU alone in ${c.memberWaited}), neither ${c.neither}`;
    rows.push([`${label}: ${path} answers over the target, and what held them (within it but for that)`, causes, '']);
    if (c.over > 0) rows.push([`${label}: ${path} those answers, ms, and the stalls they overlapped (ms)`, c.each.slice(0, SLOWEST_KEPT).join(', '), '']);
    const ownMet = e.errors === 0 && e.memberMs.max <= SCRAPE_TARGET_MS;
    rows.push([`${label}: ${path} the member's own time of every answer within the target`, ownMet ? `met (max ${fmt(e.memberMs.max)} ms)` : `not met (max ${fmt(e.memberMs.max)} ms, p99 ${fmt(e.memberMs.p99)} ms)`, `<= ${SCRAPE_TARGET_MS} ms`]);
  }
  return rows;
}
