/** The timeline as one SVG: the axes and grid, the member lanes, the job lanes and the violation markers. */
import { escapeHtml, fmtInstant, maxOf, pad2, plural, px, trimZeros } from './format.js';
import { jobLaneHeight, renderJobLane, slotBinWidth, type LaneContext } from './job-lanes.js';
import { MEMBER_LANE_H, renderMemberLane } from './member-lanes.js';
import type { Model } from './model.js';
import { MAX_JOB_LANES, PathSet, placeSpans, PLOT_X0, PLOT_X1, rect, SVG_WIDTH_PX, text, TimeScale } from './svg.js';

const TOP_PAD = 6;
const MARKER_ROW_H = 24;
const AXIS_H = 22;
const SECTION_H = 30;
const MEMBER_GAP = 8;
const JOB_GAP = 14;

export function renderTimeline(model: Model): string {
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
  const summaries = new Map(model.input.jobs.map((j) => [j.name, j]));
  const lane: LaneContext = { scale, members: memberIds, lastEventT: model.lastEventT, binPx: slotBinWidth(drawnJobs.length), summaries };
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

