/** A job's lane of the timeline: its slots binned to pixel columns, who ran them, and how late. */
import type { NodeId } from '../../src/raft/types.js';
import type { JobSummary } from '../summary.js';
import { fmtDuration, fmtInstant, fmtLateness, maxOf, minOf, plural, px, trimZeros, truncate } from './format.js';
import { slotResult, type JobTrack, type Run, type RunOutcome, type Slot, type SlotResult } from './model.js';
import { MAX_SLOT_COLUMNS, PathSet, placeSpans, PLOT_WIDTH_PX, PLOT_X0, PLOT_X1, rect, SLOT_BIN_PX, text, type TimeScale } from './svg.js';

/** Heights of a job lane's rows: its slots, and its lateness chart under the members' rows. */
const SLOT_ROW_H = 14;
const LATE_ROW_H = 24;

function memberRowHeight(members: number): number {
  return Math.max(4, Math.min(9, Math.floor(45 / Math.max(members, 1))));
}

export function jobLaneHeight(members: number): number {
  return 4 + SLOT_ROW_H + 5 + members * memberRowHeight(members) + 5 + LATE_ROW_H + 6;
}

const RESULT_RANK: Readonly<Record<SlotResult, number>> = { pending: 0, succeeded: 1, skipped: 2, aborted: 3, failed: 4, missed: 5, never: 6 };
const NO_RESULTS: Readonly<Record<SlotResult, number>> = { succeeded: 0, failed: 0, aborted: 0, skipped: 0, missed: 0, never: 0, pending: 0 };
const OUTCOME_RANK: Readonly<Record<RunOutcome, number>> = { succeeded: 0, interrupted: 1, replaced: 1, cancelled: 1, aborted: 2, failed: 3 };
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
export function slotBinWidth(lanes: number): number {
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

export interface LaneContext {
  readonly scale: TimeScale;
  readonly members: readonly NodeId[];
  readonly lastEventT: number;
  /** Width of a slot column (px). */
  readonly binPx: number;
  /** The jobs' summaries by name, for the facts in each lane's gutter (the same as the table's). */
  readonly summaries: ReadonlyMap<string, JobSummary>;
}

export function renderJobLane(job: JobTrack, y: number, lane: LaneContext): string {
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
    renderJobGutter(job, lane.summaries.get(job.name), y, members, membersY, rowH, lateY, latenessMax) +
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

function renderJobGutter(job: JobTrack, summary: JobSummary | undefined, y: number, members: readonly NodeId[], membersY: number, rowH: number, lateY: number, latenessMax: number): string {
  const parts = [
    text(16, y + 16, truncate(job.name, 20), 'lane-name', job.name),
    text(16, y + 30, truncate(job.spec, 22), 'lane-spec', job.spec),
    ...(summary === undefined ? [] : summaryFacts(summary, y)),
    text(PLOT_X0 - 8, y + 4 + SLOT_ROW_H - 3, 'slots', 'row-label end'),
    // The row's scale, not a measurement: its top is the job's worst lateness, or a second at least.
    text(PLOT_X0 - 8, lateY + 9, `late, log to ${fmtDuration(latenessMax)}`, 'row-label end', `Each bar: the latest start of a slot in it after the slot's instant, on a log scale from 1 ms to ${fmtDuration(latenessMax)} (the job's worst, or 1 s when none was later); early starts below the line`),
  ];
  // Member names beside their rows only when the rows are tall enough to read them.
  if (rowH >= 7) members.forEach((m, i) => parts.push(text(PLOT_X0 - 8, membersY + i * rowH + rowH - 1.5, truncate(m, 8), 'row-label small end')));
  return parts.join('');
}

/** A job's counts in its lane's gutter: its slots, the share that succeeded, and what went wrong. */
function summaryFacts(summary: JobSummary, y: number): string[] {
  const okShare = summary.claimed === 0 ? '' : ` · ${trimZeros(((100 * summary.succeeded) / summary.claimed).toFixed(1))}% ok`;
  const issues = [
    summary.failed > 0 ? `${summary.failed} failed` : '',
    summary.skipped > 0 ? `${summary.skipped} skipped` : '',
    summary.expired > 0 ? `${summary.expired} expired` : '',
    summary.noOutcome > 0 ? `${summary.noOutcome} no outcome` : '',
    summary.missed > 0 ? `${summary.missed} missed` : '',
  ].filter((s) => s !== '');
  return [text(16, y + 44, `${plural(summary.claimed, 'slot')}${okShare}`, 'lane-fact'), ...wrapFacts(issues, GUTTER_FACT_CHARS).map((line, i) => text(16, y + 57 + i * 13, line, 'lane-fact bad'))];
}
