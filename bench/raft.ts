/**
 * `npm run bench -- raft`: three members in three processes on loopback, level with sync on,
 * default settings. Measures commit latency of serial proposals, throughput with 64
 * concurrent proposers, and the time from kill -9 of the leader to the first new commit.
 */
import type { ProbeReport } from '../test/fixtures/member-probe.js';
import { ProcessCluster, type MemberProcess } from '../test/fixtures/process-cluster.js';
import { cpuPerCommitUs, processesCpuMs } from './proc-cpu.js';
import { serialPhases, type SerialPhasesResult, type SerialSide } from './serial-sides.js';
import { fmt, median, summarize } from './stats.js';
import type { PhaseProbe } from './tail.js';

export interface RaftBenchResult {
  /** The first COLD_COMMITS serial commits after start, before the JIT has compiled the commit path. */
  readonly cold: ReturnType<typeof summarize>;
  /** Serial commits after the warm-up. */
  readonly serial: ReturnType<typeof summarize>;
  /** CPU of all member processes (every thread) per serial commit after the warm-up: a count of the work, where the tail stretches with the machine's load. */
  readonly serialCpuUsPerCommit: number | null;
  /** cpuUsPerCommit: CPU of all member processes (every thread) per commit; the proposers run in the leader's. */
  readonly throughput: { readonly commitsPerSecond: number; readonly concurrency: number; readonly errors: number; readonly cpuUsPerCommit: number | null };
  /** The first coldLoadMs of concurrent load, before the concurrent path has warmed up. */
  readonly coldThroughput: { readonly commitsPerSecond: number };
  readonly failoverMs: { readonly median: number; readonly runs: number[] };
}

export interface RaftBenchOptions {
  /** Serial proposals before measuring, until their latencies add up to this (see COLD_COMMITS, serial-sides.ts). */
  readonly warmupMs: number;
  readonly serialCount: number;
  /** Concurrent proposers measured first, for this long: the cold throughput. */
  readonly coldLoadMs: number;
  /** Then concurrent proposers before measuring their throughput, for this long (see LOAD_WARMUP_MS). */
  readonly loadWarmupMs: number;
  readonly loadSeconds: number;
  readonly failoverRuns: number;
  /**
   * Run the serial phases again on a second cluster, every member probed through them (GC
   * pauses, event-loop delay, storage writes: test/fixtures/member-probe.ts), for bench/tail.ts
   * to attribute the slow commits; the rows are measured on a cluster without probes.
   */
  readonly probe: boolean;
}

/**
 * What benchRaft measured, what the probes saw in the second cluster's serial phases (none
 * without `probe`), and what the peer measured in the windows between cronraft's (null without one).
 */
export interface RaftBenchRun {
  readonly result: RaftBenchResult;
  readonly phases: readonly PhaseProbe[];
  readonly peerSerial: SerialPhasesResult | null;
}

/**
 * How many serial commits after start are reported apart, as the cold figure. V8 compiles a
 * function with its optimising tier only after many calls, and a serial commit calls each
 * function of its path a few times: with --no-opt the serial latency stays flat, while by
 * default it falls by half or more over the first few thousand commits, as V8's background
 * threads compile the path. A cluster spends nearly all its life past that point, so the
 * targets are compared with figures measured after a warm-up (as JMH and other JIT benchmarks
 * do), and the cold figure is printed beside them.
 */
export const COLD_COMMITS = 1000;

/**
 * How long the 64 proposers run before their throughput is measured, the cold seconds included.
 * The concurrent path (batches of 64 entries through libp2p, cborg and level) warms up over
 * longer than the serial one: of pairs of short runs one right after the other, the second was
 * nearly always the faster, and the CPU per commit kept falling over the first several seconds
 * of load. So the throughput target is compared with a figure taken after 10 s of concurrent
 * load, and the first seconds of it are printed beside it as the cold throughput.
 */
export const LOAD_WARMUP_MS = 10_000;

// Compared with times that member processes report: the wall clock, which every process shares
// (each process's performance.timeOrigin is its own, to a millisecond or so).
const now = (): number => Date.now();

/**
 * Measures the table's rows on a cluster that no probe runs in, as etcd's are; then, with
 * `probe`, runs the serial phases again on a second cluster started afresh, probed, for
 * bench/tail.ts to attribute its slow commits. The probes cost the members time (a GC observer,
 * the loop-delay monitor's 1 ms timer, an await more around each storage write): measured here,
 * with them on, windows of warm serial commits cost more CPU and had a longer p99 than the
 * windows between them without, in the same cluster.
 */
export async function benchRaft(o: RaftBenchOptions, peer?: SerialSide): Promise<RaftBenchRun> {
  const { result, peerSerial } = await measureRaft(o, peer);
  const phases = o.probe ? await probedSerialPhases(o) : [];
  return { result, phases, peerSerial };
}

/** `count` serial commits on `leader`; with `probed`, every member is probed meanwhile and the phase is added to `probed.phases`. */
async function serialPhase(cluster: ProcessCluster, leader: MemberProcess, count: number, probed?: { readonly name: string; readonly phases: PhaseProbe[] }): Promise<number[]> {
  const members = cluster.members;
  if (probed !== undefined) await Promise.all(members.map((m) => m.request('probe-start')));
  const r = await leader.request<{ latencies: number[]; starts: number[] }>('serial', { count, bytes: 64 });
  if (probed !== undefined) {
    const reports = await Promise.all(members.map((m) => m.request<ProbeReport>('probe-stop')));
    const role = (m: MemberProcess): 'leader' | 'follower' => (m === leader ? 'leader' : 'follower');
    probed.phases.push({ name: probed.name, latencies: r.latencies, starts: r.starts, members: members.map((m, i) => ({ role: role(m), report: reports[i] as ProbeReport })) });
  }
  return r.latencies;
}

/** Serial commits until `warmupMs` has passed. */
async function warmUp(leader: MemberProcess, warmupMs: number): Promise<void> {
  const warmupEnd = now() + warmupMs;
  while (now() < warmupEnd) await leader.request('serial', { count: 200, bytes: 64 });
}

/** The serial phases of measureRaft, on a fresh cluster, every member probed through them. */
async function probedSerialPhases(o: RaftBenchOptions): Promise<PhaseProbe[]> {
  const cluster = await ProcessCluster.create(3);
  try {
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    const phases: PhaseProbe[] = [];
    await serialPhase(cluster, leader, COLD_COMMITS, { name: `cronraft, the first ${COLD_COMMITS} commits after start (a second cluster, probed)`, phases });
    await warmUp(leader, o.warmupMs);
    await serialPhase(cluster, leader, o.serialCount, { name: 'cronraft, serial commits after the warm-up (the second cluster, probed)', phases });
    return phases;
  } finally {
    await cluster.cleanup();
  }
}

/**
 * The rows, on a cluster started afresh. With a `peer` (started already), its serial phases run
 * in the windows between cronraft's (serial-sides.ts), so that both meet the same load.
 */
async function measureRaft(o: RaftBenchOptions, peer?: SerialSide): Promise<{ result: RaftBenchResult; peerSerial: SerialPhasesResult | null }> {
  const cluster = await ProcessCluster.create(3);
  try {
    await cluster.startAll();
    let leader = await cluster.waitForLeader();
    const ours: SerialSide = {
      commits: (count) => serialPhase(cluster, leader, count),
      pids: () => cluster.members.map((m) => m.child?.pid),
    };
    const [mine, theirs] = await serialPhases(peer === undefined ? [ours] : [ours, peer], { coldCommits: COLD_COMMITS, warmupMs: o.warmupMs, serialCount: o.serialCount });
    if (mine === undefined) throw new Error('no serial phases measured');
    if (mine.error !== null) throw mine.error;
    const cold = summarize(mine.cold);
    const serial = summarize(mine.serial);
    const serialCpuUsPerCommit = mine.serialCpuUsPerCommit;
    // The concurrent path warms up on its own (see LOAD_WARMUP_MS).
    const coldLoad = await leader.request<{ commits: number; elapsedMs: number }>('load', { concurrency: 64, durationMs: o.coldLoadMs, bytes: 64 });
    const coldThroughput = { commitsPerSecond: (coldLoad.commits / coldLoad.elapsedMs) * 1000 };
    await leader.request('load', { concurrency: 64, durationMs: o.loadWarmupMs, bytes: 64 });
    const pids = cluster.members.map((m) => m.child?.pid);
    const cpuBefore = processesCpuMs(pids);
    const load = await leader.request<{ commits: number; errors: number; elapsedMs: number }>('load', { concurrency: 64, durationMs: o.loadSeconds * 1000, bytes: 64 });
    const cpuUsPerCommit = cpuPerCommitUs(cpuBefore, processesCpuMs(pids), load.commits);
    const throughput = { commitsPerSecond: (load.commits / load.elapsedMs) * 1000, concurrency: 64, errors: load.errors, cpuUsPerCommit };

    const runs: number[] = [];
    for (let run = 0; run < o.failoverRuns; run++) {
      leader = await cluster.waitForLeader();
      // Every member must be caught up, or the next kill could leave no up-to-date majority.
      const { index } = await leader.request<{ index: number }>('propose', { data: 'sync' });
      for (const m of cluster.members) {
        for (let i = 0; i < 500 && (await m.state()).appliedIndex < index; i++) await new Promise((r) => setTimeout(r, 10));
      }
      const survivors = cluster.members.filter((m) => m !== leader);
      const killedAt = now();
      await leader.kill();
      const firsts = await Promise.all(
        survivors.map((m) => m.request<{ at: number }>('first-commit', { attemptTimeoutMs: 25, deadlineMs: 10_000 }).then((r) => r.at, () => Number.POSITIVE_INFINITY)),
      );
      runs.push(Math.min(...firsts) - killedAt);
      cluster.startMember(leader);
      await leader.waitEvent((e) => e.event === 'started');
    }
    return { result: { cold, serial, serialCpuUsPerCommit, throughput, coldThroughput, failoverMs: { median: median(runs), runs } }, peerSerial: theirs ?? null };
  } finally {
    await cluster.cleanup();
  }
}

/** A CPU figure for the table: n/a where it could not be read (no /proc). */
export function cpuText(us: number | null): string {
  return us === null ? 'n/a' : `${fmt(us, 0)} µs`;
}

export function raftRows(r: RaftBenchResult): string[][] {
  const rows = [
    ['commit latency p50 (serial, warm)', `${fmt(r.serial.p50)} ms`, '<= 1.5 ms'],
    ['commit latency p99 (serial, warm)', `${fmt(r.serial.p99)} ms`, '<= 5 ms'],
    ['CPU per serial commit, all members', cpuText(r.serialCpuUsPerCommit), ''],
    ['throughput, 64 proposers', `${fmt(r.throughput.commitsPerSecond, 0)} commits/s`, '>= 20,000/s'],
    ['CPU per commit there, all members', cpuText(r.throughput.cpuUsPerCommit), ''],
  ];
  const cold = [
    [`first ${COLD_COMMITS} commits after start, p50 / p99 (cold)`, `${fmt(r.cold.p50)} / ${fmt(r.cold.p99)} ms`, ''],
    ['throughput, first seconds of 64 proposers (cold)', `${fmt(r.coldThroughput.commitsPerSecond, 0)} commits/s`, ''],
  ];
  // --no-failover measures none: no row rather than a median of nothing.
  if (r.failoverMs.runs.length === 0) return [...rows, ...cold];
  return [...rows, [`failover, kill -9 leader to first commit (median of ${r.failoverMs.runs.length})`, `${fmt(r.failoverMs.median, 0)} ms`, '<= 600 ms'], ...cold];
}
