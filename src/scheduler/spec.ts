import { CronExpressionParser } from 'cron-parser';
import { InvalidArgumentError } from '../errors.js';
import { onlyKnownKeys } from '../option-checks.js';
import { cronInstantsBackward, cronInstantsForward, dstKey, parseDstPolicy, type DstPolicy, type DstPolicyInput } from './cron-instants.js';

export { DEFAULT_DST_POLICY, type DstPolicy, type DstPolicyInput } from './cron-instants.js';

/** When a job's slots fall, as replicated in the log (plain data, so every member computes the same instants). */
export type JobSpec =
  /** `dst`: what happens where the zone's clocks change (see DstPolicy); absent for the defaults. */
  | { readonly kind: 'cron'; readonly expression: string; readonly tz: string; readonly dst?: DstPolicy }
  | { readonly kind: 'every'; readonly everyMs: number }
  | { readonly kind: 'at'; readonly atMs: number }
  /**
   * Fixed delay: the first slot falls `initialDelayMs` after the job's first registration, and
   * each next one `delayMs` after the committed outcome of the previous one. Only the first
   * instant follows from the spec alone; the planner reads the others from the state.
   */
  | { readonly kind: 'delay'; readonly delayMs: number; readonly initialDelayMs: number };

/** What users may pass to `schedule()`. */
export type SpecInput = string | { readonly cron: string; readonly tz?: string; readonly dst?: DstPolicyInput } | { readonly every: number | string } | { readonly at: Date | number }
  | { readonly delayAfterCompletion: number | string; readonly initialDelay?: number | string };

/** Bound on the instants computed in one call, so a dense schedule cannot stall a member. */
export const MAX_INSTANTS_PER_CALL = 10_000;
/** The shortest fixed interval accepted: shorter ones would flood the log with claims. */
export const MIN_EVERY_MS = 100;
/**
 * The longest interval or delay accepted (about a hundred years): slots must be instants a Date
 * holds (within 8.64e15 ms of 1970), or state() and history() would show Invalid Date.
 */
export const MAX_SPEC_DURATION_MS = 100 * 365 * 86_400_000;
/** The furthest instant a Date holds, either side of 1970: an `at` past it is no instant. */
const MAX_DATE_MS = 8.64e15;

/** The keys that name a spec's kind: a spec object has exactly one. */
const SPEC_KINDS = ['cron', 'every', 'at', 'delayAfterCompletion'] as const;

/** The fields each kind of spec object has: any other is refused. */
const SPEC_FIELDS: Readonly<Record<(typeof SPEC_KINDS)[number], readonly string[]>> = {
  cron: ['cron', 'tz', 'dst'],
  every: ['every'],
  at: ['at'],
  delayAfterCompletion: ['delayAfterCompletion', 'initialDelay'],
};

const DURATION = /^(\d+(?:\.\d+)?)\s*(ms|s|m|h|d)$/;
const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };

/** Validates a spec and turns it into its replicated form. Throws InvalidArgumentError naming `option`. */
export function parseSpec(input: SpecInput, option = 'spec'): JobSpec {
  if (typeof input === 'string') return cronSpec(input, 'UTC', option);
  if (typeof input !== 'object' || input === null) throw new InvalidArgumentError(option, input, 'a cron string, { cron, tz }, { every }, { at } or { delayAfterCompletion }');
  // One kind to a spec: { cron, every } was taken as a cron spec, its `every` dropped unsaid.
  const kinds = SPEC_KINDS.filter((kind) => kind in input);
  if (kinds.length > 1) throw new InvalidArgumentError(option, input, `one of ${SPEC_KINDS.join(', ')}, not ${kinds.join(' and ')}`);
  // A field of another name would be dropped unsaid: `{ cron, timezone }` ran in UTC, and
  // `{ every, initialDelay }` with no delay.
  const kind = kinds[0];
  if (kind !== undefined) onlyKnownKeys(input, SPEC_FIELDS[kind], option);
  if ('cron' in input) return cronSpec(input.cron, input.tz ?? 'UTC', option, input.dst);
  if ('every' in input) {
    const everyMs = typeof input.every === 'number' ? input.every : parseDuration(input.every);
    if (!Number.isInteger(everyMs) || everyMs < MIN_EVERY_MS || everyMs > MAX_SPEC_DURATION_MS) {
      throw new InvalidArgumentError(`${option}.every`, input.every, `an interval of ${MIN_EVERY_MS} ms to ${MAX_SPEC_DURATION_MS} ms, as milliseconds or like '10s'`);
    }
    return { kind: 'every', everyMs };
  }
  if ('at' in input) {
    const atMs = input.at instanceof Date ? input.at.getTime() : input.at;
    if (typeof atMs !== 'number' || !Number.isFinite(atMs) || Math.abs(atMs) > MAX_DATE_MS) throw new InvalidArgumentError(`${option}.at`, input.at, 'a valid Date');
    return { kind: 'at', atMs };
  }
  if ('delayAfterCompletion' in input) return delaySpec(input, option);
  throw new InvalidArgumentError(option, input, 'a cron string, { cron, tz }, { every }, { at } or { delayAfterCompletion }');
}

function delaySpec(input: { readonly delayAfterCompletion: unknown; readonly initialDelay?: unknown }, option: string): JobSpec {
  const delayMs = durationMs(input.delayAfterCompletion);
  // As for fixed intervals: a shorter delay would flood the log with claims and outcomes.
  if (!Number.isInteger(delayMs) || delayMs < MIN_EVERY_MS || delayMs > MAX_SPEC_DURATION_MS) {
    throw new InvalidArgumentError(`${option}.delayAfterCompletion`, input.delayAfterCompletion, `a delay of ${MIN_EVERY_MS} ms to ${MAX_SPEC_DURATION_MS} ms, as milliseconds or like '10s'`);
  }
  const initialDelayMs = input.initialDelay === undefined ? 0 : durationMs(input.initialDelay);
  if (!Number.isInteger(initialDelayMs) || initialDelayMs < 0 || initialDelayMs > MAX_SPEC_DURATION_MS) {
    throw new InvalidArgumentError(`${option}.initialDelay`, input.initialDelay, `a delay of 0 ms to ${MAX_SPEC_DURATION_MS} ms, as milliseconds or like '10s'`);
  }
  return { kind: 'delay', delayMs, initialDelayMs };
}

function durationMs(value: unknown): number {
  if (typeof value === 'number') return value;
  return typeof value === 'string' ? parseDuration(value) : Number.NaN;
}

function cronSpec(expression: unknown, tz: unknown, option: string, dstInput?: unknown): JobSpec {
  if (typeof expression !== 'string' || expression.trim() === '') throw new InvalidArgumentError(option, expression, 'a cron expression');
  if (typeof tz !== 'string' || !isTimeZone(tz)) throw new InvalidArgumentError(`${option}.tz`, tz, 'an IANA time zone such as Europe/Paris');
  // The parser fills in fields missing on the left: '0 2 * *', 02:00 daily with a field dropped,
  // would fire every minute of the 2nd of each month.
  const fields = expression.trim().split(/\s+/);
  if (!expression.trim().startsWith('@') && fields.length !== 5 && fields.length !== 6) throw new InvalidArgumentError(option, expression, `a cron expression of 5 or 6 fields (this one has ${fields.length})`);
  // The parser draws a field written H (H, H/5, H(0-29)) at random on each parse: every member,
  // and every plan, would compute other instants. (Day and month names, THU say, are no H.)
  if (fields.some((field) => /h/i.test(field.replace(/[a-z]{3}/gi, '')))) throw new InvalidArgumentError(option, expression, 'a cron expression without H (a value drawn at random)');
  try {
    CronExpressionParser.parse(expression, { tz, strict: false, currentDate: new Date(0) });
  } catch (error) {
    throw new InvalidArgumentError(option, expression, `a valid cron expression (${error instanceof Error ? error.message : String(error)})`);
  }
  const dst = parseDstPolicy(dstInput, `${option}.dst`);
  return dst === undefined ? { kind: 'cron', expression: expression.trim(), tz } : { kind: 'cron', expression: expression.trim(), tz, dst };
}

/** Zones found valid so far: constructing an Intl.DateTimeFormat to check one is costly. */
const knownTimeZones = new Set<string>();
/** Bound on the zones remembered (there are a few hundred). */
const MAX_KNOWN_TIME_ZONES = 1000;

function isTimeZone(tz: string): boolean {
  if (knownTimeZones.has(tz)) return true;
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
  } catch {
    return false;
  }
  if (knownTimeZones.size < MAX_KNOWN_TIME_ZONES) knownTimeZones.add(tz);
  return true;
}

function parseDuration(value: string): number {
  const match = DURATION.exec(value.trim());
  if (match === null) return Number.NaN;
  return Math.round(Number(match[1]) * (UNIT_MS[match[2] as string] ?? Number.NaN));
}

/**
 * The job's slot instants strictly after `afterMs` and at or before `untilMs`, at most
 * `maxCount`. `anchorMs` is when the job was first registered, as recorded in the log: fixed
 * intervals count from it, so every member computes the same instants. Pure: no clock is read.
 */
export function instantsBetween(spec: JobSpec, anchorMs: number, afterMs: number, untilMs: number, maxCount: number): number[] {
  const limit = Math.min(maxCount, MAX_INSTANTS_PER_CALL);
  const out: number[] = [];
  if (untilMs <= afterMs || limit <= 0) return out;
  switch (spec.kind) {
    case 'at':
    case 'delay': {
      const first = firstInstantBetween(spec, anchorMs, afterMs, untilMs);
      if (first !== null) out.push(first);
      return out;
    }
    case 'every': {
      const first = firstInstantBetween(spec, anchorMs, afterMs, untilMs);
      if (first === null) return out;
      for (let t = first; t <= untilMs && out.length < limit; t += spec.everyMs) out.push(t);
      return out;
    }
    case 'cron':
      // Wall-clock times in the spec's zone, with its daylight-saving policy (cron-instants.ts).
      return cronInstantsForward(spec, afterMs, untilMs, limit);
  }
}

/**
 * How many instants the job has after `afterMs` and at or before `untilMs`: exactly for an
 * interval, whatever their number (a sum, not a walk), and up to `maxCount` for a cron spec,
 * whose instants are walked one by one. Pure.
 */
export function countInstantsBetween(spec: JobSpec, anchorMs: number, afterMs: number, untilMs: number, maxCount: number): number {
  if (spec.kind !== 'every') return instantsBetween(spec, anchorMs, afterMs, untilMs, maxCount).length;
  const first = firstInstantBetween(spec, anchorMs, afterMs, untilMs);
  const last = lastInstantBetween(spec, anchorMs, afterMs, untilMs);
  return first === null || last === null ? 0 : Math.round((last - first) / spec.everyMs) + 1;
}

/**
 * The job's last `count` instants after `afterMs` and at or before `atMs`, oldest first:
 * enumerated backwards from `atMs`, so a long window costs `count`, not its length. Pure.
 */
export function lastInstantsBetween(spec: JobSpec, anchorMs: number, afterMs: number, atMs: number, count: number): number[] {
  const out: number[] = [];
  const limit = Math.min(count, MAX_INSTANTS_PER_CALL);
  if (spec.kind === 'cron') {
    out.push(...cronInstantsBackward(spec, afterMs, atMs, limit));
  } else {
    let t = lastInstantBetween(spec, anchorMs, afterMs, atMs);
    while (t !== null && out.length < limit) {
      out.push(t);
      t = spec.kind === 'every' && t - spec.everyMs > afterMs && t - spec.everyMs > anchorMs ? t - spec.everyMs : null;
    }
  }
  return out.reverse();
}

/**
 * The first of instantsBetween's instants, or null, without making a list: the leader asks it of
 * every job on every plan. A cron spec's comes from the list of one.
 */
export function firstInstantBetween(spec: JobSpec, anchorMs: number, afterMs: number, untilMs: number): number | null {
  let t: number;
  switch (spec.kind) {
    case 'at':
      t = spec.atMs;
      break;
    case 'delay':
      // Only the first slot follows from the spec; the later ones follow completions.
      t = anchorMs + spec.initialDelayMs;
      break;
    case 'every':
      t = everyInstantAfter(spec.everyMs, anchorMs, afterMs);
      break;
    case 'cron':
      return instantsBetween(spec, anchorMs, afterMs, untilMs, 1)[0] ?? null;
  }
  return t > afterMs && t <= untilMs ? t : null;
}

/** An `{ every }` job's first instant after `afterMs`: the first multiple of the interval after it, counting from the anchor (k >= 1). Pure. */
export function everyInstantAfter(everyMs: number, anchorMs: number, afterMs: number): number {
  return anchorMs + Math.max(1, Math.floor((afterMs - anchorMs) / everyMs) + 1) * everyMs;
}

/** The job's last instant at or before `atMs` and after `afterMs`, or null. Pure. */
export function lastInstantBetween(spec: JobSpec, anchorMs: number, afterMs: number, atMs: number): number | null {
  let t: number | null;
  switch (spec.kind) {
    case 'at':
      t = spec.atMs;
      break;
    case 'delay':
      t = anchorMs + spec.initialDelayMs;
      break;
    case 'every': {
      const k = Math.floor((atMs - anchorMs) / spec.everyMs);
      t = k >= 1 ? anchorMs + k * spec.everyMs : null;
      break;
    }
    case 'cron':
      t = cronInstantsBackward(spec, afterMs, atMs, 1)[0] ?? null;
      break;
  }
  return t !== null && t > afterMs && t <= atMs ? t : null;
}

/** A stable text form of a spec, to compare registrations from different members. */
export function specKey(spec: JobSpec): string {
  switch (spec.kind) {
    case 'cron':
      return `cron ${spec.expression} ${spec.tz}${dstKey(spec.dst)}`;
    case 'every':
      return `every ${spec.everyMs}`;
    case 'at':
      return `at ${spec.atMs}`;
    case 'delay':
      return `delay ${spec.delayMs} after ${spec.initialDelayMs}`;
  }
}
