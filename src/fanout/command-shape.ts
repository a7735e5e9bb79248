import { MAX_ID_LENGTH } from '../transport/constants.js';
import { MAX_ERROR_LENGTH, MAX_ITEM_BYTES, MAX_ITEMS_PER_EMIT, MAX_ITEMS_PER_LEASE, MAX_KEY_LENGTH, MAX_OUTCOMES_PER_COMMAND, MAX_TOPIC_LENGTH, type FanoutCommand } from './command.js';

/**
 * The largest values a consumer's settings may hold in the log: past them a registration is
 * malformed (the options refuse them earlier, with InvalidArgumentError).
 */
export const MAX_PARALLELISM = 10_000;
export const MAX_RETRIES = 1000;
/** A day: an attempt longer than that is not a work item. */
export const MAX_ITEM_TIMEOUT_MS = 86_400_000;
export const MAX_ITEM_BACKOFF_MS = 3_600_000;
export const MAX_RATE_PER_SECOND = 1_000_000;

/**
 * Whether a value read from the log is a fan-out command FanoutState.apply takes: every field
 * present, of its type, within its bound. A command that fails is skipped alike on every
 * member (decodeEntry, `malformed`); without this check a bad value would enter the state and
 * every snapshot of it.
 */
export function isFanoutCommand(value: unknown): value is FanoutCommand {
  if (!isRecord(value)) return false;
  const c = value;
  switch (c.type) {
    case 'consume':
      return topic(c.topic) && id(c.member) && isSettings(c.settings);
    case 'unconsume':
      return topic(c.topic) && id(c.member);
    case 'emit':
      return topic(c.topic) && list(c.items, MAX_ITEMS_PER_EMIT, isItem) && c.items.length > 0 && (c.origin === null || isOrigin(c.origin)) && time(c.atMs);
    case 'lease':
      return id(c.member) && list(c.ids, MAX_ITEMS_PER_LEASE, count) && time(c.atMs);
    case 'done':
      return id(c.member) && list(c.outcomes, MAX_OUTCOMES_PER_COMMAND, isOutcome) && time(c.atMs);
    case 'reclaim':
      return list(c.leases, MAX_OUTCOMES_PER_COMMAND, (l) => isRecord(l) && count(l.id) && count(l.token)) && time(c.atMs);
    case 'requeue':
      return topic(c.topic) && list(c.ids, MAX_OUTCOMES_PER_COMMAND, count) && time(c.atMs);
    default:
      return false;
  }
}

function isSettings(value: unknown): boolean {
  if (!isRecord(value)) return false;
  return within(value.parallelism, 1, MAX_PARALLELISM) && within(value.retries, 0, MAX_RETRIES) && within(value.timeoutMs, 1, MAX_ITEM_TIMEOUT_MS) && within(value.backoffMs, 0, MAX_ITEM_BACKOFF_MS) && (value.ratePerSecond === null || within(value.ratePerSecond, 1, MAX_RATE_PER_SECOND));
}

function isItem(value: unknown): boolean {
  return isRecord(value) && value.data instanceof Uint8Array && value.data.byteLength <= MAX_ITEM_BYTES && (value.key === null || text(value.key, MAX_KEY_LENGTH));
}

function isOrigin(value: unknown): boolean {
  return isRecord(value) && text(value.job, MAX_TOPIC_LENGTH) && time(value.slotMs);
}

function isOutcome(value: unknown): boolean {
  return isRecord(value) && count(value.id) && count(value.token) && (value.error === null || (typeof value.error === 'string' && value.error.length <= MAX_ERROR_LENGTH));
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value) && !(value instanceof Uint8Array);
}

function list(value: unknown, max: number, each: (v: unknown) => boolean): value is unknown[] {
  return Array.isArray(value) && value.length <= max && value.every(each);
}

function text(value: unknown, maxLength: number): value is string {
  return typeof value === 'string' && value.length > 0 && value.length <= maxLength;
}

function topic(value: unknown): boolean {
  return text(value, MAX_TOPIC_LENGTH);
}

function id(value: unknown): boolean {
  return text(value, MAX_ID_LENGTH);
}

function time(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function count(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function within(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}
