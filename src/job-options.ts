import { InvalidArgumentError } from './errors.js';
import { hasLoneSurrogate, onlyKnownKeys } from './option-checks.js';
import type { JobOptions } from './runtime/scheduler/job-types.js';

/** Longest job name accepted. */
const MAX_JOB_NAME_LENGTH = 200;
/** Most retries a job may ask for. */
const MAX_RETRIES = 100;
/** Priorities range from -MAX_PRIORITY to MAX_PRIORITY. */
export const MAX_PRIORITY = 1000;
const OVERLAP_POLICIES: ReadonlySet<unknown> = new Set(['skip', 'allow', 'queue', 'replace']);

/** Every key JobOptions has: any other is refused (onlyKnownKeys). */
export const JOB_OPTION_KEYS: readonly (keyof JobOptions & string)[] = ['mode', 'timeoutMs', 'catchUp', 'retries', 'retryDelayMs', 'overlap', 'priority'];

export function validateName(name: unknown): void {
  // '.' and '..' are refused: an address resolves them as path segments (%2e too), so that over
  // HTTP and the CLI such a job could never be named, only another route.
  // A lone surrogate (a name cut through an emoji) is refused: the log's UTF-8 makes every one
  // U+FFFD, so two names that differ only there became one job or lock. So is a leading U+FEFF
  // (a byte order mark, pasted from a file): a registration or lock applied before the cluster
  // runs version 3 (EXACT_TEXT_VERSION), as every one made at start is, is read without it, as
  // cronraft 0.1.0 reads the log, and the job then ran nowhere (its handler is under the name
  // with it), or a lock was another's.
  if (typeof name !== 'string' || name.length === 0 || name.length > MAX_JOB_NAME_LENGTH || name === '.' || name === '..' || hasLoneSurrogate(name) || name.startsWith('\ufeff')) {
    throw new InvalidArgumentError('name', name, `a non-empty string of at most ${MAX_JOB_NAME_LENGTH} characters, not '.' or '..', with no lone surrogate and not starting with U+FEFF (a byte order mark)`);
  }
}

export function validateJobOptions(options: JobOptions): void {
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object');
  onlyKnownKeys(options, JOB_OPTION_KEYS);
  if (options.mode !== undefined && options.mode !== 'one' && options.mode !== 'all') throw new InvalidArgumentError('options.mode', options.mode, "'one' or 'all'");
  if (options.timeoutMs !== undefined && (!Number.isSafeInteger(options.timeoutMs) || options.timeoutMs <= 0)) {
    throw new InvalidArgumentError('options.timeoutMs', options.timeoutMs, 'a positive integer of milliseconds');
  }
  if (options.retries !== undefined && (!Number.isSafeInteger(options.retries) || options.retries < 0 || options.retries > MAX_RETRIES)) {
    throw new InvalidArgumentError('options.retries', options.retries, `an integer from 0 to ${MAX_RETRIES}`);
  }
  if (options.retryDelayMs !== undefined && (!Number.isSafeInteger(options.retryDelayMs) || options.retryDelayMs <= 0)) {
    throw new InvalidArgumentError('options.retryDelayMs', options.retryDelayMs, 'a positive integer of milliseconds');
  }
  if (options.overlap !== undefined && !OVERLAP_POLICIES.has(options.overlap)) {
    throw new InvalidArgumentError('options.overlap', options.overlap, "'skip', 'allow', 'queue' or 'replace'");
  }
  if (options.priority !== undefined && (!Number.isSafeInteger(options.priority) || Math.abs(options.priority) > MAX_PRIORITY)) {
    throw new InvalidArgumentError('options.priority', options.priority, `an integer from -${MAX_PRIORITY} to ${MAX_PRIORITY}`);
  }
  const c = options.catchUp;
  if (c !== undefined && c !== 'latest' && c !== 'none' && !(typeof c === 'object' && c !== null && Number.isSafeInteger(c.windowMs) && c.windowMs > 0 && Number.isSafeInteger(c.maxSlots) && c.maxSlots > 0)) {
    throw new InvalidArgumentError('options.catchUp', c, "'latest', 'none' or { windowMs, maxSlots }");
  }
  // Caught-up slots are all due at once: under the default overlap 'skip' every one but the
  // first would be skipped, which is not what asking for all of them means.
  if (typeof c === 'object' && c !== null && (options.overlap ?? 'skip') === 'skip') {
    throw new InvalidArgumentError('options.overlap', options.overlap ?? 'skip (the default)', "'queue' (run the caught-up slots one after another) or 'allow' with catchUp { windowMs, maxSlots }");
  }
}
