import { describe, expect, it } from 'vitest';
import { escapeHtml } from '../../simulations/report/format.js';
import { renderReport, REPORT_SIZE_BUDGET_BYTES, reportInput } from '../../simulations/report/page.js';
import { MAX_JOB_LANES, PLOT_WIDTH_PX } from '../../simulations/report/svg.js';
import { expectedRow, tableRow } from '../fixtures/report-table.js';
import { simulate } from '../../simulations/simulate.js';
import type { JobSummary } from '../../simulations/summary.js';
import { MAX_TIMELINE_EVENTS, type ReportInput, type TimelineEvent } from '../../simulations/timeline.js';

const MEMBERS = ['m1', 'm2', 'm3', 'm4', 'm5'];

/** A job's summary: none of its slots claimed, but for `counts`. */
function summary(name: string, spec = '{"every":"1s"}', counts: Partial<JobSummary> = {}): JobSummary {
  return { name, spec, claimed: 0, runs: 0, succeeded: 0, failed: 0, aborted: 0, skipped: 0, expired: 0, noOutcome: 0, pending: 0, missed: 0, reassigned: 0, latenessMs: null, histogram: [0, 0, 0, 0, 0, 0], ...counts };
}

function input(overrides: Partial<ReportInput> = {}): ReportInput {
  return {
    seed: 7,
    members: MEMBERS,
    durationMs: 10_000,
    healedAtT: 8000,
    jobs: [summary('a')],
    timeline: [],
    violations: [],
    reproduce: 'npx cronraft simulate --seed 7 --members 5 --duration 10s',
    ...overrides,
  };
}

function run(job: string, slotT: number, member: string, startT: number, outcome: 'succeeded' | 'failed' | 'aborted' | 'interrupted', token: number): TimelineEvent {
  return { t: startT + 5, kind: 'run', job, slotT, token, member, startT, endT: startT + 5, outcome };
}

/** Events in time order, as the simulator records them. */
function byTime(events: TimelineEvent[]): TimelineEvent[] {
  return events.sort((x, y) => x.t - y.t);
}

function claim(job: string, slotT: number, member: string, token: number, t = slotT - 300): TimelineEvent {
  return { t, kind: 'claim', job, slotT, token, assignees: [member] };
}

/**
 * A hand-made job "a" whose numbers are easy to check: lateness of the first successful runs
 * is -10, 10, 20 and 500 ms.
 */
const HAND_MADE: readonly TimelineEvent[] = byTime([
  { t: 100, kind: 'leader', member: 'm1', term: 1 },
  claim('a', 1000, 'm1', 11),
  run('a', 1000, 'm1', 1010, 'succeeded', 11),
  claim('a', 2000, 'm2', 12),
  run('a', 2000, 'm2', 2100, 'failed', 12),
  claim('a', 2000, 'm3', 15, 2200),
  run('a', 2000, 'm3', 2500, 'succeeded', 15),
  claim('a', 3000, 'm1', 13),
  claim('a', 4000, 'm5', 14),
  run('a', 4000, 'm5', 4020, 'succeeded', 14),
  claim('a', 5000, 'm4', 16),
  run('a', 5000, 'm4', 4990, 'succeeded', 16),
  claim('a', 6000, 'm2', 17),
  run('a', 6000, 'm2', 6005, 'failed', 17),
  claim('a', 7000, 'm3', 18),
  run('a', 7000, 'm3', 7001, 'interrupted', 18),
  { t: 7600, kind: 'missed', job: 'a', throughT: 7500, count: 3 },
  // Claimed for after everything the timeline recorded: pending, not counted.
  claim('a', 99_000, 'm1', 19, 8000),
]);

/** Resource references that would make the page fetch something from the network. */
const REMOTE_REFERENCE = /(?:src|href|xlink:href)\s*=\s*["']?\s*(?:https?:)?\/\/|url\(\s*["']?\s*(?:https?:)?\/\/|@import/i;

describe('renderReport', () => {
  it('renders one self-contained page with the members, jobs, seed and reproduce command', () => {
    const html = renderReport(input({ timeline: HAND_MADE, jobs: [summary('a'), summary('nightly-backup', '0 3 * * *')] }));
    expect(html.startsWith('<!doctype html>')).toBe(true);
    expect(html.trimEnd().endsWith('</html>')).toBe(true);
    for (const m of MEMBERS) expect(html).toContain(`>${m}</text>`);
    expect(html).toContain('>nightly-backup</text>');
    expect(html).toContain('<dt>seed</dt><dd>7</dd>');
    expect(html).toMatch(/<pre><code id="repro">npx cronraft simulate --seed 7 --members 5 --duration 10s<\/code><\/pre>/);
    expect(html).toContain('<span class="verdict ok">OK</span>');
    expect(html).toContain('None: every checked property held.');
  });

  it('fetches nothing: no remote resources, no external scripts, fonts or stylesheets', () => {
    const html = renderReport(input({ timeline: HAND_MADE }));
    expect(html).not.toMatch(/https?:\/\//);
    expect(html).not.toMatch(REMOTE_REFERENCE);
    expect(html).not.toMatch(/<link\b/i);
    expect(html).not.toMatch(/<script[^>]*\bsrc=/i);
    expect(html).not.toMatch(/<img\b/i);
  });

  it('escapes job names, member ids, specs, violations and the reproduce command', () => {
    const evil = '<img src=x onerror=alert(1)>';
    const html = renderReport(
      input({
        members: ['m1', 'm"2'],
        jobs: [summary(evil, '</style><script>alert(2)</script>')],
        timeline: [
          { t: 10, kind: 'leader', member: 'm"2', term: 1 },
          claim(evil, 1000, 'm1', 3),
          run(evil, 1000, 'm1', 1002, 'succeeded', 3),
          { t: 2000, kind: 'violation', message: '<b>two</b> leaders & "quotes"' },
        ],
        violations: ['t=2000.0ms: <b>two</b> leaders & "quotes"'],
        reproduce: 'npx cronraft simulate --seed 1 && echo "<pwned>"',
      }),
    );
    expect(html).not.toContain(evil);
    expect(html).not.toContain('<script>alert(2)</script>');
    expect(html).not.toContain('<b>two</b>');
    expect(html).not.toContain('<pwned>');
    expect(html).toContain('&lt;img src=x onerror=alert(1)&gt;');
    expect(html).toContain('<li>t=2000.0ms: &lt;b&gt;two&lt;/b&gt; leaders &amp; &quot;quotes&quot;</li>');
    expect(html).toContain('m&quot;2');
    // The only script on the page is the report's own tooltip script.
    expect(html.match(/<script\b/g)).toHaveLength(1);
  });

  it('shows violations in the verdict, in red, lists each in full, and marks them on the timeline', () => {
    const long = `scheduler: slot ran twice ${'x'.repeat(3000)} end-of-message`;
    const html = renderReport(
      input({
        timeline: byTime([...HAND_MADE, { t: 4000, kind: 'violation', message: long }, { t: 6000, kind: 'violation', message: 'two leaders in term 3: m1 and m2' }]),
        violations: [`t=4000.0ms: ${long}`, 't=6000.0ms: two leaders in term 3: m1 and m2'],
      }),
    );
    expect(html).toContain('<a class="verdict bad" href="#violations">2 violations</a>');
    expect(html).toContain('.verdict.bad{background:#fee2e2;color:#b91c1c');
    expect(html).toContain(`<li>t=4000.0ms: ${long}</li>`);
    expect(html).toContain('<li>t=6000.0ms: two leaders in term 3: m1 and m2</li>');
    expect(html.match(/class="violation-marker"/g)).toHaveLength(2);
    expect(html).toContain('two leaders in term 3: m1 and m2');
    expect(html).toContain('<title>cronraft simulation · seed 7 · 2 violations</title>');
  });

  it('places violations from the checker messages when the timeline has none', () => {
    const html = renderReport(input({ violations: ['t=1500.0ms: index 4 applied as 1|a elsewhere'] }));
    expect(html.match(/class="violation-marker"/g)).toHaveLength(1);
  });

  it("shows each job's summary in the table, as given, with lateness from each slot's first start", () => {
    const a = summary('a', '{"every":"1s"}', {
      claimed: 7,
      runs: 9,
      succeeded: 4,
      failed: 1,
      aborted: 1,
      noOutcome: 1,
      pending: 1,
      missed: 3,
      reassigned: 1,
      latenessMs: { p50: 10, p99: 500, max: 500 },
      histogram: [1, 0, 2, 1, 0, 0],
    });
    const html = renderReport(input({ timeline: HAND_MADE, jobs: [a] }));
    expect(tableRow(html, 'a')).toEqual({
      claimed: '7',
      runs: '9',
      succeeded: '4',
      failed: '1',
      aborted: '1',
      skipped: '0',
      expired: '0',
      noOutcome: '1',
      missed: '3',
      reassigned: '1',
      p50: '+10ms',
      p99: '+500ms',
      max: '+500ms',
    });
    expect(html).toContain(`<th class="group" colspan="4">lateness of each slot's first start</th>`);
    expect(html).toContain("the start of a slot's first run (under any claim, whatever its outcome) minus the slot's instant");
    expect(html).toContain('1 slot claimed for after the end of the run is not counted.');
    expect(html).toContain('data-tip="early: 1 slot"');
    expect(html).toContain('data-tip="10–100ms: 2 slots"');
    // The lane's gutter tells the same counts.
    expect(html).toContain('>7 slots · 57.1% ok</text>');
  });

  it('shows no lateness for a job none of whose slots started', () => {
    const timeline = [claim('a', 1000, 'm1', 1)];
    expect(tableRow(renderReport(input({ timeline, jobs: [summary('a', '{"every":"1s"}', { claimed: 1, noOutcome: 1 })] })), 'a')).toMatchObject({ p50: '–', p99: '–', max: '–', noOutcome: '1' });
  });

  it('describes slots, runs and reassignments in the job lane tooltips', () => {
    const html = renderReport(input({ timeline: HAND_MADE }));
    expect(html).toContain('a · slot 0:02.000\nsucceeded · reassigned (2 claims)\nm2  started +100ms, ran 5ms, failed (token 12)\nm3  started +500ms, ran 5ms, succeeded (token 15)');
    expect(html).toContain('a · slot 0:03.000\nno outcome\nclaimed for m1; no run or outcome recorded');
    expect(html).toContain('m4  started −10ms');
    expect(html).toContain('a: 3 slots missed (dropped by the catch-up policy)');
    expect(html).toContain('class="reassign"');
  });

  it('shows the outcome and reason of a slot that was not run, rather than "never ran"', () => {
    // Seed 42 (five members, three minutes) drew such slots as "never ran": the log had them
    // skipped by their overlap policy, with the reason, which the report did not read.
    const reason = 'overlap: a run of the job (slot 2026-01-01T00:00:02.000Z) was already waiting to run';
    const timeline = byTime([
      claim('a', 1000, 'm1', 11),
      run('a', 1000, 'm1', 1001, 'succeeded', 11),
      claim('a', 3000, 'm2', 12),
      { t: 3010, kind: 'outcome', job: 'a', slotT: 3000, token: 12, member: 'm2', outcome: 'skipped', reason },
      claim('a', 4000, 'm3', 13),
      { t: 4500, kind: 'outcome', job: 'a', slotT: 4000, token: 20, member: 'm3', outcome: 'missed', reason: 'expired: no member ran the slot before it passed the reassignment horizon' },
      claim('a', 5000, 'm4', 14),
      run('a', 5000, 'm4', 5001, 'succeeded', 14),
      // Interrupted (a run, and its outcome in the log), moved, then skipped: what happened last.
      claim('a', 6000, 'm1', 21),
      run('a', 6000, 'm1', 6001, 'interrupted', 21),
      { t: 6010, kind: 'outcome', job: 'a', slotT: 6000, token: 21, member: 'm1', outcome: 'interrupted', reason: 'this member lost contact with the leader' },
      claim('a', 6000, 'm2', 22, 6100),
      { t: 6120, kind: 'outcome', job: 'a', slotT: 6000, token: 22, member: 'm2', outcome: 'skipped', reason },
    ]);
    const html = renderReport(input({ timeline }));
    expect(html).toContain(`a · slot 0:06.000\nskipped (overlap) · reassigned (2 claims)\nm1  started +1ms, ran 5ms, interrupted (token 21)\nm2  skipped (token 22): ${escapeHtml(reason)}`);
    expect(html).toContain(`a · slot 0:03.000\nskipped (overlap)\nm2  skipped (token 12): ${escapeHtml(reason)}`);
    expect(html).toContain('a · slot 0:04.000\nmissed: nobody ran it\nm3  missed (token 20): expired: no member ran the slot before it passed the reassignment horizon');
    expect(html).not.toContain('never ran');
  });

  it('draws leadership, crashes, pauses, partitions and clock offsets per member', () => {
    const timeline: TimelineEvent[] = [
      { t: 100, kind: 'leader', member: 'm1', term: 1 },
      { t: 1000, kind: 'clock', member: 'm2', offsetMs: 250, note: 'ntp step' },
      { t: 2000, kind: 'partition', blocked: [['m1', 'm2'], ['m2', 'm1'], ['m3', 'm1']] },
      { t: 2500, kind: 'crash', member: 'm1' },
      { t: 2500, kind: 'follower', member: 'm1', term: 1 },
      { t: 2900, kind: 'leader', member: 'm2', term: 3 },
      { t: 3000, kind: 'partition', blocked: [] },
      { t: 4000, kind: 'pause', member: 'm4', untilT: 4800 },
      { t: 5000, kind: 'restart', member: 'm1' },
      { t: 8000, kind: 'healed' },
    ];
    const html = renderReport(input({ timeline }));
    expect(html).toContain('data-tip="m1 leader, term 1\n0:00.100 → 0:02.500 (2.4s)"');
    expect(html).toContain('m2 leader, term 3\n0:02.900 → 0:10.000');
    expect(html).toContain('>T3</text>');
    expect(html).toContain('m1 down (crashed, not yet restarted)\n0:02.500 → 0:05.000 (2.5s)');
    expect(html).toContain('m4 paused (stop-the-world)\n0:04.000 → 0:04.800 (800ms)');
    expect(html).toContain('m1 cut off from 2 peers\nblocked m1 → m2\nblocked m2, m3 → m1\n0:02.000 → 0:03.000 (1s)');
    expect(html).toContain('m3 cut off from 1 peer\nblocked m3 → m1');
    expect(html).toContain('m2 clock +250ms ahead (ntp step)\n0:01.000 → 0:10.000 (9s)');
    expect(html).toContain('>faults healed</text>');
    expect(html).toContain('class="healed-line"');
  });

  it('labels the time axis in seconds or minutes', () => {
    expect(renderReport(input())).toContain('>10s</text>');
    const tenMinutes = renderReport(input({ durationMs: 600_000, healedAtT: 540_000 }));
    for (const label of ['>1m</text>', '>5m</text>', '>10m</text>']) expect(tenMinutes).toContain(label);
  });

  it('draws the first MAX_JOB_LANES jobs and still tabulates every job', () => {
    const jobs = Array.from({ length: MAX_JOB_LANES + 5 }, (_, i) => summary(`job-${i}`));
    const timeline = jobs.flatMap((j, i) => [claim(j.name, 1000 + i, 'm1', i + 1), run(j.name, 1000 + i, 'm1', 1001 + i, 'succeeded', i + 1)]);
    const html = renderReport(input({ jobs, timeline }));
    expect(html).toContain(`first ${MAX_JOB_LANES} of ${jobs.length} jobs drawn`);
    expect(html.match(/<tr data-job=/g)).toHaveLength(jobs.length);
    expect(html.match(/<g class="job">/g)).toHaveLength(MAX_JOB_LANES);
  });

  it('stays within its size budget for 100,000+ events and aggregates marks to pixel columns', () => {
    const big = largeInput();
    expect(big.timeline.length).toBeGreaterThan(100_000);
    const started = performance.now();
    const html = renderReport(big);
    const elapsedMs = performance.now() - started;
    expect(Buffer.byteLength(html)).toBeLessThan(REPORT_SIZE_BUDGET_BYTES);
    expect(elapsedMs).toBeLessThan(10_000);
    // Each job lane draws at most one tooltip column per pixel however many slots it has.
    const jobLanes = html.split('<g class="job">').slice(1);
    expect(jobLanes).toHaveLength(big.jobs.length);
    for (const lane of jobLanes) expect(lane.match(/class="hit"/g)?.length ?? 0).toBeLessThanOrEqual(PLOT_WIDTH_PX);
    // Every member's row of leader periods is bounded too, however many elections there were.
    const memberLanes = html.split('<g class="member">').slice(1);
    for (const lane of memberLanes) expect(lane.match(/class="leader/g)?.length ?? 0).toBeLessThanOrEqual(PLOT_WIDTH_PX);
    expect(html).toContain('>job-00</text>');
  });
  it('renders a timeline as long as the simulator keeps (MAX_TIMELINE_EVENTS) of one kind', () => {
    const timeline: TimelineEvent[] = Array.from({ length: MAX_TIMELINE_EVENTS }, (_, i) => ({ t: i * 3, kind: 'clock', member: 'm1', offsetMs: (i % 200) - 100, note: 'drift' }));
    const html = renderReport(input({ durationMs: MAX_TIMELINE_EVENTS * 3, timeline }));
    expect(Buffer.byteLength(html)).toBeLessThan(REPORT_SIZE_BUDGET_BYTES);
    expect(html).toContain('(bound reached)');
    expect(html).toMatch(/m1: \d+ clock changes, offset −100ms … \+99ms/);
  });
});

describe('the report of a run', () => {
  it('tabulates the run result\'s job summaries (its JSON), whole even when the timeline is cut short', async () => {
    const result = await simulate({ seed: 42, members: 5, durationMs: 30_000, timeline: true });
    const json = JSON.parse(JSON.stringify(result)) as typeof result;
    const timeline = result.timeline ?? [];
    // As if the timeline had reached its bound halfway through: the table does not count from it.
    const html = renderReport(reportInput({ ...result, timeline: timeline.slice(0, timeline.length >> 1) }, 'replay'));
    expect(json.jobs.reduce((n, j) => n + j.claimed, 0)).toBeGreaterThan(0);
    for (const job of json.jobs) {
      expect(job.claimed).toBe(job.succeeded + job.failed + job.aborted + job.skipped + job.expired + job.noOutcome);
      expect(tableRow(html, job.name)).toEqual(expectedRow(job));
    }
  }, 120_000);
});

describe('escapeHtml', () => {
  it('escapes the five characters that matter in text and attributes', () => {
    expect(escapeHtml(`<a href="x" title='y'>&</a>`)).toBe('&lt;a href=&quot;x&quot; title=&#39;y&#39;&gt;&amp;&lt;/a&gt;');
  });
});

/** A deterministic pseudo-random sequence, so the large input is the same every run. */
function lcg(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (Math.imul(state, 1_664_525) + 1_013_904_223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * 10 simulated minutes, 5 members and 30 jobs each running every second, with an election
 * every couple of seconds, a partition change every 300 ms and a clock reading every 40 ms per
 * member: well over 100,000 events.
 */
function largeInput(): ReportInput {
  const random = lcg(42);
  const durationMs = 600_000;
  const timeline: TimelineEvent[] = [];
  let term = 0;
  for (let t = 200; t < durationMs; t += 1000 + random() * 2000) {
    const member = MEMBERS[Math.floor(random() * MEMBERS.length)] ?? 'm1';
    timeline.push({ t, kind: 'leader', member, term: ++term }, { t: t + 900, kind: 'follower', member, term });
    if (random() < 0.2) timeline.push({ t: t + 950, kind: 'crash', member }, { t: t + 1500, kind: 'restart', member });
  }
  for (let t = 0; t < durationMs; t += 300) {
    const who = MEMBERS[Math.floor(random() * MEMBERS.length)] ?? 'm1';
    const blocked = random() < 0.5 ? [] : MEMBERS.filter((m) => m !== who).flatMap((m) => [[who, m] as const, [m, who] as const]);
    timeline.push({ t, kind: 'partition', blocked });
  }
  for (const member of MEMBERS) for (let t = 0; t < durationMs; t += 40) timeline.push({ t, kind: 'clock', member, offsetMs: Math.round(random() * 600 - 300), note: 'jitter' });
  const jobs = Array.from({ length: 30 }, (_, i) => summary(`job-${String(i).padStart(2, '0')}`));
  let token = 0;
  jobs.forEach((job, i) => {
    for (let slotT = 1000 + i * 10; slotT < durationMs; slotT += 1000) {
      const member = MEMBERS[Math.floor(random() * MEMBERS.length)] ?? 'm1';
      timeline.push(claim(job.name, slotT, member, ++token));
      const outcome = random() < 0.05 ? 'failed' : 'succeeded';
      timeline.push(run(job.name, slotT, member, slotT + random() * random() * 3000, outcome, token));
    }
  });
  timeline.push({ t: 540_000, kind: 'healed' });
  byTime(timeline);
  return input({ seed: 99, durationMs, healedAtT: 540_000, jobs, timeline });
}
