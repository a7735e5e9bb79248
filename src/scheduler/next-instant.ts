import { instantsBetween, specKey, type JobSpec } from './spec.js';

/** How far ahead the next instant is looked for: a spec with none within a year has none due. */
const NEXT_INSTANT_HORIZON_MS = 366 * 86_400_000;
/** Bound on remembered answers; the memo starts over when it is full. */
const MAX_MEMO_ENTRIES = 4096;

const memo = new Map<string, number | null>();

/**
 * The job's first instant strictly after `afterMs` (within a year), or null. Memoized: the
 * leader plans every 100 ms, and a job's high-water mark moves only when a slot is claimed,
 * so most plans ask the same question, and a cron expression is costly to parse. Pure: the
 * answer depends only on the arguments.
 */
export function nextInstantAfter(spec: JobSpec, anchorMs: number, afterMs: number): number | null {
  const key = `${specKey(spec)}|${anchorMs}|${afterMs}`;
  const known = memo.get(key);
  if (known !== undefined) return known;
  const next = instantsBetween(spec, anchorMs, afterMs, afterMs + NEXT_INSTANT_HORIZON_MS, 1)[0] ?? null;
  if (memo.size >= MAX_MEMO_ENTRIES) memo.clear();
  memo.set(key, next);
  return next;
}
