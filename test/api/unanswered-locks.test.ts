import { describe, expect, it } from 'vitest';
import { letGoIfUnanswered, MAX_UNANSWERED_LOCKS, UnansweredLocks } from '../../src/api/unanswered-locks.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';

type Lock = Extract<SchedulerCommand, { type: 'lock' }>;
const lock = (name: string, atMs: number, member = 'a'): Lock => ({ type: 'lock', name, member, atMs, untilMs: atMs + 1000 });

describe('UnansweredLocks', () => {
  it('knows a lock by its name and stamp, once', () => {
    const locks = new UnansweredLocks();
    locks.add(lock('x', 100), 100);
    expect(locks.taken('x', 101)).toBe(false);
    expect(locks.taken('y', 100)).toBe(false);
    expect(locks.taken('x', 100)).toBe(true);
    expect(locks.taken('x', 100)).toBe(false);
  });

  it('forgets a lock past its atMostFor, and the oldest past MAX_UNANSWERED_LOCKS', () => {
    const locks = new UnansweredLocks();
    locks.add(lock('ended', 0), 0);
    locks.add(lock('x', 500), 1000);
    // 'ended' would have expired at 1000: its commit holds nothing by then.
    expect(locks.taken('ended', 0)).toBe(false);
    for (let i = 0; i < MAX_UNANSWERED_LOCKS; i++) locks.add(lock(`n${i}`, 900), 1000);
    expect(locks.size).toBe(MAX_UNANSWERED_LOCKS);
    expect(locks.taken('x', 500)).toBe(false);
    expect(locks.taken(`n${MAX_UNANSWERED_LOCKS - 1}`, 900)).toBe(true);
  });

  it('lets go only of a lock this member took, applied, whose proposal went unanswered', () => {
    const locks = new UnansweredLocks();
    locks.add(lock('x', 100), 100);
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
