/**
 * Writes a sample simulation report from a made-up but plausible run, to look at the report
 * without running the simulator:
 *
 *   npx tsx scripts/report-sample.ts [out.html] [--large] [--ok]
 *
 * The default run: 5 members over 10 simulated minutes with leader changes, crashes, pauses,
 * partitions (two-way, one-way, split) and clock offsets, and 3 jobs every 1-5 s, some slots
 * late, missed, failed or reassigned, and two violations. `--large` adds chaos and 24 jobs
 * every 500 ms (well over 100,000 events) to check the page's size; `--ok` drops the violations.
 */
import { writeFileSync } from 'node:fs';
import { parseSpec } from '../src/scheduler/spec.js';
import type { SchedulerCommand } from '../src/scheduler/command.js';
import { renderReport } from '../simulations/report/page.js';
import { SchedulerChecker } from '../simulations/scheduler-checker.js';
import { SIM_EPOCH_MS } from '../simulations/scheduler.js';
import { summarizeJobs, type JobSummary } from '../simulations/summary.js';
import type { ReportInput, TimelineEvent } from '../simulations/timeline.js';

/** A small seeded generator (mulberry32): the sample is the same on every run. */
function seeded(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const random = seeded(20240611);
const between = (min: number, max: number): number => min + random() * (max - min);
const pick = <T>(xs: readonly T[]): T => xs[Math.floor(random() * xs.length)] as T;

const MEMBERS = ['m1', 'm2', 'm3', 'm4', 'm5'] as const;
const DURATION_MS = 600_000;
const HEALED_AT = 540_000;
/** Claims are made this far ahead of their slot. */
const LOOKAHEAD_MS = 500;
/** Slots a new leader finds more than this late are dropped by the catch-up policy (skip). */
const SKIP_AFTER_MS = 1500;

interface SampleJob {
  readonly name: string;
  readonly spec: string;
  readonly everyMs: number;
  readonly runMs: readonly [number, number];
  readonly failRate: number;
  /** Reassignments after a failure or a lost assignee. */
  readonly retries: number;
}

/** What happened to the cluster, scripted: the jobs are then played over it. */
class Cluster {
  readonly events: TimelineEvent[] = [];
  /** [from, until) periods each member was down or paused. */
  readonly unavailable = new Map<string, Array<[number, number]>>(MEMBERS.map((m) => [m, []]));
  /** [from, until, leader] periods with a working leader. */
  readonly leadership: Array<[number, number, string]> = [];
  readonly clock = new Map<string, Array<[number, number]>>(MEMBERS.map((m) => [m, [[0, 0]]]));
  #term = 0;
  #leader: { id: string; since: number } | null = null;

  elect(t: number, id: string, skipTerms = 0): void {
    this.depose(t);
    this.#term += 1 + skipTerms;
    this.#leader = { id, since: t };
    this.events.push({ t, kind: 'leader', member: id, term: this.#term });
  }

  /** The leader stops leading at t (crash, isolation, pause); no one leads until the next election. */
  depose(t: number, at = t): void {
    if (this.#leader === null) return;
    this.leadership.push([this.#leader.since, t, this.#leader.id]);
    this.events.push({ t: at, kind: 'follower', member: this.#leader.id, term: this.#term });
    this.#leader = null;
  }

  get leader(): string | null {
    return this.#leader?.id ?? null;
  }

  crash(t: number, id: string, restartT: number): void {
    if (this.leader === id) this.depose(t);
    this.events.push({ t, kind: 'crash', member: id }, { t: restartT, kind: 'restart', member: id });
    this.unavailable.get(id)?.push([t, restartT]);
  }

  pause(t: number, id: string, untilT: number): void {
    this.events.push({ t, kind: 'pause', member: id, untilT });
    this.unavailable.get(id)?.push([t, untilT]);
  }

  setClock(t: number, id: string, offsetMs: number, note: string): void {
    this.events.push({ t, kind: 'clock', member: id, offsetMs, note });
    this.clock.get(id)?.push([t, offsetMs]);
  }

  partition(t: number, blocked: Array<readonly [string, string]>): void {
    this.events.push({ t, kind: 'partition', blocked });
  }

  finish(t: number): void {
    if (this.#leader !== null) this.leadership.push([this.#leader.since, t, this.#leader.id]);
  }

  leaderAt(t: number): string | null {
    return this.leadership.find(([from, until]) => t >= from && t < until)?.[2] ?? null;
  }

  /** The first instant at or after t with a leader, and who. */
  nextLeader(t: number): { t: number; id: string } | null {
    for (const [from, until, id] of this.leadership) {
      if (t < until) return { t: Math.max(t, from), id };
    }
    return null;
  }

  /** The leader learns of a crash only after its failure detector fires (about 3 s). */
  knownUpAt(id: string, t: number): boolean {
    return this.availableAt(id, t - 3000);
  }

  crashedAt(id: string, t: number): boolean {
    return this.events.some((e) => e.kind === 'crash' && e.member === id && e.t <= t && this.#restartAfter(id, e.t) > t);
  }

  #restartAfter(id: string, t: number): number {
    const restart = this.events.find((e) => e.kind === 'restart' && e.member === id && e.t >= t);
    return restart?.t ?? Number.POSITIVE_INFINITY;
  }

  availableAt(id: string, t: number): boolean {
    return !(this.unavailable.get(id) ?? []).some(([from, until]) => t >= from && t < until);
  }

  /** When a member that is down or paused at t can run again. */
  resumesAt(id: string, t: number): number {
    const hit = (this.unavailable.get(id) ?? []).find(([from, until]) => t >= from && t < until);
    return hit === undefined ? t : hit[1];
  }

  crashedDuring(id: string, from: number, to: number): number | null {
    const hit = (this.events.find((e) => e.kind === 'crash' && e.member === id && e.t >= from && e.t < to) ?? null) as { t: number } | null;
    return hit?.t ?? null;
  }

  offsetAt(id: string, t: number): number {
    let offset = 0;
    for (const [from, value] of this.clock.get(id) ?? []) if (from <= t) offset = value;
    return offset;
  }
}

const isolate = (who: string): Array<readonly [string, string]> => MEMBERS.filter((m) => m !== who).flatMap((m) => [[who, m] as const, [m, who] as const]);

/** The scripted fault phase of the default sample. */
function scriptFaults(c: Cluster): void {
  c.elect(310, 'm1');
  // Clocks: m2 drifts ahead then is stepped; m4 resumes from a VM snapshot behind; m5 drifts.
  [30_000, 90_000, 150_000, 240_000].forEach((t, i) => c.setClock(t, 'm2', [15, 60, 110, 150][i] ?? 0, 'drift +180ppm'));
  c.setClock(330_000, 'm2', 850, 'NTP step +700ms');
  c.setClock(200_000, 'm4', -320, 'VM resumed from snapshot');
  c.setClock(420_000, 'm4', -80, 'NTP slew');
  for (let t = 20_000, off = 0; t < HEALED_AT; t += 20_000) c.setClock(t, 'm5', (off -= 2 + Math.round(random() * 3)), 'drift −120ppm');

  c.crash(95_000, 'm1', 112_000);
  c.elect(95_840, 'm3');
  c.pause(150_000, 'm5', 152_400);
  // The leader is isolated: it steps down when it loses its quorum; the majority elects anew.
  c.partition(200_000, isolate('m3'));
  c.depose(200_520);
  c.elect(200_910, 'm2', 1);
  c.partition(236_000, []);
  c.crash(300_000, 'm4', 318_000);
  // A stop-the-world pause of the leader: the others elect m5, and m2 learns it on resuming.
  c.pause(360_000, 'm2', 363_200);
  c.depose(360_000, 363_200);
  c.elect(360_700, 'm5');
  // One-way: m1 still sends, but hears nobody.
  c.partition(420_000, MEMBERS.filter((m) => m !== 'm1').map((m) => [m, 'm1'] as const));
  c.partition(445_000, []);
  // A three-way split, {m1, m2} | {m3, m4} | {m5}: no side has a majority, so no one leads
  // until it heals, and the slots that pass meanwhile are dropped (catch-up policy: skip).
  const sides = [['m1', 'm2'], ['m3', 'm4'], ['m5']];
  c.partition(
    470_000,
    sides.flatMap((side, i) => side.flatMap((a) => sides.flatMap((other, j) => (i === j ? [] : other.map((b) => [a, b] as const))))),
  );
  c.depose(470_480);
  c.partition(478_000, []);
  c.elect(478_350, 'm5', 2);
  c.crash(505_000, 'm5', HEALED_AT);
  c.elect(506_900, 'm3');
  c.pause(523_000, 'm1', 524_100);
  for (const m of ['m2', 'm4', 'm5']) c.setClock(HEALED_AT, m, 0, 'reset to true time');
  c.events.push({ t: HEALED_AT, kind: 'healed' });
}

/** Many more faults, for the size check: a leader change every few seconds, partitions every few hundred ms, clocks every 100 ms. */
function scriptChaos(c: Cluster): void {
  let t = 300;
  while (t < HEALED_AT) {
    c.elect(t, pick(MEMBERS.filter((m) => c.availableAt(m, t))));
    t += between(500, 4000);
    if (random() < 0.3) {
      const victim = pick(MEMBERS);
      c.crash(t, victim, t + between(100, 3000));
    } else {
      c.depose(t);
    }
    t += between(150, 600);
  }
  for (let p = 0; p < HEALED_AT; p += between(100, 400)) c.partition(p, random() < 0.4 ? [] : isolate(pick(MEMBERS)));
  c.partition(HEALED_AT, []);
  for (const m of MEMBERS) for (let p = 0; p < HEALED_AT; p += between(30, 80)) c.setClock(p, m, Math.round(between(-400, 400)), 'jitter');
  c.events.push({ t: HEALED_AT, kind: 'healed' });
  c.elect(HEALED_AT + 300, 'm1');
}

/** Plays one job's slots over the scripted cluster: claims, runs, retries, reassignments, skips. */
function playJob(c: Cluster, job: SampleJob, tokenBase: { next: number }): void {
  const missedRun: number[] = [];
  const flushMissed = (decidedT: number): void => {
    if (missedRun.length === 0) return;
    c.events.push({ t: decidedT, kind: 'missed', job: job.name, throughT: missedRun.at(-1) ?? decidedT, count: missedRun.length });
    missedRun.length = 0;
  };
  for (let slotT = job.everyMs; slotT < DURATION_MS; slotT += job.everyMs) {
    const planner = c.nextLeader(slotT - LOOKAHEAD_MS);
    if (planner === null) break;
    const claimT = planner.t + between(2, 12);
    if (claimT - slotT > SKIP_AFTER_MS) {
      missedRun.push(slotT);
      continue;
    }
    flushMissed(claimT);
    const assignees = MEMBERS.filter((m) => c.knownUpAt(m, claimT));
    let assignee = pick(assignees.length > 0 ? assignees : MEMBERS);
    let token = (tokenBase.next += 3 + Math.floor(random() * 5));
    c.events.push({ t: claimT, kind: 'claim', job: job.name, slotT, token, assignees: [assignee] });
    let readyT = Math.max(slotT, claimT + 3);
    for (let attempt = 0; attempt <= job.retries; attempt++) {
      // The assignee fires on its own clock: a clock ahead of true time fires early.
      const firesT = readyT - c.offsetAt(assignee, readyT) + between(0.2, 6);
      if (c.crashedAt(assignee, firesT)) {
        // Claimed for a member that is down: nothing runs until the leader notices and reassigns.
        if (attempt === job.retries) break;
        const others = MEMBERS.filter((m) => m !== assignee && c.availableAt(m, firesT + 3000));
        assignee = pick(others.length > 0 ? others : MEMBERS);
        token = tokenBase.next += 2;
        readyT = firesT + between(2800, 3400);
        c.events.push({ t: readyT - 5, kind: 'claim', job: job.name, slotT, token, assignees: [assignee] });
        continue;
      }
      // A paused process fires when it resumes.
      const startT = c.resumesAt(assignee, Math.max(firesT, claimT + 1));
      const endT = startT + between(job.runMs[0], job.runMs[1]);
      const crashT = c.crashedDuring(assignee, startT, endT);
      const outcome = crashT !== null ? 'interrupted' : random() < job.failRate ? 'failed' : 'succeeded';
      const runEnd = crashT ?? endT;
      c.events.push({ t: runEnd, kind: 'run', job: job.name, slotT, token, member: assignee, startT, endT: runEnd, outcome });
      if (outcome === 'succeeded' || attempt === job.retries) break;
      // Lost or failed: the leader reassigns the slot to another member under a new token.
      const others = MEMBERS.filter((m) => m !== assignee && c.availableAt(m, runEnd + 200));
      if (others.length === 0) break;
      assignee = pick(others);
      token = tokenBase.next += 2;
      readyT = runEnd + (crashT !== null ? between(400, 900) : 200);
      c.events.push({ t: readyT - 5, kind: 'claim', job: job.name, slotT, token, assignees: [assignee] });
    }
  }
  flushMissed(DURATION_MS);
}

/**
 * The made-up run's job summaries, counted as the simulator counts a real run's: its timeline
 * replayed into the scheduler checker as the committed log it stands for (a claim, a move, a
 * run's start and its outcome, slots dropped by catch-up), each under an index of its own.
 */
function summaries(jobs: readonly SampleJob[], events: readonly TimelineEvent[]): JobSummary[] {
  // The made-up log breaks rules the checker checks (its tokens are not indexes): only its counts matter here.
  const checker = new SchedulerChecker(() => undefined);
  let index = 0;
  const commit = (t: number, command: SchedulerCommand): number => {
    checker.onApplied(t, ++index, command, { ok: true });
    return index;
  };
  for (const job of jobs) {
    const policy = { retries: job.retries, retryDelayMs: 200, catchUp: { policy: 'latest' as const } };
    commit(0, { type: 'register', job: job.name, spec: parseSpec({ every: `${job.everyMs}ms` }), mode: 'one', policy, member: 'm1', atMs: SIM_EPOCH_MS });
  }
  /** The index that stands for each claim's token, and each slot's current one. */
  const indexOf = new Map<string, number>();
  const current = new Map<string, number>();
  for (const e of events) {
    if (e.kind === 'claim') {
      const slot = `${e.job} ${e.slotT}`;
      const slotMs = SIM_EPOCH_MS + e.slotT;
      const from = current.get(slot);
      const at = from === undefined ? commit(e.t, { type: 'claim', job: e.job, slotMs, assignees: e.assignees }) : commit(e.t, { type: 'reassign', job: e.job, slotMs, fromToken: from, assignees: e.assignees, reason: 'retry' });
      current.set(slot, at);
      indexOf.set(`${slot} ${e.token}`, at);
    } else if (e.kind === 'run') {
      const token = indexOf.get(`${e.job} ${e.slotT} ${e.token}`) ?? 0;
      checker.onRunStart(e.startT, e.member, 1, { job: e.job, slotMs: SIM_EPOCH_MS + e.slotT, fencingToken: token });
      commit(e.t, { type: 'outcome', job: e.job, slotMs: SIM_EPOCH_MS + e.slotT, token, member: e.member, outcome: e.outcome, atMs: SIM_EPOCH_MS + e.t });
    } else if (e.kind === 'missed') {
      commit(e.t, { type: 'skip', job: e.job, throughMs: SIM_EPOCH_MS + e.throughT, fromMs: SIM_EPOCH_MS, count: e.count });
    }
  }
  return summarizeJobs(jobs, checker, DURATION_MS);
}

function sampleInput(large: boolean, ok: boolean): ReportInput {
  const c = new Cluster();
  if (large) scriptChaos(c);
  else scriptFaults(c);
  c.finish(DURATION_MS);
  const jobs: SampleJob[] = large
    ? Array.from({ length: 24 }, (_, i) => ({ name: `job-${String(i + 1).padStart(2, '0')}`, spec: '{"every":"500ms"}', everyMs: 500, runMs: [1, 40], failRate: 0.02, retries: i % 2 }))
    : [
        { name: 'billing-sync', spec: '{"every":"1s"}', everyMs: 1000, runMs: [4, 40], failRate: 0.01, retries: 0 },
        { name: 'cache-warm', spec: '{"every":"2s","retries":2}', everyMs: 2000, runMs: [20, 300], failRate: 0.08, retries: 2 },
        { name: 'report-cron', spec: '*/5 * * * * *', everyMs: 5000, runMs: [100, 3000], failRate: 0.03, retries: 1 },
      ];
  const tokens = { next: 10 };
  for (const job of jobs) playJob(c, job, tokens);
  const [first, second] = large ? ['job-03', 'job-11'] : ['report-cron', 'billing-sync'];
  const violations: Array<{ t: number; message: string }> = ok
    ? []
    : [
        { t: 363_212.4, message: `scheduler: ${first} slot 6:00.000 ran on m2 and m5 at once under tokens 5123 and 5131` },
        { t: 507_480.0, message: `scheduler: ${second} slot 8:26.000 was claimed twice (tokens 7702, 7711)` },
      ];
  const events: TimelineEvent[] = [...c.events];
  for (const v of violations) events.push({ t: v.t, kind: 'violation', message: v.message });
  events.sort((a, b) => a.t - b.t);
  return {
    seed: large ? 777 : 4242,
    members: MEMBERS,
    durationMs: DURATION_MS,
    healedAtT: HEALED_AT,
    jobs: summaries(jobs, events),
    timeline: events,
    violations: violations.map((v) => `t=${v.t.toFixed(1)}ms: ${v.message}`),
    reproduce: `npx cronraft simulate --seed ${large ? 777 : 4242} --members 5 --duration 9m --faults partition,crash,loss,clock`,
  };
}

const args = process.argv.slice(2);
const out = args.find((a) => !a.startsWith('--')) ?? '/tmp/report-sample.html';
const input = sampleInput(args.includes('--large'), args.includes('--ok'));
const html = renderReport(input);
writeFileSync(out, html);
console.log(`${out}: ${input.timeline.length.toLocaleString('en-US')} events, ${(html.length / 1e6).toFixed(2)} MB`);
