import { describe, expect, it } from 'vitest';
import type { MemberState } from '../../src/api/state.js';
import { missedEventOf, slotsDroppedEventOf } from '../../src/cluster-events.js';
import { MemberWatch, WATCH_INTERVAL_MS } from '../../src/cluster-watch.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const member = (id: string, over: Partial<MemberState> = {}): MemberState => ({ id, addrs: [], voter: true, reachable: true, lastContactMs: 0, matchIndex: null, lag: null, peerId: null, clockOffsetMs: 0, clockSkewed: false, dialFailure: null, ...over });

describe('the events of what no log entry marks (MemberWatch)', () => {
  it('tells once of a member that became unreachable or skewed, and again after it recovered and was lost again', () => {
    const timers = new ManualTimers();
    let members = [member('a'), member('b')];
    const told: string[] = [];
    const watch = new MemberWatch(timers, () => members, {
      unreachable: (e) => told.push(`unreachable ${e.id} ${e.lastContactMs}`),
      clockSkewed: (e) => told.push(`skewed ${e.id} ${e.offsetMs}`),
    });
    watch.start();
    timers.advance(WATCH_INTERVAL_MS);
    expect(told).toEqual([]);
    members = [member('a'), member('b', { reachable: false, lastContactMs: 3000, clockSkewed: true, clockOffsetMs: -1500 })];
    timers.advance(WATCH_INTERVAL_MS);
    timers.advance(WATCH_INTERVAL_MS);
    // Skewed at once; unreachable at its second look in a row.
    expect(told).toEqual(['skewed b -1500', 'unreachable b 3000']);
    members = [member('a'), member('b')];
    timers.advance(WATCH_INTERVAL_MS);
    members = [member('a'), member('b', { reachable: false, lastContactMs: null })];
    timers.advance(WATCH_INTERVAL_MS);
    timers.advance(WATCH_INTERVAL_MS);
    expect(told).toEqual(['skewed b -1500', 'unreachable b 3000', 'unreachable b null']);
    watch.stop();
  });

  it('tells no member unreachable at one look only: a joiner saw its leader so, its connection still opening', () => {
    const timers = new ManualTimers();
    let members = [member('a'), member('b', { reachable: false, lastContactMs: 377 })];
    const told: string[] = [];
    const watch = new MemberWatch(timers, () => members, { unreachable: (e) => told.push(`unreachable ${e.id} ${e.lastContactMs}`), clockSkewed: () => undefined });
    watch.start();
    timers.advance(WATCH_INTERVAL_MS);
    members = [member('a'), member('b')];
    timers.advance(WATCH_INTERVAL_MS);
    // Unreachable at one look, then reachable, then at one look again: never two in a row.
    members = [member('a'), member('b', { reachable: false, lastContactMs: 900 })];
    timers.advance(WATCH_INTERVAL_MS);
    members = [member('a'), member('b')];
    timers.advance(WATCH_INTERVAL_MS);
    expect(told).toEqual([]);
    // Two in a row: told once, however long it lasts.
    members = [member('a'), member('b', { reachable: false, lastContactMs: 1500 })];
    for (let i = 0; i < 5; i++) timers.advance(WATCH_INTERVAL_MS);
    expect(told).toEqual(['unreachable b 1500']);
    watch.stop();
  });

  it('tells a clock drifting about maxClockSkewMs skewed once, and again only after it came back within SKEW_CLEARED_SHARE of it (each crossing was an event, once a second)', () => {
    const timers = new ManualTimers();
    let offsetMs = 0;
    const told: number[] = [];
    const watch = new MemberWatch(timers, () => [member('a'), member('b', { clockOffsetMs: offsetMs, clockSkewed: Math.abs(offsetMs) > 1000 })], { unreachable: () => undefined, clockSkewed: (e) => told.push(e.offsetMs) }, WATCH_INTERVAL_MS, 1000);
    for (const ms of [990, 1010, 995, 1005, 980, 1020]) {
      offsetMs = ms;
      watch.look();
    }
    expect(told).toEqual([1010]);
    offsetMs = 700;
    watch.look();
    offsetMs = 1010;
    watch.look();
    expect(told).toEqual([1010, 1010]);
  });

  it("a listener's error does not stop the watch", () => {
    const timers = new ManualTimers();
    let calls = 0;
    const watch = new MemberWatch(timers, () => [member('b', { reachable: false }), member('c', { reachable: false })], {
      unreachable: () => {
        calls++;
        throw new Error('app bug');
      },
      clockSkewed: () => undefined,
    });
    watch.look();
    watch.look();
    expect(calls).toBe(2);
  });
});

describe('the missed event (missedEventOf)', () => {
  const expire: SchedulerCommand = { type: 'expire', job: 'report', slotMs: 5000, fromToken: 2, reason: 'expired', atMs: 9000 };
  const forfeit: SchedulerCommand = { type: 'forfeit', job: 'everywhere', slotMs: 6000, token: 3, member: 'b', atMs: 9000 };

  it('is made by an expire or a forfeit that applied, with the slot and the reason', () => {
    expect(missedEventOf(7, expire, { ok: true })).toEqual({ job: 'report', slot: new Date(5000), reason: 'expired', index: 7 });
    expect(missedEventOf(8, forfeit, { ok: true })).toEqual({ job: 'everywhere', slot: new Date(6000), reason: 'member-removed', index: 8 });
  });

  it('is not made by one refused, nor by any other command', () => {
    expect(missedEventOf(7, expire, { ok: false, reason: 'stale-token' })).toBeNull();
    expect(missedEventOf(7, { type: 'started', job: 'report', slotMs: 5000, token: 2, member: 'a', atMs: 5000 }, { ok: true })).toBeNull();
  });
});

describe('the slots-dropped event (slotsDroppedEventOf)', () => {
  const skip: SchedulerCommand = { type: 'skip', job: 'tick', fromMs: 1000, throughMs: 24_000, count: 23 };

  it('is made by a skip that applied, with the slots it dropped', () => {
    expect(slotsDroppedEventOf(9, skip, { ok: true })).toEqual({ job: 'tick', count: 23, after: new Date(1000), through: new Date(24_000), index: 9 });
  });

  it('is not made by a skip refused (the mark moved since the plan), nor by any other command', () => {
    expect(slotsDroppedEventOf(9, skip, { ok: false, reason: 'stale-token' })).toBeNull();
    expect(slotsDroppedEventOf(9, { type: 'expire', job: 'tick', slotMs: 5000, fromToken: 2, reason: 'expired', atMs: 9000 }, { ok: true })).toBeNull();
  });
});
