/**
 * `npm run bench -- fanout`: cronraft's fan-out (issue 19) on three member processes on
 * loopback, level with sync on, default settings; each member consumes with parallelism 64 and
 * a handler that does nothing but note when it started. A slot (a job scheduled `{ at }` on
 * every member, run by the one that claims it) emits the items with ctx.emit. Measured:
 * (1) items/s end to end: a slot emits bulkItems items of 100 bytes in one ctx.emit; from
 *     its first emit to state().topics showing them all done (read on the leader). The first
 *     such run after the members start is reported on its own (cold: much of the code still
 *     runs unoptimized, as in the raft bench's cold rows); then warmBulkRuns more, whose median
 *     is the figure held against the target. Each names where the slot ran: the entries of a
 *     slot that runs on a follower go to the leader and come back to it;
 * (2) emit-to-start p50/p99 at a steady STEADY_RATE items/s: a slot emits STEADY_BATCH items every
 *     STEADY_EVERY_MS, each carrying its emit time; each consumer notes its start against it. The
 *     first such run is reported on its own (cold, as the first end-to-end run is: small emits
 *     take paths the bulk ones did not warm up), and the one after it held against the target;
 * (3) re-delivery after kill -9 of a consumer: one member (not the leader) holds the items it is
 *     given; once the others have done the rest, it is killed; from the kill to the first start
 *     on another member of an item it held.
 * bench/bullmq.ts measures BullMQ with Redis the same way, in the same run.
 */
import { FANOUT_VERSION } from '../src/version/versions.js';
import type { DoneReport, EmitReport, HealthReport, ItemStarts } from '../test/fixtures/fanout-member.js';
import { wallMs, type ProbeReport } from '../test/fixtures/member-probe.js';
import { ProcessCluster, type MemberProcess } from '../test/fixtures/process-cluster.js';
import { cpuPerCommitUs, processesCpuMs } from './proc-cpu.js';
import { slowItemCauses, slowItemsText, type SlowItems } from './slow-items.js';
import { fmt, summarize } from './stats.js';

/** Items of the end-to-end run, and of the steady one: its rate, its batches. */
export interface FanoutSizes {
  readonly bulkItems: number;
  /** End-to-end runs after the first (cold) one; the median of them is held against the target. */
  readonly warmBulkRuns: number;
  readonly steadySeconds: number;
}

export const FULL_SIZES: FanoutSizes = { bulkItems: 100_000, warmBulkRuns: 3, steadySeconds: 10 };
export const QUICK_SIZES: FanoutSizes = { bulkItems: 20_000, warmBulkRuns: 1, steadySeconds: 4 };

/** Items started per member at once (cronraft's parallelism, BullMQ's concurrency). */
export const PARALLELISM = 64;
/** The steady emitter: STEADY_BATCH items every STEADY_EVERY_MS, STEADY_RATE items/s. */
export const STEADY_BATCH = 50;
export const STEADY_EVERY_MS = 10;
export const STEADY_RATE = (STEADY_BATCH * 1000) / STEADY_EVERY_MS;
/** Issue 19's target for the steady run's emit-to-start p99. */
export const STEADY_P99_TARGET_MS = 20;
/** Items emitted for the kill -9 run: the killed consumer holds what it is given of them (at most PARALLELISM running, and its prefetch). */
export const REDELIVERY_ITEMS = 1000;
/** A re-delivery not seen within this after the kill is reported as "> cap". */
export const REDELIVERY_CAP_MS = 60_000;
/** Bound on each run's wait for its items to be done (100,000 items at a tenth of the target take about this long). */
const DONE_TIMEOUT_MS = 10 * 60_000;
/** One wait for items done, in the member (within the fixture's request timeout); the bench asks again until DONE_TIMEOUT_MS. */
const DONE_WAIT_STEP_MS = 45_000;
/** A slot is scheduled this far ahead, so that every member has registered it before it fires. */
const SLOT_LEAD_MS = 1500;
/** Bound on the waits for the cluster to get somewhere (a leader, fan-out's version, the consumers). */
export const WAIT_MS = 60_000;
const POLL_MS = 5;
/** Bound on the wait for the members' clean stop at the end (then they are killed). */
const STOP_WAIT_MS = 10_000;

const TOPIC = { bulk: 'bulk', steady: 'steady', redeliver: 'redeliver' } as const;

/** One end-to-end run. */
export interface BulkMeasure {
  readonly items: number;
  /** From the first emit to all recorded done. */
  readonly elapsedMs: number;
  readonly itemsPerSecond: number;
  /** From the first emit to the last emit committed (the slot's ctx.emit resolved; BullMQ's last addBulk). */
  readonly emitMs: number;
  /** The longest time no item was recorded done, once the emit was over and until all were, and when it began (ms after the first emit). */
  readonly stallMs: number;
  readonly stallAtMs: number;
  /**
   * Times the items were emitted: 1 unless the slot ran again (its run was moved to another
   * member, which emitted them again), in which case the figures count the first emission's
   * items done against every emission's.
   */
  readonly emissions: number;
  /** Emits that failed (the leader changed) and were made again whole. */
  readonly emitErrors: number;
  /**
   * CPU of the system's processes (every thread) per item, in µs: cronraft's members (the
   * emitting slot included); BullMQ's workers and Redis (not the producer). A count of the
   * work, where the times stretch with what else the machine runs.
   */
  readonly cpuUsPerItem: number | null;
  /** Where cronraft's slot ran, on the leader or a follower; null for BullMQ (the bench process adds its jobs). */
  readonly emitter: 'leader' | 'follower' | null;
}

/** What one system did, cronraft's or BullMQ's. */
export interface FanoutMeasures {
  /** The first end-to-end run after start. */
  readonly bulkCold: BulkMeasure;
  /** The warm runs after it, and the median of them by items/s. */
  readonly bulkRuns: readonly BulkMeasure[];
  readonly bulk: BulkMeasure;
  /**
   * The first steady run, after the end-to-end ones: its figures are its own row, as the first
   * end-to-end run's are (the code of small emits, a few items each, still warming up).
   */
  readonly steadyCold: SteadyMeasure;
  /** The steady run after it, held against the target. */
  readonly steady: SteadyMeasure & {
    /** cronraft's only: in a further run with every member probed, the items over the target and what held them, and that run's p99. */
    readonly slow?: SlowItems & { readonly p99Ms: number };
  };
  readonly redelivery: {
    /** From the kill to the first start elsewhere of an item the killed consumer held; null: not within REDELIVERY_CAP_MS. */
    readonly ms: number | null;
    /** Items the killed consumer held leased (running, or waiting to start). */
    readonly held: number;
  };
}

/** One steady run. */
export interface SteadyMeasure {
  readonly items: number;
  readonly emitted: number;
  readonly latencyMs: ReturnType<typeof summarize>;
  /** How late the last batch was emitted against its schedule (the emitter could not keep the rate if large). */
  readonly lateMs: number;
  readonly emissions: number;
  /** CPU of the system's processes (every thread) per item over the run, in µs, as the end-to-end runs' (BulkMeasure). */
  readonly cpuUsPerItem: number | null;
  /** cronraft's only: the Raft frames its members sent, all together, per item (null for BullMQ). */
  readonly framesPerItem: number | null;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `probe` gives a value, every POLL_MS, or throws naming `what` after `timeoutMs`. */
export async function until<T>(what: string, probe: () => T | undefined | Promise<T | undefined>, timeoutMs = WAIT_MS, pollMs = POLL_MS): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`fanout bench: ${what} not within ${timeoutMs} ms`);
    await sleep(pollMs);
  }
}

/**
 * The re-delivery measure, the same for both systems: kills `victim`, then waits for the first
 * start on another process of an item it held (`startedAgain`: those starts' wall times so far),
 * polling every `pollMs`. The time from the kill to that start, or null past REDELIVERY_CAP_MS.
 */
export async function redeliveryMs(victim: { kill(): Promise<unknown> }, startedAgain: () => readonly number[], what: string, pollMs: number): Promise<number | null> {
  const killedAt = wallMs();
  await victim.kill();
  try {
    const first = await until(what, () => {
      const again = startedAgain();
      return again.length === 0 ? undefined : Math.min(...again);
    }, REDELIVERY_CAP_MS, pollMs);
    return first - killedAt;
  } catch {
    return null;
  }
}

/** Each of the three topics consumed on every member, with parallelism PARALLELISM; the kill -9 run's starts reported. */
async function consumeAll(cluster: ProcessCluster): Promise<void> {
  for (const m of cluster.members) {
    for (const topic of Object.values(TOPIC)) await m.request('fanout-consume', { topic, parallelism: PARALLELISM, reportStarts: topic === TOPIC.redeliver });
  }
  await until('every consumer registered', async () => {
    const states = await Promise.all(cluster.members.map((m) => m.state()));
    const ready = states.every((s) => s.version.active >= FANOUT_VERSION && Object.values(TOPIC).every((name) => Object.keys(s.topics.find((t) => t.name === name)?.consumers ?? {}).length === cluster.members.length));
    return ready ? true : undefined;
  });
}

let slots = 0;

/** A slot that emits `count` items to `topic` (at once, or `batch` every `everyMs`): resolves with what its emission did. */
async function slotEmit(cluster: ProcessCluster, topic: string, count: number, batch: number, everyMs: number): Promise<{ report: EmitReport; emissions: () => number }> {
  const job = `fanout-${topic}-${++slots}`;
  const atMs = Date.now() + SLOT_LEAD_MS;
  await Promise.all(cluster.members.map((m) => m.request('fanout-slot', { job, atMs, topic, count, batch, everyMs })));
  const emitted = (m: MemberProcess): EmitReport | undefined => m.events.find((e) => e.event === 'fanout-emitted' && e.job === job) as EmitReport | undefined;
  const emissions = (): number => cluster.members.reduce((n, m) => n + m.events.filter((e) => e.event === 'fanout-emitted' && e.job === job).length, 0);
  return until(`the slot ${job} emitted`, () => {
    for (const m of cluster.members) {
      const report = emitted(m);
      if (report !== undefined) return { report, emissions };
    }
    return undefined;
  }, DONE_TIMEOUT_MS, 20);
}

/** Waits in `member` until `count` items of `topic` are done by its state().topics: when, and the longest stall. */
async function waitDone(member: MemberProcess, topic: string, count: number): Promise<DoneReport> {
  const deadline = Date.now() + DONE_TIMEOUT_MS;
  let stall = { stallMs: 0, stallAt: 0 };
  for (;;) {
    const r = await member.request<DoneReport>('fanout-wait-done', { topic, count, timeoutMs: DONE_WAIT_STEP_MS });
    if (r.stallMs > stall.stallMs) stall = { stallMs: r.stallMs, stallAt: r.stallAt };
    if (r.done >= count) return { done: r.done, doneAt: r.doneAt, ...stall };
    if (Date.now() > deadline) throw new Error(`fanout bench: ${r.done} of ${count} items of ${topic} done within ${DONE_TIMEOUT_MS} ms`);
  }
}

async function bulkRun(cluster: ProcessCluster, leader: MemberProcess, items: number): Promise<BulkMeasure> {
  const pids = cluster.members.map((m) => m.child?.pid);
  // The topic's done count goes on from the runs before.
  const doneBefore = (await leader.state()).topics.find((t) => t.name === TOPIC.bulk)?.done ?? 0;
  const cpuBefore = processesCpuMs(pids);
  const { report, emissions } = await slotEmit(cluster, TOPIC.bulk, items, 0, 0);
  // Waited for once the emit is over, for the items it emitted: under leader changes an entry
  // may be given up on (fanout-member.ts, MAX_EMIT_ATTEMPTS). The longest stall is looked for
  // from then on only.
  if (report.emitted === 0) throw new Error(`fanout bench: the slot emitted none of ${items} items`);
  const done = await waitDone(leader, TOPIC.bulk, doneBefore + report.emitted);
  const cpuUsPerItem = cpuPerCommitUs(cpuBefore, processesCpuMs(pids), report.emitted);
  const elapsedMs = done.doneAt - report.firstEmitAt;
  return { items: report.emitted, elapsedMs, itemsPerSecond: (report.emitted / elapsedMs) * 1000, emitMs: report.lastCommittedAt - report.firstEmitAt, stallMs: done.stallMs, stallAtMs: done.stallAt - report.firstEmitAt, emissions: emissions(), emitErrors: report.errors, cpuUsPerItem, emitter: report.member === leader.address ? 'leader' : 'follower' };
}

/** The first end-to-end run, then `warm` more and the median of those by items/s. */
export async function bulkRuns(warm: number, run: () => Promise<BulkMeasure>): Promise<Pick<FanoutMeasures, 'bulkCold' | 'bulkRuns' | 'bulk'>> {
  const bulkCold = await run();
  const runs: BulkMeasure[] = [];
  for (let i = 0; i < warm; i++) runs.push(await run());
  const sorted = [...runs].sort((a, b) => a.itemsPerSecond - b.itemsPerSecond);
  return { bulkCold, bulkRuns: runs, bulk: sorted[Math.floor(sorted.length / 2)] ?? bulkCold };
}

/**
 * The steady run. With `probed`, each member is probed meanwhile (its event loop's stalls, on a
 * timer due every millisecond, and its GC pauses), and the items over the target are put down to
 * what held them (slow-items.ts): a run of its own after the one measured, so that the probes'
 * timers are not in the figure held against the target.
 */
async function steadyRun(cluster: ProcessCluster, leader: MemberProcess, seconds: number, probed: boolean): Promise<FanoutMeasures['steady']> {
  const items = STEADY_RATE * seconds;
  const startsOf = (): Promise<ItemStarts[]> => Promise.all(cluster.members.map((m) => m.request<ItemStarts>('fanout-starts', { topic: TOPIC.steady })));
  // Each member's starts go on from the runs before.
  const before = (await startsOf()).map((s) => s.ms.length);
  const doneBefore = (await leader.state()).topics.find((t) => t.name === TOPIC.steady)?.done ?? 0;
  const doneP = waitDone(leader, TOPIC.steady, doneBefore + items);
  doneP.catch(() => undefined);
  if (probed) await Promise.all(cluster.members.map((m) => m.request('probe-start', { stalls: true })));
  const pids = cluster.members.map((m) => m.child?.pid);
  const cpuBefore = processesCpuMs(pids);
  const framesSent = async (): Promise<number> => (await Promise.all(cluster.members.map((m) => m.state()))).reduce((n, s) => n + s.transport.sent, 0);
  const framesBefore = await framesSent();
  const { report, emissions } = await slotEmit(cluster, TOPIC.steady, items, STEADY_BATCH, STEADY_EVERY_MS);
  await doneP;
  const cpuUsPerItem = cpuPerCommitUs(cpuBefore, processesCpuMs(pids), report.emitted);
  const framesPerItem = ((await framesSent()) - framesBefore) / Math.max(1, report.emitted);
  const probes = probed ? await Promise.all(cluster.members.map((m) => m.request<ProbeReport>('probe-stop'))) : null;
  const timings = (await startsOf()).flatMap((s, member) => s.ms.slice(before[member]).map((ms, k) => ({ member, emittedAt: s.emittedAt[(before[member] ?? 0) + k] ?? 0, ms })));
  const latencyMs = summarize(timings.map((t) => t.ms));
  const roles = { leader: cluster.members.indexOf(leader), emitter: cluster.members.findIndex((m) => m.address === report.member) };
  const slow = probes === null ? undefined : { ...slowItemCauses(timings, probes, roles, STEADY_P99_TARGET_MS), p99Ms: latencyMs.p99 };
  return { items, emitted: report.emitted, latencyMs, lateMs: report.lateMs, emissions: emissions(), cpuUsPerItem, framesPerItem, ...(slow === undefined ? {} : { slow }) };
}

async function redeliveryRun(cluster: ProcessCluster, leader: MemberProcess): Promise<FanoutMeasures['redelivery']> {
  // A consumer, not the leader: the figure is the consumer's death seen and its items leased
  // again, not an election.
  const victim = cluster.members.find((m) => m !== leader) as MemberProcess;
  await victim.request('fanout-hold', { topic: TOPIC.redeliver });
  await slotEmit(cluster, TOPIC.redeliver, REDELIVERY_ITEMS, 0, 0);
  const starts = (m: MemberProcess): Array<{ id: number; at: number }> => m.events.filter((e) => e.event === 'fanout-start' && e.topic === TOPIC.redeliver) as unknown as Array<{ id: number; at: number }>;
  // The others have done every item but those the victim holds (a lease taken back from it,
  // when the leader found it silent, was done elsewhere; an emission again, if the slot's run
  // moved, adds items).
  const heldCount = await until('the items not held done', async () => {
    const topic = (await leader.state()).topics.find((t) => t.name === TOPIC.redeliver);
    const held = topic?.inFlight[victim.address] ?? 0;
    if (topic === undefined || held === 0 || topic.pending > 0 || Object.keys(topic.inFlight).length > 1) return undefined;
    return topic.done + held === topic.emitted ? held : undefined;
  }, DONE_TIMEOUT_MS);
  const survivors = cluster.members.filter((m) => m !== victim);
  const startedElsewhere = new Set(survivors.flatMap(starts).map((s) => s.id));
  const held = new Set(starts(victim).map((s) => s.id).filter((id) => !startedElsewhere.has(id)));
  // It runs at most its parallelism of what it holds; the rest wait on it to start (prefetch).
  if (held.size === 0 || held.size > heldCount) throw new Error(`fanout bench: the victim holds ${heldCount} items but reported ${held.size} starts of items not run elsewhere`);
  const startedAgain = (): number[] => survivors.flatMap(starts).flatMap((s) => (held.has(s.id) ? [s.at] : []));
  return { ms: await redeliveryMs(victim, startedAgain, 'an item of the killed consumer started elsewhere', 1), held: heldCount };
}

/** What the members' health watch saw during a run (fanout-member.ts, HealthReport), by member. */
export type RunHealth = Record<string, HealthReport | null>;

/** cronraft's three measures, on a cluster of its own, and what the health watch saw in the first two runs. */
export async function benchFanout(sizes: FanoutSizes): Promise<{ measures: FanoutMeasures; health: { bulk: RunHealth; steady: RunHealth } }> {
  const cluster = await ProcessCluster.create(3);
  const watched = async <T>(run: () => Promise<T>): Promise<[T, RunHealth]> => {
    await Promise.all(cluster.members.map((m) => m.request('fanout-health-start')));
    const result = await run();
    const reports = await Promise.all(cluster.members.map((m) => m.request<HealthReport | null>('fanout-health-stop')));
    return [result, Object.fromEntries(cluster.members.map((m, i) => [m.address, reports[i] ?? null]))];
  };
  try {
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    await consumeAll(cluster);
    const [bulk, bulkHealth] = await watched(() =>
      bulkRuns(sizes.warmBulkRuns, async () => {
        const run = await bulkRun(cluster, leader, sizes.bulkItems);
        console.log(`cronraft end to end: ${JSON.stringify(run)}`);
        return run;
      }),
    );
    console.log(`  health: ${JSON.stringify(bulkHealth)}`);
    const steadyCold = await steadyRun(cluster, leader, sizes.steadySeconds, false);
    console.log(`cronraft steady, cold: ${JSON.stringify(steadyCold)}`);
    const [measured, steadyHealth] = await watched(() => steadyRun(cluster, leader, sizes.steadySeconds, false));
    const { slow } = await steadyRun(cluster, leader, sizes.steadySeconds, true);
    const steady = { ...measured, ...(slow === undefined ? {} : { slow }) };
    console.log(`cronraft steady: ${JSON.stringify(steady)}\n  health: ${JSON.stringify(steadyHealth)}`);
    const redelivery = await redeliveryRun(cluster, leader);
    return { measures: { ...bulk, steadyCold, steady, redelivery }, health: { bulk: bulkHealth, steady: steadyHealth } };
  } finally {
    // A clean stop, so that a member run with --cpu-prof (CRONRAFT_MEMBER_EXEC_ARGV) writes its profile.
    await Promise.race([Promise.all(cluster.members.map((m) => m.stop())), sleep(STOP_WAIT_MS)]);
    await cluster.cleanup();
  }
}

/** One line per member of what the health watch saw, for the report under the table. */
export function healthLines(run: string, health: RunHealth): string[] {
  return Object.entries(health).map(([member, h]) => {
    if (h === null) return `${run}, ${member}: no report`;
    const ineligible = Object.entries(h.ineligible).map(([id, c]) => `${id} clock ${c.clock} snapshot ${c.snapshot} silent ${c.silent}`).join('; ');
    const leading = h.samples === 0 ? '' : `; as leader (${h.samples} samples): longest silence of a peer ${fmt(h.maxSilenceMs, 0)} ms, ineligible samples: ${ineligible === '' ? 'none' : ineligible}`;
    return `${run}, ${member}: event-loop delay p99 ${fmt(h.loopDelayMs.p99, 0)} ms, max ${fmt(h.loopDelayMs.max, 0)} ms${leading}`;
  });
}

const ms = (v: number): string => `${fmt(v)} ms`;
const perSecond = (v: number): string => `${fmt(v, 0)}/s`;
/** A run's items/s, and where the slot ran (cronraft's). */
const runText = (r: BulkMeasure): string => `${perSecond(r.itemsPerSecond)}${r.emitter === null ? '' : ` ${r.emitter === 'leader' ? 'L' : 'F'}`}`;
const steadyText = (r: SteadyMeasure): string => `${ms(r.latencyMs.p50)} / ${ms(r.latencyMs.p99)}`;
const cpuText = (us: number | null): string => (us === null ? 'n/a' : `${fmt(us, 0)} µs`);
const redeliveryText = (r: FanoutMeasures['redelivery']): string => (r.ms === null ? `> ${REDELIVERY_CAP_MS / 1000} s (cap)` : ms(r.ms));
/** ratio > 1: cronraft better; `lower`: lower is better. */
const ratio = (ours: number | null, theirs: number | null, lower: boolean): string => {
  if (theirs === null && ours !== null && lower) return `> ${fmt(REDELIVERY_CAP_MS / ours, 0)}x`;
  if (ours === null || theirs === null) return 'n/a';
  return `${fmt(lower ? theirs / ours : ours / theirs)}x`;
};
/** Against the target: > 1 meets it. */
const vsTarget = (v: number | null, target: number, lower: boolean): string => (v === null ? '< 1 (n/a)' : `${fmt(lower ? target / v : v / target)}x`);

export const FANOUT_HEADERS = ['measure', 'cronraft', 'BullMQ', 'cronraft vs BullMQ (> 1: better)', 'target', 'vs target (>= 1 meets it)'];

/** The table's rows; `peer` null when BullMQ was not measured. */
export function fanoutRows(ours: FanoutMeasures, peer: FanoutMeasures | null): string[][] {
  const p = <T>(f: (m: FanoutMeasures) => T): T | null => (peer === null ? null : f(peer));
  const text = (v: string | null): string => v ?? 'n/a';
  return [
    [`items/s end to end, ${ours.bulk.items.toLocaleString('en-US')} items, warm: median of ${ours.bulkRuns.length} runs (first emit to all done)`, perSecond(ours.bulk.itemsPerSecond), text(p((m) => perSecond(m.bulk.itemsPerSecond))), ratio(ours.bulk.itemsPerSecond, p((m) => m.bulk.itemsPerSecond), false), '>= 30,000/s, ahead of BullMQ', vsTarget(ours.bulk.itemsPerSecond, 30_000, false)],
    ['  each warm run (the slot ran on L: the leader, F: a follower)', ours.bulkRuns.map(runText).join(', '), text(p((m) => m.bulkRuns.map(runText).join(', '))), '', '', ''],
    ['  of which the emit (first call to last item committed)', ms(ours.bulk.emitMs), text(p((m) => ms(m.bulk.emitMs))), '', '', ''],
    ['  CPU per item, all processes of the system (µs)', cpuText(ours.bulk.cpuUsPerItem), text(p((m) => cpuText(m.bulk.cpuUsPerItem))), ratio(ours.bulk.cpuUsPerItem, p((m) => m.bulk.cpuUsPerItem), true), '', ''],
    ['  times the slot emitted the items (> 1: its run moved and emitted again); emits that failed and were made again', `${ours.bulk.emissions}; ${ours.bulk.emitErrors}`, text(p((m) => `${m.bulk.emissions}; ${m.bulk.emitErrors}`)), '', '', ''],
    ['  longest time no item was recorded done (at ms after the first emit)', `${ms(ours.bulk.stallMs)} (at ${fmt(ours.bulk.stallAtMs, 0)})`, text(p((m) => `${ms(m.bulk.stallMs)} (at ${fmt(m.bulk.stallAtMs, 0)})`)), '', '', ''],
    [`items/s end to end, the first ${ours.bulkCold.items.toLocaleString('en-US')} items after start (cold)`, runText(ours.bulkCold), text(p((m) => runText(m.bulkCold))), ratio(ours.bulkCold.itemsPerSecond, p((m) => m.bulkCold.itemsPerSecond), false), '', ''],
    [`emit-to-start p50 at ${STEADY_RATE.toLocaleString('en-US')} items/s`, ms(ours.steady.latencyMs.p50), text(p((m) => ms(m.steady.latencyMs.p50))), ratio(ours.steady.latencyMs.p50, p((m) => m.steady.latencyMs.p50), true), '', ''],
    [`emit-to-start p99 at ${STEADY_RATE.toLocaleString('en-US')} items/s`, ms(ours.steady.latencyMs.p99), text(p((m) => ms(m.steady.latencyMs.p99))), ratio(ours.steady.latencyMs.p99, p((m) => m.steady.latencyMs.p99), true), `<= ${STEADY_P99_TARGET_MS} ms`, vsTarget(ours.steady.latencyMs.p99, STEADY_P99_TARGET_MS, true)],
    ['  max; items started of emitted; last batch late by', `${ms(ours.steady.latencyMs.max)}; ${ours.steady.latencyMs.n}/${ours.steady.emitted}; ${ms(ours.steady.lateMs)}`, text(p((m) => `${ms(m.steady.latencyMs.max)}; ${m.steady.latencyMs.n}/${m.steady.emitted}; ${ms(m.steady.lateMs)}`)), '', '', ''],
    [`  CPU per item there, all processes of the system (µs)`, cpuText(ours.steady.cpuUsPerItem), text(p((m) => cpuText(m.steady.cpuUsPerItem))), ratio(ours.steady.cpuUsPerItem, p((m) => m.steady.cpuUsPerItem), true), '', ''],
    [`  Raft frames sent there per item, all members`, ours.steady.framesPerItem === null ? 'n/a' : fmt(ours.steady.framesPerItem), '', '', '', ''],
    [`emit-to-start p50 / p99 at ${STEADY_RATE.toLocaleString('en-US')} items/s, the first steady run (cold)`, steadyText(ours.steadyCold), text(p((m) => steadyText(m.steadyCold))), ratio(ours.steadyCold.latencyMs.p99, p((m) => m.steadyCold.latencyMs.p99), true), '', ''],
    [`  a third steady run, every member probed: its p99; its items over ${STEADY_P99_TARGET_MS} ms, and the member whose event loop held each (its stalls alone made it late)`, ours.steady.slow === undefined ? 'n/a' : `${ms(ours.steady.slow.p99Ms)}; ${slowItemsText(ours.steady.slow)}`, '', '', '', ''],
    ['re-delivery after kill -9 of a consumer (kill to first start elsewhere)', redeliveryText(ours.redelivery), text(p((m) => redeliveryText(m.redelivery))), ratio(ours.redelivery.ms, p((m) => m.redelivery.ms), true), '<= 500 ms', vsTarget(ours.redelivery.ms, 500, true)],
    ['  items the killed consumer held (running or waiting to start)', String(ours.redelivery.held), text(p((m) => String(m.redelivery.held))), '', '', ''],
  ];
}
