import { InvalidArgumentError } from './errors.js';
import type { JobOptions } from './runtime/scheduler-runtime.js';

/** Longest job name accepted. */
const MAX_JOB_NAME_LENGTH = 200;
/** Most retries a job may ask for. */
const MAX_RETRIES = 100;

export function validateName(name: unknown): void {
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_JOB_NAME_LENGTH) {
    throw new InvalidArgumentError('name', name, `a non-empty string of at most ${MAX_JOB_NAME_LENGTH} characters`);
  }
}

export function validateJobOptions(options: JobOptions): void {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object');
  if (options.mode !== undefined && options.mode !== 'one' && options.mode !== 'all') throw new InvalidArgumentError('options.mode', options.mode, "'one' or 'all'");
  if (options.timeoutMs !== undefined && (!Number.isInteger(options.timeoutMs) || options.timeoutMs <= 0)) {
    throw new InvalidArgumentError('options.timeoutMs', options.timeoutMs, 'a positive integer of milliseconds');
  }
  if (options.retries !== undefined && (!Number.isInteger(options.retries) || options.retries < 0 || options.retries > MAX_RETRIES)) {
    throw new InvalidArgumentError('options.retries', options.retries, `an integer from 0 to ${MAX_RETRIES}`);
  }
  if (options.retryDelayMs !== undefined && (!Number.isInteger(options.retryDelayMs) || options.retryDelayMs <= 0)) {
    throw new InvalidArgumentError('options.retryDelayMs', options.retryDelayMs, 'a positive integer of milliseconds');
  }
  const c = options.catchUp;
  if (c !== undefined && c !== 'latest' && c !== 'none' && !(typeof c === 'object' && c !== null && Number.isInteger(c.windowMs) && c.windowMs > 0 && Number.isInteger(c.maxSlots) && c.maxSlots > 0)) {
    throw new InvalidArgumentError('options.catchUp', c, "'latest', 'none' or { windowMs, maxSlots }");
  }
}
