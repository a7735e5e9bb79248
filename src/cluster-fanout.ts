import { InvalidArgumentError } from './errors.js';
import { MAX_ITEM_BYTES, MAX_KEY_LENGTH, MAX_TOPIC_LENGTH, type ConsumerSettings, type EmittedItem } from './fanout/command.js';
import { MAX_ITEM_BACKOFF_MS, MAX_ITEM_TIMEOUT_MS, MAX_PARALLELISM, MAX_RATE_PER_SECOND, MAX_RETRIES } from './fanout/command-shape.js';
import type { ItemContext } from './runtime/fanout/consumer.js';
import type { FanoutRuntime } from './runtime/fanout/fanout-runtime.js';
import type { Timers } from './time/clock.js';

/**
 * Fan-out on the Cluster's facade (issue 19, WIP): the checks of `consume` and `emit`, the
 * items' encoding (bytes as they are, any other value as JSON), and a consumer's registration
 * through the log, retried until a leader takes it.
 */

/** A consumer's options (cluster.consume). */
export interface ConsumeOptions {
  /** Items this member runs at once. @default 1 */
  readonly parallelism?: number;
  /** Failed attempts retried before an item goes to the dead letters. @default 3 */
  readonly retries?: number;
  /** How long one attempt may run. @default 60_000 */
  readonly timeoutMs?: number;
  /** The wait before the first retry, doubled at each further one. @default 1000 */
  readonly backoffMs?: number;
  /** Items of the topic started per second, cluster-wide. @default no limit */
  readonly ratePerSecond?: number;
}

export type ConsumeHandler = (item: unknown, ctx: ItemContext) => unknown;

/** How long a consumer's registration waits before it is proposed again after a failure (no leader yet). */
export const CONSUME_RETRY_MS = 200;

const BYTES = 0;
const JSON_VALUE = 1;
const encoder = new TextEncoder();
const decoder = new TextDecoder();

export function checkTopic(topic: unknown): string {
  if (typeof topic !== 'string' || topic.length === 0 || topic.length > MAX_TOPIC_LENGTH) throw new InvalidArgumentError('topic', topic, `a string of 1 to ${MAX_TOPIC_LENGTH} characters`);
  return topic;
}

export function consumerSettings(options: ConsumeOptions): ConsumerSettings {
  const int = (name: keyof ConsumeOptions, value: unknown, min: number, max: number): number => {
    if (!Number.isSafeInteger(value) || (value as number) < min || (value as number) > max) throw new InvalidArgumentError(name, value, `an integer from ${min} to ${max}`);
    return value as number;
  };
  return {
    parallelism: int('parallelism', options.parallelism ?? 1, 1, MAX_PARALLELISM),
    retries: int('retries', options.retries ?? 3, 0, MAX_RETRIES),
    timeoutMs: int('timeoutMs', options.timeoutMs ?? 60_000, 1, MAX_ITEM_TIMEOUT_MS),
    backoffMs: int('backoffMs', options.backoffMs ?? 1000, 0, MAX_ITEM_BACKOFF_MS),
    ratePerSecond: options.ratePerSecond === undefined ? null : int('ratePerSecond', options.ratePerSecond, 1, MAX_RATE_PER_SECOND),
  };
}

/**
 * The items of an emit, encoded and checked, all before anything is proposed: one that does not
 * encode, or is too large, throws InvalidArgumentError and nothing of the call is kept.
 */
export function encodeItems(items: readonly unknown[], key?: (item: unknown, index: number) => string | null): EmittedItem[] {
  if (!Array.isArray(items) || items.length === 0) throw new InvalidArgumentError('items', items, 'a non-empty array');
  return items.map((item, i) => {
    const data = encodeItem(item, i);
    const k = key === undefined ? null : key(item, i);
    if (k !== null && (typeof k !== 'string' || k.length === 0 || k.length > MAX_KEY_LENGTH)) throw new InvalidArgumentError('key', k, `null or a string of 1 to ${MAX_KEY_LENGTH} characters`);
    return { data, key: k };
  });
}

function encodeItem(item: unknown, index: number): Uint8Array {
  let body: Uint8Array;
  let tag: number;
  if (item instanceof Uint8Array) {
    body = item;
    tag = BYTES;
  } else {
    const json = item === undefined ? undefined : JSON.stringify(item);
    if (json === undefined) throw new InvalidArgumentError(`items[${index}]`, item, 'bytes or a JSON value');
    body = encoder.encode(json);
    tag = JSON_VALUE;
  }
  if (body.byteLength + 1 > MAX_ITEM_BYTES) throw new InvalidArgumentError(`items[${index}]`, `${body.byteLength} bytes`, `at most ${MAX_ITEM_BYTES - 1} bytes encoded`);
  const data = new Uint8Array(body.byteLength + 1);
  data[0] = tag;
  data.set(body, 1);
  return data;
}

/** An item as its handler gets it: bytes as they were emitted, or the JSON value. */
export function decodeItem(data: Uint8Array): unknown {
  const body = data.subarray(1);
  return data[0] === BYTES ? body : JSON.parse(decoder.decode(body));
}

/** Registers `topic`'s consumer through the log, again every CONSUME_RETRY_MS until it applied or `stopped()`. */
export async function registerConsumer(runtime: FanoutRuntime, topic: string, handler: ConsumeHandler, settings: ConsumerSettings, timers: Timers, stopped: () => boolean): Promise<void> {
  while (!stopped()) {
    try {
      await runtime.consume(topic, (data, ctx) => handler(decodeItem(data), ctx), settings);
      return;
    } catch {
      await new Promise<void>((resolve) => timers.setTimeout(resolve, CONSUME_RETRY_MS));
    }
  }
}
