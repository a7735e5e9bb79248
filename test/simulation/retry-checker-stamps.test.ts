import { describe, expect, it } from 'vitest';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import type { ApplyResult } from '../../src/scheduler/records.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { PAST_HORIZON_VERSION } from '../../src/version/versions.js';
import { RetryChecker } from '../../simulations/checkers/retries.js';
import { SchedulerChecker } from '../../simulations/scheduler-checker.js';
import { SIM_EPOCH_MS } from '../../simulations/scheduler.js';

/** The members' reassignment horizon, as a seed may draw it (ms). */
const HORIZON_MS = 65_000;
/** True time (ms) the failed run ended, long after its slot (it waited on a busy member). */
const END_T = 175_000;
/** True time (ms) from which nothing is injected: the horizon from the true end has not passed by then. */
const CALM_T = 181_000;

/** What the retry checker says at the end of a run in which m1's run of a slot failed at END_T and its outcome was stamped `stampT`. */
function reports(stampT: number): string[] {
  const said: string[] = [];
  const report = (_t: number, _kind: string, what: string): void => void said.push(what);
  const slots = new SchedulerChecker(report);
  slots.jobs.set('flaky', { spec: parseSpec({ every: '2s' }), mode: 'one', policy: { retries: 2, retryDelayMs: 200, catchUp: { policy: 'latest' }, overlap: 'replace' }, anchorMs: SIM_EPOCH_MS, countFromMs: SIM_EPOCH_MS, claims: 1, missed: 0, highWaterMs: SIM_EPOCH_MS });
  const slotMs = SIM_EPOCH_MS + 112_500;
  slots.slots.set(`flaky@${slotMs}`, { job: 'flaky', slotMs, token: 10, assignees: ['m1'], attempt: 3, retried: 0, outcomes: new Map([['m1 10', 'failed']]), outcomeAt: new Map(), firstStartT: END_T - 600, runs: 1, grants: new Set(['m1 10']), givenAt: new Map([['m1', 125_000]]), cancelledToken: null });
  const retries = new RetryChecker(report, slots, () => ['m1', 'm5'], HORIZON_MS);
  retries.onRunEnd(END_T, 'm1', { job: 'flaky', slotMs, fencingToken: 10 });
  const outcome: SchedulerCommand = { type: 'outcome', job: 'flaky', slotMs, token: 10, member: 'm1', outcome: 'failed', atMs: SIM_EPOCH_MS + stampT };
  retries.onFirstApplied(END_T + 50, outcome, { ok: true } as ApplyResult, PAST_HORIZON_VERSION);
  retries.calmFrom(CALM_T);
  retries.finish(212_000, 200_000);
  return said;
}

/**
 * The leader counts a failed run's reassignment horizon from the end its member stamped, by the
 * cluster's time as that member read it. A member whose cluster time was a bad clock's (the clock
 * promise allows it while a leader sees two clocks: here, one a minute behind, after a crash)
 * stamps the end that far back, and the leader gives the retry up that much sooner, by design.
 * The checker blamed the leader for it (found by a census: 3 members, custom jobs, seed 8).
 */
describe('the retry checker, for a failure stamped by a member whose cluster time was behind', () => {
  it('counts the horizon from the stamp, as the leader does', () => {
    expect(reports(113_800)).toEqual([]);
  });

  it('still blames a retry never made within the horizon from an end stamped right', () => {
    expect(reports(END_T)).toEqual([expect.stringContaining('was never retried, with 2 retries')]);
  });
});
