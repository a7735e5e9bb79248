import { InvalidArgumentError } from './errors.js';

/** A positive integer option (milliseconds or a count), or InvalidArgumentError naming it. */
export function positiveInt(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value <= 0) throw new InvalidArgumentError(option, value, 'a positive integer (milliseconds or a count)');
  return value;
}

/** A non-negative integer option, or InvalidArgumentError naming it. */
export function nonNegativeInt(value: unknown, option: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new InvalidArgumentError(option, value, 'a non-negative integer');
  return value;
}

/** A call's options object (undefined: none), or InvalidArgumentError: null or a value of another kind is not options. */
export function optionsObject<T extends object>(value: T | undefined, option = 'options'): Partial<T> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null) throw new InvalidArgumentError(option, value, 'an object');
  return value;
}
