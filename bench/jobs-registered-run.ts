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
import { PerformanceObserver, monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';
import { Cron } from 'croner';
import { Cluster } from '../src/index.js';
import { SUPPORTED } from '../src/version/versions.js';
import { freePort } from '../test/fixtures/process-cluster.js';
import { GIVE_UP_MS } from './jobs-registered.js';
import { RunQueueWait } from '../test/fixtures/run-queue-wait.js';
import { SnapshotWatch, type SnapshotsWatched } from './snapshot-watch.js';

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
  /** The garbage collector's pauses of the main thread meanwhile (perf_hooks 'gc' entries): the longest, and how many were over 5 ms. */
  readonly gc: { readonly longestMs: number; readonly over5Ms: number };
  /**
   * A snapshot of every job, taken by each member once all were registered (a few proposals
   * past SNAPSHOT_EVERY_ENTRIES): its longest step (the loop waits for it), steps and bytes,
   * the longest of the three members'; and the longest the event loop was held meanwhile. Null
   * when not every member took one within GIVE_UP_MS.
   */
  readonly snapshotOfAll: { readonly longestStepMs: number; readonly steps: number; readonly bytes: number; readonly longestStallMs: number } | null;
  /**
   * Every snapshot the members took from the first schedule() call until each took the one of
   * all the jobs (bench/snapshot-watch.ts): those a member takes while the jobs register too, and
   * those that ended at once, which `snapshotOfAll` (each member's last) may not show.
   */
  readonly everySnapshot: SnapshotsWatched;
  /** Log entries the leader applied: three registrations a job, MAX_COMMANDS_PER_BATCH to an entry, and the election's and the version's few. */
  readonly entriesApplied: number;
  /**
   * How long the leader's state() took, while the jobs registered (and the followers' now and
   * then) and 23 times after; `cpuOfMax`: the CPU time this process used during the longest
   * call (every thread), which tells the call's own work from the machine's other processes;
   * `gcOfMax`: how much of the longest call the collector's pauses took (a pause lands in the
   * call that allocated when the young generation was full, whatever filled it); `waitOfMax`:
   * how long the main thread waited for a CPU during it (run-queue-wait.ts; null where that
   * cannot be read), which the machine's other threads and processes held.
   */
  readonly stateDuringMs: { readonly calls: number; readonly max: number; readonly cpuOfMax: number; readonly gcOfMax: number; readonly waitOfMax: number | null };
  readonly stateAfterMs: { readonly p50: number; readonly max: number; readonly cpuOfMax: number; readonly waitOfMax: number | null };
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
/**
 * The members' snapshotEveryEntries: more than the entries that registering 10,000 jobs applies
 * (about 70), so that they register as with the default settings, and few enough that a few
 * proposals after it make every member take a snapshot of all the jobs.
 */
export const SNAPSHOT_EVERY_ENTRIES = 100;
/** Proposals in flight at once while the members are made to take a snapshot. */
const PROPOSALS_AT_ONCE = 10;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

function heapAfterGc(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run node with --expose-gc');
  gc();
  gc();
  return process.memoryUsage().heapUsed;
}

/** How long a call of state() held the loop, from when (performance.now()), the CPU time the process used meanwhile, and how long its thread waited for a CPU. */
interface StateTime {
  readonly ms: number;
  readonly startedAt: number;
  readonly cpuMs: number;
  readonly waitMs: number | null;
}

const runQueue = new RunQueueWait();

/** A pause of the collector, on performance.now()'s clock. */
interface GcPause {
  readonly startedAt: number;
  readonly ms: number;
}

/** Calls state() on `member`, and how long it held the loop. */
function timedState(member: Cluster): StateTime & { readonly state: ReturnType<Cluster['state']> } {
  const waitedBefore = runQueue.totalMs();
  const cpu = process.cpuUsage();
  const started = performance.now();
  const state = member.state();
  const ms = performance.now() - started;
  const used = process.cpuUsage(cpu);
  const waitedAfter = runQueue.totalMs();
  const waitMs = waitedBefore === null || waitedAfter === null ? null : waitedAfter - waitedBefore;
  return { state, ms, startedAt: started, cpuMs: (used.user + used.system) / 1000, waitMs };
}

/** The longest of `times`, and the CPU time of that call. */
function longest(times: readonly StateTime[]): { readonly max: number; readonly cpuOfMax: number; readonly waitOfMax: number | null } {
  const top = times.reduce((a, b) => (b.ms > a.ms ? b : a));
  return { max: top.ms, cpuOfMax: top.cpuMs, waitOfMax: top.waitMs };
}

/** How much of the longest of `times` the collector's `pauses` took. */
function gcOfLongest(times: readonly StateTime[], pauses: readonly GcPause[]): number {
  const top = times.reduce((a, b) => (b.ms > a.ms ? b : a));
  const endedAt = top.startedAt + top.ms;
  return pauses.reduce((sum, p) => sum + Math.max(0, Math.min(endedAt, p.startedAt + p.ms) - Math.max(top.startedAt, p.startedAt)), 0);
}

async function runCronraft(jobs: number): Promise<CronraftRun> {
  const root = await mkdtemp(join(tmpdir(), 'cronraft-jobs-'));
  const addrs: string[] = [];
  for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
  const members = addrs.map((listen, i) => new Cluster(addrs, { listen, dataDir: join(root, String(i)), snapshotEveryEntries: SNAPSHOT_EVERY_ENTRIES }));
  try {
    await Promise.all(members.map((m) => m.start()));
    const { leader } = await members[0]!.waitForLeader();
    const lead = members.find((m) => m.id === leader)!;
    // Every member has learned the cluster's time (a member registers a new job only then).
    while (!members.every((m) => m.state().clock.synced)) await sleep(10);
    // The cluster runs this release's version, as it does on every start after its first (it
    // raises itself about a second after it forms): registrations then go in batches.
    while (!members.every((m) => m.state().version.active === SUPPORTED.stateMachine.max)) await sleep(10);
    const watch = new SnapshotWatch(members.map((m) => m.state().log));
    const heapBefore = heapAfterGc();
    const cpuBefore = process.cpuUsage();
    const started = performance.now();
    for (const m of members) for (let i = 0; i < jobs; i++) m.schedule(`job${i}`, { every: '1h' }, () => undefined);
    const scheduleCallsMs = performance.now() - started;
    const delay = loopDelay();
    const gcPauses: GcPause[] = [];
    const gc = new PerformanceObserver((list) => {
      for (const entry of list.getEntries()) gcPauses.push({ startedAt: entry.startTime, ms: entry.duration });
    });
    gc.observe({ entryTypes: ['gc'] });
    const during: StateTime[] = [];
    const read = (m: Cluster, times: StateTime[] = during): ReturnType<Cluster['state']> => {
      const { state, ...time } = timedState(m);
      times.push(time);
      watch.look(members.indexOf(m), state.log);
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
    // Node reports a pause to the observer on a later turn: the last poll's come in after this one.
    const endedAt = performance.now();
    await sleep(0);
    gc.disconnect();
    const pauses = gcPauses.filter((p) => p.startedAt <= endedAt);
    await sleep(500);
    const after: StateTime[] = [];
    for (const m of members) read(m, after);
    const heapBytes = heapAfterGc() - heapBefore;
    for (let i = 0; i < 20; i++) {
      read(lead, after);
      await sleep(10);
    }
    const afterMs = after.map((t) => t.ms).sort((a, b) => a - b);
    // Before the proposals that make the members take a snapshot.
    const entriesApplied = lead.state().appliedIndex;
    const snapshotOfAll = await snapshotEveryJob(lead, members, watch);
    return {
      jobs,
      registerMs,
      heapBytes,
      scheduleCallsMs,
      cpuMs: (cpu.user + cpu.system) / 1000,
      longestStallMs: delay.max / 1e6,
      gc: { longestMs: Math.max(0, ...pauses.map((p) => p.ms)), over5Ms: pauses.filter((p) => p.ms > 5).length },
      snapshotOfAll,
      everySnapshot: watch.result(),
      entriesApplied,
      stateDuringMs: { calls: during.length, ...longest(during), gcOfMax: gcOfLongest(during, pauses) },
      stateAfterMs: { p50: afterMs[Math.floor(afterMs.length / 2)]!, ...longest(after) },
    };
  } finally {
    await Promise.all(members.map((m) => m.stop()));
    await rm(root, { recursive: true, force: true });
  }
}

function loopDelay(): IntervalHistogram {
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  return delay;
}

/**
 * Makes every member take a snapshot of all the jobs (proposals from the leader until each has
 * taken one more), and reads how long its steps held the loop (state().log.lastSnapshot).
 */
async function snapshotEveryJob(lead: Cluster, members: readonly Cluster[], watch: SnapshotWatch): Promise<CronraftRun['snapshotOfAll']> {
  const takenBefore = members.map((m) => m.state().log.snapshotsTaken);
  const delay = loopDelay();
  const started = performance.now();
  const taken = (m: Cluster, i: number): number => {
    const { log } = m.state();
    watch.look(i, log);
    return log.snapshotsTaken;
  };
  // Every member read each time (not stopping at the first that has not taken one), for the watch.
  const allTaken = (): boolean => members.map(taken).every((n, i) => n > (takenBefore[i] ?? 0));
  while (!allTaken()) {
    if (performance.now() - started > GIVE_UP_MS) return null;
    await Promise.all(Array.from({ length: PROPOSALS_AT_ONCE }, () => lead.propose('x')));
  }
  // A member's snapshot counts as taken once compacted to: the loop has run its last step.
  delay.disable();
  const timings = members.map((m, i) => {
    const { log } = m.state();
    watch.look(i, log);
    return log.lastSnapshot;
  });
  if (timings.some((t) => t === null)) return null;
  const longest = timings.reduce((a, b) => ((b?.longestStepMs ?? 0) > (a?.longestStepMs ?? 0) ? b : a));
  return { longestStepMs: longest?.longestStepMs ?? 0, steps: longest?.steps ?? 0, bytes: longest?.bytes ?? 0, longestStallMs: delay.max / 1e6 };
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
