import { describe, expect, it } from 'vitest';
import { LET_GO_ATTEMPTS, letGoHeldUnanswered, letGoIfUnanswered, MAX_GRANTED_REMEMBERED, MAX_UNANSWERED_LOCKS, UnansweredLocks } from '../../src/api/unanswered-locks.js';
import { NotLeaderError, NotRunningError } from '../../src/errors.js';
import { decodeEntry } from '../../src/runtime/commands.js';
import type { LockRecord } from '../../src/scheduler/records.js';
import { SUPPORTED } from '../../src/version/versions.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';

type Lock = Extract<SchedulerCommand, { type: 'lock' }>;
const lock = (name: string, atMs: number, member = 'a'): Lock => ({ type: 'lock', name, member, atMs, untilMs: atMs + 1000 });

/** A lock of `name` proposed at `atMs` on `locks` and left without an answer at `nowMs`. */
function unanswered(locks: UnansweredLocks, name: string, atMs: number, nowMs = atMs): Lock {
  const proposed = lock(name, locks.proposing(name, atMs));
  locks.settled(proposed, false, nowMs);
  return proposed;
}

describe('UnansweredLocks', () => {
  it('knows a lock by its name and stamp, once; an answered one is not watched', () => {
    const locks = new UnansweredLocks();
    unanswered(locks, 'x', 100);
    expect(locks.taken('x', 101)).toBe(false);
    expect(locks.taken('y', 100)).toBe(false);
    expect(locks.taken('x', 100)).toBe(true);
    expect(locks.taken('x', 100)).toBe(false);
    locks.settled(lock('z', locks.proposing('z', 100)), true, 100);
    expect(locks.taken('z', 100)).toBe(false);
  });

  it('stamps a lock apart from every lock of its name in flight or watched, so that a granted call is never let go for another’s lost answer', () => {
    const locks = new UnansweredLocks();
    const first = lock('x', locks.proposing('x', 100));
    // A second call in the same millisecond, the first still in flight.
    const second = lock('x', locks.proposing('x', 100));
    expect([first.atMs, second.atMs]).toEqual([100, 101]);
    locks.settled(first, false, 100);
    locks.settled(second, true, 100);
    // The second's stamp again (the time stepped back), the first watched: apart from it.
    expect(locks.proposing('x', 100)).toBe(101);
    expect(locks.proposing('y', 100)).toBe(100);
    expect(locks.taken('x', 101)).toBe(false);
    expect(locks.taken('x', 100)).toBe(true);
  });

  it('forgets a lock past its atMostFor, and the oldest past MAX_UNANSWERED_LOCKS', () => {
    const locks = new UnansweredLocks();
    unanswered(locks, 'ended', 0);
    unanswered(locks, 'x', 500, 1000);
    // 'ended' would have expired at 1000: its commit holds nothing by then.
    expect(locks.taken('ended', 0)).toBe(false);
    for (let i = 0; i < MAX_UNANSWERED_LOCKS; i++) unanswered(locks, `n${i}`, 900, 1000);
    expect(locks.size).toBe(MAX_UNANSWERED_LOCKS);
    expect(locks.taken('x', 500)).toBe(false);
    expect(locks.taken(`n${MAX_UNANSWERED_LOCKS - 1}`, 900)).toBe(true);
  });

  it('lets go only of a lock this member took, applied, whose proposal went unanswered', () => {
    const locks = new UnansweredLocks();
    unanswered(locks, 'x', 100);
    const proposed: Uint8Array[] = [];
    const propose = async (data: Uint8Array): Promise<void> => void proposed.push(data);
    letGoIfUnanswered('a', 5, lock('x', 100, 'b'), { ok: true }, locks, propose);
    letGoIfUnanswered('a', 5, lock('x', 100), { ok: false, reason: 'locked' }, locks, propose);
    letGoIfUnanswered('a', 5, lock('x', 99), { ok: true }, locks, propose);
    expect(proposed).toHaveLength(0);
    letGoIfUnanswered('a', 5, lock('x', 100), { ok: true }, locks, propose);
    expect(proposed).toHaveLength(1);
  });

  it('finds in a snapshot installed, by name, holder and end, a lock whose proposal went unanswered, once; never one of another holder or end, nor one above the snapshot', () => {
    const locks = new UnansweredLocks();
    unanswered(locks, 'x', 100);
    unanswered(locks, 'y', 100);
    unanswered(locks, 'w', 100);
    locks.installed(10);
    const restored = new Map<string, LockRecord>([
      ['x', { holder: 'a', token: 7, untilMs: 1100 }],
      // Another member's, or one this member took with another end: not the one proposed.
      ['y', { holder: 'b', token: 8, untilMs: 1100 }],
      ['z', { holder: 'a', token: 9, untilMs: 1100 }],
      // Applied as a command after the snapshot: known by its stamp (letGoIfUnanswered), not here.
      ['w', { holder: 'a', token: 11, untilMs: 1100 }],
    ]);
    expect(locks.heldUnanswered('a', restored, 200)).toEqual([{ name: 'x', token: 7, atMs: 100 }]);
    expect(locks.heldUnanswered('a', restored, 200)).toEqual([]);
    restored.set('y', { holder: 'a', token: 8, untilMs: 1200 });
    expect(locks.heldUnanswered('a', restored, 200)).toEqual([]);
    // A later snapshot holds 'w'.
    locks.installed(12);
    expect(locks.heldUnanswered('a', restored, 200)).toEqual([{ name: 'w', token: 11, atMs: 100 }]);
    // Past its end the lock holds nothing to let go.
    restored.set('y', { holder: 'a', token: 8, untilMs: 1100 });
    expect(locks.heldUnanswered('a', restored, 1100)).toEqual([]);
    expect(locks.size).toBe(0);
  });

  it('never takes a lock granted to a call in flight for an unanswered one of the same name and end (its task is about to run), remembered as the lock applies', () => {
    const locks = new UnansweredLocks();
    // Two calls of 'x': the first unanswered (1,000 ms), the second (900 ms) with the same end, in flight.
    unanswered(locks, 'x', 100);
    const second: Lock = { type: 'lock', name: 'x', member: 'a', atMs: locks.proposing('x', 200), untilMs: 1100 };
    const proposed: Uint8Array[] = [];
    letGoIfUnanswered('a', 12, second, { ok: true }, locks, async (data) => void proposed.push(data));
    expect(proposed).toHaveLength(0);
    locks.installed(20);
    const restored = new Map<string, LockRecord>([['x', { holder: 'a', token: 12, untilMs: 1100 }]]);
    expect(locks.heldUnanswered('a', restored, 300)).toEqual([]);
    expect(locks.size).toBe(1);
    // The other token: the unanswered call's lock.
    restored.set('x', { holder: 'a', token: 11, untilMs: 1100 });
    expect(locks.heldUnanswered('a', restored, 300)).toEqual([{ name: 'x', token: 11, atMs: 100 }]);
  });

  it('remembers at most MAX_GRANTED_REMEMBERED granted locks (as many as the cluster keeps), forgetting the oldest', () => {
    const locks = new UnansweredLocks();
    const grant = (name: string, token: number): void => void locks.answering({ type: 'lock', name, member: 'a', atMs: locks.proposing(name, 0), untilMs: 1100 }, token);
    for (let i = 0; i <= MAX_GRANTED_REMEMBERED; i++) grant(`n${i}`, i + 1);
    unanswered(locks, 'n0', 100);
    unanswered(locks, `n${MAX_GRANTED_REMEMBERED}`, 100);
    locks.installed(MAX_GRANTED_REMEMBERED + 1);
    // n0's grant was forgotten: its token no longer shields it; the newest's still does.
    const restored = new Map<string, LockRecord>([
      ['n0', { holder: 'a', token: 1, untilMs: 1100 }],
      [`n${MAX_GRANTED_REMEMBERED}`, { holder: 'a', token: MAX_GRANTED_REMEMBERED + 1, untilMs: 1100 }],
    ]);
    expect(locks.heldUnanswered('a', restored, 200).map((l) => l.name)).toEqual(['n0']);
  });

  it('lets go of each lock found, an unlock at its stamp under its token', () => {
    const locks = new UnansweredLocks();
    unanswered(locks, 'x', 100);
    const proposed: Uint8Array[] = [];
    locks.installed(7);
    letGoHeldUnanswered('a', new Map([['x', { holder: 'a', token: 7, untilMs: 1100 }]]), locks, 200, async (data) => void proposed.push(data));
    expect(proposed.map((data) => decodeEntry(data, SUPPORTED.stateMachine.max, SUPPORTED))).toEqual([{ kind: 'scheduler', command: { type: 'unlock', name: 'x', token: 7, untilMs: 100 } }]);
  });

  it('tries the unlock again later while it fails (no leader for a moment), up to LET_GO_ATTEMPTS in all, and not once its member stopped', async () => {
    const tries = async (failures: number, error: Error = new NotLeaderError(null)): Promise<number> => {
      const locks = new UnansweredLocks();
      unanswered(locks, 'x', 100);
      let proposed = 0;
      const queued: Array<() => void> = [];
      letGoIfUnanswered('a', 5, lock('x', 100), { ok: true }, locks, async () => {
        if (++proposed <= failures) throw error;
      }, (run) => queued.push(run));
      // Each try settles, then the next one is run.
      for (let turn = 0; turn < 20; turn++) {
        await new Promise((resolve) => setImmediate(resolve));
        queued.splice(0).forEach((run) => run());
      }
      return proposed;
    };
    expect(await tries(0)).toBe(1);
    expect(await tries(2)).toBe(3);
    expect(await tries(100)).toBe(LET_GO_ATTEMPTS);
    expect(await tries(100, new NotRunningError('stopped'))).toBe(1);
  });
});
