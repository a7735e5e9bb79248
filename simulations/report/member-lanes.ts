/** A member's lane of the timeline: leader periods, crashes, pauses, cut-off periods and its clock offset. */
import type { NodeId } from '../../src/raft/types.js';
import { escapeHtml, fmtDuration, fmtLateness, fmtRange, maxOf, minOf, plural, px, truncate } from './format.js';
import type { ClockSpan, CutOffSpan, MemberTrack } from './model.js';
import { extent, placeSpans, PLOT_WIDTH_PX, PLOT_X0, PLOT_X1, rect, text, type TimeScale } from './svg.js';

export const MEMBER_LANE_H = 62;
const ROLE_Y = 6;
const ROLE_H = 20;
const NET_Y = 29;
const NET_H = 6;
const CLOCK_Y = 38;
const CLOCK_H = 20;

export function renderMemberLane(m: MemberTrack, y: number, scale: TimeScale, clockMax: number): string {
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

