/**
 * One BullMQ worker process of the fan-out bench (bench/bullmq.ts), driven over Node's IPC
 * channel: a Worker per queue asked for, with BullMQ's defaults but the concurrency, whose
 * processor does nothing but measure each start against the emit time its job carries (or,
 * once asked, holds its jobs, as a consumer that is then killed). Argument: { port }.
 */
import { Worker, type Job } from 'bullmq';
import { wallMs } from '../test/fixtures/member-probe.js';
import { answerRequests, sendToParent } from './bench-child.js';

/** What a bench job carries: its emit time (wall clock, fractional ms), its sequence number, padding to the item size. */
export interface BenchJobData {
  readonly t: number;
  readonly i: number;
  readonly p: string;
}

export type WorkerRequest =
  | { readonly id: number; readonly cmd: 'work'; readonly queue: string; readonly concurrency: number; readonly reportStarts: boolean }
  | { readonly id: number; readonly cmd: 'hold'; readonly queue: string }
  | { readonly id: number; readonly cmd: 'latencies'; readonly queue: string };

/** Latencies one queue keeps (emit to start); past it, none more are kept. */
const MAX_LATENCIES = 250_000;

const { port } = JSON.parse(process.argv[2] ?? '{}') as { port: number };

interface QueueState {
  readonly worker: Worker<BenchJobData>;
  readonly latencies: Float64Array;
  count: number;
  holding: boolean;
}

const queues = new Map<string, QueueState>();

async function work(queue: string, concurrency: number, reportStarts: boolean): Promise<void> {
  const processor = async (job: Job<BenchJobData>): Promise<void> => {
    const at = wallMs();
    const q = queues.get(queue);
    if (q === undefined) return;
    if (q.count < MAX_LATENCIES) q.latencies[q.count++] = at - job.data.t;
    if (reportStarts) sendToParent({ event: 'start', queue, jobId: job.id, seq: job.data.i, at });
    // A held job never ends here: the process is killed with it.
    if (q.holding) await new Promise<never>(() => undefined);
  };
  // maxRetriesPerRequest null: BullMQ's workers block on Redis, and ioredis must not time them out.
  const worker = new Worker<BenchJobData>(queue, processor, { connection: { host: '127.0.0.1', port, maxRetriesPerRequest: null }, concurrency });
  queues.set(queue, { worker, latencies: new Float64Array(MAX_LATENCIES), count: 0, holding: false });
  worker.on('error', (e) => sendToParent({ event: 'error', message: e.message }));
  await worker.waitUntilReady();
}

async function handle(req: WorkerRequest): Promise<unknown> {
  switch (req.cmd) {
    case 'work':
      await work(req.queue, req.concurrency, req.reportStarts);
      return null;
    case 'hold': {
      const q = queues.get(req.queue);
      if (q === undefined) throw new Error(`no worker for ${req.queue}`);
      q.holding = true;
      return null;
    }
    case 'latencies': {
      const q = queues.get(req.queue);
      return q === undefined ? [] : Array.from(q.latencies.subarray(0, q.count));
    }
  }
}

answerRequests(handle);
sendToParent({ event: 'ready' });
