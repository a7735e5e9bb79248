/**
 * The drawing's bounds and primitives: the time scale, rectangles, text, marks gathered into
 * paths, and spans placed on the axis (narrow ones merged, so no row holds more marks than
 * it has pixels).
 */
import { escapeHtml, maxOf, px } from './format.js';
import type { Span } from './model.js';

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

/** The gutter left of the plot holds the lanes' names and facts; the right pad, the last tick's label. */
const GUTTER_PX = 200;
const RIGHT_PAD_PX = 28;
export const SVG_WIDTH_PX = GUTTER_PX + PLOT_WIDTH_PX + RIGHT_PAD_PX;
export const PLOT_X0 = GUTTER_PX;
export const PLOT_X1 = GUTTER_PX + PLOT_WIDTH_PX;

/** Maps true simulated time to the plot's x coordinate. */
export class TimeScale {
  constructor(readonly endT: number) {}

  x(t: number): number {
    const clamped = Math.min(Math.max(t, 0), this.endT);
    return PLOT_X0 + (clamped / this.endT) * PLOT_WIDTH_PX;
  }
}

export function rect(x: number, y: number, w: number, h: number, cls: string, tip?: string): string {
  const tipAttr = tip === undefined ? '' : ` data-tip="${escapeHtml(tip)}"`;
  return `<rect x="${px(x)}" y="${px(y)}" width="${px(Math.max(w, 0))}" height="${px(h)}" class="${cls}"${tipAttr}/>`;
}

export function text(x: number, y: number, content: string, cls: string, tip?: string): string {
  const tipAttr = tip === undefined ? '' : ` data-tip="${escapeHtml(tip)}"`;
  return `<text x="${px(x)}" y="${px(y)}" class="${cls}"${tipAttr}>${escapeHtml(content)}</text>`;
}

/**
 * Marks of one class gathered into a single `<path>`: far fewer bytes than one element per
 * mark, which matters when a job row holds hundreds of marks.
 */
export class PathSet {
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
export function placeSpans<T extends Span>(spans: readonly T[], scale: TimeScale): Array<Placed<T>> {
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
export function extent(items: readonly Span[]): Span {
  return { start: items[0]?.start ?? 0, end: maxOf(items.map((s) => s.end), 0) };
}

