import { InvalidArgumentError } from './errors.js';
import { MAX_OUTCOMES_PER_COMMAND, MAX_PENDING_PER_TOPIC, type ConsumerSettings } from './fanout/command.js';
import { decodeItem } from './fanout/items.js';
import { MAX_ITEM_TIMEOUT_MS, MAX_PARALLELISM, MAX_RATE_PER_SECOND, MAX_RETRIES } from './fanout/command-shape.js';
import { MAX_BACKOFF_MS } from './fanout/state.js';
import type { ItemContext } from './runtime/fanout/consumer.js';
import type { FanoutRuntime } from './runtime/fanout/fanout-runtime.js';
import type { Timers } from './time/clock.js';
import { driverStopped } from './runtime/driver-options.js';

/**
 * Fan-out on the Cluster's facade (issue 19): the checks of `consume`'s options, a consumer's
 * registration through the log, retried until a leader takes it, and the dead letters as the
 * application sees them.
 */

/** A consumer's options (cluster.consume). */
export interface ConsumeOptions {
  /** Items this member runs at once. @default 1 */
  readonly parallelism?: number | undefined;
  /** Failed attempts retried before an item goes to the dead letters. @default 3 */
  readonly retries?: number | undefined;
  /** How long one attempt may run. @default 60_000 */
  readonly timeoutMs?: number | undefined;
  /** The wait before the first retry, doubled at each further one, up to 5 minutes (MAX_BACKOFF_MS; a longer one is refused). @default 1000 */
  readonly backoffMs?: number | undefined;
  /** Items of the topic started per second, cluster-wide (the least its consumers ask for). @default no limit */
  readonly ratePerSecond?: number | undefined;
  /**
   * Unsettled items the topic may hold (the least its consumers ask for): an emit past it
   * rejects with BackpressureError, and nothing of it is kept (an emit of several entries that
   * others' emits fill up part-way keeps the entries applied: the error names their items).
   * @default MAX_PENDING_PER_TOPIC (100,000)
   */
  readonly maxPending?: number | undefined;
}

export type ConsumeHandler = (item: unknown, ctx: ItemContext) => unknown;

/** How long a consumer's registration waits before it is proposed again after a failure (no leader yet). */
export const CONSUME_RETRY_MS = 200;


/** Every key ConsumeOptions has: any other is refused (cluster.consume hands them to optionsObject). */
export const CONSUME_OPTION_KEYS: readonly (keyof ConsumeOptions & string)[] = ['parallelism', 'retries', 'timeoutMs', 'backoffMs', 'ratePerSecond', 'maxPending'];

/** The settings of options whose keys were checked already (optionsObject with CONSUME_OPTION_KEYS). */
export function consumerSettings(options: ConsumeOptions): ConsumerSettings {
  const int = (name: keyof ConsumeOptions, value: unknown, min: number, max: number): number => {
    if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) throw new InvalidArgumentError(name, value, `an integer from ${min} to ${max}`);
    return value as number;
  };
  return {
    parallelism: int('parallelism', options.parallelism ?? 1, 1, MAX_PARALLELISM),
    retries: int('retries', options.retries ?? 3, 0, MAX_RETRIES),
    timeoutMs: int('timeoutMs', options.timeoutMs ?? 60_000, 1, MAX_ITEM_TIMEOUT_MS),
    // Up to the longest wait the state gives a retry: a longer one was taken and cut to it unsaid.
    backoffMs: int('backoffMs', options.backoffMs ?? 1000, 0, MAX_BACKOFF_MS),
    ratePerSecond: options.ratePerSecond === undefined ? null : int('ratePerSecond', options.ratePerSecond, 1, MAX_RATE_PER_SECOND),
    maxPending: options.maxPending === undefined ? null : int('maxPending', options.maxPending, 1, MAX_PENDING_PER_TOPIC),
  };
}

/** Registers `topic`'s consumer through the log, again every CONSUME_RETRY_MS until it applied, `stopped()`, or the driver stopped for good. */
export async function registerConsumer(runtime: FanoutRuntime, topic: string, handler: ConsumeHandler, settings: ConsumerSettings, timers: Timers, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    try {
      await runtime.consume(topic, (data, ctx) => handler(decodeItem(data), ctx), settings);
      return;
    } catch (error) {
      if (driverStopped(error)) return;
      await new Promise<void>((resolve) => timers.setTimeout(resolve, CONSUME_RETRY_MS));
    }
  }
}

/** A dead letter as cluster.deadLetters shows it: the item as emitted, and why it failed. */
export interface DeadLetterView {
  readonly id: number;
  readonly item: unknown;
  readonly key: string | null;
  readonly failures: number;
  readonly error: string | null;
  /** The job and slot that emitted it, or null. */
  readonly job: string | null;
  readonly slot: Date | null;
  /** When it failed for the last time (cluster time). */
  readonly at: Date;
}

export function deadLettersOf(runtime: FanoutRuntime, topic: string): DeadLetterView[] {
  return (runtime.state.topics.get(topic)?.deadLetters ?? []).map((l) => ({ id: l.id, item: decodeItem(l.data), key: l.key, failures: l.failures, error: l.error, job: l.origin?.job ?? null, slot: l.origin === null ? null : new Date(l.origin.slotMs), at: new Date(l.atMs) }));
}

/** Item ids as a user hands them in (requeue). */
export function checkItemIds(ids: unknown): number[] {
  if (!Array.isArray(ids) || ids.length > MAX_OUTCOMES_PER_COMMAND || !ids.every((id) => Number.isSafeInteger(id) && (id as number) > 0)) throw new InvalidArgumentError('ids', ids, `an array of at most ${MAX_OUTCOMES_PER_COMMAND} item ids`);
  return ids as number[];
}
