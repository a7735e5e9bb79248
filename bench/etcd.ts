/**
 * The peer comparison for `npm run bench -- raft`: etcd 3.4 (Debian's etcd-server) measured the
 * way bench/raft.ts measures cronraft. Three members on 127.0.0.1, default heartbeat (100 ms) and
 * election timeout (1000 ms), fsync on. The client is the bench process, talking to the leader
 * through etcd's gRPC JSON gateway (`POST /v3/kv/put`) over keep-alive node:http sockets. Its
 * serial phases run in the windows between cronraft's, both clusters up (serial-sides.ts); the
 * concurrent load and the failovers run after cronraft's, one system at a time.
 *
 * Not like-for-like in one respect: cronraft is a library, so its bench proposes inside the
 * leader process, while every etcd figure includes an HTTP round trip through the gateway.
 */
import { Agent } from 'node:http';
import { performance } from 'node:perf_hooks';
import { EtcdCluster, GatewayError, ensureEtcd, postJson, sleep, type EtcdMember } from './etcd-cluster.js';
import { cpuPerCommitUs, processesCpuMs } from './proc-cpu.js';
import { cpuText, raftRows, type RaftBenchOptions, type RaftBenchResult } from './raft.js';
import type { SerialPhasesResult, SerialSide } from './serial-sides.js';
import { fmt, median, summarize } from './stats.js';

export interface EtcdBenchResult {
  readonly version: string;
  /** The first COLD_COMMITS puts after start, as bench/raft.ts measures cronraft's. */
  readonly cold: ReturnType<typeof summarize>;
  readonly serial: ReturnType<typeof summarize>;
  /** CPU of all etcd processes per serial put after the warm-up; the client runs in the bench process, not counted. */
  readonly serialCpuUsPerCommit: number | null;
  /** cpuUsPerCommit: CPU of all etcd processes per commit; the clients run in the bench process, not counted. */
  readonly throughput: {
    readonly commitsPerSecond: number;
    readonly concurrency: number;
    readonly errors: number;
    readonly errorKinds: Record<string, number>;
    readonly cpuUsPerCommit: number | null;
  };
  /** The first coldLoadMs of concurrent load, as bench/raft.ts measures cronraft's. */
  readonly coldThroughput: { readonly commitsPerSecond: number };
  readonly failoverMs: { readonly median: number; readonly runs: number[]; readonly errorKinds: Record<string, number> };
}

const CLUSTER_SIZE = 3;
/** Same as bench/raft.ts: value size, concurrent proposers (the serial phases are serial-sides.ts's, shared). */
const VALUE_BYTES = 64;
const CONCURRENCY = 64;
/** First election after a cold start: election timeout is 1 s, plus process start-up. */
const STARTUP_TIMEOUT_MS = 30_000;
/** Bound on one put outside failover; etcd's own request timeout is about 7 s. */
const PUT_TIMEOUT_MS = 10_000;
/**
 * Each failover attempt gives up this soon: a follower forwards puts to the leader it knows, so
 * until it learns of the new one they go to the dead one and never return. Same as bench/raft.ts
 * (25 ms), so both sides report the first commit with the same granularity.
 */
const FAILOVER_ATTEMPT_TIMEOUT_MS = 25;
/** Attempts that fail fast (no leader yet) are spaced this far apart so we do not spin. */
const FAILOVER_MIN_ATTEMPT_INTERVAL_MS = 5;
/** Same as bench/raft.ts: a failover that takes longer counts as infinite. */
const FAILOVER_DEADLINE_MS = 10_000;
/** Before a kill every member must be caught up, or no up-to-date majority may survive. */
const CATCH_UP_TIMEOUT_MS = 10_000;
/** A restarted member replays its WAL and catches up before the next run. */
const RESTART_TIMEOUT_MS = 30_000;

const now = (): number => performance.timeOrigin + performance.now();
const b64 = (s: string | Uint8Array): string => Buffer.from(s).toString('base64');
/** The value is fixed, so its base64 is computed once rather than on every put. */
const VALUE_B64 = b64(new Uint8Array(VALUE_BYTES).fill(0x61));

function put(agent: Agent, m: EtcdMember, key: string, timeoutMs: number): Promise<unknown> {
  return postJson(agent, m.clientPort, '/v3/kv/put', `{"key":"${b64(key)}","value":"${VALUE_B64}"}`, timeoutMs);
}

function countError(kinds: Record<string, number>, e: unknown): void {
  const kind = e instanceof GatewayError ? e.kind : String(e);
  kinds[kind] = (kinds[kind] ?? 0) + 1;
}

/**
 * Puts from every survivor until one succeeds; returns when the first put succeeded, or +Infinity
 * if none did before the deadline.
 */
async function firstPut(agent: Agent, survivors: readonly EtcdMember[], errorKinds: Record<string, number>): Promise<number> {
  const deadline = now() + FAILOVER_DEADLINE_MS;
  let first = Number.POSITIVE_INFINITY;
  await Promise.all(
    survivors.map(async (m) => {
      for (let n = 0; first === Number.POSITIVE_INFINITY && now() < deadline; n++) {
        const t0 = now();
        try {
          await put(agent, m, `bench/failover/${m.name}/${n}`, FAILOVER_ATTEMPT_TIMEOUT_MS);
          first = Math.min(first, now());
        } catch (e) {
          countError(errorKinds, e);
          const wait = FAILOVER_MIN_ATTEMPT_INTERVAL_MS - (now() - t0);
          if (wait > 0) await sleep(wait);
        }
      }
    }),
  );
  return first;
}

/**
 * An etcd cluster started for the comparison: its serial side (serial-sides.ts), whose phases
 * bench/raft.ts runs in the windows between cronraft's, then `finish` for the rest of the rows.
 */
export interface EtcdSession {
  readonly side: SerialSide;
  /** The concurrent load and the failovers, then the cluster removed; with `serial`, what the side measured. */
  finish(o: RaftBenchOptions, serial: SerialPhasesResult): Promise<EtcdBenchResult>;
  /** Removes the cluster without measuring more (cronraft's side failed). */
  abort(): Promise<void>;
}

/** Starts a cluster of etcd and waits for its leader: the cold phase counts from here, as cronraft's does from its start. */
export async function startEtcd(): Promise<EtcdSession | { skipped: string }> {
  const installed = await ensureEtcd();
  if ('skipped' in installed) return installed;

  // One socket per proposer, kept alive so no put pays for a TCP handshake.
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  // Failover attempts time out and destroy their sockets; they get their own pool.
  const probeAgent = new Agent({ keepAlive: true });
  const cluster = await EtcdCluster.create(CLUSTER_SIZE);
  const cleanup = async (): Promise<void> => {
    agent.destroy();
    probeAgent.destroy();
    await cluster.cleanup();
  };
  // The member logs usually say why (port taken, bad flag, disk full).
  const explained = (e: unknown): Error => new Error(`${(e as Error).message}\n${cluster.describe()}`, { cause: e });
  let leader: EtcdMember;
  try {
    cluster.startAll();
    leader = await cluster.waitForLeader(agent, STARTUP_TIMEOUT_MS);
  } catch (e) {
    await cleanup();
    throw explained(e);
  }
  // Every put goes to a key of its own, as cronraft's serial proposals are each a new entry.
  let puts = 0;
  const side: SerialSide = {
    async commits(count) {
      const latencies: number[] = [];
      for (let i = 0; i < count; i++) {
        const t0 = now();
        await put(agent, leader, `bench/serial/${puts++}`, PUT_TIMEOUT_MS);
        latencies.push(now() - t0);
      }
      return latencies;
    },
    pids: () => cluster.members.map((m) => m.child?.pid),
  };
  const finish = async (o: RaftBenchOptions, serialRun: SerialPhasesResult): Promise<EtcdBenchResult> => {
    try {
      if (serialRun.error !== null) throw serialRun.error;
      const cold = summarize(serialRun.cold);
      const serial = summarize(serialRun.serial);
      const serialCpuUsPerCommit = serialRun.serialCpuUsPerCommit;

      // Each proposer rewrites its own key: every put is still a new revision written and synced,
      // but etcd's in-memory key index stays small, as cronraft's log has no keys at all.
      const target = leader;
      const runLoad = async (durationMs: number): Promise<{ commits: number; errors: number; errorKinds: Record<string, number>; elapsedMs: number }> => {
        const errorKinds: Record<string, number> = {};
        let commits = 0;
        let errors = 0;
        const loadStart = now();
        const loadEnd = loadStart + durationMs;
        await Promise.all(
          Array.from({ length: CONCURRENCY }, async (_, c) => {
            while (now() < loadEnd) {
              try {
                await put(agent, target, `bench/load/${c}`, PUT_TIMEOUT_MS);
                commits++;
              } catch (e) {
                errors++;
                countError(errorKinds, e);
              }
            }
          }),
        );
        return { commits, errors, errorKinds, elapsedMs: now() - loadStart };
      };
      // Warmed up like cronraft's (see bench/raft.ts), though only the client here runs on a JIT.
      const coldLoad = await runLoad(o.coldLoadMs);
      const coldThroughput = { commitsPerSecond: (coldLoad.commits / coldLoad.elapsedMs) * 1000 };
      await runLoad(o.loadWarmupMs);
      const pids = cluster.members.map((m) => m.child?.pid);
      const cpuBefore = processesCpuMs(pids);
      const load = await runLoad(o.loadSeconds * 1000);
      const cpuUsPerCommit = cpuPerCommitUs(cpuBefore, processesCpuMs(pids), load.commits);
      const throughput = { commitsPerSecond: (load.commits / load.elapsedMs) * 1000, concurrency: CONCURRENCY, errors: load.errors, errorKinds: load.errorKinds, cpuUsPerCommit };

      const runs: number[] = [];
      const failoverErrors: Record<string, number> = {};
      for (let run = 0; run < o.failoverRuns; run++) {
        leader = await cluster.waitForLeader(agent, RESTART_TIMEOUT_MS);
        await put(agent, leader, 'bench/sync', PUT_TIMEOUT_MS);
        await cluster.waitCaughtUp(agent, leader, CATCH_UP_TIMEOUT_MS);
        const survivors = cluster.members.filter((m) => m !== leader);
        const killedAt = now();
        await leader.kill();
        runs.push((await firstPut(probeAgent, survivors, failoverErrors)) - killedAt);
        cluster.restart(leader);
        // Healthy again: every member, the restarted one included, agrees on a leader and has
        // applied its log, so the next run starts from the same state as this one.
        const next = await cluster.waitForLeader(agent, RESTART_TIMEOUT_MS);
        await cluster.waitCaughtUp(agent, next, RESTART_TIMEOUT_MS);
      }
      return { version: installed.version, cold, serial, serialCpuUsPerCommit, throughput, coldThroughput, failoverMs: { median: median(runs), runs, errorKinds: failoverErrors } };
    } catch (e) {
      throw explained(e);
    } finally {
      await cleanup();
    }
  };
  return { side, finish, abort: cleanup };
}

/** "3.4.23" -> "etcd 3.4", for the table header. */
export function etcdLabel(r: EtcdBenchResult): string {
  return `etcd ${r.version.split('.').slice(0, 2).join('.')}`;
}

/**
 * Rows of measure, cronraft, etcd, ratio, target. The ratio is always oriented so that above 1
 * means cronraft is better: etcd/cronraft for times, cronraft/etcd for throughput.
 */
export function comparisonRows(raft: RaftBenchResult, etcd: EtcdBenchResult): string[][] {
  const lowerIsBetter = (c: number, e: number): string => `${fmt(e / c)}x (etcd/cronraft)`;
  const higherIsBetter = (c: number, e: number): string => `${fmt(c / e)}x (cronraft/etcd)`;
  const cpuPair = (c: number | null, e: number | null): [string, string] => [cpuText(e), c === null || e === null ? 'n/a' : lowerIsBetter(c, e)];
  const peer: Array<[string, string]> = [
    [`${fmt(etcd.serial.p50)} ms`, lowerIsBetter(raft.serial.p50, etcd.serial.p50)],
    [`${fmt(etcd.serial.p99)} ms`, lowerIsBetter(raft.serial.p99, etcd.serial.p99)],
    cpuPair(raft.serialCpuUsPerCommit, etcd.serialCpuUsPerCommit),
    [`${fmt(etcd.throughput.commitsPerSecond, 0)} commits/s`, higherIsBetter(raft.throughput.commitsPerSecond, etcd.throughput.commitsPerSecond)],
    cpuPair(raft.throughput.cpuUsPerCommit, etcd.throughput.cpuUsPerCommit),
    ...(raft.failoverMs.runs.length === 0 ? [] : [[`${fmt(etcd.failoverMs.median, 0)} ms`, lowerIsBetter(raft.failoverMs.median, etcd.failoverMs.median)] as [string, string]]),
    [`${fmt(etcd.cold.p50)} / ${fmt(etcd.cold.p99)} ms`, lowerIsBetter(raft.cold.p50, etcd.cold.p50)],
    [`${fmt(etcd.coldThroughput.commitsPerSecond, 0)} commits/s`, higherIsBetter(raft.coldThroughput.commitsPerSecond, etcd.coldThroughput.commitsPerSecond)],
  ];
  // raftRows gives measure, cronraft's figure and the target, in the same order as `peer`.
  return raftRows(raft).map((row, i) => {
    const [measure = '', ours = '', target = ''] = row;
    const [theirs = 'n/a', ratio = 'n/a'] = peer[i] ?? [];
    return [measure, ours, theirs, ratio, target];
  });
}
