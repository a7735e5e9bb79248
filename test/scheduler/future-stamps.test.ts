import { describe, expect, it } from 'vitest';
import { planTrigger } from '../../src/scheduler/operations.js';
import { plan, planReassignments, type PlanInput } from '../../src/scheduler/planner.js';
import { claimKey } from '../../src/scheduler/records.js';
import { parseSpec, type JobSpec } from '../../src/scheduler/spec.js';
import { STAMP_AHEAD_LIMIT_MS } from '../../src/scheduler/stamps.js';
import { SchedulerState } from '../../src/scheduler/state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
/** A stamp a year ahead of the leader's clock: a member's bug, a clock far off, a forged entry. */
const YEAR_AHEAD = T0 + 365 * 24 * 3600_000;
const HORIZON_MS = 10 * 60_000;

/** Job 'tick' on members a and b, its slot at T0 + 1 s claimed for a (token 10) and started there at T0 + 1 s. */
function started(spec: JobSpec, retries: number): SchedulerState {
  const s = new SchedulerState();
  for (const [i, member] of ['a', 'b'].entries()) {
    s.apply(i + 1, { type: 'register', job: 'tick', spec, mode: 'one', policy: { retries, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member, atMs: T0 });
  }
  s.apply(10, { type: 'claim', job: 'tick', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
  s.apply(11, { type: 'started', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', atMs: T0 + 1000 });
  return s;
}

const reassign = (nowMs: number): Parameters<typeof planReassignments>[1] => ({ nowMs, eligible: new Set(['a', 'b']), horizonMs: HORIZON_MS, maxCommands: 10, version: 3 });
const planAt = (nowMs: number): PlanInput => ({ nowMs, lookaheadMs: 1000, members: new Map([['a', { load: 0 }], ['b', { load: 0 }]]), maxClaims: 10, horizonMs: HORIZON_MS, version: 3 });

// A record stamped far ahead of the leader's clock put the retry's back-off, the claim's horizon
// and a fixed-delay job's next slot as far off: the claim never ended, the job never ran again.
describe('a record stamped far ahead of the leader clock', () => {
  it("does not put off a failed run's retry: its back-off counts from the run's start", () => {
    const s = started(parseSpec({ every: '1h' }), 1);
    s.apply(12, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'failed', atMs: YEAR_AHEAD });
    expect(planReassignments(s, reassign(T0 + 1500))).toEqual([]);
    expect(planReassignments(s, reassign(T0 + 2100))).toEqual([
      { type: 'reassign', job: 'tick', slotMs: T0 + 1000, fromToken: 10, assignees: ['b'], reason: 'retry', atMs: T0 + 2100 },
    ]);
  });

  it('does not keep a run whose member was lost from ever being recorded missed', () => {
    const s = new SchedulerState();
    s.apply(1, { type: 'register', job: 'tick', spec: parseSpec({ every: '1h' }), mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: 'a', atMs: T0 });
    s.apply(10, { type: 'claim', job: 'tick', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    s.apply(11, { type: 'started', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', atMs: YEAR_AHEAD });
    // Its member a lost, nobody else handles the job: past the horizon from the slot, it is missed.
    const lost = { ...reassign(T0 + 1000 + HORIZON_MS + 1), eligible: new Set(['b']) };
    expect(planReassignments(s, lost)).toEqual([{ type: 'expire', job: 'tick', slotMs: T0 + 1000, fromToken: 10, reason: 'expired', atMs: lost.nowMs }]);
  });

  it('does not stop a fixed-delay job: the run counts as ended at its start, the latest time believed', () => {
    const s = started(parseSpec({ delayAfterCompletion: 2000 }), 0);
    s.apply(12, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'succeeded', atMs: YEAR_AHEAD });
    const commands = plan(s, planAt(T0 + 5000));
    expect(commands).toEqual([{ type: 'claim', job: 'tick', slotMs: T0 + 3000, assignees: ['a'], fromMs: T0 + 1000, atMs: T0 + 5000 }]);
    // The log keeps the time as written: history shows it.
    expect(s.claims.get(claimKey('tick', T0 + 1000))?.outcomes.get('a')?.atMs).toBe(YEAR_AHEAD);
    // A trigger meanwhile waits for that slot, as it does for any scheduled slot due and not yet
    // claimed (found by a reviewing helper: believing the stamp, it took the mark past the slot,
    // and the leader's claim of it was refused).
    expect(planTrigger(s, s.jobs.get('tick')!, T0 + 5000, new Set(['a', 'b']))).toBe('wait');
  });

  it('is believed within the limit: a clock a little ahead puts the retry off by as much', () => {
    const s = started(parseSpec({ every: '1h' }), 1);
    const ahead = T0 + 1100 + STAMP_AHEAD_LIMIT_MS;
    s.apply(12, { type: 'outcome', job: 'tick', slotMs: T0 + 1000, token: 10, member: 'a', outcome: 'failed', atMs: ahead });
    expect(planReassignments(s, reassign(T0 + 2100))).toEqual([]);
    expect(planReassignments(s, reassign(ahead + 1000))).toMatchObject([{ type: 'reassign', reason: 'retry' }]);
  });
});
