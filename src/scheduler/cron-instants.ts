import { CronExpression, CronExpressionParser, type CronFieldCollection } from 'cron-parser';
import { InvalidArgumentError } from '../errors.js';

/**
 * What a cron spec does where its time zone's clocks change (daylight saving, or any other
 * change of UTC offset in the tz database Node ships). Replicated with the spec, so every member
 * computes the same instants. The expression names wall-clock times; each one runs at the
 * instant the zone's clocks show it, and:
 *
 * - `gap`: a wall time that does not exist, because the clocks jump over it (02:30 on the night
 *   Paris springs forward from 02:00 to 03:00). `'shift'` (default) runs it at the first valid
 *   time after the gap, which is the transition itself (03:00 CEST): all of one gap's times run
 *   once there, and that run is the spec's own if it also names 03:00. `'skip'` does not run it.
 * - `overlap`: a wall time that occurs twice, because the clocks go back over it (02:30 on the
 *   night Paris falls back from 03:00 to 02:00). `'once'` (default) runs it at its first
 *   occurrence (02:30 CEST); `'twice'` at both (02:30 CEST and 02:30 CET).
 *
 * The rule is the same for specs that fire every hour or more often, applied to each wall time
 * they name. With `'once'`, `0 * * * *` in Paris runs at 02:00 CEST and next at 03:00 CET, two
 * hours later, and `*\/15 * * * *` pauses for the repeated hour; with `'twice'` both keep firing
 * every real hour or quarter. In a gap, such a spec usually names the transition's time too, so
 * `'shift'` and `'skip'` agree (one run at 03:00 in Paris); where the clocks jump by half an hour
 * (Australia/Lord_Howe, 02:00 to 02:30) `'shift'` runs `0 * * * *`'s 02:00 at 02:30. A job that
 * should keep a steady real-time rhythm through the change wants `{ overlap: 'twice' }` or a
 * fixed interval (`{ every }`) rather than a cron spec.
 */
export interface DstPolicy {
  readonly gap: 'shift' | 'skip';
  readonly overlap: 'once' | 'twice';
}

/** What users may pass as `dst`: either field may be left out for its default. */
export interface DstPolicyInput {
  readonly gap?: 'shift' | 'skip';
  readonly overlap?: 'once' | 'twice';
}

/** The policy of a spec registered without one (and of log entries written before policies existed). */
export const DEFAULT_DST_POLICY: DstPolicy = Object.freeze({ gap: 'shift', overlap: 'once' });

/**
 * Validates a `dst` option. The result is undefined for the defaults, so that equal policies
 * have one replicated form (a spec without `dst` means the defaults). Throws InvalidArgumentError
 * naming `option` or one of its fields.
 */
export function parseDstPolicy(input: unknown, option: string): DstPolicy | undefined {
  if (input === undefined) return undefined;
  const expected = "{ gap?: 'shift' | 'skip', overlap?: 'once' | 'twice' }";
  if (typeof input !== 'object' || input === null || Array.isArray(input)) throw new InvalidArgumentError(option, input, expected);
  const fields = input as Record<string, unknown>;
  for (const key of Object.keys(fields)) {
    if (key !== 'gap' && key !== 'overlap') throw new InvalidArgumentError(`${option}.${key}`, fields[key], `no such field: ${option} is ${expected}`);
  }
  const gap = fields.gap === undefined ? DEFAULT_DST_POLICY.gap : fields.gap;
  const overlap = fields.overlap === undefined ? DEFAULT_DST_POLICY.overlap : fields.overlap;
  if (gap !== 'shift' && gap !== 'skip') throw new InvalidArgumentError(`${option}.gap`, gap, "'shift' or 'skip'");
  if (overlap !== 'once' && overlap !== 'twice') throw new InvalidArgumentError(`${option}.overlap`, overlap, "'once' or 'twice'");
  return gap === DEFAULT_DST_POLICY.gap && overlap === DEFAULT_DST_POLICY.overlap ? undefined : { gap, overlap };
}

/** The policy a replicated spec stands for (read defensively: it came from the log). */
export function dstPolicyOf(dst: DstPolicy | undefined): DstPolicy {
  return { gap: dst?.gap === 'skip' ? 'skip' : 'shift', overlap: dst?.overlap === 'twice' ? 'twice' : 'once' };
}

/** The policy's part of a spec key: empty for the defaults, so keys of specs without one do not change. */
export function dstKey(dst: DstPolicy | undefined): string {
  const p = dstPolicyOf(dst);
  return p.gap === DEFAULT_DST_POLICY.gap && p.overlap === DEFAULT_DST_POLICY.overlap ? '' : ` dst ${p.gap} ${p.overlap}`;
}

/** A cron spec's fields, as replicated. */
export interface CronFields {
  readonly expression: string;
  readonly tz: string;
  readonly dst?: DstPolicy;
}

// How instants are found. The zone's offset changes are located from Intl (probing every
// OFFSET_PROBE_MS, then bisecting to the second); between two of them the offset is fixed, so
// the instants are enumerated one such piece of time at a time, with cron-parser stepping through
// wall times in UTC, where no time is missing or repeated. Every rule below depends on the
// instant's piece alone, not on the window asked for, so forward and backward enumeration give
// the same set, and a window's instants are that set's intersection with the window.

/** Step of the probes for offset changes. The tz database has no two changes less than two days apart, so none is missed. */
const OFFSET_PROBE_MS = 12 * 3_600_000;
/** Offset changes are looked up, and memoized, per chunk of this many probes. */
const PROBES_PER_CHUNK = 16;
const CHUNK_MS = OFFSET_PROBE_MS * PROBES_PER_CHUNK;
/** Bound on memoized chunks, all zones together (about 90 zone-years). */
const MAX_CACHED_CHUNKS = 4096;
/** Bound on memoized zones. */
const MAX_CACHED_ZONES = 1024;
/** Bound on memoized parsed expressions (a member's jobs with cron specs, their count bounded too, share one per expression). */
const MAX_CACHED_EXPRESSIONS = 4096;
/**
 * Bound on a zone's offsets and on any change of them (the largest in the tz database are a
 * day: Alaska in 1867, Samoa in 2011). A repeated wall time is repeated within this long of the
 * change, and an instant lies within this long of its wall time.
 */
const MAX_OFFSET_MS = 2 * 86_400_000;
/** Bound on a piece of time searched for an offset change at once (then enumerated). */
const MAX_PIECE_MS = 4 * CHUNK_MS;

interface Zone {
  readonly id: string;
  /** Null for UTC, which has no offset changes. */
  readonly format: Intl.DateTimeFormat | null;
}

interface Transition {
  /** The first instant (a whole second) on the new offset. */
  readonly atMs: number;
  readonly before: number;
  readonly after: number;
}

const zones = new Map<string, Zone>();
const chunks = new Map<string, readonly Transition[]>();

function zoneOf(tz: string): Zone {
  let zone = zones.get(tz);
  if (zone === undefined) {
    const format = new Intl.DateTimeFormat('en-US', {
      timeZone: tz,
      hourCycle: 'h23',
      year: 'numeric',
      month: 'numeric',
      day: 'numeric',
      hour: 'numeric',
      minute: 'numeric',
      second: 'numeric',
    });
    const id = format.resolvedOptions().timeZone;
    zone = { id, format: id === 'UTC' ? null : format };
    if (zones.size >= MAX_CACHED_ZONES) zones.clear();
    zones.set(tz, zone);
  }
  return zone;
}

/** The zone's UTC offset (wall time minus instant) at `ms`, to the second. */
function offsetAt(zone: Zone, ms: number): number {
  if (zone.format === null) return 0;
  const second = Math.floor(ms / 1000) * 1000;
  let year = 1970;
  let month = 1;
  let day = 1;
  let hour = 0;
  let minute = 0;
  let sec = 0;
  for (const part of zone.format.formatToParts(second)) {
    const value = Number(part.value);
    switch (part.type) {
      case 'year':
        year = value;
        break;
      case 'month':
        month = value;
        break;
      case 'day':
        day = value;
        break;
      case 'hour':
        hour = value;
        break;
      case 'minute':
        minute = value;
        break;
      case 'second':
        sec = value;
        break;
      default:
        break;
    }
  }
  const wall = new Date(0);
  wall.setUTCFullYear(year, month - 1, day);
  wall.setUTCHours(hour, minute, sec, 0);
  return wall.getTime() - second;
}

/** The zone's offset changes in (c * CHUNK_MS, (c + 1) * CHUNK_MS], in order. Memoized. */
function chunkTransitions(zone: Zone, c: number): readonly Transition[] {
  if (zone.format === null) return [];
  const key = `${zone.id} ${c}`;
  const cached = chunks.get(key);
  if (cached !== undefined) return cached;
  const found: Transition[] = [];
  let a = c * CHUNK_MS;
  let offsetA = offsetAt(zone, a);
  for (let i = 0; i < PROBES_PER_CHUNK; i++) {
    const b = a + OFFSET_PROBE_MS;
    const offsetB = offsetAt(zone, b);
    if (offsetB !== offsetA) {
      // Bisect to the first whole second on another offset.
      let lo = a;
      let hi = b;
      while (hi - lo > 1000) {
        const mid = lo + Math.floor((hi - lo) / 2000) * 1000;
        if (offsetAt(zone, mid) === offsetA) lo = mid;
        else hi = mid;
      }
      found.push({ atMs: hi, before: offsetA, after: offsetAt(zone, hi) });
    }
    a = b;
    offsetA = offsetB;
  }
  if (chunks.size >= MAX_CACHED_CHUNKS) chunks.delete(chunks.keys().next().value as string);
  chunks.set(key, found);
  return found;
}

function chunkOf(ms: number): number {
  return Math.ceil(ms / CHUNK_MS) - 1;
}

/** The first offset change in (fromMs, untilMs], or null. */
function nextTransition(zone: Zone, fromMs: number, untilMs: number): Transition | null {
  if (zone.format === null) return null;
  for (let c = chunkOf(fromMs); c * CHUNK_MS < untilMs; c++) {
    for (const t of chunkTransitions(zone, c)) if (t.atMs > fromMs && t.atMs <= untilMs) return t;
  }
  return null;
}

/** The last offset change in (floorMs, atMs], or null. */
function lastTransition(zone: Zone, atMs: number, floorMs: number): Transition | null {
  if (zone.format === null) return null;
  for (let c = chunkOf(atMs); (c + 1) * CHUNK_MS > floorMs; c--) {
    const list = chunkTransitions(zone, c);
    for (let i = list.length - 1; i >= 0; i--) {
      const t = list[i] as Transition;
      if (t.atMs <= atMs && t.atMs > floorMs) return t;
    }
  }
  return null;
}

/** The expression's next wall time (read as UTC) after the one it was reset to, or null if there is none. */
function nextWall(expression: CronExpression): number | null {
  try {
    return expression.next().getTime();
  } catch {
    return null;
  }
}

/** The same, before. */
function prevWall(expression: CronExpression): number | null {
  try {
    return expression.prev().getTime();
  } catch {
    return null;
  }
}

/**
 * One piece of time [fromMs, toMs] with no offset change after its start: its offset, the
 * lowest wall time it realizes for the first time, and the instant its gap runs at, if any.
 */
interface Piece {
  readonly offset: number;
  readonly maxWall: number;
  readonly minWall: number;
  readonly shiftMs: number | null;
}

function pieceOf(zone: Zone, policy: DstPolicy, expression: CronExpression, fromMs: number, toMs: number): Piece {
  const offset = offsetAt(zone, fromMs);
  const start = lastTransition(zone, fromMs, fromMs - MAX_OFFSET_MS);
  let minWall = fromMs + offset;
  let shiftMs: number | null = null;
  if (start !== null && start.before > offset && policy.overlap === 'once') {
    // Clocks went back: the wall times up to start.atMs + start.before were shown already.
    minWall = Math.max(minWall, start.atMs + start.before);
  }
  if (start !== null && start.atMs === fromMs && start.before < offset && policy.gap === 'shift') {
    // Clocks jumped forward: a wall time of the expression in the gap runs at the transition.
    expression.reset(new Date(start.atMs + start.before - 1));
    const w = nextWall(expression);
    if (w !== null && w < start.atMs + offset) shiftMs = start.atMs;
  }
  return { offset, maxWall: toMs + offset, minWall, shiftMs };
}

/**
 * Each expression's fields as parsed, the same for every call: parsing took many times as long
 * as the steps from one instant to the next that a plan asks for, at every plan. An expression
 * is stateful (its current date), so each call gets one of its own over the shared fields, which
 * it only reads.
 */
const parsedFields = new Map<string, CronFieldCollection>();

function parseWalls(fields: CronFields): CronExpression {
  const options = { tz: 'UTC', currentDate: new Date(0) };
  const known = parsedFields.get(fields.expression);
  if (known !== undefined) return new CronExpression(known, options);
  const expression = CronExpressionParser.parse(fields.expression, options);
  if (parsedFields.size >= MAX_CACHED_EXPRESSIONS) parsedFields.delete(parsedFields.keys().next().value as string);
  parsedFields.set(fields.expression, expression.fields);
  return expression;
}

/**
 * The cron spec's instants in (afterMs, untilMs], oldest first, at most `limit`. Pure (memoizes
 * the zone's offset changes, which are the same for every call).
 */
export function cronInstantsForward(fields: CronFields, afterMs: number, untilMs: number, limit: number): number[] {
  const out: number[] = [];
  if (untilMs <= afterMs || limit <= 0) return out;
  const zone = zoneOf(fields.tz);
  const policy = dstPolicyOf(fields.dst);
  const expression = parseWalls(fields);
  // Instants are whole milliseconds: the first one strictly after afterMs, which a high-water
  // mark stamped from a member's clock makes fractional.
  let fromMs = Math.floor(afterMs) + 1;
  // No instant lies in (skipFromMs, resumeMs), as a piece's enumeration showed (see below):
  // pieces end there, and the next one starts at resumeMs.
  let skipFromMs = Number.POSITIVE_INFINITY;
  let resumeMs = Number.NEGATIVE_INFINITY;
  while (fromMs <= untilMs && out.length < limit) {
    if (fromMs > skipFromMs) {
      fromMs = Math.max(fromMs, resumeMs);
      skipFromMs = Number.POSITIVE_INFINITY;
      if (fromMs > untilMs) break;
    }
    const bound = Math.min(untilMs, zone.format === null ? untilMs : fromMs + MAX_PIECE_MS, skipFromMs);
    const next = nextTransition(zone, fromMs, bound);
    const toMs = next === null ? bound : next.atMs - 1;
    const piece = pieceOf(zone, policy, expression, fromMs, toMs);
    if (piece.shiftMs !== null) out.push(piece.shiftMs);
    expression.reset(new Date(piece.minWall - 1));
    let w = nextWall(expression);
    while (w !== null && w <= piece.maxWall && out.length < limit) {
      const t = w - piece.offset;
      if (t !== piece.shiftMs) out.push(t);
      w = nextWall(expression);
    }
    if (skipFromMs === Number.POSITIVE_INFINITY) {
      // An instant after toMs either realizes a wall time at or before maxWall (on a smaller
      // offset, so within MAX_OFFSET_MS of toMs) or one at or after w (so at or after w - MAX_OFFSET_MS).
      skipFromMs = toMs + MAX_OFFSET_MS;
      resumeMs = w === null ? Number.POSITIVE_INFINITY : w - MAX_OFFSET_MS;
    }
    fromMs = toMs + 1;
  }
  return out.slice(0, limit);
}

/** The cron spec's instants in (afterMs, atMs], newest first, at most `limit`. Pure, as above. */
export function cronInstantsBackward(fields: CronFields, afterMs: number, atMs: number, limit: number): number[] {
  const out: number[] = [];
  if (atMs <= afterMs || limit <= 0) return out;
  const zone = zoneOf(fields.tz);
  const policy = dstPolicyOf(fields.dst);
  const expression = parseWalls(fields);
  let toMs = atMs;
  // No instant lies in (resumeMs, skipFromMs): the mirror of the forward case.
  let skipFromMs = Number.NEGATIVE_INFINITY;
  let resumeMs = Number.POSITIVE_INFINITY;
  while (toMs > afterMs && out.length < limit) {
    if (toMs < skipFromMs) {
      toMs = Math.min(toMs, resumeMs);
      skipFromMs = Number.NEGATIVE_INFINITY;
      if (toMs <= afterMs) break;
    }
    const floor = Math.max(afterMs, zone.format === null ? afterMs : toMs - MAX_PIECE_MS, skipFromMs - 1);
    const last = lastTransition(zone, toMs, floor);
    // The first whole millisecond strictly after floor: a fractional mark (a registration's
    // atMs, stamped from a member's clock) plus one passed over an instant less than a
    // millisecond after it, which the planner then neither claimed nor counted missed (simulator
    // seed 5147, three members, four minutes: the slot after a deploy's take-over).
    const fromMs = last === null ? Math.floor(floor) + 1 : last.atMs;
    const piece = pieceOf(zone, policy, expression, fromMs, toMs);
    expression.reset(new Date(piece.maxWall + 1));
    let w = prevWall(expression);
    while (w !== null && w >= piece.minWall && out.length < limit) {
      out.push(w - piece.offset);
      w = prevWall(expression);
    }
    if (piece.shiftMs !== null && out.length < limit && out[out.length - 1] !== piece.shiftMs) out.push(piece.shiftMs);
    if (skipFromMs === Number.NEGATIVE_INFINITY) {
      // An instant before fromMs either realizes a wall time at or after minWall (on a larger
      // offset, so within MAX_OFFSET_MS of fromMs) or one at or before w.
      skipFromMs = fromMs - MAX_OFFSET_MS;
      resumeMs = w === null ? Number.NEGATIVE_INFINITY : w + MAX_OFFSET_MS;
    }
    toMs = fromMs - 1;
  }
  return out;
}
