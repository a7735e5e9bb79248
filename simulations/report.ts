/**
 * The simulator's human report: one self-contained HTML page (inline CSS, inline SVG and a
 * few lines of inline script for tooltips) drawn from a run's `ReportInput`. It shows the
 * verdict and how to replay the run, a timeline of members (leadership, crashes, pauses,
 * partitions, clock offsets) and of job slots over true simulated time, a lateness table per
 * job and every violation in full.
 *
 * A run may record 100,000+ events, far more marks than a screen has pixels, so every row is
 * aggregated to pixel columns before it is drawn (see the bounds below) and the page stays a
 * few megabytes at most whatever the input.
 */
import type { NodeId } from '../src/raft/types.js';
import { percentile } from './summary.js';
import { MAX_TIMELINE_EVENTS, type ReportInput, type TimelineEvent } from './timeline.js';

// ---------------------------------------------------------------------------------------------
// Bounds

/** Width of the time axis in CSS pixels: no row draws more marks than this allows. */
export const PLOT_WIDTH_PX = 1200;
/** Slots of a job are binned into columns this wide; each column is drawn as one mark. */
export const SLOT_BIN_PX = 2;
/** Spans (leader periods, pauses, ...) narrower than this that touch are merged into one mark. */
export const MIN_SPAN_PX = 2;
/** A merged mark covers at most this many pixels, so that its tooltip still tells about one moment. */
export const MAX_MERGED_PX = 6;
/**
 * Slot columns over all job lanes together. With many jobs the columns widen past
 * SLOT_BIN_PX so that the lanes' marks and tooltips, the bulk of a big page, stay bounded.
 */
export const MAX_SLOT_COLUMNS = 6000;
/** Jobs drawn as lanes in the timeline; any further jobs appear in the lateness table only. */
export const MAX_JOB_LANES = 40;
/**
 * The size the page is designed to stay under for a run like the simulator's (a handful of
 * members, 10 simulated minutes, 100,000+ events); the tests hold it to that.
 */
export const REPORT_SIZE_BUDGET_BYTES = 3_000_000;

const GUTTER_PX = 200;
const RIGHT_PAD_PX = 28;
const SVG_WIDTH_PX = GUTTER_PX + PLOT_WIDTH_PX + RIGHT_PAD_PX;
const PLOT_X0 = GUTTER_PX;
const PLOT_X1 = GUTTER_PX + PLOT_WIDTH_PX;

// ---------------------------------------------------------------------------------------------
// The model: what the timeline says, regrouped by member and by job

type RunEvent = Extract<TimelineEvent, { kind: 'run' }>;
type RunOutcome = RunEvent['outcome'];

/**
 * What became of a slot: aborted and interrupted runs count together as `aborted`. A slot not
 * run is `skipped` (its overlap policy skipped or replaced it), `missed` (the leader recorded
 * that nobody ran it: `expire`), or, with no outcome recorded at all, `never`.
 */
type SlotResult = 'succeeded' | 'failed' | 'aborted' | 'skipped' | 'missed' | 'never' | 'pending';

interface Span {
  readonly start: number;
  readonly end: number;
}

interface LeaderSpan extends Span {
  readonly term: number;
}

interface CutOffSpan extends Span {
  readonly cannotSendTo: readonly NodeId[];
  readonly cannotHearFrom: readonly NodeId[];
  /** Peers this member cannot reach in at least one direction. */
  readonly peersCut: number;
}

interface ClockSpan extends Span {
  readonly offsetMs: number;
  readonly note: string;
}

interface MemberTrack {
  readonly id: NodeId;
  readonly leader: LeaderSpan[];
  readonly down: Span[];
  readonly pauses: Span[];
  cutOff: CutOffSpan[];
  readonly clock: Array<{ readonly t: number; readonly offsetMs: number; readonly note: string }>;
}

interface Run {
  readonly member: NodeId;
  readonly token: number;
  readonly startT: number;
  readonly endT: number;
  readonly outcome: RunOutcome;
}

/** An outcome the log recorded for the slot without a run: skipped, replaced, interrupted before it started, or missed. */
interface NotRun {
  readonly t: number;
  readonly member: NodeId;
  readonly token: number;
  readonly outcome: string;
  readonly reason: string | undefined;
}

interface Slot {
  readonly slotT: number;
  readonly tokens: Set<number>;
  readonly assignees: NodeId[];
  readonly runs: Run[];
  readonly notRun: NotRun[];
}

interface MissedSpan extends Span {
  /** When the leader decided to drop the slots. */
  readonly decidedT: number;
  readonly count: number;
}

interface JobTrack {
  readonly name: string;
  readonly spec: string;
  readonly slotsByT: Map<number, Slot>;
  readonly missedEvents: Array<{ readonly t: number; readonly throughT: number; readonly count: number }>;
  slots: Slot[];
  missed: MissedSpan[];
}

interface Model {
  readonly input: ReportInput;
  /** Right edge of the time axis (true ms). */
  readonly endT: number;
  /** The last instant the timeline tells anything about: slots after it had no chance to run. */
  readonly lastEventT: number;
  readonly members: MemberTrack[];
  readonly jobs: JobTrack[];
  readonly violations: Array<{ readonly t: number; readonly message: string }>;
}

function buildModel(input: ReportInput): Model {
  // The simulator appends in time order, but the report must not depend on it.
  const events = [...input.timeline].sort((a, b) => a.t - b.t);
  const lastEventT = events.reduce((max, e) => Math.max(max, eventEndT(e)), 0);
  const endT = Math.max(input.durationMs, input.healedAtT, lastEventT, 1);
  const violations = events.flatMap((e) => (e.kind === 'violation' ? [{ t: e.t, message: e.message }] : []));
  return {
    input,
    endT,
    lastEventT,
    members: memberTracks(input.members, events, endT),
    jobs: jobTracks(input.jobs, events),
    violations: violations.length > 0 ? violations : violationsFromMessages(input.violations),
  };
}

/** The latest instant an event covers: runs and pauses last beyond the instant they are recorded. */
function eventEndT(e: TimelineEvent): number {
  if (e.kind === 'run') return Math.max(e.t, e.endT);
  if (e.kind === 'pause') return Math.max(e.t, e.untilT);
  return e.t;
}

/** The checker prefixes its messages with `t=12.3ms:`; without timeline events that is all we have. */
function violationsFromMessages(messages: readonly string[]): Array<{ t: number; message: string }> {
  return messages.flatMap((message) => {
    const match = /^t=(\d+(?:\.\d+)?)ms:/.exec(message);
    return match === null ? [] : [{ t: Number(match[1]), message }];
  });
}

function memberTracks(declared: readonly NodeId[], events: readonly TimelineEvent[], endT: number): MemberTrack[] {
  const tracks = new Map<NodeId, MemberTrack>();
  const track = (id: NodeId): MemberTrack => {
    let found = tracks.get(id);
    if (found === undefined) {
      found = { id, leader: [], down: [], pauses: [], cutOff: [], clock: [] };
      tracks.set(id, found);
    }
    return found;
  };
  for (const id of declared) track(id);
  const leading = new Map<NodeId, { start: number; term: number }>();
  const downSince = new Map<NodeId, number>();
  const stopLeading = (id: NodeId, t: number): void => {
    const open = leading.get(id);
    if (open === undefined) return;
    track(id).leader.push({ start: open.start, end: t, term: open.term });
    leading.delete(id);
  };
  for (const e of events) {
    switch (e.kind) {
      case 'leader':
        stopLeading(e.member, e.t);
        leading.set(e.member, { start: e.t, term: e.term });
        break;
      case 'follower':
        stopLeading(e.member, e.t);
        break;
      case 'crash':
        // A crashed member leads nothing, whether or not a `follower` event says so.
        stopLeading(e.member, e.t);
        if (!downSince.has(e.member)) downSince.set(e.member, e.t);
        break;
      case 'restart': {
        const since = downSince.get(e.member);
        if (since !== undefined) track(e.member).down.push({ start: since, end: e.t });
        downSince.delete(e.member);
        break;
      }
      case 'pause':
        track(e.member).pauses.push({ start: e.t, end: Math.max(e.t, e.untilT) });
        break;
      case 'clock':
        track(e.member).clock.push({ t: e.t, offsetMs: e.offsetMs, note: e.note });
        break;
      case 'partition':
        for (const [from, to] of e.blocked) {
          track(from);
          track(to);
        }
        break;
      default:
        break;
    }
  }
  for (const id of [...leading.keys()]) stopLeading(id, endT);
  for (const [id, since] of downSince) track(id).down.push({ start: since, end: endT });
  const all = [...tracks.values()];
  const cutOff = cutOffSpans(
    all.map((m) => m.id),
    events,
    endT,
  );
  for (const m of all) m.cutOff = cutOff.get(m.id) ?? [];
  return all;
}

/**
 * Turns the network's successive blocked-link sets into, per member, the periods it was cut
 * off from some peers. Consecutive periods with the same blocked links are one period.
 */
function cutOffSpans(ids: readonly NodeId[], events: readonly TimelineEvent[], endT: number): Map<NodeId, CutOffSpan[]> {
  const spans = new Map<NodeId, CutOffSpan[]>(ids.map((id) => [id, []]));
  const changes = events.filter((e): e is Extract<TimelineEvent, { kind: 'partition' }> => e.kind === 'partition');
  changes.forEach((change, i) => {
    const start = change.t;
    const end = changes[i + 1]?.t ?? endT;
    if (end <= start && i + 1 < changes.length) return;
    const sendTo = new Map<NodeId, Set<NodeId>>();
    const hearFrom = new Map<NodeId, Set<NodeId>>();
    for (const [from, to] of change.blocked) {
      addTo(sendTo, from, to);
      addTo(hearFrom, to, from);
    }
    for (const id of ids) {
      const cannotSendTo = [...(sendTo.get(id) ?? [])].sort();
      const cannotHearFrom = [...(hearFrom.get(id) ?? [])].sort();
      if (cannotSendTo.length === 0 && cannotHearFrom.length === 0) continue;
      const list = spans.get(id) ?? [];
      const last = list.at(-1);
      const same = last !== undefined && last.end === start && sameList(last.cannotSendTo, cannotSendTo) && sameList(last.cannotHearFrom, cannotHearFrom);
      const peersCut = new Set([...cannotSendTo, ...cannotHearFrom]).size;
      if (same) list[list.length - 1] = { ...last, end };
      else list.push({ start, end, cannotSendTo, cannotHearFrom, peersCut });
      spans.set(id, list);
    }
  });
  return spans;
}

function addTo(map: Map<NodeId, Set<NodeId>>, key: NodeId, value: NodeId): void {
  const set = map.get(key) ?? new Set<NodeId>();
  set.add(value);
  map.set(key, set);
}

function sameList(a: readonly string[], b: readonly string[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

function jobTracks(declared: ReportInput['jobs'], events: readonly TimelineEvent[]): JobTrack[] {
  const jobs = new Map<string, JobTrack>();
  const job = (name: string, spec = ''): JobTrack => {
    let found = jobs.get(name);
    if (found === undefined) {
      found = { name, spec, slotsByT: new Map(), missedEvents: [], slots: [], missed: [] };
      jobs.set(name, found);
    }
    return found;
  };
  const slot = (j: JobTrack, slotT: number): Slot => {
    let found = j.slotsByT.get(slotT);
    if (found === undefined) {
      found = { slotT, tokens: new Set(), assignees: [], runs: [], notRun: [] };
      j.slotsByT.set(slotT, found);
    }
    return found;
  };
  for (const { name, spec } of declared) job(name, spec);
  for (const e of events) {
    if (e.kind === 'claim') {
      const s = slot(job(e.job), e.slotT);
      s.tokens.add(e.token);
      for (const a of e.assignees) if (!s.assignees.includes(a)) s.assignees.push(a);
    } else if (e.kind === 'run') {
      const s = slot(job(e.job), e.slotT);
      s.tokens.add(e.token);
      s.runs.push({ member: e.member, token: e.token, startT: e.startT, endT: e.endT, outcome: e.outcome });
    } else if (e.kind === 'outcome') {
      // Its token is not a claim's when the slot was recorded missed (a new one): not a move.
      slot(job(e.job), e.slotT).notRun.push({ t: e.t, member: e.member, token: e.token, outcome: e.outcome, reason: e.reason });
    } else if (e.kind === 'missed') {
      job(e.job).missedEvents.push({ t: e.t, throughT: e.throughT, count: e.count });
    }
  }
  for (const j of jobs.values()) {
    j.slots = [...j.slotsByT.values()].sort((a, b) => a.slotT - b.slotT);
    j.missed = missedSpans(j);
  }
  return [...jobs.values()];
}

/**
 * A `missed` event only says "through this instant". The dropped slots lie after the last
 * slot claimed before it (the job's high-water mark then), so the band starts there.
 */
function missedSpans(job: JobTrack): MissedSpan[] {
  const slotTimes = job.slots.map((s) => s.slotT);
  let previousThrough = Number.NEGATIVE_INFINITY;
  return [...job.missedEvents]
    .sort((a, b) => a.throughT - b.throughT)
    .map((m) => {
      const lastSlotBefore = slotTimes[lowerBound(slotTimes, m.throughT) - 1] ?? Number.NEGATIVE_INFINITY;
      const from = Math.max(lastSlotBefore, previousThrough);
      previousThrough = m.throughT;
      return { start: Number.isFinite(from) ? from : m.throughT, end: m.throughT, decidedT: m.t, count: m.count };
    });
}

/** Index of the first element >= value in a sorted array. */
function lowerBound(sorted: readonly number[], value: number): number {
  let lo = 0;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if ((sorted[mid] ?? 0) < value) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/**
 * A slot succeeded once any run of it succeeded (a retry or a reassignment may follow a
 * failure); otherwise it is what happened to it last: its latest run's end (failed, or aborted
 * or interrupted), or an outcome the log gave it without a run (skipped or replaced by its
 * overlap policy, interrupted before it started, missed). A slot with neither is `pending`
 * when it lies after everything the timeline recorded (it never had its chance), or else
 * `never`: claimed, and neither run nor given an outcome.
 */
function slotResult(slot: Slot, lastEventT: number): SlotResult {
  if (slot.runs.some((r) => r.outcome === 'succeeded')) return 'succeeded';
  let latest: { readonly t: number; readonly outcome: string } | null = null;
  for (const r of slot.runs) if (latest === null || r.endT >= latest.t) latest = { t: r.endT, outcome: r.outcome };
  for (const o of slot.notRun) {
    // A run's own outcome, also in the log, is that run's: its `run` event tells it.
    if (slot.runs.some((r) => r.member === o.member && r.token === o.token)) continue;
    if (latest === null || o.t >= latest.t) latest = o;
  }
  if (latest === null) return slot.slotT > lastEventT ? 'pending' : 'never';
  switch (latest.outcome) {
    case 'failed':
      return 'failed';
    case 'skipped':
    case 'replaced':
      return 'skipped';
    case 'missed':
      return 'missed';
    default:
      return 'aborted';
  }
}

/** Start of the first successful run minus the slot's instant, or null if none succeeded. */
function successLateness(slot: Slot): number | null {
  let first: number | null = null;
  for (const r of slot.runs) if (r.outcome === 'succeeded' && (first === null || r.startT < first)) first = r.startT;
  return first === null ? null : first - slot.slotT;
}

// ---------------------------------------------------------------------------------------------
// Lateness summaries

/** Histogram buckets of lateness; negative lateness means a member's clock ran ahead. */
const LATENESS_BUCKETS: ReadonlyArray<{ readonly label: string; readonly below: number; readonly cls: string }> = [
  { label: 'early', below: 0, cls: 'h-early' },
  { label: '0–10ms', below: 10, cls: 'h-0' },
  { label: '10–100ms', below: 100, cls: 'h-1' },
  { label: '0.1–1s', below: 1000, cls: 'h-2' },
  { label: '1–10s', below: 10_000, cls: 'h-3' },
  { label: '≥10s', below: Number.POSITIVE_INFINITY, cls: 'h-4' },
];

/** One job's row in the lateness table. */
export interface JobSummary {
  readonly name: string;
  readonly spec: string;
  /** Slots claimed or run, not counting `pending` ones (after the end of the timeline). */
  readonly slots: number;
  readonly runs: number;
  /** Slots with a successful run. */
  readonly succeeded: number;
  /** Slots whose runs failed, none succeeding. */
  readonly failed: number;
  /** Slots whose runs were all aborted or interrupted. */
  readonly aborted: number;
  /** Slots not run because their overlap policy skipped or replaced them (the log says why). */
  readonly skipped: number;
  /** Claimed slots the leader recorded as missed: nobody ran them before the reassignment horizon. */
  readonly expired: number;
  /** Slots claimed, never run, and given no outcome. */
  readonly noOutcome: number;
  readonly pending: number;
  /** Slots dropped by the catch-up policy (sum of `missed` counts). */
  readonly missed: number;
  /** Slots claimed under more than one token (reassigned after a lost assignee or a failure). */
  readonly reassigned: number;
  /** Lateness of the first successful run of each slot (ms), or null when none succeeded. */
  readonly lateness: { readonly p50: number; readonly p99: number; readonly max: number } | null;
  /** Successful slots per bucket: early, 0–10ms, 10–100ms, 0.1–1s, 1–10s, ≥10s. */
  readonly histogram: readonly number[];
}

/** The lateness table's numbers, one entry per job (declared jobs first, in order). */
export function summarizeJobs(input: ReportInput): JobSummary[] {
  const model = buildModel(input);
  return model.jobs.map((j) => summarizeJob(j, model.lastEventT));
}

function summarizeJob(job: JobTrack, lastEventT: number): JobSummary {
  const counts: Record<SlotResult, number> = { ...NO_RESULTS };
  const late: number[] = [];
  let runs = 0;
  let reassigned = 0;
  for (const slot of job.slots) {
    counts[slotResult(slot, lastEventT)]++;
    runs += slot.runs.length;
    if (slot.tokens.size > 1) reassigned++;
    const lateness = successLateness(slot);
    if (lateness !== null) late.push(lateness);
  }
  late.sort((a, b) => a - b);
  const histogram = LATENESS_BUCKETS.map(() => 0);
  for (const ms of late) {
    const bucket = LATENESS_BUCKETS.findIndex((b) => ms < b.below);
    histogram[bucket] = (histogram[bucket] ?? 0) + 1;
  }
  return {
    name: job.name,
    spec: job.spec,
    slots: job.slots.length - counts.pending,
    runs,
    succeeded: counts.succeeded,
    failed: counts.failed,
    aborted: counts.aborted,
    skipped: counts.skipped,
    expired: counts.missed,
    noOutcome: counts.never,
    pending: counts.pending,
    missed: job.missedEvents.reduce((sum, m) => sum + m.count, 0),
    reassigned,
    lateness: late.length === 0 ? null : { p50: percentile(late, 0.5), p99: percentile(late, 0.99), max: late[late.length - 1] ?? 0 },
    histogram,
  };
}

// ---------------------------------------------------------------------------------------------
// Formatting

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and for quoted attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** A duration for people: `850µs`, `4.5ms`, `120ms`, `1.23s`, `12.5s`, `2m 05s`, `1h 02m`. */
function fmtDuration(ms: number): string {
  const abs = Math.abs(ms);
  const sign = ms < 0 ? '−' : '';
  if (abs === 0) return '0ms';
  if (abs < 1) return `${sign}${Math.round(abs * 1000)}µs`;
  if (abs < 10) return `${sign}${trimZeros(abs.toFixed(1))}ms`;
  if (abs < 1000) return `${sign}${Math.round(abs)}ms`;
  if (abs < 10_000) return `${sign}${trimZeros((abs / 1000).toFixed(2))}s`;
  if (abs < 60_000) return `${sign}${trimZeros((abs / 1000).toFixed(1))}s`;
  const totalS = Math.round(abs / 1000);
  if (totalS < 3600) return `${sign}${Math.floor(totalS / 60)}m ${pad2(totalS % 60)}s`;
  const totalM = Math.round(totalS / 60);
  return `${sign}${Math.floor(totalM / 60)}h ${pad2(totalM % 60)}m`;
}

/** A lateness, signed so that early starts stand out. */
function fmtLateness(ms: number): string {
  return ms > 0 ? `+${fmtDuration(ms)}` : fmtDuration(ms);
}

/** An instant on the run's true time: `m:ss.mmm` (or `h:mm:ss.mmm`). */
function fmtInstant(t: number): string {
  const totalMs = Math.round(Math.max(0, t));
  const ms = totalMs % 1000;
  const s = Math.floor(totalMs / 1000) % 60;
  const m = Math.floor(totalMs / 60_000) % 60;
  const h = Math.floor(totalMs / 3_600_000);
  const tail = `${pad2(s)}.${String(ms).padStart(3, '0')}`;
  return h > 0 ? `${h}:${pad2(m)}:${tail}` : `${m}:${tail}`;
}

function fmtRange(span: Span): string {
  return `${fmtInstant(span.start)} → ${fmtInstant(span.end)} (${fmtDuration(span.end - span.start)})`;
}

/**
 * The largest (or smallest) of many numbers, or `floor` if there are none. Spreading a large
 * array into Math.max overflows the stack, and a timeline may hold 200,000 values.
 */
function maxOf(values: Iterable<number>, floor = Number.NEGATIVE_INFINITY): number {
  let max = floor;
  for (const v of values) if (v > max) max = v;
  return max;
}

function minOf(values: Iterable<number>, ceiling = Number.POSITIVE_INFINITY): number {
  let min = ceiling;
  for (const v of values) if (v < min) min = v;
  return min;
}

function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

function trimZeros(fixed: string): string {
  return fixed.includes('.') ? fixed.replace(/\.?0+$/, '') : fixed;
}

function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** Coordinates to a tenth of a pixel: enough for the eye, and it keeps the page small. */
function px(n: number): string {
  return String(Math.round(n * 10) / 10);
}

/** Shortens a label to fit the gutter; the full text stays in a tooltip. */
function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}

// ---------------------------------------------------------------------------------------------
// SVG helpers

/** Maps true simulated time to the plot's x coordinate. */
class TimeScale {
  constructor(readonly endT: number) {}

  x(t: number): number {
    const clamped = Math.min(Math.max(t, 0), this.endT);
    return PLOT_X0 + (clamped / this.endT) * PLOT_WIDTH_PX;
  }
}

function rect(x: number, y: number, w: number, h: number, cls: string, tip?: string): string {
  const tipAttr = tip === undefined ? '' : ` data-tip="${escapeHtml(tip)}"`;
  return `<rect x="${px(x)}" y="${px(y)}" width="${px(Math.max(w, 0))}" height="${px(h)}" class="${cls}"${tipAttr}/>`;
}

function text(x: number, y: number, content: string, cls: string, tip?: string): string {
  const tipAttr = tip === undefined ? '' : ` data-tip="${escapeHtml(tip)}"`;
  return `<text x="${px(x)}" y="${px(y)}" class="${cls}"${tipAttr}>${escapeHtml(content)}</text>`;
}

/**
 * Marks of one class gathered into a single `<path>`: far fewer bytes than one element per
 * mark, which matters when a job row holds hundreds of marks.
 */
class PathSet {
  readonly #byClass = new Map<string, string[]>();

  box(cls: string, x: number, y: number, w: number, h: number): void {
    this.#add(cls, `M${px(x)} ${px(y)}h${px(w)}v${px(h)}h${px(-w)}z`);
  }

  line(cls: string, x: number, y0: number, y1: number): void {
    this.#add(cls, `M${px(x)} ${px(y0)}V${px(y1)}`);
  }

  render(): string {
    return [...this.#byClass].map(([cls, parts]) => `<path class="${cls}" d="${parts.join('')}"/>`).join('');
  }

  #add(cls: string, d: string): void {
    const parts = this.#byClass.get(cls);
    if (parts === undefined) this.#byClass.set(cls, [d]);
    else parts.push(d);
  }
}

interface Placed<T> {
  readonly x0: number;
  readonly x1: number;
  readonly items: readonly T[];
}

/**
 * Places spans on the axis. Spans at least MIN_SPAN_PX wide are drawn alone; narrower ones
 * that touch are merged into one mark of at most MAX_MERGED_PX, so a row never holds more
 * marks than it has pixels (however many leader changes or partitions a chaotic run had).
 */
function placeSpans<T extends Span>(spans: readonly T[], scale: TimeScale): Array<Placed<T>> {
  const placed: Array<Placed<T>> = [];
  let group: { x0: number; x1: number; items: T[] } | null = null;
  for (const span of spans) {
    const x0 = scale.x(span.start);
    const x1 = Math.max(scale.x(span.end), x0);
    if (x1 - x0 >= MIN_SPAN_PX) {
      if (group !== null) placed.push(group);
      group = null;
      placed.push({ x0, x1, items: [span] });
    } else if (group !== null && x0 <= group.x1 + 1 && x1 <= group.x0 + MAX_MERGED_PX) {
      group.items.push(span);
      group.x1 = Math.max(group.x1, x1);
    } else {
      if (group !== null) placed.push(group);
      group = { x0, x1, items: [span] };
    }
  }
  if (group !== null) placed.push(group);
  return placed;
}

/** First start and last end of a merged group, for its tooltip. */
function extent(items: readonly Span[]): Span {
  return { start: items[0]?.start ?? 0, end: maxOf(items.map((s) => s.end), 0) };
}

// ---------------------------------------------------------------------------------------------
// The timeline: layout

const TOP_PAD = 6;
const MARKER_ROW_H = 24;
const AXIS_H = 22;
const SECTION_H = 30;
const MEMBER_LANE_H = 62;
const MEMBER_GAP = 8;
const ROLE_Y = 6;
const ROLE_H = 20;
const NET_Y = 29;
const NET_H = 6;
const CLOCK_Y = 38;
const CLOCK_H = 20;
const SLOT_ROW_H = 14;
const LATE_ROW_H = 24;
const JOB_GAP = 14;

function memberRowHeight(members: number): number {
  return Math.max(4, Math.min(9, Math.floor(45 / Math.max(members, 1))));
}

function jobLaneHeight(members: number): number {
  return 4 + SLOT_ROW_H + 5 + members * memberRowHeight(members) + 5 + LATE_ROW_H + 6;
}

function renderTimeline(model: Model): string {
  const scale = new TimeScale(model.endT);
  const drawnJobs = model.jobs.slice(0, MAX_JOB_LANES);
  const memberIds = model.members.map((m) => m.id);
  const markerY = TOP_PAD;
  const axisY = markerY + MARKER_ROW_H;
  const membersY = axisY + AXIS_H + SECTION_H;
  const membersH = model.members.length * (MEMBER_LANE_H + MEMBER_GAP);
  const jobsY = membersY + membersH + SECTION_H;
  const jobH = jobLaneHeight(memberIds.length);
  const jobsH = drawnJobs.length * (jobH + JOB_GAP);
  const bottomAxisY = jobsY + jobsH + 4;
  const height = bottomAxisY + AXIS_H + 8;
  const clockMax = maxOf(model.members.flatMap((m) => m.clock.map((c) => Math.abs(c.offsetMs))), 1);

  const parts: string[] = [];
  parts.push(renderDefs());
  parts.push(renderHealedTint(model, scale, axisY + AXIS_H, bottomAxisY));
  parts.push(renderGrid(scale, axisY + AXIS_H, bottomAxisY));
  parts.push(renderAxis(scale, axisY, 'top'));
  parts.push(renderSectionTitle('MEMBERS', 'leader periods · down · paused · cut off · clock offset', membersY - SECTION_H + 4));
  model.members.forEach((m, i) => parts.push(renderMemberLane(m, membersY + i * (MEMBER_LANE_H + MEMBER_GAP), scale, clockMax)));
  const jobNote = model.jobs.length > drawnJobs.length ? ` · first ${drawnJobs.length} of ${model.jobs.length} jobs drawn` : '';
  parts.push(renderSectionTitle('JOBS', `slot result · who ran it · lateness${jobNote}`, jobsY - SECTION_H + 4));
  const lane: LaneContext = { scale, members: memberIds, lastEventT: model.lastEventT, binPx: slotBinWidth(drawnJobs.length) };
  drawnJobs.forEach((j, i) => parts.push(renderJobLane(j, jobsY + i * (jobH + JOB_GAP), lane)));
  parts.push(renderAxis(scale, bottomAxisY, 'bottom'));
  parts.push(renderViolationMarkers(model, scale, markerY, bottomAxisY));
  parts.push(renderHealedLine(model, scale, markerY, bottomAxisY));
  return `<svg class="timeline" width="${SVG_WIDTH_PX}" height="${px(height)}" viewBox="0 0 ${SVG_WIDTH_PX} ${px(height)}" role="img" aria-label="Timeline of members and jobs">${parts.join('')}</svg>`;
}

/** Hatch patterns for down (crashed) periods and pauses; referenced by local id only. */
function renderDefs(): string {
  return (
    '<defs>' +
    '<pattern id="hatch-down" width="6" height="6" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="6" height="6" fill="#e5e7eb"/><rect width="2.2" height="6" fill="#9ca3af"/></pattern>' +
    '<pattern id="hatch-pause" width="4" height="4" patternUnits="userSpaceOnUse" patternTransform="rotate(-45)"><rect width="4" height="4" fill="#1e293b" fill-opacity="0.35"/><rect width="1.6" height="4" fill="#0f172a"/></pattern>' +
    '<pattern id="hatch-missed" width="5" height="5" patternUnits="userSpaceOnUse" patternTransform="rotate(45)"><rect width="5" height="5" fill="#ddd6fe"/><rect width="2.5" height="5" fill="#7c3aed"/></pattern>' +
    '</defs>'
  );
}

/** After the faults healed the cluster must converge: a faint green tint marks that phase. */
function renderHealedTint(model: Model, scale: TimeScale, y0: number, y1: number): string {
  const t = model.input.healedAtT;
  if (!(t >= 0 && t < model.endT)) return '';
  const x = scale.x(t);
  return rect(x, y0, PLOT_X1 - x, y1 - y0, 'healed-tint');
}

function renderHealedLine(model: Model, scale: TimeScale, y0: number, y1: number): string {
  const t = model.input.healedAtT;
  if (!(t >= 0 && t <= model.endT)) return '';
  const x = scale.x(t);
  // Near the right edge the label goes to the left of the line, so that it is not cut off.
  const labelLeft = x > PLOT_X1 - 90;
  const label = 'faults healed';
  const tip = `Faults healed at ${fmtInstant(t)}: network whole, crashed members restarted. From here the cluster must converge.`;
  return (
    `<line x1="${px(x)}" x2="${px(x)}" y1="${px(y0 + 14)}" y2="${px(y1)}" class="healed-line"/>` +
    text(labelLeft ? x - 6 : x + 6, y0 + 12, label, `healed-label${labelLeft ? ' end' : ''}`, tip)
  );
}

function ticksFor(endT: number): { step: number; ticks: number[] } {
  const steps = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10_000, 15_000, 30_000, 60_000, 120_000, 300_000, 600_000, 900_000, 1_800_000, 3_600_000, 7_200_000, 21_600_000, 43_200_000, 86_400_000];
  const step = steps.find((s) => endT / s <= 12) ?? Math.ceil(endT / 12);
  const ticks: number[] = [];
  for (let t = 0; t <= endT + 1e-9; t += step) ticks.push(t);
  return { step, ticks };
}

/** Tick labels in the largest unit that reads well: `500ms`, `1.5s`, `30s`, `1m30s`, `10m`. */
function fmtTick(t: number, step: number): string {
  if (t === 0) return '0';
  if (step < 1000) return t < 1000 ? `${t}ms` : `${trimZeros((t / 1000).toFixed(3))}s`;
  if (t < 60_000) return `${t / 1000}s`;
  if (t < 3_600_000) {
    const m = Math.floor(t / 60_000);
    const s = Math.round((t % 60_000) / 1000);
    return s === 0 ? `${m}m` : `${m}m${pad2(s)}s`;
  }
  const h = Math.floor(t / 3_600_000);
  const m = Math.round((t % 3_600_000) / 60_000);
  return m === 0 ? `${h}h` : `${h}h${pad2(m)}m`;
}

function renderAxis(scale: TimeScale, y: number, side: 'top' | 'bottom'): string {
  const { step, ticks } = ticksFor(scale.endT);
  const lineY = side === 'top' ? y + AXIS_H : y;
  const labelY = side === 'top' ? y + AXIS_H - 7 : y + 15;
  const parts = [`<line x1="${PLOT_X0}" x2="${PLOT_X1}" y1="${px(lineY)}" y2="${px(lineY)}" class="axis-line"/>`];
  for (const t of ticks) {
    const x = scale.x(t);
    const tickY1 = side === 'top' ? lineY - 4 : lineY + 4;
    parts.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${px(lineY)}" y2="${px(tickY1)}" class="axis-line"/>`);
    parts.push(text(x, labelY, fmtTick(t, step), 'axis-label'));
  }
  parts.push(text(PLOT_X0 - 10, labelY, 'simulated time', 'axis-title'));
  return parts.join('');
}

function renderGrid(scale: TimeScale, y0: number, y1: number): string {
  const paths = new PathSet();
  for (const t of ticksFor(scale.endT).ticks) paths.line('grid', scale.x(t), y0, y1);
  return paths.render();
}

function renderSectionTitle(title: string, subtitle: string, y: number): string {
  const heading = `<text x="16" y="${px(y + 17)}" class="section-title">${escapeHtml(title)}<tspan dx="12" class="section-sub">${escapeHtml(subtitle)}</tspan></text>`;
  return `${heading}<line x1="16" x2="${PLOT_X1}" y1="${px(y + 24)}" y2="${px(y + 24)}" class="section-rule"/>`;
}

/** Red markers at each violation; those closer than a few pixels share one marker and tooltip. */
function renderViolationMarkers(model: Model, scale: TimeScale, y: number, y1: number): string {
  if (model.violations.length === 0) return '';
  const points = model.violations.map((v) => ({ start: v.t, end: v.t, message: v.message }));
  const parts: string[] = [];
  for (const group of placeSpans(points, scale)) {
    const x = (group.x0 + group.x1) / 2;
    const shown = group.items.slice(0, 6).map((v) => `${fmtInstant(v.start)}  ${v.message}`);
    const more = group.items.length > shown.length ? [`… and ${group.items.length - shown.length} more`] : [];
    const tip = [plural(group.items.length, 'violation'), ...shown, ...more].join('\n');
    parts.push(`<line x1="${px(x)}" x2="${px(x)}" y1="${px(y + 16)}" y2="${px(y1)}" class="violation-line"/>`);
    parts.push(`<path class="violation-marker" d="M${px(x - 6)} ${px(y + 4)}h12l-6 11z" data-tip="${escapeHtml(tip)}"/>`);
    if (group.items.length > 1) parts.push(text(x + 8, y + 13, `×${group.items.length}`, 'violation-count'));
  }
  return parts.join('');
}

// ---------------------------------------------------------------------------------------------
// The timeline: member lanes

function renderMemberLane(m: MemberTrack, y: number, scale: TimeScale, clockMax: number): string {
  const parts: string[] = [];
  parts.push(rect(PLOT_X0, y + ROLE_Y, PLOT_WIDTH_PX, ROLE_H, 'role-bg'));
  parts.push(rect(PLOT_X0, y + NET_Y, PLOT_WIDTH_PX, NET_H, 'net-bg'));
  parts.push(renderCutOff(m, y + NET_Y, scale));
  parts.push(renderLeadership(m, y + ROLE_Y, scale));
  parts.push(renderPauses(m, y + ROLE_Y, scale));
  parts.push(renderClock(m, y + CLOCK_Y, scale, clockMax));
  parts.push(renderDown(m, y + 2, scale));
  parts.push(renderMemberGutter(m, y, clockMax));
  return `<g class="member">${parts.join('')}</g>`;
}

function renderMemberGutter(m: MemberTrack, y: number, clockMax: number): string {
  const led = m.leader.reduce((sum, s) => sum + (s.end - s.start), 0);
  const facts = [led > 0 ? `led ${fmtDuration(led)}` : 'never led', m.down.length > 0 ? plural(m.down.length, 'crash', 'crashes') : ''].filter((s) => s !== '');
  const more = [m.pauses.length > 0 ? plural(m.pauses.length, 'pause') : '', m.cutOff.length > 0 ? `cut off ${m.cutOff.length}×` : ''].filter((s) => s !== '');
  return (
    text(16, y + ROLE_Y + 14, truncate(m.id, 18), 'lane-name', m.id) +
    text(16, y + ROLE_Y + 29, facts.join(' · '), 'lane-fact') +
    text(16, y + ROLE_Y + 42, more.join(' · '), 'lane-fact') +
    text(PLOT_X0 - 8, y + CLOCK_Y + 7, `+${fmtDuration(clockMax)}`, 'row-label end') +
    text(PLOT_X0 - 8, y + CLOCK_Y + CLOCK_H, `−${fmtDuration(clockMax)}`, 'row-label end')
  );
}

function renderLeadership(m: MemberTrack, y: number, scale: TimeScale): string {
  const parts: string[] = [];
  for (const p of placeSpans(m.leader, scale)) {
    const w = Math.max(p.x1 - p.x0, 1);
    const first = p.items[0];
    if (p.items.length === 1 && first !== undefined) {
      parts.push(`<rect x="${px(p.x0)}" y="${px(y)}" width="${px(w)}" height="${ROLE_H}" rx="3" class="leader" data-tip="${escapeHtml(`${m.id} leader, term ${first.term}\n${fmtRange(first)}`)}"/>`);
      const label = `T${first.term}`;
      if (w >= label.length * 7 + 6) parts.push(text(p.x0 + w / 2, y + 14, label, 'leader-label'));
    } else {
      const terms = p.items.map((s) => s.term);
      const tip = `${m.id}: ${p.items.length} short leader periods, terms ${minOf(terms)}–${maxOf(terms)}\n${fmtRange(extent(p.items))}`;
      parts.push(rect(p.x0, y, w, ROLE_H, 'leader merged', tip));
    }
  }
  return parts.join('');
}

function renderPauses(m: MemberTrack, y: number, scale: TimeScale): string {
  return placeSpans(m.pauses, scale)
    .map((p) => {
      const tip = p.items.length === 1 ? `${m.id} paused (stop-the-world)\n${fmtRange(extent(p.items))}` : `${m.id}: ${p.items.length} pauses\n${fmtRange(extent(p.items))}`;
      return rect(p.x0, y, Math.max(p.x1 - p.x0, 1.5), ROLE_H, 'pause', tip);
    })
    .join('');
}

function renderDown(m: MemberTrack, y: number, scale: TimeScale): string {
  const h = MEMBER_LANE_H - 4;
  return placeSpans(m.down, scale)
    .map((p) => {
      const w = Math.max(p.x1 - p.x0, 1.5);
      const tip = p.items.length === 1 ? `${m.id} down (crashed, not yet restarted)\n${fmtRange(extent(p.items))}` : `${m.id}: ${p.items.length} short crashes\n${fmtRange(extent(p.items))}`;
      const label = w >= 44 ? text(p.x0 + w / 2, y + ROLE_Y + 12, 'down', 'down-label') : '';
      return rect(p.x0, y, w, h, 'down', tip) + rect(p.x0, y, 1.5, h, 'crash-edge') + label;
    })
    .join('');
}

function renderCutOff(m: MemberTrack, y: number, scale: TimeScale): string {
  return placeSpans(m.cutOff, scale)
    .map((p) => {
      const worst = p.items.reduce((max, s) => Math.max(max, s.peersCut), 0);
      const first = p.items[0];
      const tip = p.items.length === 1 && first !== undefined ? cutOffTip(m.id, first) : `${m.id}: ${p.items.length} partition changes, cut off from up to ${worst} peers\n${fmtRange(extent(p.items))}`;
      // Fully isolated reads darker than a single blocked link.
      const level = worst >= 3 ? 3 : worst;
      return rect(p.x0, y, Math.max(p.x1 - p.x0, 1), NET_H, `cut cut-${level}`, tip);
    })
    .join('');
}

function cutOffTip(id: NodeId, s: CutOffSpan): string {
  const lines = [`${id} cut off from ${plural(s.peersCut, 'peer')}`];
  if (s.cannotSendTo.length > 0) lines.push(`blocked ${id} → ${s.cannotSendTo.join(', ')}`);
  if (s.cannotHearFrom.length > 0) lines.push(`blocked ${s.cannotHearFrom.join(', ')} → ${id}`);
  lines.push(fmtRange(s));
  return lines.join('\n');
}

/** The clock offset as a step chart around zero, with the value of each step in a tooltip. */
function renderClock(m: MemberTrack, y: number, scale: TimeScale, clockMax: number): string {
  const zeroY = y + CLOCK_H / 2;
  const yOf = (offset: number): number => zeroY - (offset / clockMax) * (CLOCK_H / 2 - 1);
  const parts = [`<line x1="${PLOT_X0}" x2="${PLOT_X1}" y1="${px(zeroY)}" y2="${px(zeroY)}" class="clock-zero"/>`];
  if (m.clock.length === 0) return parts.join('');
  const steps = clockSpans(m, scale.endT);
  const line = stepPath(
    steps.map((s) => ({ x: scale.x(s.start), y: yOf(s.offsetMs) })),
    PLOT_X1,
  );
  // One closed path, filled and stroked: its closing edges run along the zero line, so the
  // stroke reads as the line chart, and the page carries the points once.
  parts.push(`<path class="clock" d="${line}V${px(zeroY)}H${PLOT_X0}Z"/>`);
  for (const p of placeSpans(steps, scale)) {
    const first = p.items[0];
    const tip =
      p.items.length === 1 && first !== undefined
        ? `${m.id} clock ${first.offsetMs === 0 ? 'on true time' : `${fmtLateness(first.offsetMs)} ${first.offsetMs > 0 ? 'ahead' : 'behind'}`}${first.note === '' ? '' : ` (${first.note})`}\n${fmtRange(first)}`
        : clockGroupTip(m.id, p.items);
    parts.push(rect(p.x0, y, Math.max(p.x1 - p.x0, 1), CLOCK_H, 'hit', tip));
  }
  return parts.join('');
}

function clockGroupTip(id: NodeId, items: readonly ClockSpan[]): string {
  const offsets = items.map((s) => s.offsetMs);
  return `${id}: ${items.length} clock changes, offset ${fmtLateness(minOf(offsets))} … ${fmtLateness(maxOf(offsets))}\n${fmtRange(extent(items))}`;
}

/** The clock's constant stretches: true time until the first change, then each reading until the next. */
function clockSpans(m: MemberTrack, endT: number): ClockSpan[] {
  const spans: ClockSpan[] = [];
  const firstT = m.clock[0]?.t ?? 0;
  if (firstT > 0) spans.push({ start: 0, end: firstT, offsetMs: 0, note: '' });
  m.clock.forEach((c, i) => spans.push({ start: c.t, end: m.clock[i + 1]?.t ?? endT, offsetMs: c.offsetMs, note: c.note }));
  return spans;
}

/**
 * A step line through points sorted by x. Points sharing a pixel column collapse to one
 * vertical stroke over their range, so the path has at most a few commands per column.
 */
function stepPath(points: ReadonlyArray<{ x: number; y: number }>, endX: number): string {
  const columns: Array<{ x: number; min: number; max: number; last: number }> = [];
  for (const p of points) {
    const top = columns.at(-1);
    if (top !== undefined && Math.round(top.x) === Math.round(p.x)) {
      top.min = Math.min(top.min, p.y);
      top.max = Math.max(top.max, p.y);
      top.last = p.y;
    } else {
      columns.push({ x: p.x, min: p.y, max: p.y, last: p.y });
    }
  }
  const first = columns[0];
  if (first === undefined) return '';
  let d = `M${px(first.x)} ${px(first.last)}`;
  let y = first.last;
  for (const c of columns.slice(1)) {
    d += `H${px(c.x)}`;
    if (c.min !== c.max) d += `V${px(c.min)}V${px(c.max)}`;
    if (c.last !== y || c.min !== c.max) d += `V${px(c.last)}`;
    y = c.last;
  }
  return `${d}H${px(endX)}`;
}

// ---------------------------------------------------------------------------------------------
// The timeline: job lanes

const RESULT_RANK: Readonly<Record<SlotResult, number>> = { pending: 0, succeeded: 1, skipped: 2, aborted: 3, failed: 4, missed: 5, never: 6 };
const NO_RESULTS: Readonly<Record<SlotResult, number>> = { succeeded: 0, failed: 0, aborted: 0, skipped: 0, missed: 0, never: 0, pending: 0 };
const OUTCOME_RANK: Readonly<Record<RunOutcome, number>> = { succeeded: 0, interrupted: 1, replaced: 1, aborted: 2, failed: 3 };
const RESULT_LABEL: Readonly<Record<SlotResult, string>> = {
  succeeded: 'succeeded',
  failed: 'failed',
  aborted: 'aborted / interrupted',
  skipped: 'skipped (overlap)',
  missed: 'missed: nobody ran it',
  never: 'no outcome',
  pending: 'after the end of the run',
};

/** One pixel column of a job lane: everything about the slots that fall in it. */
interface SlotBin {
  readonly index: number;
  readonly slots: Slot[];
  readonly results: Record<SlotResult, number>;
  worst: SlotResult;
  /** Each member's worst run outcome in this column. */
  readonly byMember: Map<NodeId, RunOutcome>;
  reassigned: number;
  latest: { readonly ms: number; readonly run: Run } | null;
  earliest: { readonly ms: number; readonly run: Run } | null;
}

/** Width of a slot column when `lanes` job lanes share MAX_SLOT_COLUMNS. */
function slotBinWidth(lanes: number): number {
  return Math.max(SLOT_BIN_PX, Math.ceil((lanes * PLOT_WIDTH_PX) / MAX_SLOT_COLUMNS));
}

/** Bins a job's slots into columns `binPx` wide; slots beyond the axis are not drawn. */
function binSlots(job: JobTrack, scale: TimeScale, lastEventT: number, binPx: number): SlotBin[] {
  const bins = new Map<number, SlotBin>();
  const columns = Math.ceil(PLOT_WIDTH_PX / binPx);
  for (const slot of job.slots) {
    if (slot.slotT < 0 || slot.slotT > scale.endT) continue;
    const index = Math.min(Math.floor((scale.x(slot.slotT) - PLOT_X0) / binPx), columns - 1);
    let bin = bins.get(index);
    if (bin === undefined) {
      bin = { index, slots: [], results: { ...NO_RESULTS }, worst: 'pending', byMember: new Map(), reassigned: 0, latest: null, earliest: null };
      bins.set(index, bin);
    }
    addToBin(bin, slot, slotResult(slot, lastEventT));
  }
  return [...bins.values()];
}

function addToBin(bin: SlotBin, slot: Slot, result: SlotResult): void {
  // Only a few slots per column are kept for the tooltip; the counts cover them all.
  if (bin.slots.length < 3) bin.slots.push(slot);
  bin.results[result]++;
  if (RESULT_RANK[result] > RESULT_RANK[bin.worst]) bin.worst = result;
  if (slot.tokens.size > 1) bin.reassigned++;
  for (const run of slot.runs) {
    const prior = bin.byMember.get(run.member);
    if (prior === undefined || OUTCOME_RANK[run.outcome] > OUTCOME_RANK[prior]) bin.byMember.set(run.member, run.outcome);
    const ms = run.startT - slot.slotT;
    if (bin.latest === null || ms > bin.latest.ms) bin.latest = { ms, run };
    if (bin.earliest === null || ms < bin.earliest.ms) bin.earliest = { ms, run };
  }
}

function slotCount(bin: SlotBin): number {
  return Object.values(bin.results).reduce((a, b) => a + b, 0);
}

/** Marks as wide as the job's usual slot spacing allows, so sparse jobs read as ticks, not hairlines. */
function markWidth(job: JobTrack, scale: TimeScale): number {
  const gaps: number[] = [];
  for (let i = 1; i < job.slots.length; i++) gaps.push((job.slots[i]?.slotT ?? 0) - (job.slots[i - 1]?.slotT ?? 0));
  gaps.sort((a, b) => a - b);
  const median = gaps[Math.floor(gaps.length / 2)] ?? scale.endT;
  const spacingPx = (median / scale.endT) * PLOT_WIDTH_PX;
  return Math.max(1.5, Math.min(8, spacingPx * 0.7));
}

interface LaneContext {
  readonly scale: TimeScale;
  readonly members: readonly NodeId[];
  readonly lastEventT: number;
  /** Width of a slot column (px). */
  readonly binPx: number;
}

function renderJobLane(job: JobTrack, y: number, lane: LaneContext): string {
  const { scale, members, lastEventT, binPx } = lane;
  const rowH = memberRowHeight(members.length);
  const slotY = y + 4;
  const membersY = slotY + SLOT_ROW_H + 5;
  const lateY = membersY + members.length * rowH + 5;
  const bins = binSlots(job, scale, lastEventT, binPx);
  const w = Math.max(markWidth(job, scale), binPx >= 3 ? binPx - 1 : 0);
  const latenessMax = maxOf(bins.map((b) => b.latest?.ms ?? 0), 1000);
  const earlyMax = maxOf(bins.map((b) => -(b.earliest?.ms ?? 0)), 1);
  const paths = new PathSet();
  const hits: string[] = [];
  for (const bin of bins) {
    const x = binX(bin, scale, binPx);
    paths.box(`slot r-${bin.worst}`, x - w / 2, slotY, w, SLOT_ROW_H);
    drawRuns(paths, bin, x, w, membersY, rowH, members);
    drawLateness(paths, bin, x, w, lateY, latenessMax, earlyMax);
    const hitW = Math.max(w, binPx);
    hits.push(rect(x - hitW / 2, slotY, hitW, lateY + LATE_ROW_H - slotY, 'hit', binTip(job, bin)));
  }
  const background =
    rect(PLOT_X0, slotY, PLOT_WIDTH_PX, SLOT_ROW_H, 'slot-bg') +
    members.map((_, i) => rect(PLOT_X0, membersY + i * rowH, PLOT_WIDTH_PX, rowH - 1, i % 2 === 0 ? 'run-bg' : 'run-bg alt')).join('') +
    rect(PLOT_X0, lateY, PLOT_WIDTH_PX, LATE_ROW_H, 'late-bg') +
    `<line x1="${PLOT_X0}" x2="${PLOT_X1}" y1="${px(lateBaseline(lateY))}" y2="${px(lateBaseline(lateY))}" class="late-zero"/>`;
  return (
    `<g class="job">${background}${renderMissed(job, slotY, scale)}${paths.render()}${hits.join('')}` +
    renderJobGutter(job, y, members, membersY, rowH, lateY, latenessMax, lastEventT) +
    '</g>'
  );
}

function binX(bin: SlotBin, scale: TimeScale, binPx: number): number {
  const only = bin.slots[0];
  return slotCount(bin) === 1 && only !== undefined ? scale.x(only.slotT) : PLOT_X0 + (bin.index + 0.5) * binPx;
}

/** One mark per member that ran a slot of this column; a stroke joins the members of a reassigned slot. */
function drawRuns(paths: PathSet, bin: SlotBin, x: number, w: number, membersY: number, rowH: number, members: readonly NodeId[]): void {
  const rows: number[] = [];
  for (const [member, outcome] of bin.byMember) {
    const row = members.indexOf(member);
    if (row < 0) continue;
    rows.push(row);
    paths.box(`run o-${outcome}`, x - w / 2, membersY + row * rowH + 1, w, rowH - 3);
  }
  if (bin.reassigned > 0 && rows.length > 1) {
    paths.line('reassign', x, membersY + minOf(rows) * rowH + rowH / 2, membersY + maxOf(rows) * rowH + rowH / 2);
  }
}

function lateBaseline(lateY: number): number {
  return lateY + LATE_ROW_H - 7;
}

/**
 * Lateness on a log scale (1ms to the job's worst) upwards, early starts downwards: a few
 * seconds late must stand out next to the usual few milliseconds.
 */
function drawLateness(paths: PathSet, bin: SlotBin, x: number, w: number, lateY: number, latenessMax: number, earlyMax: number): void {
  const base = lateBaseline(lateY);
  const upH = base - lateY - 1;
  const latest = bin.latest?.ms ?? 0;
  if (latest > 0) {
    const h = Math.max(1, (Math.log10(1 + latest) / Math.log10(1 + latenessMax)) * upH);
    const severity = latest >= 1000 ? 'late-3' : latest >= 100 ? 'late-2' : 'late-1';
    paths.box(`late ${severity}`, x - w / 2, base - h, w, h);
  }
  const earliest = bin.earliest?.ms ?? 0;
  if (earliest < 0) {
    const h = Math.max(1.5, (Math.log10(1 - earliest) / Math.log10(1 + earlyMax)) * 6);
    paths.box('late early', x - w / 2, base, w, h);
  }
}

function binTip(job: JobTrack, bin: SlotBin): string {
  const count = slotCount(bin);
  const only = bin.slots[0];
  if (count === 1 && only !== undefined) return singleSlotTip(job, only, bin.worst);
  const first = bin.slots[0]?.slotT ?? 0;
  const results = (Object.keys(bin.results) as SlotResult[]).filter((r) => bin.results[r] > 0).map((r) => `${bin.results[r]} ${RESULT_LABEL[r]}`);
  const lines = [`${job.name} · ${count} slots from ${fmtInstant(first)}`, results.join(', ')];
  if (bin.reassigned > 0) lines.push(`${bin.reassigned} reassigned`);
  if (bin.latest !== null) lines.push(`latest start ${fmtLateness(bin.latest.ms)} on ${bin.latest.run.member}`);
  if (bin.earliest !== null && bin.earliest.ms < 0) lines.push(`earliest start ${fmtLateness(bin.earliest.ms)} on ${bin.earliest.run.member}`);
  if (bin.byMember.size > 0) lines.push(`ran on ${[...bin.byMember.keys()].sort().join(', ')}`);
  return lines.join('\n');
}

function singleSlotTip(job: JobTrack, slot: Slot, result: SlotResult): string {
  const lines = [`${job.name} · slot ${fmtInstant(slot.slotT)}`, `${RESULT_LABEL[result]}${slot.tokens.size > 1 ? ` · reassigned (${slot.tokens.size} claims)` : ''}`];
  const runs = [...slot.runs].sort((a, b) => a.startT - b.startT);
  for (const r of runs) lines.push(`${r.member}  started ${fmtLateness(r.startT - slot.slotT)}, ran ${fmtDuration(r.endT - r.startT)}, ${r.outcome} (token ${r.token})`);
  for (const o of slot.notRun) {
    if (runs.some((r) => r.member === o.member && r.token === o.token)) continue;
    lines.push(`${o.member}  ${o.outcome} (token ${o.token})${o.reason === undefined ? '' : `: ${o.reason}`}`);
  }
  if (runs.length === 0 && slot.notRun.length === 0 && slot.assignees.length > 0) lines.push(`claimed for ${slot.assignees.join(', ')}; no run or outcome recorded`);
  return lines.join('\n');
}

/** Slots the catch-up policy dropped, as a hatched band with their count. */
function renderMissed(job: JobTrack, y: number, scale: TimeScale): string {
  return placeSpans(job.missed, scale)
    .map((p) => {
      const count = p.items.reduce((sum, m) => sum + m.count, 0);
      const w = Math.max(p.x1 - p.x0, 3);
      const x = p.x1 - w;
      const decided = p.items.map((m) => m.decidedT);
      const tip = `${job.name}: ${plural(count, 'slot')} missed (dropped by the catch-up policy)\nthrough ${fmtInstant(p.items.at(-1)?.end ?? 0)}, decided at ${fmtInstant(minOf(decided))}${p.items.length > 1 ? ` … ${fmtInstant(maxOf(decided))}` : ''}`;
      const label = w >= 22 ? text(x + w / 2, y + SLOT_ROW_H - 3, `${count}`, 'missed-label') : '';
      return rect(x, y - 2, w, SLOT_ROW_H + 4, 'missed', tip) + label;
    })
    .join('');
}

/** About what fits in the gutter left of the row labels at the facts' font size. */
const GUTTER_FACT_CHARS = 24;

/** Packs short facts into lines of at most `max` characters, joined with a middle dot. */
function wrapFacts(facts: readonly string[], max: number): string[] {
  const lines: string[] = [];
  for (const fact of facts) {
    const last = lines.at(-1);
    if (last !== undefined && last.length + 3 + fact.length <= max) lines[lines.length - 1] = `${last} · ${fact}`;
    else lines.push(fact);
  }
  return lines;
}

function renderJobGutter(job: JobTrack, y: number, members: readonly NodeId[], membersY: number, rowH: number, lateY: number, latenessMax: number, lastEventT: number): string {
  const summary = summarizeJob(job, lastEventT);
  const okShare = summary.slots === 0 ? '' : ` · ${trimZeros(((100 * summary.succeeded) / summary.slots).toFixed(1))}% ok`;
  const issues = [
    summary.failed > 0 ? `${summary.failed} failed` : '',
    summary.skipped > 0 ? `${summary.skipped} skipped` : '',
    summary.expired > 0 ? `${summary.expired} expired` : '',
    summary.noOutcome > 0 ? `${summary.noOutcome} no outcome` : '',
    summary.missed > 0 ? `${summary.missed} missed` : '',
  ].filter((s) => s !== '');
  const parts = [
    text(16, y + 16, truncate(job.name, 20), 'lane-name', job.name),
    text(16, y + 30, truncate(job.spec, 22), 'lane-spec', job.spec),
    text(16, y + 44, `${plural(summary.slots, 'slot')}${okShare}`, 'lane-fact'),
    ...wrapFacts(issues, GUTTER_FACT_CHARS).map((line, i) => text(16, y + 57 + i * 13, line, 'lane-fact bad')),
    text(PLOT_X0 - 8, y + 4 + SLOT_ROW_H - 3, 'slots', 'row-label end'),
    text(PLOT_X0 - 8, lateY + 9, `late ≤${fmtDuration(latenessMax)}`, 'row-label end'),
  ];
  // Member names beside their rows only when the rows are tall enough to read them.
  if (rowH >= 7) members.forEach((m, i) => parts.push(text(PLOT_X0 - 8, membersY + i * rowH + rowH - 1.5, truncate(m, 8), 'row-label small end')));
  return parts.join('');
}

// ---------------------------------------------------------------------------------------------
// The page

function renderHeader(model: Model): string {
  const { input } = model;
  const count = input.violations.length;
  const verdict = count === 0 ? '<span class="verdict ok">OK</span>' : `<a class="verdict bad" href="#violations">${escapeHtml(plural(count, 'violation'))}</a>`;
  const leaderChanges = model.members.reduce((sum, m) => sum + m.leader.length, 0);
  const crashes = model.members.reduce((sum, m) => sum + m.down.length, 0);
  const truncated = input.timeline.length >= MAX_TIMELINE_EVENTS ? ' <span class="warn" data-tip="The simulator keeps at most this many events; later ones were counted, not kept.">(bound reached)</span>' : '';
  const facts: Array<[string, string]> = [
    ['seed', escapeHtml(String(input.seed))],
    ['members', `${input.members.length} <span class="muted">${escapeHtml(truncate(input.members.join(' '), 60))}</span>`],
    ['simulated', escapeHtml(fmtDuration(input.durationMs)) + (fmtDuration(model.endT) !== fmtDuration(input.durationMs) ? ` <span class="muted">(timeline to ${escapeHtml(fmtDuration(model.endT))})</span>` : '')],
    ['faults healed at', escapeHtml(fmtInstant(input.healedAtT))],
    ['jobs', String(model.jobs.length)],
    ['leader periods', leaderChanges.toLocaleString('en-US')],
    ['crashes', crashes.toLocaleString('en-US')],
    ['events', `${input.timeline.length.toLocaleString('en-US')}${truncated}`],
  ];
  return `<header class="card head">
<div class="title-row"><div><div class="eyebrow">cronraft · simulation report</div><h1>Seed ${escapeHtml(String(input.seed))}</h1></div>${verdict}</div>
<dl class="facts">${facts.map(([k, v]) => `<div><dt>${escapeHtml(k)}</dt><dd>${v}</dd></div>`).join('')}</dl>
<div class="repro"><div class="repro-label">Reproduce</div><pre><code id="repro">${escapeHtml(input.reproduce)}</code></pre><button type="button" data-copy="repro">Copy</button></div>
</header>`;
}

function renderLegend(): string {
  const item = (swatch: string, label: string): string => `<span class="lg"><i class="sw ${swatch}"></i>${escapeHtml(label)}</span>`;
  return `<div class="legend">
<span class="lg-group">Members</span>${item('sw-leader', 'leader (term)')}${item('sw-down', 'down (crashed)')}${item('sw-pause', 'paused')}${item('sw-cut', 'cut off from peers')}${item('sw-clock', 'clock offset')}
<span class="lg-group">Slots</span>${item('sw-ok', 'succeeded')}${item('sw-failed', 'failed')}${item('sw-aborted', 'aborted / interrupted')}${item('sw-skipped', 'skipped (overlap)')}${item('sw-expired', 'missed: nobody ran it')}${item('sw-never', 'no outcome')}${item('sw-missed', 'missed (catch-up)')}${item('sw-reassign', 'reassigned')}${item('sw-late', 'late (log scale)')}${item('sw-early', 'started early')}
<span class="lg-group">Run</span>${item('sw-violation', 'violation')}${item('sw-healed', 'faults healed')}
</div>`;
}

function renderTable(summaries: readonly JobSummary[]): string {
  if (summaries.length === 0) return '<p class="muted">No jobs.</p>';
  const pending = summaries.reduce((sum, s) => sum + s.pending, 0);
  const head = ['job', 'spec', 'slots', 'runs', 'succeeded', 'failed', 'aborted', 'skipped', 'expired', 'no outcome', 'missed', 'reassigned', 'p50', 'p99', 'max', 'lateness']
    .map((h, i) => `<th${i >= 2 && i < 15 ? ' class="num"' : ''}>${h}</th>`)
    .join('');
  const rows = summaries.map(renderTableRow).join('\n');
  const note = pending > 0 ? `<p class="note">${plural(pending, 'slot')} claimed for after the end of the timeline ${pending === 1 ? 'is' : 'are'} not counted.</p>` : '';
  return `<table class="jobs"><thead><tr>${head}</tr></thead><tbody>\n${rows}\n</tbody></table>
<p class="note">Lateness: start of the first successful run minus the slot's instant (nearest-rank percentiles); negative means a member's clock ran ahead.</p>${note}`;
}

function renderTableRow(s: JobSummary): string {
  const cell = (col: string, value: string, cls = 'num'): string => `<td class="${cls}" data-col="${col}">${value}</td>`;
  const n = (col: string, value: number, badWhenPositive = false): string => cell(col, value.toLocaleString('en-US'), `num${badWhenPositive && value > 0 ? ' bad' : value === 0 ? ' zero' : ''}`);
  const late = (col: 'p50' | 'p99' | 'max'): string => cell(col, s.lateness === null ? '–' : escapeHtml(fmtLateness(s.lateness[col])), `num${s.lateness !== null && s.lateness[col] >= 1000 ? ' bad' : ''}`);
  return (
    `<tr data-job="${escapeHtml(s.name)}"><td class="job-name">${escapeHtml(s.name)}</td><td class="spec"><code>${escapeHtml(s.spec)}</code></td>` +
    n('slots', s.slots) +
    n('runs', s.runs) +
    n('succeeded', s.succeeded) +
    n('failed', s.failed, true) +
    n('aborted', s.aborted, true) +
    n('skipped', s.skipped) +
    n('expired', s.expired, true) +
    n('never', s.noOutcome, true) +
    n('missed', s.missed, true) +
    n('reassigned', s.reassigned) +
    late('p50') +
    late('p99') +
    late('max') +
    `<td class="hist">${renderHistogram(s.histogram)}</td></tr>`
  );
}

function renderHistogram(histogram: readonly number[]): string {
  const barW = 16;
  const gap = 3;
  const h = 26;
  const max = maxOf(histogram, 1);
  const bars = LATENESS_BUCKETS.map((b, i) => {
    const count = histogram[i] ?? 0;
    const barH = count === 0 ? 0 : Math.max(1.5, (count / max) * (h - 2));
    const x = i * (barW + gap);
    return `<rect x="${x}" y="0" width="${barW}" height="${h}" class="hist-hit" data-tip="${escapeHtml(`${b.label}: ${plural(count, 'slot')}`)}"/><rect x="${x}" y="${px(h - barH)}" width="${barW}" height="${px(barH)}" class="${b.cls}"/>`;
  });
  const width = LATENESS_BUCKETS.length * (barW + gap) - gap;
  const labels = `<div class="hist-labels"><span>early</span><span>≥10s</span></div>`;
  return `<svg width="${width}" height="${h}" viewBox="0 0 ${width} ${h}" class="histogram">${bars.join('')}</svg>${labels}`;
}

function renderViolations(model: Model): string {
  const list = model.input.violations;
  if (list.length === 0) return `<section class="card" id="violations"><h2>Violations</h2><p class="none">None: every checked property held.</p></section>`;
  const items = list.map((v) => `<li>${escapeHtml(v)}</li>`).join('\n');
  return `<section class="card bad-card" id="violations"><h2>${escapeHtml(plural(list.length, 'violation'))}</h2><ol class="violations">\n${items}\n</ol></section>`;
}

const STYLE = `
:root{--bg:#f4f5f7;--card:#fff;--ink:#0f172a;--muted:#64748b;--rule:#e2e8f0;--ok:#16a34a;--bad:#dc2626;--leader:#2563eb;--amber:#f59e0b;--violet:#8b5cf6;--never:#334155;--expired:#9f1239;--cut:#f97316;--clock:#0891b2}
*{box-sizing:border-box}
body{margin:0;background:var(--bg);color:var(--ink);font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue","Liberation Sans",Arial,sans-serif}
main{max-width:${SVG_WIDTH_PX + 80}px;margin:0 auto;padding:20px 16px 40px}
.card{background:var(--card);border:1px solid var(--rule);border-radius:10px;padding:16px 20px;margin-bottom:16px;box-shadow:0 1px 2px rgba(15,23,42,.05)}
h1{margin:0;font-size:26px;letter-spacing:-.01em}
h2{margin:0 0 10px;font-size:16px}
.eyebrow{color:var(--muted);font-size:12px;text-transform:uppercase;letter-spacing:.08em}
.title-row{display:flex;align-items:center;justify-content:space-between;gap:16px}
.verdict{font-size:20px;font-weight:700;padding:6px 18px;border-radius:999px;text-decoration:none}
.verdict.ok{background:#dcfce7;color:#166534;border:1px solid #86efac}
.verdict.bad{background:#fee2e2;color:#b91c1c;border:1px solid #fca5a5}
.facts{display:flex;flex-wrap:wrap;gap:8px 28px;margin:14px 0 12px}
.facts div{min-width:90px}
.facts dt{color:var(--muted);font-size:11px;text-transform:uppercase;letter-spacing:.06em}
.facts dd{margin:0;font-weight:600;font-variant-numeric:tabular-nums}
.muted{color:var(--muted);font-weight:400}
.warn{color:#b45309;font-weight:600}
.repro{display:flex;align-items:center;gap:10px;background:#0f172a;border-radius:8px;padding:6px 8px 6px 14px}
.repro-label{color:#94a3b8;font-size:11px;text-transform:uppercase;letter-spacing:.08em;white-space:nowrap}
.repro pre{flex:1;margin:0;overflow-x:auto}
.repro code{color:#e2e8f0;font:13px/1.6 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;user-select:all}
.repro button{background:#334155;color:#f8fafc;border:0;border-radius:6px;padding:5px 12px;font:inherit;font-size:12px;cursor:pointer}
.repro button:hover{background:#475569}
.legend{display:flex;flex-wrap:wrap;align-items:center;gap:6px 14px;font-size:12px;color:#334155;margin-bottom:8px}
.lg-group{font-weight:700;color:var(--muted);text-transform:uppercase;font-size:10.5px;letter-spacing:.06em;margin-left:8px}
.lg-group:first-child{margin-left:0}
.lg{display:inline-flex;align-items:center;gap:5px;white-space:nowrap}
.sw{display:inline-block;width:16px;height:10px;border-radius:2px}
.sw-leader{background:var(--leader)}
.sw-down{background:repeating-linear-gradient(45deg,#9ca3af 0 2px,#e5e7eb 2px 5px)}
.sw-pause{background:repeating-linear-gradient(-45deg,#0f172a 0 1.5px,rgba(30,41,59,.35) 1.5px 4px)}
.sw-cut{background:var(--cut)}
.sw-clock{background:linear-gradient(#fff 0 45%,var(--clock) 45% 60%,#cffafe 60%)}
.sw-ok{background:var(--ok)}.sw-failed{background:var(--bad)}.sw-aborted{background:var(--amber)}.sw-never{background:var(--never)}.sw-skipped{background:var(--violet)}.sw-expired{background:var(--expired)}
.sw-missed{background:repeating-linear-gradient(45deg,var(--violet) 0 2px,#ede9fe 2px 5px)}
.sw-reassign{width:3px;height:12px;background:#475569}
.sw-late{background:linear-gradient(90deg,#94a3b8,#f59e0b,#dc2626)}
.sw-early{background:#0ea5e9}
.sw-violation{width:0;height:0;border-radius:0;border-left:6px solid transparent;border-right:6px solid transparent;border-top:10px solid var(--bad)}
.sw-healed{width:3px;height:14px;background:var(--ok)}
.scroll{overflow-x:auto}
svg.timeline{display:block;font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Liberation Sans",Arial,sans-serif}
svg text{fill:var(--ink)}
.axis-line{stroke:#94a3b8;stroke-width:1}
.axis-label{font-size:11px;fill:#475569;text-anchor:middle;font-variant-numeric:tabular-nums}
.axis-title{font-size:10.5px;fill:var(--muted);text-anchor:end}
.grid{stroke:#e2e8f0;stroke-width:1}
.section-title{font-size:13px;font-weight:700;letter-spacing:.06em;fill:#334155}
.section-sub{font-size:11.5px;font-weight:400;letter-spacing:0;fill:var(--muted)}
.section-rule{stroke:#cbd5e1;stroke-width:1}
.lane-name{font-size:13px;font-weight:700}
.lane-spec{font:10.5px ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;fill:#475569}
.lane-fact{font-size:10.5px;fill:var(--muted)}
.lane-fact.bad{fill:var(--bad)}
.row-label{font-size:9.5px;fill:#94a3b8}
.row-label.small{font-size:8px}
.end{text-anchor:end}
.role-bg{fill:#eef2f7}
.net-bg{fill:#f8fafc}
.leader{fill:var(--leader)}
.leader.merged{fill:#93c5fd}
.leader-label{font-size:10.5px;font-weight:700;fill:#fff;text-anchor:middle;pointer-events:none}
.pause{fill:url(#hatch-pause)}
.down{fill:url(#hatch-down);fill-opacity:.92}
.crash-edge{fill:#475569;pointer-events:none}
.down-label{font-size:10px;font-weight:700;fill:#475569;text-anchor:middle;pointer-events:none}
.cut{fill:var(--cut)}
.cut-1{fill-opacity:.45}.cut-2{fill-opacity:.7}.cut-3{fill-opacity:1}
.clock-zero{stroke:#cbd5e1;stroke-width:1;stroke-dasharray:2 2}
.clock{fill:#cffafe;fill-opacity:.8;stroke:var(--clock);stroke-width:1.3;stroke-linejoin:round}
.hit{fill:transparent}
.hit:hover{fill:rgba(15,23,42,.08)}
.healed-tint{fill:#16a34a;fill-opacity:.045}
.healed-line{stroke:var(--ok);stroke-width:2;stroke-dasharray:6 3}
.healed-label{font-size:11.5px;font-weight:700;fill:#15803d}
.violation-line{stroke:var(--bad);stroke-width:1;stroke-opacity:.55}
.violation-marker{fill:var(--bad);cursor:help}
.violation-count{font-size:11px;font-weight:700;fill:var(--bad)}
.slot-bg{fill:#f1f5f9}
.run-bg{fill:#fafbfc}.run-bg.alt{fill:#f3f5f8}
.late-bg{fill:#fcfcfd}
.late-zero{stroke:#cbd5e1;stroke-width:1}
.r-succeeded,.o-succeeded{fill:var(--ok)}
.r-failed,.o-failed{fill:var(--bad)}
.r-aborted,.o-aborted,.o-interrupted{fill:var(--amber)}
.r-never{fill:var(--never)}
.r-skipped{fill:var(--violet)}
.r-missed{fill:var(--expired)}
.r-pending{fill:#cbd5e1}
.reassign{stroke:#475569;stroke-width:1.2;fill:none}
.late-1{fill:#94a3b8}.late-2{fill:var(--amber)}.late-3{fill:var(--bad)}
.late.early{fill:#0ea5e9}
.missed{fill:url(#hatch-missed)}
.missed-label{font-size:10px;font-weight:700;fill:#5b21b6;text-anchor:middle;pointer-events:none}
table.jobs{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
table.jobs th{font-size:11px;text-transform:uppercase;letter-spacing:.05em;color:var(--muted);text-align:left;border-bottom:1px solid var(--rule);padding:6px 8px}
table.jobs td{padding:7px 8px;border-bottom:1px solid #f1f5f9;vertical-align:middle}
table.jobs tr:hover td{background:#f8fafc}
.num{text-align:right}
td.zero{color:#cbd5e1}
td.bad{color:var(--bad);font-weight:600}
td.job-name{font-weight:700;word-break:break-all}
td.spec code{font:12px ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;color:#475569}
td.hist{width:120px}
.histogram{display:block}
.hist-hit{fill:#f1f5f9}
.h-early{fill:#0ea5e9}.h-0{fill:#16a34a}.h-1{fill:#65a30d}.h-2{fill:#f59e0b}.h-3{fill:#ea580c}.h-4{fill:#dc2626}
.hist-labels{display:flex;justify-content:space-between;width:111px;font-size:9.5px;color:var(--muted)}
.note{color:var(--muted);font-size:12px;margin:8px 0 0}
.bad-card{border-color:#fca5a5;box-shadow:0 0 0 3px #fee2e2}
.bad-card h2{color:#b91c1c}
ol.violations{margin:0;padding-left:22px}
ol.violations li{padding:6px 0;border-bottom:1px solid #fee2e2;font:13px/1.5 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;white-space:pre-wrap;word-break:break-word}
.none{color:#166534;margin:0}
#tip{position:fixed;z-index:10;max-width:520px;background:#0f172a;color:#f8fafc;font:12px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;padding:7px 10px;border-radius:6px;white-space:pre-wrap;pointer-events:none;box-shadow:0 6px 18px rgba(15,23,42,.3)}
[data-tip]{cursor:default}
`;

/** Tooltips from `data-tip` (set as text, never as HTML) and the copy button. */
const SCRIPT = `
(() => {
  const tip = document.getElementById('tip');
  document.addEventListener('mouseover', (e) => {
    const el = e.target instanceof Element ? e.target.closest('[data-tip]') : null;
    if (!el) { tip.hidden = true; return; }
    tip.textContent = el.getAttribute('data-tip');
    tip.hidden = false;
  });
  document.addEventListener('mousemove', (e) => {
    if (tip.hidden) return;
    let x = e.clientX + 14, y = e.clientY + 16;
    if (x + tip.offsetWidth > innerWidth - 8) x = e.clientX - tip.offsetWidth - 14;
    if (y + tip.offsetHeight > innerHeight - 8) y = e.clientY - tip.offsetHeight - 12;
    tip.style.left = x + 'px';
    tip.style.top = y + 'px';
  });
  const select = (el) => { const r = document.createRange(); r.selectNodeContents(el); const s = getSelection(); s.removeAllRanges(); s.addRange(r); };
  for (const button of document.querySelectorAll('button[data-copy]')) {
    button.addEventListener('click', () => {
      const el = document.getElementById(button.dataset.copy);
      const done = () => { button.textContent = 'Copied'; setTimeout(() => { button.textContent = 'Copy'; }, 1500); };
      if (navigator.clipboard) navigator.clipboard.writeText(el.textContent).then(done, () => select(el));
      else select(el);
    });
  }
})();
`;

/**
 * The report as one self-contained HTML page: nothing is fetched from anywhere, so it can be
 * attached to a CI run or an issue and opened offline.
 */
export function renderReport(input: ReportInput): string {
  const model = buildModel(input);
  const summaries = model.jobs.map((j) => summarizeJob(j, model.lastEventT));
  const violationsFirst = input.violations.length > 0;
  const verdict = input.violations.length === 0 ? 'OK' : plural(input.violations.length, 'violation');
  const timeline = `<section class="card"><h2>Timeline</h2>${renderLegend()}<div class="scroll">${renderTimeline(model)}</div></section>`;
  const table = `<section class="card"><h2>Lateness per job</h2>${renderTable(summaries)}</section>`;
  return `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(`cronraft simulation · seed ${input.seed} · ${verdict}`)}</title>
<style>${STYLE}</style>
</head>
<body>
<main>
${renderHeader(model)}
${violationsFirst ? renderViolations(model) : ''}
${timeline}
${table}
${violationsFirst ? '' : renderViolations(model)}
</main>
<div id="tip" hidden></div>
<script>${SCRIPT}</script>
</body>
</html>
`;
}
