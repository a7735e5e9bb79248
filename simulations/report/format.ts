/** Text for the report's people: escaping, durations, instants, counts, coordinates. */
import type { Span } from './model.js';

const HTML_ESCAPES: Readonly<Record<string, string>> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Escapes text for HTML content and for quoted attribute values alike. */
export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (c) => HTML_ESCAPES[c] ?? c);
}

/** A duration for people: `850µs`, `4.5ms`, `120ms`, `1.23s`, `12.5s`, `2m 05s`, `1h 02m`. */
export function fmtDuration(ms: number): string {
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
export function fmtLateness(ms: number): string {
  return ms > 0 ? `+${fmtDuration(ms)}` : fmtDuration(ms);
}

/** An instant on the run's true time: `m:ss.mmm` (or `h:mm:ss.mmm`). */
export function fmtInstant(t: number): string {
  const totalMs = Math.round(Math.max(0, t));
  const ms = totalMs % 1000;
  const s = Math.floor(totalMs / 1000) % 60;
  const m = Math.floor(totalMs / 60_000) % 60;
  const h = Math.floor(totalMs / 3_600_000);
  const tail = `${pad2(s)}.${String(ms).padStart(3, '0')}`;
  return h > 0 ? `${h}:${pad2(m)}:${tail}` : `${m}:${tail}`;
}

export function fmtRange(span: Span): string {
  return `${fmtInstant(span.start)} → ${fmtInstant(span.end)} (${fmtDuration(span.end - span.start)})`;
}

/**
 * The largest (or smallest) of many numbers, or `floor` if there are none. Spreading a large
 * array into Math.max overflows the stack, and a timeline may hold 200,000 values.
 */
export function maxOf(values: Iterable<number>, floor = Number.NEGATIVE_INFINITY): number {
  let max = floor;
  for (const v of values) if (v > max) max = v;
  return max;
}

export function minOf(values: Iterable<number>, ceiling = Number.POSITIVE_INFINITY): number {
  let min = ceiling;
  for (const v of values) if (v < min) min = v;
  return min;
}

export function pad2(n: number): string {
  return String(n).padStart(2, '0');
}

export function trimZeros(fixed: string): string {
  return fixed.includes('.') ? fixed.replace(/\.?0+$/, '') : fixed;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`;
}

/** Coordinates to a tenth of a pixel: enough for the eye, and it keeps the page small. */
export function px(n: number): string {
  return String(Math.round(n * 10) / 10);
}

/** Shortens a label to fit the gutter; the full text stays in a tooltip. */
export function truncate(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max - 1)}…`;
}
