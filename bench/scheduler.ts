/**
 * `npm run bench -- scheduler`: lateness of a handler's start after its slot's instant, on an
 * idle three-process loopback cluster (level with sync on, default settings), beside croner on
 * one process (the single-instance baseline) measured in the same run, and the same without and
 * with a scraper of `/metrics` and `/v1/state` (bench/scrape-lateness.ts); lateness of the first
 * slots after kill -9 of the leader and of an assignee; and 1,000 jobs every second.
 */
import { Cron } from 'croner';
import { ProcessCluster, type MemberProcess } from '../test/fixtures/process-cluster.js';
import { EVERY_MS, httpAddresses, now, schedule, sleep, starts } from './member-runs.js';
import { latenessWithAndWithout, withAndWithoutRows, type WithAndWithout } from './scrape-lateness.js';
import { ScraperProcess } from './scraper-process.js';
import { fmt, summarize } from './stats.js';

export interface SchedulerBenchOptions {
  readonly idleSeconds: number;
  readonly loadSeconds: number;
  readonly loadJobs: number;
}

export interface SchedulerBenchResult {
  /** Lateness of the idle jobs without the scraper (`idleScrape.without`). */
  readonly idle: ReturnType<typeof summarize>;
  /** The same in the same run without and with a scraper, in alternating windows (scrape-lateness.ts). */
  readonly idleScrape: WithAndWithout;
  readonly croner: ReturnType<typeof summarize>;
  /**
   * CPU time each member used per wall second (%, every thread) over IDLE_CPU_SECONDS with the
   * idle jobs alone, and the bench process's while croner ran the same jobs: what an app pays
   * for a member that has next to nothing to do (heartbeats, ticks, clock samples).
   */
  readonly idleCpu: { readonly percentPerMember: number[]; readonly cronerPercent: number };
  readonly afterLeaderKillMs: number;
  readonly afterAssigneeKillMs: number;
  readonly load: { readonly jobs: number; readonly lateness: ReturnType<typeof summarize>; readonly cpuPercentPerMember: number[] };
}

/** Jobs for the idle measure: ten jobs every second give ten samples a second. */
const IDLE_JOBS = 10;
/** How long the members' CPU is measured with the idle jobs alone (before the scraper starts). */
const IDLE_CPU_SECONDS = 5;

/** Each member's CPU time (every thread) per wall second over `seconds`, in %. */
async function cpuPercents(cluster: ProcessCluster, seconds: number): Promise<number[]> {
  const before = await Promise.all(cluster.members.map((m) => m.request<{ cpuMs: number; at: number }>('cpu')));
  await sleep(seconds * 1000);
  const after = await Promise.all(cluster.members.map((m) => m.request<{ cpuMs: number; at: number }>('cpu')));
  return before.map((b, i) => ((after[i]!.cpuMs - b.cpuMs) / (after[i]!.at - b.at)) * 100);
}
/**
 * Waits until just before the next burst of slots (the jobs share one phase), so that the kill
 * that follows leaves the victim's claims of that burst to be moved after their instant: the
 * worst case, not whatever phase the kill happened to fall on.
 */
async function untilJustBeforeNextSlots(cluster: ProcessCluster): Promise<number> {
  const last = Math.max(...starts(cluster, 0).map((r) => r.slotMs));
  let next = last + EVERY_MS;
  while (next - KILL_LEAD_MS < now()) next += EVERY_MS;
  await sleep(next - KILL_LEAD_MS - now());
  return next;
}

/** A member other than `leader` that the log assigns slots of the burst at `slotMs` (claims are made ahead). */
async function assigneeOf(cluster: ProcessCluster, leader: MemberProcess, slotMs: number): Promise<MemberProcess | undefined> {
  const rows: Array<{ slot: number; assignees: string[] }> = [];
  for (let i = 0; i < IDLE_JOBS; i++) rows.push(...(await leader.request<Array<{ slot: number; assignees: string[] }>>('history', { job: `idle${i}`, limit: 5 })));
  const ids = new Set(rows.filter((r) => Math.abs(r.slot - slotMs) < EVERY_MS / 2).flatMap((r) => r.assignees));
  return cluster.members.find((m) => m !== leader && m.running && ids.has(m.address));
}

/** How long before the slots the victim is killed. */
const KILL_LEAD_MS = 30;

/** croner alone on this process: the same ten jobs every second, lateness of each callback, and the process's CPU meanwhile (%). */
async function benchCroner(seconds: number): Promise<{ lateness: number[]; cpuPercent: number }> {
  const lateness: number[] = [];
  const jobs = Array.from({ length: IDLE_JOBS }, () =>
    new Cron('* * * * * *', () => {
      const t = Date.now();
      lateness.push(t - Math.floor(t / 1000) * 1000);
    }),
  );
  const cpuBefore = process.cpuUsage();
  const from = now();
  await sleep(seconds * 1000);
  const cpu = process.cpuUsage(cpuBefore);
  const cpuPercent = ((cpu.user + cpu.system) / 1000 / (now() - from)) * 100;
  for (const j of jobs) j.stop();
  return { lateness, cpuPercent };
}

/** The largest lateness among first attempts of slots due within `windowMs` after `fromMs`. */
function worstAfter(cluster: ProcessCluster, fromMs: number, windowMs: number, victim: MemberProcess): number {
  const runs = starts(cluster, fromMs).filter((r) => r.slotMs >= fromMs && r.slotMs <= fromMs + windowMs && r.member !== victim.address);
  return runs.length === 0 ? Number.NaN : Math.max(...runs.map((r) => r.at - r.slotMs));
}

/** kill -9 `victim`, measure the worst lateness of the slots due in the next 2 s, restart it. */
async function killMeasureRestart(cluster: ProcessCluster, victim: MemberProcess): Promise<number> {
  const killedAt = now();
  await victim.kill();
  await sleep(3000);
  const worst = worstAfter(cluster, killedAt, 2000, victim);
  cluster.startMember(victim);
  await victim.waitEvent((e) => e.event === 'started');
  await schedule([victim], IDLE_JOBS, 'idle');
  return worst;
}

export async function benchScheduler(o: SchedulerBenchOptions): Promise<SchedulerBenchResult> {
  const cronerRun = await benchCroner(o.idleSeconds);
  const croner = summarize(cronerRun.lateness);
  // Every member serves HTTP, for the scraper; it is scraped only in its windows.
  const cluster = await ProcessCluster.create(3, { http: { listen: '127.0.0.1:0' } });
  let scraper: ScraperProcess | null = null;
  try {
    await cluster.startAll();
    await cluster.waitForLeader();
    await schedule(cluster.members, IDLE_JOBS, 'idle');
    await sleep(2000);
    const idleCpu = { percentPerMember: await cpuPercents(cluster, IDLE_CPU_SECONDS), cronerPercent: cronerRun.cpuPercent };
    scraper = await ScraperProcess.start(httpAddresses(cluster));
    const idleScrape = await latenessWithAndWithout(cluster, scraper, o.idleSeconds, 'idle');
    await scraper.close();

    // kill -9 the leader, then an assignee that is not the leader; restart each after.
    const leader = await cluster.waitForLeader();
    await untilJustBeforeNextSlots(cluster);
    const afterLeaderKillMs = await killMeasureRestart(cluster, leader);
    await sleep(2000);
    const current = await cluster.waitForLeader();
    const burst = await untilJustBeforeNextSlots(cluster);
    const assignee = (await assigneeOf(cluster, current, burst)) ?? (cluster.members.find((m) => m !== current && m.running) as MemberProcess);
    const afterAssigneeKillMs = await killMeasureRestart(cluster, assignee);

    // 1,000 jobs every second.
    await schedule(cluster.members, o.loadJobs, 'load');
    await sleep(3000);
    const loadFrom = now();
    const cpuPercentPerMember = await cpuPercents(cluster, o.loadSeconds);
    const loadLateness = summarize(starts(cluster, loadFrom).filter((r) => r.job.startsWith('load') && r.attempt === 1).map((r) => r.at - r.slotMs));
    return { idle: idleScrape.without, idleScrape, croner, idleCpu, afterLeaderKillMs, afterAssigneeKillMs, load: { jobs: o.loadJobs, lateness: loadLateness, cpuPercentPerMember } };
  } finally {
    await scraper?.close();
    await cluster.cleanup();
  }
}

export function schedulerRows(r: SchedulerBenchResult): string[][] {
  return [
    ['start lateness p50, idle (10 jobs every 1 s)', `${fmt(r.idle.p50)} ms`, `${fmt(r.croner.p50)} ms`, ''],
    ['start lateness p99, idle', `${fmt(r.idle.p99)} ms`, `${fmt(r.croner.p99)} ms`, '<= 5 ms'],
    [`CPU per member, idle (${IDLE_JOBS} jobs every 1 s, ${IDLE_CPU_SECONDS} s; every thread)`, r.idleCpu.percentPerMember.map((c) => `${fmt(c, 1)}%`).join(', '), `${fmt(r.idleCpu.cronerPercent, 1)}%`, ''],
    ['worst lateness of the slots due 30 ms after kill -9 of the leader', `${fmt(r.afterLeaderKillMs, 0)} ms`, '', '<= election timeout + 100 ms (350 ms)'],
    ['worst lateness of the slots due 30 ms after kill -9 of an assignee', `${fmt(r.afterAssigneeKillMs, 0)} ms`, '', '<= 350 ms'],
    [`start lateness p50 / p99, ${r.load.jobs} jobs every 1 s`, `${fmt(r.load.lateness.p50)} / ${fmt(r.load.lateness.p99)} ms`, '', ''],
    [`CPU per member, ${r.load.jobs} jobs every 1 s`, r.load.cpuPercentPerMember.map((c) => `${fmt(c, 0)}%`).join(', '), '', ''],
    ...withAndWithoutRows(`idle (${IDLE_JOBS} jobs every 1 s)`, r.idleScrape).map(([measure, value, target]) => [measure ?? '', value ?? '', '', target ?? '']),
  ];
}
