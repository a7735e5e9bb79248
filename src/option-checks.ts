import { InvalidArgumentError } from './errors.js';

/** A UTF-16 surrogate not in a pair (in a `u` regular expression, a pair is one code point, not of this category). */
const LONE_SURROGATE = /\p{Cs}/u;

/**
 * Whether `text` holds a lone surrogate (a name cut through an emoji): the log's UTF-8 makes
 * every one U+FFFD, so that the name comes back from the log as another, and two names that
 * differ only there as one.
 */
export function hasLoneSurrogate(text: string): boolean {
  return LONE_SURROGATE.test(text);
}

/** A positive integer option (milliseconds or a count, `unit` says which), or InvalidArgumentError naming it. */
export function positiveInt(value: unknown, option: string, unit = 'milliseconds or a count'): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) throw new InvalidArgumentError(option, value, `a positive integer (${unit})`);
  return value;
}

/** A non-negative integer option, or InvalidArgumentError naming it. */
export function nonNegativeInt(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError(option, value, 'a non-negative integer');
  return value;
}

/**
 * Refuses a key of `value` that is none of `known`, naming it: a misspelt option (`retires`)
 * would otherwise be dropped unsaid, and its default used. TypeScript catches it in an object
 * literal only. The error names `prefix.key` (the key alone when `prefix` is empty, as the
 * call's other refusals name it).
 */
export function onlyKnownKeys(value: object, known: readonly string[], prefix = 'options'): void {
  for (const key of Object.keys(value)) {
    if (!known.includes(key)) throw new InvalidArgumentError(prefix === '' ? key : `${prefix}.${key}`, (value as Record<string, unknown>)[key], `no such option (the options are ${known.join(', ')})`);
  }
}

/**
 * A call's options object (undefined: none), or InvalidArgumentError: null or a value of another
 * kind is not options, and neither is one with a key none of `known` (onlyKnownKeys, named alone).
 */
export function optionsObject<T extends object>(value: T | undefined, known: readonly (keyof T & string)[], option = 'options'): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null) throw new InvalidArgumentError(option, value, 'an object');
  onlyKnownKeys(value, known, '');
  return value;
}

/**
 * Refuses a call from JavaScript with more arguments than `method` takes (`given`, its
 * `arguments.length`): one it would ignore, as `trigger('job', { slot })` did, triggering now.
 */
export function refuseMoreArguments(given: number, takes: number, method: string): void {
  if (given > takes) throw new InvalidArgumentError('arguments', `${given} arguments`, `at most ${takes} for ${method}()`);
}
