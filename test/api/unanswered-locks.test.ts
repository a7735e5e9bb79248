import { describe, expect, it } from 'vitest';
import { letGoIfUnanswered, MAX_UNANSWERED_LOCKS, UnansweredLocks } from '../../src/api/unanswered-locks.js';
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
});
