/**
 * One run of the jobs-registered bench (bench/jobs-registered.ts starts it, a process per run,
 * with --expose-gc, so that each run's heap is its own): `node --expose-gc
 * dist/bench/jobs-registered-run.js <cronraft|croner> <jobs>` prints one JSON line.
 *
 * cronraft: three members in this process (level with sync on, default settings), each
 * scheduling the same `jobs` jobs ({ every: '1h' }, so none fires, each with its own handler),
 * until the leader's state() shows all of them with three handlers. croner: the same jobs on one
 * process, as `new Cron()`, the single-instance baseline.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { Cron } from 'croner';
import { Cluster } from '../src/index.js';
import { SUPPORTED } from '../src/version/versions.js';
import { freePort } from '../test/fixtures/process-cluster.js';
import { GIVE_UP_MS } from './jobs-registered.js';

export interface CronraftRun {
  readonly jobs: number;
  /** From the first schedule() call until the leader's state() showed every job with three handlers; null if not within GIVE_UP_MS. */
  readonly registerMs: number | null;
  /** Heap used after a full GC, once all were registered, less the same before the first schedule(). */
  readonly heapBytes: number;
  /** The schedule() calls, made one after the other in one turn of the loop (the app's own loop). */
  readonly scheduleCallsMs: number;
  /** CPU time this process used (every thread: user and system) from the first schedule() call until all were registered. */
  readonly cpuMs: number;
  /** The longest the event loop was held from then until all were registered (perf_hooks.monitorEventLoopDelay). */
  readonly longestStallMs: number;
  /**
   * Snapshots the three members took; the longest step (the loop waits for it) of the ones seen
   * (the last of each member, whenever state() was read).
   */
  readonly snapshots: number;
  readonly snapshotsSeen: number;
  readonly longestSnapshotStepMs: number;
  /** Log entries the leader applied: three registrations a job, MAX_COMMANDS_PER_BATCH to an entry, and the election's and the version's few. */
  readonly entriesApplied: number;
  /** How long the leader's state() took, while the jobs registered and 20 times after. */
  readonly stateDuringMs: { readonly calls: number; readonly max: number };
  readonly stateAfterMs: { readonly p50: number; readonly max: number };
}

export interface CronerRun {
  readonly jobs: number;
  readonly registerMs: number;
  readonly heapBytes: number;
}

/** How often the leader's state() is read while the jobs register. */
const POLL_MS = 50;
/** The followers' state() is read once every this many reads of the leader's. */
const FOLLOWER_POLLS = 5;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run node with --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** Calls state() on `member`, and how long it held the loop. */
function timedState(member: Cluster): { readonly state: ReturnType<Cluster['state']>; readonly ms: number } {
  const started = performance.now();
  const state = member.state();
  return { state, ms: performance.now() - started };
}

async function runCronraft(jobs: number): Promise<CronraftRun> {
  const root = await mkdtemp(join(tmpdir(), 'cronraft-jobs-'));
  const addrs: string[] = [];
  for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
  const members = addrs.map((listen, i) => new Cluster(addrs, { listen, dataDir: join(root, String(i)) }));
  try {
    await Promise.all(members.map((m) => m.start()));
    const { leader } = await members[0]!.waitForLeader();
    const lead = members.find((m) => m.id === leader)!;
    // Every member has learned the cluster's time (a member registers a new job only then).
    while (!members.every((m) => m.state().clock.synced)) await sleep(10);
    // The cluster runs this release's version, as it does on every start after its first (it
    // raises itself about a second after it forms): registrations then go in batches.
    while (!members.every((m) => m.state().version.active === SUPPORTED.stateMachine.max)) await sleep(10);
    const heapBefore = heapAfterGc();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    for (const m of members) for (let i = 0; i < jobs; i++) m.schedule(`job${i}`, { every: '1h' }, () => undefined);
    const scheduleCallsMs = performance.now() - started;
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    const during: number[] = [];
    // The longest step of each snapshot seen (state().log.lastSnapshot holds a member's last).
    const snapshotSteps = new Map<string, number>();
    let snapshotsTaken = 0;
    const read = (m: Cluster, times: number[] = during): ReturnType<Cluster['state']> => {
      const { state, ms } = timedState(m);
      times.push(ms);
      if (state.log.lastSnapshot !== null) snapshotSteps.set(`${m.id} ${state.log.snapshotsTaken}`, state.log.lastSnapshot.longestStepMs);
      return state;
    };
    let registerMs: number | null = null;
    for (let poll = 1; performance.now() - started < GIVE_UP_MS; poll++) {
      await sleep(POLL_MS);
      const state = read(lead);
      // The followers less often: each read of state() is work on the loop measured here.
      if (poll % FOLLOWER_POLLS === 0) for (const m of members) if (m !== lead) read(m);
      if (state.jobs.length === jobs && state.jobs.every((j) => j.handlers.length === 3)) {
        registerMs = performance.now() - started;
        break;
      }
    }
    const cpu = process.cpuUsage(cpuBefore);
    delay.disable();
    // Snapshots a member began before the end finish within a few turns of the loop.
    await sleep(500);
    const after: number[] = [];
    for (const m of members) snapshotsTaken += read(m, after).log.snapshotsTaken;
    const heapBytes = heapAfterGc() - heapBefore;
    for (let i = 0; i < 20; i++) {
      after.push(timedState(lead).ms);
      await sleep(10);
    }
    after.sort((a, b) => a - b);
    return {
      jobs,
      registerMs,
      heapBytes,
      scheduleCallsMs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      longestStallMs: delay.max / 1e6,
      snapshots: snapshotsTaken,
      snapshotsSeen: snapshotSteps.size,
      longestSnapshotStepMs: Math.max(0, ...snapshotSteps.values()),
      entriesApplied: lead.state().appliedIndex,
      stateDuringMs: { calls: during.length, max: Math.max(...during) },
      stateAfterMs: { p50: after[Math.floor(after.length / 2)]!, max: after.at(-1)! },
    };
  } finally {
    await Promise.all(members.map((m) => m.stop()));
    await rm(root, { recursive: true, force: true });
  }
}

function runCroner(jobs: number): CronerRun {
  const heapBefore = heapAfterGc();
  const started = performance.now();
  const crons: Cron[] = [];
  for (let i = 0; i < jobs; i++) crons.push(new Cron('0 * * * *', () => undefined));
  const registerMs = performance.now() - started;
  const heapBytes = heapAfterGc() - heapBefore;
  for (const c of crons) c.stop();
  return { jobs, registerMs, heapBytes };
}

const [which, count] = process.argv.slice(2);
const jobs = Number(count);
if (!Number.isInteger(jobs) || jobs <= 0 || (which !== 'cronraft' && which !== 'croner')) {
  console.error('usage: node --expose-gc jobs-registered-run.js <cronraft|croner> <jobs>');
  process.exit(2);
}
const result = which === 'cronraft' ? await runCronraft(jobs) : runCroner(jobs);
console.log(JSON.stringify(result));
// libp2p and level leave handles that would keep a finished run alive for a while.
process.exit(0);
