import { InvalidArgumentError } from '../src/errors.js';
import { onlyKnownKeys } from '../src/option-checks.js';
import { validateJobOptions, validateName } from '../src/job-options.js';
import { DEFAULT_TIMEOUT_MS } from '../src/runtime/scheduler/assignee.js';
import type { JobContext, JobHandler, JobOptions } from '../src/runtime/scheduler/job-types.js';
import { parseSpec, specKey, type SpecInput } from '../src/scheduler/spec.js';
import type { Timers } from '../src/time/clock.js';
import type { Random } from '../src/time/random.js';

/** How long a run takes when its job says nothing (SimJob.runMs), in simulated ms. */
export const DEFAULT_RUN_MS: readonly [number, number] = [1, 50];

/** A job in a simulated cluster: what users pass to `simulate({ jobs })`. */
export interface SimJob {
  readonly name: string;
  readonly spec: SpecInput;
  readonly options?: JobOptions;
  /** How long a run takes, in simulated ms, drawn uniformly from this range. @default [1, 50] */
  readonly runMs?: readonly [number, number];
  /** The share of runs that throw (0..1). @default 0 */
  readonly failRate?: number;
}

/**
 * The jobs a run schedules when the user names none: each mode, a retrying job, a timeout, and
 * runs that outlast their period under each overlap policy but 'allow' (a slot of 'cron-5s'
 * that fires meanwhile is skipped, one of 'all-members' waits its turn on its member, one of
 * 'flaky' replaces the run in progress, on whichever member).
 */
export const DEFAULT_SIM_JOBS: readonly SimJob[] = [
  { name: 'every-second', spec: { every: '1s' } },
  { name: 'cron-5s', spec: '*/5 * * * * *', runMs: [100, 7000], options: { timeoutMs: 6000 } },
  { name: 'all-members', spec: { every: '3s' }, runMs: [1, 4000], options: { mode: 'all', overlap: 'queue' } },
  { name: 'flaky', spec: { every: '2s' }, runMs: [1, 3000], options: { retries: 2, retryDelayMs: 200, overlap: 'replace' }, failRate: 0.2 },
];

/** What a handler saw, for the checkers: its context as it started, and its signal's reason as it aborted. */
export type HandlerEvent = { readonly type: 'start'; readonly ctx: JobContext } | { readonly type: 'abort'; readonly ctx: JobContext; readonly reason: unknown };

/**
 * A handler that takes a drawn time on the member's own (simulated) timers and may fail. It
 * stops early when its signal aborts, as a well-behaved handler does. `observe` sees what it
 * was given.
 */
export function simHandler(job: SimJob, timers: Timers, random: Random, observe: (event: HandlerEvent) => void = () => undefined): JobHandler {
  const [min, max] = job.runMs ?? DEFAULT_RUN_MS;
  const failPermille = Math.round((job.failRate ?? 0) * 1000);
  return (ctx: JobContext) =>
    new Promise<void>((resolve, reject) => {
      observe({ type: 'start', ctx });
      const ms = random.int(min, max);
      const fails = failPermille > 0 && random.int(0, 999) < failPermille;
      const timer = timers.setTimeout(() => (fails ? reject(new Error('simulated failure')) : resolve()), ms);
      ctx.signal.addEventListener(
        'abort',
        () => {
          observe({ type: 'abort', ctx, reason: ctx.signal.reason });
          timers.clearTimeout(timer);
          reject(ctx.signal.reason as Error);
        },
        { once: true },
      );
    });
}

/** Checks users' jobs the way `cluster.schedule()` does, so a bad one fails here, named. */
export function validateJobs(jobs: readonly SimJob[]): void {
  const names = new Set<string>();
  for (const [i, job] of jobs.entries()) {
    // A job runs the simulator's handler, whose runs take runMs and fail at failRate: a handler
    // of the app's given here ran nothing, silently (a stranger's was never called).
    onlyKnownKeys(job, Object.keys(SIM_JOB_KEYS), `jobs[${i}]`);
    validateName(job.name);
    if (names.has(job.name)) throw new InvalidArgumentError(`jobs[${i}].name`, job.name, 'a name no other job of the run has');
    names.add(job.name);
    parseSpec(job.spec, `jobs[${job.name}].spec`);
    validateJobOptions(job.options ?? {});
    const runMs = job.runMs;
    if (runMs !== undefined && !(Array.isArray(runMs) && runMs.length === 2 && runMs.every((ms) => Number.isSafeInteger(ms) && ms >= 0) && runMs[0] <= runMs[1])) {
      throw new InvalidArgumentError(`jobs[${i}].runMs`, runMs, 'a range [min, max] of whole milliseconds, 0 <= min <= max');
    }
    const failRate = job.failRate;
    if (failRate !== undefined && !(typeof failRate === 'number' && failRate >= 0 && failRate <= 1)) throw new InvalidArgumentError(`jobs[${i}].failRate`, failRate, 'a share of runs from 0 to 1');
  }
}

/** A SimJob's fields, each named once (the type makes the list whole). */
const SIM_JOB_KEYS: Record<keyof SimJob, true> = { name: true, spec: true, options: true, runMs: true, failRate: true };

/**
 * Runs of slots before the watch end get this long to record their outcome, at least: longer
 * when a job's runs may last longer (outcomeGraceMs).
 */
const OUTCOME_GRACE_MS = 5000;
/** The time a run's outcome gets to commit after its end, within the grace. */
const OUTCOME_RECORD_MS = 1000;

/**
 * How long after the watch end the outcomes are checked: long enough for a run of a slot at
 * the watch end to end (by its timeout, if not before) and record its outcome. With a grace
 * shorter than a job's longest run, a run of 'cron-5s' (up to its 6 s timeout) of the slot at
 * the watch end could end a few milliseconds before the check, its outcome not yet committed,
 * and be reported as a slot without one.
 */
export function outcomeGraceMs(jobs: readonly SimJob[]): number {
  const longest = Math.max(0, ...jobs.map((job) => Math.min((job.runMs ?? DEFAULT_RUN_MS)[1], job.options?.timeoutMs ?? DEFAULT_TIMEOUT_MS)));
  return Math.max(OUTCOME_GRACE_MS, longest + OUTCOME_RECORD_MS);
}

/** How a job's spec reads in reports. */
export function describeSpec(job: SimJob): string {
  return specKey(parseSpec(job.spec));
}
