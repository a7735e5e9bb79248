/**
 * Part of `npm run bench -- scheduler`: the cost of many jobs. Three members in one process each
 * register the same jobs ({ every: '1h' }, so none fires) until the leader's state() shows all
 * of them with three handlers: how long that takes, the memory each job costs each member, and
 * how long the event loop stood still meanwhile, from snapshots and from state(). Each size runs
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
      [`${c.jobs} jobs: longest event-loop stall after them, until registered`, `${fmt(c.longestStallMs, 1)} ms`, '', '', ''],
      [
        `${c.jobs} jobs: longest snapshot step (${c.snapshotsSeen} of ${c.snapshots} snapshots seen)`,
        c.snapshotsSeen === 0 ? 'none' : `${fmt(c.longestSnapshotStepMs, 1)} ms`,
        '',
        atTarget ? `<= ${JOBS_TARGETS.stallMs} ms` : '',
        atTarget && c.snapshotsSeen > 0 ? ratio(c.longestSnapshotStepMs, JOBS_TARGETS.stallMs) : '',
      ],
      [
        `${c.jobs} jobs: state() p50 / max, all registered (20 calls)`,
        `${fmt(c.stateAfterMs.p50, 1)} / ${fmt(c.stateAfterMs.max, 1)} ms`,
        '',
        atTarget ? `<= ${JOBS_TARGETS.stallMs} ms` : '',
        atTarget ? ratio(c.stateAfterMs.max, JOBS_TARGETS.stallMs) : '',
      ],
      // Every job changes while they register: each call builds the entries of the jobs changed
      // since the last (the first, every job's).
      [`${c.jobs} jobs: state() max while registering (${c.stateDuringMs.calls} calls)`, `${fmt(c.stateDuringMs.max, 1)} ms`, '', '', ''],
      [`${c.jobs} jobs: log entries applied (3 registrations a job, in batches)`, String(c.entriesApplied), '', '', ''],
    );
  }
  return rows;
}
