import { encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { planDepartures } from '../../src/scheduler/departures.js';
import { claimEndedAt } from '../../src/scheduler/planner.js';
import { claimKey } from '../../src/scheduler/records.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { MISSED, MISSED_REASONS, type AssignMode, type SchedulerCommand } from '../../src/scheduler/command.js';
import { decodeEntry, encodeCommand } from '../../src/runtime/commands.js';
import { SUPPORTED } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const POLICY = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } } as const;

/** Jobs `all` (mode 'all') and `one` (mode 'one'), handled by a, b and c, each with a claimed slot at T0 + 1000 (tokens 7 and 8). */
function claimed(): SchedulerState {
  const s = new SchedulerState();
  let index = 0;
  for (const [job, mode] of [['all', 'all'], ['one', 'one']] as const satisfies ReadonlyArray<readonly [string, AssignMode]>) {
    for (const member of ['a', 'b', 'c']) s.apply(++index, { type: 'register', job, spec: parseSpec({ every: '1s' }), mode, policy: POLICY, member, atMs: T0 });
  }
  s.apply(7, { type: 'claim', job: 'all', slotMs: T0 + 1000, assignees: ['a', 'b', 'c'] });
  s.apply(8, { type: 'claim', job: 'one', slotMs: T0 + 1000, assignees: ['c'] });
  return s;
}

const INPUT = { configured: new Set(['a', 'b']), nowMs: T0 + 2000, maxCommands: 100 };

describe('the work of a member that left the configuration', () => {
  it("is settled: its share of a mode 'all' slot recorded missed, and it no longer handles any job", () => {
    const s = claimed();
    // c ran nothing, a succeeded, b's run is in progress: only c's share is c's to settle.
    s.apply(9, { type: 'outcome', job: 'all', slotMs: T0 + 1000, token: 7, member: 'a', outcome: 'succeeded', atMs: T0 + 1100 });
    s.apply(10, { type: 'started', job: 'all', slotMs: T0 + 1000, token: 7, member: 'b', atMs: T0 + 1000 });
    const commands = planDepartures(s, INPUT);
    expect(commands).toEqual([
      { type: 'forfeit', job: 'all', slotMs: T0 + 1000, token: 7, member: 'c', atMs: T0 + 2000 },
      { type: 'unregister', job: 'all', member: 'c' },
      { type: 'unregister', job: 'one', member: 'c' },
    ]);
    commands.forEach((command, i) => expect(s.apply(11 + i, command).ok).toBe(true));
    const claim = s.claims.get(claimKey('all', T0 + 1000));
    expect(claim?.outcomes.get('c')).toEqual({ outcome: MISSED, atMs: T0 + 2000, token: 7, error: MISSED_REASONS['member-removed'] });
    // The token stays: b's run still holds the slot, and reports under it.
    expect(claim?.token).toBe(7);
    expect(s.apply(20, { type: 'outcome', job: 'all', slotMs: T0 + 1000, token: 7, member: 'b', outcome: 'succeeded', atMs: T0 + 2100 }).ok).toBe(true);
    expect(claim === undefined ? null : claimEndedAt(s, claim)).toBe(T0 + 2100);
    expect([...(s.jobs.get('one')?.handlers ?? [])]).toEqual(['a', 'b']);
    // Nothing is left to settle.
    expect(planDepartures(s, INPUT)).toEqual([]);
  });

  it('leaves a member the leader still counts as holding its claims a handler of its jobs, until it no longer does', () => {
    const s = claimed();
    // c may not know it was removed: unregistered, its claim of 'one' (not started) would count as given back and move.
    const waiting = planDepartures(s, { ...INPUT, holding: new Set(['a', 'b', 'c']) });
    expect(waiting.filter((c) => c.type === 'unregister')).toEqual([]);
    expect(waiting).toEqual([{ type: 'forfeit', job: 'all', slotMs: T0 + 1000, token: 7, member: 'c', atMs: T0 + 2000 }]);
    // Lost: out of the holding members.
    expect(planDepartures(s, { ...INPUT, holding: new Set(['a', 'b']) }).filter((c) => c.type === 'unregister')).toEqual([
      { type: 'unregister', job: 'all', member: 'c' },
      { type: 'unregister', job: 'one', member: 'c' },
    ]);
  });

  it("records missed its run of a mode 'one' slot that a later slot replaced (which never moves), and moves nothing else", () => {
    const s = claimed();
    expect(planDepartures(s, INPUT).filter((c) => c.type === 'forfeit' && c.job === 'one')).toEqual([]);
    s.apply(9, { type: 'started', job: 'one', slotMs: T0 + 1000, token: 8, member: 'c', atMs: T0 + 1000 });
    s.apply(10, { type: 'cancel', job: 'one', slotMs: T0 + 1000, token: 8, bySlotMs: T0 + 2000, atMs: T0 + 2000 });
    const forfeit = planDepartures(s, INPUT).find((c) => c.type === 'forfeit' && c.job === 'one');
    expect(forfeit).toEqual({ type: 'forfeit', job: 'one', slotMs: T0 + 1000, token: 8, member: 'c', atMs: T0 + 2000 });
    expect(forfeit === undefined ? null : s.apply(11, forfeit).ok).toBe(true);
    expect(s.claims.get(claimKey('one', T0 + 1000))?.outcomes.get('c')?.outcome).toBe(MISSED);
  });

  it('plans nothing while every handler and assignee is a member, and stays within its bound', () => {
    expect(planDepartures(claimed(), { ...INPUT, configured: new Set(['a', 'b', 'c']) })).toEqual([]);
    expect(planDepartures(claimed(), { ...INPUT, maxCommands: 2 })).toHaveLength(2);
  });

  it("a forfeit applies only to an assignee's share with no outcome under the current token, of a mode 'all' slot or a replaced one", () => {
    const s = claimed();
    const forfeit = (member: string, token = 7, job = 'all'): SchedulerCommand => ({ type: 'forfeit', job, slotMs: T0 + 1000, token, member, atMs: T0 + 2000 });
    expect(s.apply(9, forfeit('c', 6))).toEqual({ ok: false, reason: 'stale-token' });
    expect(s.apply(9, forfeit('d'))).toEqual({ ok: false, reason: 'unknown-job' });
    // A mode 'one' slot not replaced moves instead.
    expect(s.apply(9, forfeit('c', 8, 'one'))).toEqual({ ok: false, reason: 'unknown-job' });
    s.apply(9, { type: 'outcome', job: 'all', slotMs: T0 + 1000, token: 7, member: 'c', outcome: 'failed', atMs: T0 + 1100 });
    expect(s.apply(10, forfeit('c'))).toEqual({ ok: false, reason: 'ended' });
    expect(s.claims.get(claimKey('all', T0 + 1000))?.outcomes.get('c')?.outcome).toBe('failed');
  });

  it('a forfeit is written in the form of cluster version 2 only: skipped as inactive below it, malformed in the first form', () => {
    const command: SchedulerCommand = { type: 'forfeit', job: 'all', slotMs: T0 + 1000, token: 7, member: 'c', atMs: T0 + 2000 };
    const bytes = encodeCommand({ kind: 'scheduler', command });
    expect(decodeEntry(bytes, 2, SUPPORTED)).toEqual({ kind: 'scheduler', command });
    expect(decodeEntry(bytes, 1, SUPPORTED)).toEqual({ kind: 'skip', reason: 'inactive' });
    // The form cronraft 0.1.0 reads never carries one (nor an expire of a reason it does not know).
    const v1 = (value: unknown): ReturnType<typeof decodeEntry> => decodeEntry(encode([1, value]), 2, SUPPORTED);
    expect(v1(command)).toEqual({ kind: 'skip', reason: 'malformed' });
    expect(v1({ type: 'expire', job: 'all', slotMs: T0, fromToken: 7, reason: 'member-removed', atMs: T0 })).toEqual({ kind: 'skip', reason: 'malformed' });
  });
});
