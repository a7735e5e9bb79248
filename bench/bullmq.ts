/**
 * The peer of the fan-out bench (bench/fanout.ts): BullMQ with Redis, the queue a Node user would
 * pick instead, measured the way cronraft is. Redis on 127.0.0.1 (bench/redis.ts); three worker
 * processes (bench/bullmq-worker.ts), each a Worker per queue with concurrency 64 and BullMQ's
 * defaults otherwise; the producer (`addBulk`, MAX_ITEMS_PER_ADD jobs a call, as cronraft's emit
 * puts MAX_ITEMS_PER_EMIT items in an entry) and the count of completed jobs in the bench
 * process. Re-delivery after kill -9 is BullMQ's stalled-job check, with its defaults (a lock of
 * 30 s, checked every 30 s), capped at REDELIVERY_CAP_MS.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Queue } from 'bullmq';
import { MAX_ITEMS_PER_EMIT } from '../src/fanout/command.js';
import { EMIT_ENTRIES_IN_FLIGHT } from '../src/runtime/fanout/emit-entries.js';
import { FANOUT_ITEM_BYTES, watchDone, type DoneReport } from '../test/fixtures/fanout-member.js';
import { wallMs } from '../test/fixtures/member-probe.js';
import { BenchChild } from './bench-child.js';
import type { BenchJobData, WorkerRequest } from './bullmq-worker.js';
import { bulkRuns, PARALLELISM, redeliveryMs, REDELIVERY_ITEMS, STEADY_BATCH, STEADY_EVERY_MS, STEADY_RATE, until, WAIT_MS, type BulkMeasure, type FanoutMeasures, type FanoutSizes, type SteadyMeasure } from './fanout.js';
import { cpuPerCommitUs, processesCpuMs } from './proc-cpu.js';
import { ensureRedis, RedisServer } from './redis.js';
import { summarize } from './stats.js';

const workerScript = join(dirname(fileURLToPath(import.meta.url)), 'bullmq-worker.js');
/** Jobs one addBulk call adds: as many as cronraft puts in one entry of the log. */
const MAX_ITEMS_PER_ADD = MAX_ITEMS_PER_EMIT;
/** Bound on one request to a worker process. */
const REQUEST_TIMEOUT_MS = 60_000;
/** Bound on each run's wait for its jobs to complete. */
const DONE_TIMEOUT_MS = 10 * 60_000;
const WORKERS = 3;
const QUEUE = { bulk: 'bulk', steady: 'steady', redeliver: 'redeliver' } as const;

export interface BullmqBenchResult extends FanoutMeasures {
  readonly bullmqVersion: string;
  readonly redisVersion: string;
}

/** A worker process, asked over IPC (bench-child.ts). */
class WorkerProcess extends BenchChild<WorkerRequest> {
  constructor(port: number) {
    super(workerScript, [JSON.stringify({ port })], 'BullMQ worker', REQUEST_TIMEOUT_MS);
  }
}

/** A job's data: its emit time (set when it is added), its sequence number, padded so that its JSON is about FANOUT_ITEM_BYTES. */
function jobData(i: number, t: number): BenchJobData {
  const bare = JSON.stringify({ t: wallMs(), i, p: '' }).length;
  return { t, i, p: 'x'.repeat(Math.max(0, FANOUT_ITEM_BYTES - bare)) };
}

const addJobs = (queue: Queue<BenchJobData>, from: number, count: number, t: number): Promise<unknown> =>
  queue.addBulk(Array.from({ length: count }, (_, k) => ({ name: 'item', data: jobData(from + k, t) })));

/** Waits until `count` jobs completed: when, and the longest time none completed before. */
async function waitCompleted(queue: Queue<BenchJobData>, count: number): Promise<DoneReport> {
  const r = await watchDone(() => queue.getCompletedCount(), count, DONE_TIMEOUT_MS);
  if (r.done < count) throw new Error(`BullMQ: ${r.done} of ${count} jobs completed within ${DONE_TIMEOUT_MS} ms`);
  return r;
}

async function bulkRun(queue: Queue<BenchJobData>, items: number, pids: ReadonlyArray<number | undefined>): Promise<BulkMeasure> {
  // The queue's completed count goes on from the runs before.
  const completedBefore = await queue.getCompletedCount();
  const cpuBefore = processesCpuMs(pids);
  const firstEmitAt = wallMs();
  // As many adds at once as cronraft's emit has entries in flight.
  const adding = new Set<Promise<unknown>>();
  for (let i = 0; i < items; i += MAX_ITEMS_PER_ADD) {
    while (adding.size >= EMIT_ENTRIES_IN_FLIGHT) await Promise.race(adding);
    const add: Promise<unknown> = addJobs(queue, i, Math.min(MAX_ITEMS_PER_ADD, items - i), firstEmitAt).finally(() => adding.delete(add));
    adding.add(add);
  }
  await Promise.all(adding);
  const emitMs = wallMs() - firstEmitAt;
  // Waited for once the adds are over, as bench/fanout.ts does once the slot's emit is.
  const d = await waitCompleted(queue, completedBefore + items);
  const cpuUsPerItem = cpuPerCommitUs(cpuBefore, processesCpuMs(pids), items);
  const elapsedMs = d.doneAt - firstEmitAt;
  return { items, elapsedMs, itemsPerSecond: (items / elapsedMs) * 1000, emitMs, stallMs: d.stallMs, stallAtMs: d.stallAt - firstEmitAt, emissions: 1, emitErrors: 0, cpuUsPerItem, emitter: null };
}

async function steadyRun(queue: Queue<BenchJobData>, workers: readonly WorkerProcess[], seconds: number, pids: ReadonlyArray<number | undefined>): Promise<SteadyMeasure> {
  const items = STEADY_RATE * seconds;
  const latenciesOf = (): Promise<number[][]> => Promise.all(workers.map((w) => w.request<number[]>({ cmd: 'latencies', queue: QUEUE.steady })));
  // Each worker's latencies go on from the runs before.
  const before = (await latenciesOf()).map((l) => l.length);
  const completedBefore = await queue.getCompletedCount();
  const cpuBefore = processesCpuMs(pids);
  const done = waitCompleted(queue, completedBefore + items);
  done.catch(() => undefined);
  const adds: Array<Promise<unknown>> = [];
  let emitted = 0;
  let lateMs = 0;
  const firstEmitAt = wallMs();
  for (let k = 0; k * STEADY_BATCH < items; k++) {
    const due = firstEmitAt + k * STEADY_EVERY_MS;
    const wait = due - wallMs();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const at = wallMs();
    lateMs = at - due;
    const count = Math.min(STEADY_BATCH, items - k * STEADY_BATCH);
    adds.push(addJobs(queue, k * STEADY_BATCH, count, at).then(() => {
      emitted += count;
    }));
  }
  await Promise.all(adds);
  await done;
  const cpuUsPerItem = cpuPerCommitUs(cpuBefore, processesCpuMs(pids), items);
  const latencies = (await latenciesOf()).flatMap((l, i) => l.slice(before[i]));
  return { items, emitted, latencyMs: summarize(latencies), lateMs, emissions: 1, cpuUsPerItem, framesPerItem: null };
}

async function redeliveryRun(queue: Queue<BenchJobData>, workers: readonly WorkerProcess[]): Promise<FanoutMeasures['redelivery']> {
  const [victim, ...survivors] = workers as [WorkerProcess, ...WorkerProcess[]];
  await victim.request({ cmd: 'hold', queue: QUEUE.redeliver });
  await addJobs(queue, 0, REDELIVERY_ITEMS, wallMs());
  const starts = (w: WorkerProcess): Array<{ jobId: string; at: number }> => w.events.filter((e) => e.event === 'start' && e.queue === QUEUE.redeliver) as unknown as Array<{ jobId: string; at: number }>;
  await until('the jobs not held completed', async () => {
    const held = starts(victim).length;
    const counts = await queue.getJobCounts('completed', 'active', 'waiting');
    return (counts.completed ?? 0) + held === REDELIVERY_ITEMS && counts.active === held && (counts.waiting ?? 0) === 0 ? true : undefined;
  }, DONE_TIMEOUT_MS, 20);
  const held = new Set(starts(victim).map((s) => s.jobId));
  const startedAgain = (): number[] => survivors.flatMap(starts).flatMap((s) => (held.has(s.jobId) ? [s.at] : []));
  return { ms: await redeliveryMs(victim, startedAgain, 'a job of the killed worker started elsewhere', 5), held: held.size };
}

function bullmqVersion(): string {
  const require = createRequire(import.meta.url);
  return (JSON.parse(readFileSync(require.resolve('bullmq/package.json'), 'utf8')) as { version: string }).version;
}

/** BullMQ's three measures, on a Redis of its own; skipped when Redis cannot be had. */
export async function benchBullmq(sizes: FanoutSizes): Promise<BullmqBenchResult | { skipped: string }> {
  const redis = await ensureRedis();
  if ('skipped' in redis) return redis;
  const server = await RedisServer.start();
  const workers: WorkerProcess[] = [];
  const queues = Object.values(QUEUE).map((name) => new Queue<BenchJobData>(name, { connection: { host: '127.0.0.1', port: server.port } }));
  const [bulkQueue, steadyQueue, redeliverQueue] = queues as [Queue<BenchJobData>, Queue<BenchJobData>, Queue<BenchJobData>];
  try {
    for (let i = 0; i < WORKERS; i++) workers.push(new WorkerProcess(server.port));
    await Promise.all(workers.map((w) => w.ready(WAIT_MS)));
    for (const w of workers) for (const queue of Object.values(QUEUE)) await w.request({ cmd: 'work', queue, concurrency: PARALLELISM, reportStarts: queue === QUEUE.redeliver });
    await Promise.all(queues.map((q) => q.waitUntilReady()));
    const bulk = await bulkRuns(sizes.warmBulkRuns, async () => {
      const run = await bulkRun(bulkQueue, sizes.bulkItems, [server.pid, ...workers.map((w) => w.child.pid)]);
      console.log(`BullMQ end to end: ${JSON.stringify(run)}`);
      return run;
    });
    const pids = [server.pid, ...workers.map((w) => w.child.pid)];
    const steadyCold = await steadyRun(steadyQueue, workers, sizes.steadySeconds, pids);
    console.log(`BullMQ steady, cold: ${JSON.stringify(steadyCold)}`);
    const steady = await steadyRun(steadyQueue, workers, sizes.steadySeconds, pids);
    console.log(`BullMQ steady: ${JSON.stringify(steady)}`);
    const redelivery = await redeliveryRun(redeliverQueue, workers);
    return { bullmqVersion: bullmqVersion(), redisVersion: redis.version, ...bulk, steadyCold, steady, redelivery };
  } finally {
    await Promise.all(workers.map((w) => w.kill()));
    await Promise.all(queues.map((q) => q.close()));
    await server.stop();
  }
}
