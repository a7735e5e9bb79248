import { registerConsumer, type ConsumeOptions } from '../src/cluster-fanout.js';
import { consumerSettings } from '../src/cluster-fanout.js';
import { MAX_ITEMS_PER_EMIT, type ConsumerSettings } from '../src/fanout/command.js';
import { LEASE_GRACE_MS, backoffMs } from '../src/fanout/state.js';
import { MAX_PREFETCH_PER_PARALLELISM } from '../src/fanout/prefetch.js';
import { DELIVERY_INTERVAL_MS } from '../src/runtime/fanout/leader-delivery.js';
import type { ItemContext } from '../src/runtime/fanout/consumer.js';
import type { Member } from '../src/runtime/member.js';
import type { JobContext, JobHandler } from '../src/runtime/scheduler/job-types.js';
import type { NodeId } from '../src/raft/types.js';
import type { TimerHandle, Timers } from '../src/time/clock.js';
import { SeededRandom, type Random } from '../src/time/random.js';
import type { HandlerEvent, SimJob } from './jobs.js';
import type { SimScheduler } from './scheduler.js';

/**
 * Fan-out in the fault swarm (issue 19): topics consumed by the members with varied
 * parallelism, retries, timeouts and rates, by handlers that are slow, fail a share of their
 * attempts or hang past their timeout; a job whose slots emit items from their handler
 * (`ctx.emit`), and emits from outside any slot. Everything is drawn from a stream of its own
 * (fanoutRandom), and only in the seeds that draw fan-out (FANOUT_SHARE), so that a seed
 * without it is the run it was before fan-out existed.
 */

/** The share of seeds that draw fan-out. */
export const FANOUT_SHARE = 0.25;

/** The job whose slots emit items (its handler calls ctx.emit). */
export const EMIT_JOB = 'fan-out';

/** The most items one emit holds: most are far smaller (drawEmitSize). */
export const MAX_SIM_EMIT = 10_000;

/** A topic in a run, as every member that consumes it registers it, and how its handler behaves. */
export interface SimTopic {
  readonly name: string;
  readonly options: ConsumeOptions;
  /** How long an attempt takes, drawn uniformly (simulated ms). */
  readonly runMs: readonly [number, number];
  /** Attempts that throw, per mille. */
  readonly failPermille: number;
  /** Attempts that hang, heeding no signal, per mille: the consumer's timeout ends them. */
  readonly hangPermille: number;
  /** The founding members that consume it (a joiner consumes every topic). */
  readonly consumers: readonly NodeId[];
}

/** What a run's fan-out does: its topics, its emits, and how large they are. */
export interface SimFanout {
  readonly topics: readonly SimTopic[];
  /** The mean time between emits from outside a slot (ms). */
  readonly emitEveryMs: number;
  /** The largest emit: MAX_SIM_EMIT, or less where a run must stay cheap. */
  readonly maxEmit: number;
}

/** Whether a run with `seed` draws fan-out, on a stream of its own. */
export function drawFanoutMode(seed: number): boolean {
  return new SeededRandom(seed * 40_503 + 29).int(0, 999) < FANOUT_SHARE * 1000;
}

/** The stream fan-out draws from (its topics, emits and handlers' choices), apart from every other. */
export function fanoutRandom(seed: number): SeededRandom {
  return new SeededRandom(seed * 92_821 + 31);
}

/** Draws a run's topics and emits. `maxEmit` caps the emits' size. */
export function drawFanout(random: Random, founders: readonly NodeId[], maxEmit = MAX_SIM_EMIT): SimFanout {
  const count = random.int(1, 2);
  const topics: SimTopic[] = [];
  for (let i = 0; i < count; i++) {
    const slow = random.int(0, 3) === 0;
    const rated = random.int(0, 2) === 0;
    const options: ConsumeOptions = {
      parallelism: random.int(1, 16),
      retries: random.int(0, 3),
      timeoutMs: random.int(200, 3000),
      backoffMs: random.int(0, 500),
      maxPending: random.int(2 * MAX_ITEMS_PER_EMIT, 4 * maxEmit),
      ...(rated ? { ratePerSecond: drawRate(random) } : {}),
    };
    const consumers = i === 0 ? [...founders] : founders.filter(() => random.int(0, 1) === 0);
    const runMs: readonly [number, number] = slow ? [50, 4000] : [1, 50];
    topics.push({
      name: `topic-${i + 1}`,
      options: { ...options, maxPending: backlogCap(options, runMs, Math.max(1, consumers.length)) },
      runMs,
      failPermille: random.int(0, 300),
      hangPermille: random.int(0, 20),
      consumers: consumers.length > 0 ? consumers : [founders[0] as NodeId],
    });
  }
  return { topics, emitEveryMs: random.int(1000, 10_000), maxEmit };
}

/**
 * Simulated seconds a topic's founding consumers take at most, with nothing failing, to work
 * off as many items as its maxPending lets wait: the draw caps maxPending to that many seconds of
 * its rate, or of its consumers' parallelism over its mean run time. Uncapped, a seed spent
 * simulated hours after healing on its backlog (seed 9128 of three members, four minutes: 3,903
 * items to a topic rated at 3 a second, 41 simulated minutes past its faults), which tests no
 * more than its first minutes do, while the emits past the cap meet the topic's backpressure.
 */
export const MAX_SIM_BACKLOG_SECONDS = 120;

/** The drawn maxPending of a topic, capped to MAX_SIM_BACKLOG_SECONDS of what its consumers work off. */
function backlogCap(options: ConsumeOptions, runMs: readonly [number, number], consumers: number): number {
  const meanRunSeconds = (runMs[0] + runMs[1]) / 2000;
  const perSecond = Math.min(options.ratePerSecond ?? Number.POSITIVE_INFINITY, (consumers * (options.parallelism ?? 1)) / meanRunSeconds);
  return Math.max(1, Math.min(options.maxPending ?? Number.POSITIVE_INFINITY, Math.floor(perSecond * MAX_SIM_BACKLOG_SECONDS)));
}

/**
 * A rated topic's rate, 2 to 50 items a second, from one draw (so that the draws after it are
 * the ones they were): half of them 2 to 4, so that an emit of a few items passes twice the rate
 * at once (its rate and a second's burst, which the fanout-rate checker holds a leader's leases
 * to), and a leader that leases past it is seen. Drawn evenly from 2 to 50, a planted bug that
 * ignored the rate was caught in 3 seeds of 80 (test/fixtures/fanout-plants.ts).
 */
function drawRate(random: Random): number {
  const r = random.int(0, 99);
  return r < 50 ? 2 + (r % 3) : 5 + ((r - 50) % 46);
}

/** The settings a topic's consumers register (cluster.consume's checks and defaults). */
export function settingsOf(topic: SimTopic): ConsumerSettings {
  return consumerSettings(topic.options);
}

/** The job whose slots emit: every few seconds, on one member. */
export function emitJob(random: Random): SimJob {
  return { name: EMIT_JOB, spec: { every: `${random.int(2, 10)}s` }, runMs: [1, 20], options: { timeoutMs: 10_000 } };
}

/**
 * How many items an emit holds: most a few, some tens to hundreds, a rare one thousands, up to
 * `max` (so that the simulated cost stays affordable: each item is leased, run and recorded).
 */
export function drawEmitSize(random: Random, max: number): number {
  const r = random.int(0, 999);
  if (r < 5) return random.int(Math.min(1000, max), max);
  if (r < 150) return random.int(1, Math.min(300, max));
  return random.int(1, Math.min(10, max));
}

/** `count` items as an application emits them: small JSON values. */
export function simItems(count: number, from: string): unknown[] {
  return Array.from({ length: count }, (_, i) => ({ from, i }));
}

/** What a consumer's handler saw: its start (the lease's token), and its end (the first of its settling and its signal's abort). */
export type ItemEvent = { readonly type: 'start'; readonly ctx: ItemContext } | { readonly type: 'end'; readonly ctx: ItemContext };

/**
 * A consumer's handler: it takes a drawn time on the member's timers and may fail, or hang,
 * heeding no signal (the consumer's timeout ends its attempt). A well-behaved attempt stops when
 * its signal aborts. `observe` sees each attempt start, and end once (the first of its settling
 * and an abort: the consumer's own view of when an attempt ends).
 */
export function simItemHandler(topic: SimTopic, timers: Timers, random: Random, observe: (event: ItemEvent) => void): (item: unknown, ctx: ItemContext) => Promise<void> {
  const [min, max] = topic.runMs;
  return (_item, ctx) =>
    new Promise<void>((resolve, reject) => {
      observe({ type: 'start', ctx });
      let ended = false;
      const end = (): boolean => {
        if (ended) return false;
        ended = true;
        observe({ type: 'end', ctx });
        return true;
      };
      if (ctx.signal.aborted) {
        end();
        reject(ctx.signal.reason as Error);
        return;
      }
      const draw = random.int(0, 999);
      const hangs = draw < topic.hangPermille;
      const fails = !hangs && draw < topic.hangPermille + topic.failPermille;
      const timer = hangs ? null : timers.setTimeout(() => end() && (fails ? reject(new Error('simulated item failure')) : resolve()), random.int(min, max));
      ctx.signal.addEventListener(
        'abort',
        () => {
          end();
          if (hangs) return;
          if (timer !== null) timers.clearTimeout(timer);
          reject(ctx.signal.reason as Error);
        },
        { once: true },
      );
    });
}

/**
 * The handler of EMIT_JOB's slots: it emits a drawn number of items to a drawn topic, while the
 * run is still emitting (`emitting`), and takes a moment after. It stops when its signal aborts,
 * as simHandler does, and `observe` sees the same.
 */
export function simEmitHandler(fanout: SimFanout, timers: Timers, random: Random, emitting: () => boolean, observe: (event: HandlerEvent) => void): JobHandler {
  return (ctx: JobContext) =>
    new Promise<void>((resolve, reject) => {
      observe({ type: 'start', ctx });
      let timer: TimerHandle | null = null;
      ctx.signal.addEventListener(
        'abort',
        () => {
          observe({ type: 'abort', ctx, reason: ctx.signal.reason });
          if (timer !== null) timers.clearTimeout(timer);
          reject(ctx.signal.reason as Error);
        },
        { once: true },
      );
      const rest = (): void => {
        if (!ctx.signal.aborted) timer = timers.setTimeout(resolve, random.int(1, 20));
      };
      if (!emitting()) return rest();
      const topic = fanout.topics[random.int(0, fanout.topics.length - 1)] as SimTopic;
      ctx.emit(topic.name, simItems(drawEmitSize(random, fanout.maxEmit), `${ctx.job}@${ctx.slot.getTime()}`)).then(rest, reject);
    });
}

/** Registers this member's consumers of `fanout`'s topics (a joiner, not a founder, consumes every topic), retried until each applied or `stopped()`. */
export function consumeTopics(member: Member, id: NodeId, founder: boolean, fanout: SimFanout, timers: Timers, random: Random, stopped: () => boolean, observe: (topic: string, event: ItemEvent) => void): void {
  for (const topic of fanout.topics) {
    if (founder && !topic.consumers.includes(id)) continue;
    const handler = simItemHandler(topic, timers, random, (event) => observe(topic.name, event));
    void registerConsumer(member.fanoutRuntime, topic.name, handler, settingsOf(topic), timers, stopped);
  }
}

/**
 * Emits from outside any slot (cluster.emitItems), from a member drawn among those up, every
 * `emitEveryMs` on average, while `emitting()`.
 */
export function startOutsideEmits(scheduler: SimScheduler, random: Random, fanout: SimFanout, members: () => readonly { readonly id: NodeId; readonly member: Member | null }[], emitting: () => boolean): void {
  let n = 0;
  const next = (): void => {
    if (!emitting()) return;
    const up = members().filter((m) => m.member !== null);
    if (up.length > 0) {
      const from = up[random.int(0, up.length - 1)] as { readonly id: NodeId; readonly member: Member };
      const topic = fanout.topics[random.int(0, fanout.topics.length - 1)] as SimTopic;
      // As cluster.emitItems: encoded a turn at a time on the member's timers (a member that
      // crashed meanwhile emits nothing: its timers fire no more).
      from.member.fanoutRuntime.emitItems(topic.name, simItems(drawEmitSize(random, fanout.maxEmit), `${from.id}#${++n}`), undefined, null).catch(() => undefined);
    }
    scheduler.after(random.int(1, 2 * fanout.emitEveryMs), next);
  };
  scheduler.after(random.int(1, 2 * fanout.emitEveryMs), next);
}

/** Allowance for one delivery round: the leader's plan, a lease and an outcome committed and applied, with nothing going wrong (ms). */
export const DELIVERY_ROUND_MS = DELIVERY_INTERVAL_MS + 1000;

/**
 * How long an item of `topic` takes at most, once leased, with nothing going wrong: each of
 * its attempts (retries + 1) runs to its timeout and waits out its lease's grace and a round,
 * and the backoff before each retry.
 */
export function itemBoundMs(topic: SimTopic): number {
  const s = settingsOf(topic);
  let ms = 0;
  // The longest lease: an item leased behind a full prefetch waits that many timeouts to start (src/fanout/prefetch.ts).
  const leaseMs = (1 + (s.ratePerSecond === null ? MAX_PREFETCH_PER_PARALLELISM : 0)) * s.timeoutMs;
  for (let attempt = 1; attempt <= s.retries + 1; attempt++) ms += leaseMs + LEASE_GRACE_MS + DELIVERY_ROUND_MS + (attempt <= s.retries ? backoffMs(s.backoffMs, attempt) : 0);
  return ms;
}

/**
 * How long one attempt of `topic` holds a place on its consumer at most, with nothing going
 * wrong: it runs to its timeout when it may hang (or its handler's longest run, when shorter and
 * it never hangs), and a round records it and leases the next.
 */
function attemptBoundMs(topic: SimTopic): number {
  const s = settingsOf(topic);
  return (topic.hangPermille > 0 ? s.timeoutMs : Math.min(s.timeoutMs, topic.runMs[1])) + DELIVERY_ROUND_MS;
}

/**
 * How long, once faults heal, a topic's `backlog` unsettled items take to settle at most: every
 * attempt of each item (retries + 1), each taking its longest (attemptBoundMs), on `consumers`
 * members at their parallelism, within the topic's rate, and then one item's own bound. Without
 * a rate, a member holds items leased ahead of its runs (src/fanout/prefetch.ts), which wait for
 * its runs to end while another member may be free: an attempt more per parallelism of them.
 */
export function settleBoundMs(topic: SimTopic, backlog: number, consumers: number): number {
  const s = settingsOf(topic);
  const attempts = backlog * (s.retries + 1);
  const prefetchRounds = s.ratePerSecond === null ? MAX_PREFETCH_PER_PARALLELISM : 0;
  const byCapacity = (Math.ceil(attempts / (Math.max(1, consumers) * s.parallelism)) + prefetchRounds) * attemptBoundMs(topic);
  const byRate = s.ratePerSecond === null ? 0 : Math.ceil((attempts * 1000) / s.ratePerSecond);
  return Math.max(byCapacity, byRate) + itemBoundMs(topic);
}
