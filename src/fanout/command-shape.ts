import { MAX_ID_LENGTH } from '../transport/constants.js';
import { MAX_ERROR_LENGTH, MAX_ITEM_BYTES, MAX_ITEMS_PER_EMIT, MAX_ITEMS_PER_LEASE, MAX_KEY_LENGTH, MAX_OUTCOMES_PER_COMMAND, MAX_PENDING_PER_TOPIC, MAX_TOPIC_LENGTH, type ConsumerSettings, type EmitOrigin, type FanoutCommand } from './command.js';

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
      return isTopic(c.topic) && isMemberId(c.member) && isSettings(c.settings);
    case 'unconsume':
      return isTopic(c.topic) && isMemberId(c.member);
    case 'emit':
      return isTopic(c.topic) && list(c.items, MAX_ITEMS_PER_EMIT, isItem) && c.items.length > 0 && (c.origin === null || isOrigin(c.origin)) && isTime(c.atMs);
    case 'lease':
      return isMemberId(c.member) && list(c.ids, MAX_ITEMS_PER_LEASE, isCount) && isTime(c.atMs) && (c.topic === undefined || isTopic(c.topic));
    case 'done':
      return isMemberId(c.member) && list(c.outcomes, MAX_OUTCOMES_PER_COMMAND, isOutcome) && isTime(c.atMs);
    case 'reclaim':
      return list(c.leases, MAX_OUTCOMES_PER_COMMAND, (l) => isRecord(l) && isCount(l.id) && isCount(l.token)) && isTime(c.atMs);
    case 'requeue':
    case 'drop':
      return isTopic(c.topic) && list(c.ids, MAX_OUTCOMES_PER_COMMAND, isCount) && isTime(c.atMs);
    default:
      return false;
  }
}

/** A consumer's settings, each within its bound (also what a snapshot's consumers are checked with). */
export function isSettings(value: unknown): value is ConsumerSettings {
  if (!isRecord(value)) return false;
  return within(value.parallelism, 1, MAX_PARALLELISM) && within(value.retries, 0, MAX_RETRIES) && within(value.timeoutMs, 1, MAX_ITEM_TIMEOUT_MS) && within(value.backoffMs, 0, MAX_ITEM_BACKOFF_MS) && (value.ratePerSecond === null || within(value.ratePerSecond, 1, MAX_RATE_PER_SECOND)) && (value.maxPending === null || within(value.maxPending, 1, MAX_PENDING_PER_TOPIC));
}

function isItem(value: unknown): boolean {
  return isRecord(value) && isData(value.data) && isKey(value.key);
}

/** An item's bytes, within MAX_ITEM_BYTES. */
export function isData(value: unknown): value is Uint8Array {
  return value instanceof Uint8Array && value.byteLength <= MAX_ITEM_BYTES;
}

/** An item's key: none, or a name within MAX_KEY_LENGTH. */
export function isKey(value: unknown): value is string | null {
  return value === null || text(value, MAX_KEY_LENGTH);
}

/** A failed attempt's error: none (it succeeded), or a message within MAX_ERROR_LENGTH. */
export function isError(value: unknown): value is string | null {
  return value === null || (typeof value === 'string' && value.length <= MAX_ERROR_LENGTH);
}

/** Where an emit came from: a job's name and slot. */
export function isOrigin(value: unknown): value is EmitOrigin {
  return isRecord(value) && text(value.job, MAX_TOPIC_LENGTH) && isTime(value.slotMs);
}

function isOutcome(value: unknown): boolean {
  return isRecord(value) && isCount(value.id) && isCount(value.token) && isError(value.error);
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

/** A topic's name: not empty, within MAX_TOPIC_LENGTH. */
export function isTopic(value: unknown): value is string {
  return text(value, MAX_TOPIC_LENGTH);
}

/** A member's id, as the transport bounds it. */
export function isMemberId(value: unknown): value is string {
  return text(value, MAX_ID_LENGTH);
}

/** A time in milliseconds: any finite number (the cluster's time need not be whole). */
export function isTime(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** An id, token or tally: a whole number a JavaScript number holds exactly. */
export function isCount(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}

function within(value: unknown, min: number, max: number): boolean {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= min && value <= max;
}
