/**
 * Part of `npm run bench -- scheduler`: the cost of many jobs. Three members in one process each
 * register the same jobs ({ every: '1h' }, so none fires) until the leader's state() shows all
 * of them with three handlers: how long that takes, the memory each job costs each member, and
 * how long the event loop stood still meanwhile (in all, for the collector and for state()), and
 * then the longest step of a snapshot of every job, which each member is made to take, and of
 * every snapshot taken from the first registration on (bench/snapshot-watch.ts). Each size runs
 * in a process of its own (bench/jobs-registered-run.ts, node --expose-gc), beside croner
 * registering the same jobs in a process of its own.
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import type { CronerRun, CronraftRun } from './jobs-registered-run.js';
import { fmt } from './stats.js';

export interface JobsRegisteredResult {
  readonly cronraft: readonly CronraftRun[];
  readonly croner: readonly CronerRun[];
}

/** The targets (issue 16), at the largest size. */
export const JOBS_TARGETS = {
  jobs: 10_000,
  registerMs: 2000,
  bytesPerJobPerMember: 2048,
  stallMs: 5,
} as const;

/** A run that takes longer than this is reported as it stands (registerMs null). */
export const GIVE_UP_MS = 120_000;

const MEMBERS = 3;
const run = promisify(execFile);
const script = fileURLToPath(new URL('./jobs-registered-run.js', import.meta.url));

async function runOne<T>(which: 'cronraft' | 'croner', jobs: number): Promise<T> {
  const { stdout } = await run(process.execPath, ['--expose-gc', script, which, String(jobs)], { maxBuffer: 1 << 20, timeout: 300_000 });
  return JSON.parse(stdout.trim().split('\n').at(-1) ?? '') as T;
}

/** One run per size, smallest first, one process at a time. */
export async function benchJobsRegistered(sizes: readonly number[]): Promise<JobsRegisteredResult> {
  const cronraft: CronraftRun[] = [];
  const croner: CronerRun[] = [];
  for (const jobs of sizes) {
    cronraft.push(await runOne<CronraftRun>('cronraft', jobs));
    croner.push(await runOne<CronerRun>('croner', jobs));
  }
  return { cronraft, croner };
}

/** How long the longest call's thread waited for a CPU, where that could be read. */
const waited = (ms: number | null): string => (ms === null ? '' : `, waiting for a CPU ${fmt(ms, 1)} ms`);

/** Figure / target, when the figure is held to one: at most 1 meets it. */
const ratio = (value: number, target: number): string => fmt(value / target);

export function jobsRegisteredRows(r: JobsRegisteredResult): string[][] {
  const rows: string[][] = [];
  for (const [i, c] of r.cronraft.entries()) {
    const peer = r.croner[i];
    const atTarget = c.jobs === JOBS_TARGETS.jobs;
    const perJob = c.heapBytes / c.jobs / MEMBERS;
    rows.push(
      [
        `${c.jobs} jobs: time until the leader shows all, 3 handlers each`,
        c.registerMs === null ? `not within ${GIVE_UP_MS / 1000} s` : `${fmt(c.registerMs / 1000)} s`,
        peer === undefined ? '' : `${fmt(peer.registerMs / 1000, 3)} s`,
        atTarget ? `<= ${JOBS_TARGETS.registerMs / 1000} s` : '',
        atTarget && c.registerMs !== null ? ratio(c.registerMs, JOBS_TARGETS.registerMs) : '',
      ],
      [
        `${c.jobs} jobs: heap per job per member (after GC)`,
        `${fmt(perJob, 0)} B`,
        peer === undefined ? '' : `${fmt(peer.heapBytes / peer.jobs, 0)} B`,
        atTarget ? `<= ${JOBS_TARGETS.bytesPerJobPerMember} B` : '',
        atTarget ? ratio(perJob, JOBS_TARGETS.bytesPerJobPerMember) : '',
      ],
      [`${c.jobs} jobs: CPU time of the process until registered (all threads)`, c.cpuMs === undefined ? 'n/a' : `${fmt(c.cpuMs / 1000)} s`, '', '', ''],
      [`${c.jobs} jobs: the 3 x ${c.jobs} schedule() calls, back to back`, c.scheduleCallsMs === undefined ? 'n/a' : `${fmt(c.scheduleCallsMs, 0)} ms`, '', '', ''],
      // What held the loop, each on its own row: all of it, the collector's part, state(), snapshots.
      [`${c.jobs} jobs: longest event-loop stall after them, until registered`, `${fmt(c.longestStallMs, 1)} ms`, '', '', ''],
      [`${c.jobs} jobs: of which GC: longest pause (pauses over 5 ms)`, `${fmt(c.gc.longestMs, 1)} ms (${c.gc.over5Ms})`, '', '', ''],
      // Every job changes while they register: each call builds the entries of the jobs changed
      // since the last (the first, every job's). The process's CPU time during the longest call
      // (every thread's) tells its own work from the machine's other processes, and the
      // collector's pauses within it its own work from the collection that landed in it.
      [
        `${c.jobs} jobs: state() max while registering (${c.stateDuringMs.calls} calls)`,
        `${fmt(c.stateDuringMs.max, 1)} ms (CPU ${fmt(c.stateDuringMs.cpuOfMax, 1)} ms, GC pauses ${fmt(c.stateDuringMs.gcOfMax, 1)} ms${waited(c.stateDuringMs.waitOfMax)})`,
        '',
        atTarget ? `<= ${JOBS_TARGETS.stallMs} ms` : '',
        atTarget ? ratio(c.stateDuringMs.max, JOBS_TARGETS.stallMs) : '',
      ],
      [
        `${c.jobs} jobs: state() p50 / max, all registered (23 calls)`,
        `${fmt(c.stateAfterMs.p50, 1)} / ${fmt(c.stateAfterMs.max, 1)} ms (CPU ${fmt(c.stateAfterMs.cpuOfMax, 1)} ms${waited(c.stateAfterMs.waitOfMax)})`,
        '',
        atTarget ? `<= ${JOBS_TARGETS.stallMs} ms` : '',
        atTarget ? ratio(c.stateAfterMs.max, JOBS_TARGETS.stallMs) : '',
      ],
      [
        c.snapshotOfAll === null
          ? `${c.jobs} jobs: longest step of a snapshot of every job`
          : `${c.jobs} jobs: longest step of a snapshot of every job (${c.snapshotOfAll.steps} steps, ${fmt(c.snapshotOfAll.bytes / 1e6)} MB)`,
        c.snapshotOfAll === null ? `not within ${GIVE_UP_MS / 1000} s` : `${fmt(c.snapshotOfAll.longestStepMs, 1)} ms`,
        '',
        '',
        '',
      ],
      [`${c.jobs} jobs: longest event-loop stall while the 3 members take it`, c.snapshotOfAll === null ? 'n/a' : `${fmt(c.snapshotOfAll.longestStallMs, 1)} ms`, '', '', ''],
      [
        `${c.jobs} jobs: longest step of every snapshot from the first schedule() on (${everySnapshotCounts(c.everySnapshot)})`,
        `${fmt(c.everySnapshot.longestStepMs, 1)} ms`,
        '',
        atTarget ? `<= ${JOBS_TARGETS.stallMs} ms` : '',
        atTarget ? ratio(c.everySnapshot.longestStepMs, JOBS_TARGETS.stallMs) : '',
      ],
      [`${c.jobs} jobs: log entries applied (3 registrations a job, in batches)`, String(c.entriesApplied), '', '', ''],
    );
  }
  return rows;
}

/** How many snapshots the watch saw of those taken. */
function everySnapshotCounts(w: CronraftRun['everySnapshot']): string {
  const seen = w.taken - w.missed;
  return w.missed === 0 ? `${w.taken} snapshots` : `${seen} of ${w.taken} snapshots seen`;
}
