/**
 * The simulator's human report: one self-contained HTML page (inline CSS, inline SVG and a
 * few lines of inline script for tooltips) drawn from a run's `ReportInput`. It shows the
 * verdict and how to replay the run, a timeline of members (leadership, crashes, pauses,
 * partitions, clock offsets) and of job slots over true simulated time, a lateness table per
 * job and every violation in full.
 *
 * A run may record 100,000+ events, far more marks than a screen has pixels, so every row is
 * aggregated to pixel columns before it is drawn (see the bounds in svg.ts) and the page stays a
 * few megabytes at most whatever the input.
 */
import type { SimulationResult } from '../simulate.js';
import { LATENESS_BUCKETS, type JobSummary } from '../summary.js';
import { MAX_TIMELINE_EVENTS, type ReportInput } from '../timeline.js';
import { escapeHtml, fmtDuration, fmtInstant, fmtLateness, maxOf, plural, px, truncate } from './format.js';
import { buildModel, type Model } from './model.js';
import { SCRIPT, STYLE } from './style.js';
import { renderTimeline } from './timeline-svg.js';

/**
 * The size the page is designed to stay under for a run like the simulator's (a handful of
 * members, 10 simulated minutes, 100,000+ events); the tests hold it to that.
 */
export const REPORT_SIZE_BUDGET_BYTES = 3_000_000;

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

/** CSS classes of the histogram's bars, one per LATENESS_BUCKETS entry: early, then later and later. */
const BUCKET_CLASSES: readonly string[] = ['h-early', 'h-0', 'h-1', 'h-2', 'h-3', 'h-4'];

/** The count columns of the table: each a JobSummary field (its `data-col`) and its header. */
const COUNT_COLUMNS: ReadonlyArray<{ readonly field: CountField; readonly head: string; readonly badWhenPositive: boolean }> = [
  { field: 'claimed', head: 'claimed', badWhenPositive: false },
  { field: 'runs', head: 'runs', badWhenPositive: false },
  { field: 'succeeded', head: 'succeeded', badWhenPositive: false },
  { field: 'failed', head: 'failed', badWhenPositive: true },
  { field: 'aborted', head: 'aborted', badWhenPositive: true },
  { field: 'skipped', head: 'skipped', badWhenPositive: false },
  { field: 'expired', head: 'expired', badWhenPositive: true },
  { field: 'noOutcome', head: 'no outcome', badWhenPositive: true },
  { field: 'missed', head: 'missed', badWhenPositive: true },
  { field: 'reassigned', head: 'reassigned', badWhenPositive: false },
];
type CountField = 'claimed' | 'runs' | 'succeeded' | 'failed' | 'aborted' | 'skipped' | 'expired' | 'noOutcome' | 'missed' | 'reassigned';

/** The table of the run's job summaries: the same numbers as the run result's `jobs` (its `--json` output). */
function renderTable(summaries: readonly JobSummary[]): string {
  if (summaries.length === 0) return '<p class="muted">No jobs.</p>';
  const pending = summaries.reduce((sum, s) => sum + s.pending, 0);
  const group = `<tr><th class="blank" colspan="${2 + COUNT_COLUMNS.length}"></th><th class="group" colspan="4">lateness of each slot's first start</th></tr>`;
  const head = ['job', 'spec', ...COUNT_COLUMNS.map((c) => c.head), 'p50', 'p99', 'max', 'histogram'].map((h, i) => `<th${i >= 2 && i < COUNT_COLUMNS.length + 5 ? ' class="num"' : ''}>${h}</th>`).join('');
  const rows = summaries.map(renderTableRow).join('\n');
  const note = pending > 0 ? `<p class="note">${plural(pending, 'slot')} claimed for after the end of the run ${pending === 1 ? 'is' : 'are'} not counted.</p>` : '';
  return `<table class="jobs"><thead>${group}<tr>${head}</tr></thead><tbody>\n${rows}\n</tbody></table>
<p class="note">Counts over the whole run, as the scheduler checker saw the committed log. Lateness: the start of a slot's first run (under any claim, whatever its outcome) minus the slot's instant, as the lateness promise measures it (nearest-rank percentiles); negative means a member's clock ran ahead.</p>${note}`;
}

function renderTableRow(s: JobSummary): string {
  const cell = (col: string, value: string, cls = 'num'): string => `<td class="${cls}" data-col="${col}">${value}</td>`;
  const count = ({ field, badWhenPositive }: (typeof COUNT_COLUMNS)[number]): string => {
    const value = s[field];
    return cell(field, value.toLocaleString('en-US'), `num${badWhenPositive && value > 0 ? ' bad' : value === 0 ? ' zero' : ''}`);
  };
  const late = (col: 'p50' | 'p99' | 'max'): string => cell(col, s.latenessMs === null ? '–' : escapeHtml(fmtLateness(s.latenessMs[col])), `num${s.latenessMs !== null && s.latenessMs[col] >= 1000 ? ' bad' : ''}`);
  return (
    `<tr data-job="${escapeHtml(s.name)}"><td class="job-name">${escapeHtml(s.name)}</td><td class="spec"><code>${escapeHtml(s.spec)}</code></td>` +
    COUNT_COLUMNS.map(count).join('') +
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
    return `<rect x="${x}" y="0" width="${barW}" height="${h}" class="hist-hit" data-tip="${escapeHtml(`${b.label}: ${plural(count, 'slot')}`)}"/><rect x="${x}" y="${px(h - barH)}" width="${barW}" height="${px(barH)}" class="${BUCKET_CLASSES[i] ?? ''}"/>`;
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


/**
 * The report as one self-contained HTML page: nothing is fetched from anywhere, so it can be
 * attached to a CI run or an issue and opened offline.
 */
export function renderReport(input: ReportInput): string {
  const model = buildModel(input);
  const violationsFirst = input.violations.length > 0;
  const verdict = input.violations.length === 0 ? 'OK' : plural(input.violations.length, 'violation');
  const timeline = `<section class="card"><h2>Timeline</h2>${renderLegend()}<div class="scroll">${renderTimeline(model)}</div></section>`;
  const table = `<section class="card"><h2>Lateness per job</h2>${renderTable(input.jobs)}</section>`;
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

/** The report's input for a run (`simulate({ timeline: true })`): its table is the run result's `jobs`. */
export function reportInput(result: SimulationResult, reproduce: string): ReportInput {
  return {
    seed: result.seed,
    members: result.members,
    durationMs: result.simulatedMs,
    healedAtT: result.healedAtMs,
    jobs: result.jobs,
    timeline: result.timeline ?? [],
    violations: result.violations,
    reproduce,
  };
}
