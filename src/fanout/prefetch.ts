import type { ConsumerSettings } from './command.js';
import type { TopicRecord } from './state.js';
import { rateOf } from './topic-rate.js';

/**
 * How many items a member may hold leased of a topic (issue 19): its parallelism, which it runs
 * at once, and a prefetch beyond it, which waits on the member to start as its runs end, so that
 * a member never idles for the round trip of its outcomes and its next lease through the log.
 * The consumer runs at most its parallelism at once whatever it holds (runtime/fanout/consumer.ts).
 * A topic with a rate has no prefetch: its rate limits starts, and items leased ahead would start
 * in a burst as runs end.
 */

/**
 * Items the leader leases a member beyond its parallelism, per unit of it, waiting to start:
 * with handlers that end at once, what a member runs per round trip through the log is its
 * parallelism times one more than this. The leader goes deeper, to MAX_PREFETCH_PER_PARALLELISM,
 * for a member that ran out of items while more waited (prefetch-depths.ts).
 */
export const PREFETCH_PER_PARALLELISM = 3;

/**
 * The most items a member may hold leased beyond its parallelism, per unit of it: the bound
 * every member applies a lease within (FanoutState), and the depth of the leader's leases to a
 * member whose runs end faster than the round trip of its outcomes and its next lease. Each
 * round trip costs two commands through the log, so a deeper prefetch runs more items per
 * command. Not deeper for all: a member whose runs are slow would hold items that another
 * member could run.
 */
export const MAX_PREFETCH_PER_PARALLELISM = 7;

/** The most items of `topic` a member consuming it with `settings` may hold leased: what a lease applies within. */
export function maxLeased(topic: TopicRecord, settings: ConsumerSettings): number {
  return leasedUpTo(topic, settings, MAX_PREFETCH_PER_PARALLELISM);
}

/**
 * The items of `topic` the leader fills a member up to, with `prefetch` per parallelism ahead
 * of its runs (at most MAX_PREFETCH_PER_PARALLELISM); none ahead for a topic with a rate.
 */
export function leasedUpTo(topic: TopicRecord, settings: ConsumerSettings, prefetch: number): number {
  return rateOf(topic) !== null ? settings.parallelism : settings.parallelism * (1 + Math.min(prefetch, MAX_PREFETCH_PER_PARALLELISM));
}

/**
 * When a lease of an item ends unless its outcome came, counted from `atMs`: its attempt's
 * timeout and a grace for the outcome to reach the log; and, for an item leased beyond the
 * member's parallelism, one timeout more for each full parallelism of items it held before
 * (`heldBefore`): the longest such an item waits to start. The member runs what it holds in
 * lease order, its parallelism at once, and each run ends within its timeout, so the items
 * ahead of it take at most that many rounds of runs.
 */
export function leaseDeadlineMs(atMs: number, settings: ConsumerSettings, heldBefore: number, graceMs: number): number {
  const rounds = Math.floor(heldBefore / settings.parallelism);
  return atMs + (rounds + 1) * settings.timeoutMs + graceMs;
}
