import { describe, expect, it } from 'vitest';
import { claimEndedAt, MAX_INTERRUPTED_ATTEMPTS, planReassignments } from '../../src/scheduler/planner.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { claimKey } from '../../src/scheduler/records.js';
import { PAST_HORIZON_VERSION } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const SLOT = T0 + 1000;
const HORIZON = 600_000;

/** A slot whose run the cluster interrupted MAX_INTERRUPTED_ATTEMPTS times (each move to the other member, each run interrupted). */
function interruptedTenTimes(version: number): SchedulerState {
  const s = new SchedulerState();
  let index = 0;
  for (const member of ['a', 'b']) s.apply(++index, { type: 'register', job: 'tick', spec: parseSpec({ every: '1h' }), mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member, atMs: T0 }, version);
  s.apply(++index, { type: 'claim', job: 'tick', slotMs: SLOT, assignees: ['a'] }, version);
  let atMs = SLOT;
  for (;;) {
    const claim = s.claims.get(claimKey('tick', SLOT))!;
    const member = claim.assignees[0]!;
    s.apply(++index, { type: 'started', job: 'tick', slotMs: SLOT, token: claim.token, member, atMs: (atMs += 10) }, version);
    s.apply(++index, { type: 'outcome', job: 'tick', slotMs: SLOT, token: claim.token, member, outcome: 'interrupted', atMs: (atMs += 10) }, version);
    if (claim.attempt >= MAX_INTERRUPTED_ATTEMPTS) return s;
    const moved = planReassignments(s, { nowMs: atMs, eligible: new Set(['a', 'b']), horizonMs: HORIZON, maxCommands: 10, version });
    expect(moved).toMatchObject([{ type: 'reassign', reason: 'assignee-lost' }]);
    s.apply(++index, moved[0]!, version);
  }
}

describe('a slot whose runs the cluster interrupted ten times (README: it "ends `interrupted`")', () => {
  it('keeps `interrupted` as its final outcome past the horizon (cluster version 3)', () => {
    const s = interruptedTenTimes(PAST_HORIZON_VERSION);
    const claim = s.claims.get(claimKey('tick', SLOT))!;
    expect(claim.attempt).toBe(MAX_INTERRUPTED_ATTEMPTS);
    // Already final: the planner counts it ended (a fixed-delay job would go on from it).
    expect(claimEndedAt(s, claim)).not.toBeNull();
    const endedAt = claimEndedAt(s, claim);
    // Past the horizon, the leader leaves that final outcome as it is (it recorded it `missed`,
    // "expired: ...", under a new token).
    const later = planReassignments(s, { nowMs: SLOT + 2 * HORIZON, eligible: new Set(['a', 'b']), horizonMs: HORIZON, maxCommands: 10, version: PAST_HORIZON_VERSION });
    for (const command of later) s.apply(10_000, command, PAST_HORIZON_VERSION);
    const after = s.claims.get(claimKey('tick', SLOT))!;
    expect(after.outcomes.get(after.assignees[0]!)?.outcome).toBe('interrupted');
    expect(claimEndedAt(s, after)).toBe(endedAt);
  });
});
