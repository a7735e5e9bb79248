/**
 * The report's model: what a run's timeline says, regrouped by member (leader periods, crashes,
 * pauses, cut-off periods, clock readings) and by job (slots with their claims, runs and
 * outcomes, and the slots the catch-up policy dropped).
 */
import type { NodeId } from '../../src/raft/types.js';
import type { ReportInput, TimelineEvent } from '../timeline.js';

type RunEvent = Extract<TimelineEvent, { kind: 'run' }>;
export type RunOutcome = RunEvent['outcome'];

/**
 * What became of a slot: aborted and interrupted runs count together as `aborted`. A slot not
 * run is `skipped` (its overlap policy skipped or replaced it), `missed` (the leader recorded
 * that nobody ran it: `expire`), or, with no outcome recorded at all, `never`.
 */
export type SlotResult = 'succeeded' | 'failed' | 'aborted' | 'skipped' | 'missed' | 'never' | 'pending';

export interface Span {
  readonly start: number;
  readonly end: number;
}

export interface LeaderSpan extends Span {
  readonly term: number;
}

export interface CutOffSpan extends Span {
  readonly cannotSendTo: readonly NodeId[];
  readonly cannotHearFrom: readonly NodeId[];
  /** Peers this member cannot reach in at least one direction. */
  readonly peersCut: number;
}

export interface ClockSpan extends Span {
  readonly offsetMs: number;
  readonly note: string;
}

export interface MemberTrack {
  readonly id: NodeId;
  readonly leader: LeaderSpan[];
  readonly down: Span[];
  readonly pauses: Span[];
  cutOff: CutOffSpan[];
  readonly clock: Array<{ readonly t: number; readonly offsetMs: number; readonly note: string }>;
}

export interface Run {
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

export interface Slot {
  readonly slotT: number;
  readonly tokens: Set<number>;
  readonly assignees: NodeId[];
  readonly runs: Run[];
  readonly notRun: NotRun[];
}

export interface MissedSpan extends Span {
  /** When the leader decided to drop the slots. */
  readonly decidedT: number;
  readonly count: number;
}

export interface JobTrack {
  readonly name: string;
  readonly spec: string;
  readonly slotsByT: Map<number, Slot>;
  readonly missedEvents: Array<{ readonly t: number; readonly throughT: number; readonly count: number }>;
  slots: Slot[];
  missed: MissedSpan[];
}

export interface Model {
  readonly input: ReportInput;
  /** Right edge of the time axis (true ms). */
  readonly endT: number;
  /** The last instant the timeline tells anything about: slots after it had no chance to run. */
  readonly lastEventT: number;
  readonly members: MemberTrack[];
  readonly jobs: JobTrack[];
  readonly violations: Array<{ readonly t: number; readonly message: string }>;
}

export function buildModel(input: ReportInput): Model {
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
export function slotResult(slot: Slot, lastEventT: number): SlotResult {
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
    case 'cancelled':
      return 'skipped';
    case 'missed':
      return 'missed';
    default:
      return 'aborted';
  }
}
