import type { JobContext, JobHandler, JobOptions } from '../src/runtime/scheduler/job-types.js';
import type { SpecInput } from '../src/scheduler/spec.js';
import type { Timers } from '../src/time/clock.js';
import type { Random } from '../src/time/random.js';

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
  const [min, max] = job.runMs ?? [1, 50];
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
