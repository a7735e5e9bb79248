import { describe, expect, it } from 'vitest';
import { parseSpec } from '../../src/scheduler/spec.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { SchedulerChecker } from '../../simulations/scheduler-checker.js';
import { SIM_EPOCH_MS } from '../../simulations/scheduler.js';
import { summarizeJobs } from '../../simulations/summary.js';
import { SUPPORTED } from '../../src/version/versions.js';

/** A checker fed a hand-made committed log (one command per index) and run starts. */
class Log {
  readonly violations: string[] = [];
  readonly checker = new SchedulerChecker((_t, kind, message) => this.violations.push(`${kind}: ${message}`));
  #index = 0;

  /** Commits `command` at true time `t`; returns its index, which is the token of a claim. */
  commit(t: number, command: SchedulerCommand): number {
    this.checker.onApplied(t, 'm1', ++this.#index, command, { ok: true }, SUPPORTED.stateMachine.max);
    return this.#index;
  }

  register(job: string): void {
    this.commit(0, { type: 'register', job, spec: parseSpec({ every: '1s' }), mode: 'one', policy: { retries: 2, retryDelayMs: 200, catchUp: { policy: 'latest' } }, member: 'm1', atMs: SIM_EPOCH_MS });
  }

  claim(job: string, slotT: number, member: string): number {
    return this.commit(slotT - 300, { type: 'claim', job, slotMs: SIM_EPOCH_MS + slotT, assignees: [member] });
  }

  reassign(t: number, job: string, slotT: number, fromToken: number, member: string): number {
    return this.commit(t, { type: 'reassign', job, slotMs: SIM_EPOCH_MS + slotT, fromToken, assignees: [member], reason: 'retry' });
  }

  start(t: number, job: string, slotT: number, member: string, token: number): void {
    this.checker.onRunStart(t, member, 1, { job, slotMs: SIM_EPOCH_MS + slotT, fencingToken: token });
  }

  outcome(t: number, job: string, slotT: number, member: string, token: number, outcome: 'succeeded' | 'failed' | 'interrupted' | 'skipped'): void {
    this.commit(t, { type: 'outcome', job, slotMs: SIM_EPOCH_MS + slotT, token, member, outcome, atMs: SIM_EPOCH_MS + t });
  }
}

describe('summarizeJobs', () => {
  it('counts every slot by what the log recorded, and measures lateness from the first start of each slot', () => {
    const log = new Log();
    log.register('a');
    // On time, succeeded.
    let token = log.claim('a', 1000, 'm1');
    log.start(1010, 'a', 1000, 'm1', token);
    log.outcome(1015, 'a', 1000, 'm1', token, 'succeeded');
    // Started 100 ms late and failed, retried 500 ms late: late by 100 ms (its first start), succeeded.
    token = log.claim('a', 2000, 'm2');
    log.start(2100, 'a', 2000, 'm2', token);
    log.outcome(2105, 'a', 2000, 'm2', token, 'failed');
    token = log.reassign(2300, 'a', 2000, token, 'm3');
    log.start(2500, 'a', 2000, 'm3', token);
    log.outcome(2505, 'a', 2000, 'm3', token, 'succeeded');
    // Claimed, never run, no outcome.
    log.claim('a', 3000, 'm1');
    // Started 10 ms early (its member's clock ran ahead), interrupted.
    token = log.claim('a', 4000, 'm5');
    log.start(3990, 'a', 4000, 'm5', token);
    log.outcome(4100, 'a', 4000, 'm5', token, 'interrupted');
    // Nobody ran it: the leader expired it.
    token = log.claim('a', 5000, 'm4');
    log.commit(6000, { type: 'expire', job: 'a', slotMs: SIM_EPOCH_MS + 5000, fromToken: token, reason: 'expired', atMs: SIM_EPOCH_MS + 6000 });
    // Skipped by its overlap policy.
    token = log.claim('a', 6000, 'm2');
    log.outcome(6001, 'a', 6000, 'm2', token, 'skipped');
    // Succeeded on m1, whose outcome was committed after the slot had moved to m2, which skipped it.
    token = log.claim('a', 7000, 'm1');
    log.start(7001, 'a', 7000, 'm1', token);
    const moved = log.reassign(7200, 'a', 7000, token, 'm2');
    log.outcome(7300, 'a', 7000, 'm1', token, 'succeeded');
    log.outcome(7301, 'a', 7000, 'm2', moved, 'skipped');
    // Started 3 ms late, failed, not retried.
    token = log.claim('a', 8000, 'm3');
    log.start(8003, 'a', 8000, 'm3', token);
    log.outcome(8010, 'a', 8000, 'm3', token, 'failed');
    // Two instants dropped by the catch-up policy.
    log.commit(11_000, { type: 'skip', job: 'a', throughMs: SIM_EPOCH_MS + 10_500, fromMs: SIM_EPOCH_MS + 8000, count: 2 });
    // Claimed ahead for after the end of the run.
    log.claim('a', 99_000, 'm1');

    const [a, b] = summarizeJobs(
      [
        { name: 'a', spec: 'every 1s' },
        { name: 'b', spec: 'never registered' },
      ],
      log.checker,
      20_000,
    );
    expect(log.violations).toEqual([]);
    expect(a).toEqual({
      name: 'a',
      spec: 'every 1s',
      claimed: 8,
      runs: 6,
      succeeded: 3,
      failed: 1,
      aborted: 1,
      skipped: 1,
      expired: 1,
      noOutcome: 1,
      pending: 1,
      missed: 2,
      reassigned: 2,
      // First starts: -10, 1, 3, 10, 100 ms (nearest rank).
      latenessMs: { p50: 3, p99: 100, max: 100 },
      histogram: [1, 2, 1, 1, 0, 0],
    });
    expect(b).toEqual({ name: 'b', spec: 'never registered', claimed: 0, runs: 0, succeeded: 0, failed: 0, aborted: 0, skipped: 0, expired: 0, noOutcome: 0, pending: 0, missed: 0, reassigned: 0, latenessMs: null, histogram: [0, 0, 0, 0, 0, 0] });
  });
});

describe("the scheduler checker's sightings of the log", () => {
  const register = (job: string, member = 'm1'): SchedulerCommand => ({ type: 'register', job, spec: parseSpec({ every: '1s' }), mode: 'one', policy: { retries: 0, retryDelayMs: 200, catchUp: { policy: 'latest' } }, member, atMs: SIM_EPOCH_MS });
  const version = SUPPORTED.stateMachine.max;

  it("sights each command of a batch's entry once, as the first member to apply it applies them, and none on another member or in a life's replay", () => {
    const checker = new SchedulerChecker(() => undefined);
    // One entry (index 5) holding three registrations, as a batch does.
    expect(['a', 'b', 'c'].map((job) => checker.onApplied(0, 'm1', 5, register(job), { ok: true }, version))).toEqual([true, true, true]);
    expect([...checker.jobs.keys()]).toEqual(['a', 'b', 'c']);
    // Another member applies the same entry: no sighting.
    expect(['a', 'b', 'c'].map((job) => checker.onApplied(1, 'm2', 5, register(job, 'm2'), { ok: true }, version))).toEqual([false, false, false]);
    // m1's next life replays it from its snapshot: no sighting either.
    checker.onMemberStart(2, 'm1');
    expect(['a', 'b', 'c'].map((job) => checker.onApplied(2, 'm1', 5, register(job), { ok: true }, version))).toEqual([false, false, false]);
    // The next entry is sighted by whoever applies it first.
    expect(checker.onApplied(3, 'm2', 6, register('d', 'm2'), { ok: true }, version)).toBe(true);
    expect(checker.onApplied(3, 'm1', 6, register('d'), { ok: true }, version)).toBe(false);
  });
});
