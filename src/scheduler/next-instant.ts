import { everyInstantAfter, firstInstantBetween, instantsBetween, type JobSpec } from './spec.js';

/**
 * How far ahead a cron spec's next instant is looked for, walking its wall-clock times: eight
 * years, the longest gap between two instants of a spec (a 29 February's, from 2096 to 2104).
 * The other kinds need no bound: their next instant is arithmetic. (A year here left an
 * `{ every: '400d' }` job, an `{ at }` job more than a year ahead and a 29 February cron job
 * without a next instant, for good: the search starts at the high-water mark, which only a
 * claim moves.)
 */
const CRON_NEXT_INSTANT_HORIZON_MS = 8 * 366 * 86_400_000;

/**
 * The last answer for each cron spec, with the question it answered. A job's spec is one object
 * for the job's life (its registration's), so this holds an answer per cron job, and goes with
 * the job's record: no bound to keep, and no key to build on every question.
 */
const lastCronAnswers = new WeakMap<JobSpec, { anchorMs: number; afterMs: number; next: number | null }>();

/**
 * The job's first instant strictly after `afterMs` (a cron job's within
 * CRON_NEXT_INSTANT_HORIZON_MS), or null. The leader plans every 100 ms, and a job's high-water
 * mark moves only when a slot is claimed, so most plans ask each job the question they asked
 * last time: a cron job's answer, which costly parsing gives, is remembered (one per spec). The other kinds are a little arithmetic, cheaper than a memo's
 * look-up, and a memo's entry per job would cost each member memory. (A memo of many answers
 * keyed by text, of bounded size, started over on every plan once there were more jobs than it
 * held.) Pure: the answer depends only on the arguments.
 */
export function nextInstantAfter(spec: JobSpec, anchorMs: number, afterMs: number): number | null {
  if (spec.kind !== 'cron') return firstInstantBetween(spec, anchorMs, afterMs, Number.POSITIVE_INFINITY);
  const known = lastCronAnswers.get(spec);
  if (known !== undefined && known.anchorMs === anchorMs && known.afterMs === afterMs) return known.next;
  const next = instantsBetween(spec, anchorMs, afterMs, afterMs + CRON_NEXT_INSTANT_HORIZON_MS, 1)[0] ?? null;
  lastCronAnswers.set(spec, { anchorMs, afterMs, next });
  return next;
}

/**
 * Whether the job has an instant after `afterMs` and at or before `byMs`: nextInstantAfter's
 * answer held against a time, for the planner's look at every job on every plan. V8 keeps an
 * answer that is a number or null as an object of its own wherever the two meet (a time in
 * milliseconds is too large for its small integers), so that look allocated one for each job of
 * the `every` kind, ten thousand every 100 ms on a leader of as many idle jobs; this one answers
 * without making the number. Pure, as nextInstantAfter.
 */
export function hasInstantWithin(spec: JobSpec, anchorMs: number, afterMs: number, byMs: number): boolean {
  if (spec.kind === 'every') {
    const t = everyInstantAfter(spec.everyMs, anchorMs, afterMs);
    return t > afterMs && t <= byMs;
  }
  const next = nextInstantAfter(spec, anchorMs, afterMs);
  return next !== null && next <= byMs;
}

/**
 * The job's first instant after `afterMs` and after `nowMs`, or null: its next slot as a reader
 * of the state sees it. It asks the planner's question (after the high-water mark), whose answer
 * is remembered, and asks about `nowMs` only when that instant has already passed.
 */
export function nextInstantFrom(spec: JobSpec, anchorMs: number, afterMs: number, nowMs: number): number | null {
  const next = nextInstantAfter(spec, anchorMs, afterMs);
  return next === null || next > nowMs ? next : nextInstantAfter(spec, anchorMs, nowMs);
}
