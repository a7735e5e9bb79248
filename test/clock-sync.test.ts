import { describe, expect, it } from 'vitest';
import type { HeartbeatMessage, HeartbeatResponse, Message, NodeId } from '../src/raft/types.js';
import {
  CLOCK_BOOTSTRAP_AFTER_MS,
  CLOCK_OFFSET_MAX_AGE_MS,
  ClockSync,
  MAX_CLOCK_OFFSET_MS,
  MAX_CLOCK_SAMPLE_RTT_MS,
  median,
} from '../src/runtime/clock-sync.js';

const voters = ['a', 'b', 'c'];
const T0 = Date.UTC(2026, 0, 1);

interface Exchange {
  /** True time the leader sends at. */
  readonly at: number;
  /** Each clock minus true time. */
  readonly leaderSkew?: number;
  readonly peerSkew?: number;
  /** One-way delays and the time the peer holds the heartbeat before answering. */
  readonly out?: number;
  readonly back?: number;
  readonly hold?: number;
}

/** Feeds one NTP exchange to the leader's ClockSync, computing the four readings from true times. */
function exchange(sync: ClockSync, peer: NodeId, e: Exchange): boolean {
  const { at, leaderSkew = 0, peerSkew = 0, out = 2, back = 2, hold = 1 } = e;
  const t1 = at + leaderSkew;
  const t2 = at + out + peerSkew;
  const t3 = at + out + hold + peerSkew;
  const t4 = at + out + hold + back + leaderSkew;
  return sync.sample(peer, t1, t2, t3, t4);
}

function leader(options: Partial<ConstructorParameters<typeof ClockSync>[0]> = {}, since = T0): ClockSync {
  const sync = new ClockSync({ self: 'a', voters, ...options });
  sync.setLeading(true, since);
  return sync;
}

describe('ClockSync on the leader', () => {
  it('computes a peer offset and round trip NTP-style, good to half the asymmetry', () => {
    const sync = leader();
    expect(exchange(sync, 'c', { at: T0, peerSkew: 0, out: 2, back: 2, hold: 1 })).toBe(true);
    expect(exchange(sync, 'b', { at: T0, peerSkew: 500, out: 3, back: 5, hold: 1 })).toBe(true);
    const offsets = sync.offsets(T0 + 10);
    // θ = 500 + (out - back) / 2 = 499; rtt = out + back = 8 (the hold excluded).
    expect(offsets.get('b')).toEqual({ offsetMs: 499, rttMs: 8, ageMs: 10 - 9 });
    expect(offsets.get('c')).toEqual({ offsetMs: 0, rttMs: 4, ageMs: 10 - 5 });
    // Median of {0, 0, 499}: the leader's clock is the cluster's.
    expect(sync.synced).toBe(true);
    expect(sync.correctionMs).toBe(0);
    expect(offsets.get('a')).toMatchObject({ offsetMs: 0, rttMs: 0 });
  });

  it('uses the sample with the shortest round trip among the last few (NTP clock filter)', () => {
    const sync = leader();
    exchange(sync, 'c', { at: T0 });
    // A congested path one way: 200 ms out, 2 back, gives an offset 99 ms too high.
    exchange(sync, 'b', { at: T0, peerSkew: 1000, out: 200, back: 2 });
    expect(sync.offsets(T0 + 300).get('b')?.offsetMs).toBe(1099);
    exchange(sync, 'b', { at: T0 + 300, peerSkew: 1000, out: 1, back: 1 });
    exchange(sync, 'b', { at: T0 + 350, peerSkew: 1000, out: 150, back: 3 });
    expect(sync.offsets(T0 + 600).get('b')).toMatchObject({ offsetMs: 1000, rttMs: 2 });
  });

  it('forgets the samples from before a clock was stepped', () => {
    const sync = leader();
    for (let i = 0; i < 4; i++) exchange(sync, 'b', { at: T0 + i * 50, out: 1, back: 1 });
    exchange(sync, 'c', { at: T0 + 200 });
    expect(sync.offsets(T0 + 210).get('b')?.offsetMs).toBe(0);
    // b's clock is stepped 60 s ahead; its next sample has a longer round trip than the old ones.
    exchange(sync, 'b', { at: T0 + 250, peerSkew: 60_000, out: 5, back: 5 });
    expect(sync.offsets(T0 + 270).get('b')).toMatchObject({ offsetMs: 60_000, rttMs: 10 });
    // Slow drift is not a step: samples stay, and the shortest round trip wins.
    exchange(sync, 'c', { at: T0 + 300, peerSkew: 0.4, out: 3, back: 3 });
    expect(sync.offsets(T0 + 310).get('c')).toMatchObject({ offsetMs: 0, rttMs: 4 });
  });

  it('forgets samples beyond the filter window', () => {
    const sync = leader({ filterSamples: 2 });
    exchange(sync, 'b', { at: T0, peerSkew: 10, out: 1, back: 1 });
    exchange(sync, 'b', { at: T0 + 50, peerSkew: 11, out: 5, back: 5 });
    exchange(sync, 'b', { at: T0 + 100, peerSkew: 12, out: 4, back: 4 });
    // The 2 ms sample fell out of the window; the best of the last two is the 8 ms one.
    exchange(sync, 'c', { at: T0 + 100 });
    expect(sync.offsets(T0 + 200).get('b')).toMatchObject({ offsetMs: 12, rttMs: 8 });
  });

  it('puts the cluster time at the good clocks when the leader is 60 s off', () => {
    const sync = leader();
    for (const peer of ['b', 'c']) exchange(sync, peer, { at: T0, leaderSkew: 60_000, out: 3, back: 1 });
    // Followers are 60 s behind the leader (θ = -60000 + 1 from the asymmetry).
    expect(sync.correctionMs).toBe(-59_999);
    const localNow = T0 + 60_000 + 10;
    expect(Math.abs(sync.clusterTime(localNow) - (T0 + 10))).toBeLessThanOrEqual(1);
    const offsets = sync.offsets(localNow);
    expect(offsets.get('a')?.offsetMs).toBe(59_999);
    expect(offsets.get('b')?.offsetMs).toBe(0);
    expect(offsets.get('c')?.offsetMs).toBe(0);
  });

  it('ignores one follower 60 s off', () => {
    const sync = leader();
    exchange(sync, 'b', { at: T0, peerSkew: 60_000 });
    exchange(sync, 'c', { at: T0, peerSkew: 3 });
    // The median of {0, 3, 60000} is c's clock: the bad one counts for nothing.
    expect(sync.correctionMs).toBe(3);
    expect(sync.offsets(T0 + 10).get('b')?.offsetMs).toBe(60_000 - 3);
  });

  it('takes the mean of the middle two of an even count (robust with four or more clocks)', () => {
    expect(median([0, 10, 20, 60_000])).toBe(15);
    expect(median([5])).toBe(5);
    expect(median([3, -60_000, 1])).toBe(1);
    const sync = new ClockSync({ self: 'a', voters: ['a', 'b', 'c', 'd'] });
    sync.setLeading(true, T0);
    exchange(sync, 'b', { at: T0, peerSkew: 60_000 });
    exchange(sync, 'c', { at: T0, peerSkew: 10 });
    // Three of four clocks already make a robust median.
    expect(sync.correctionMs).toBe(10);
    exchange(sync, 'd', { at: T0, peerSkew: 20 });
    expect(sync.correctionMs).toBe(15);
  });

  it('holds over its correction when it no longer sees three clocks, and drops stale peers', () => {
    const sync = leader();
    exchange(sync, 'b', { at: T0, leaderSkew: 60_000 });
    exchange(sync, 'c', { at: T0, leaderSkew: 60_000 });
    expect(sync.correctionMs).toBe(-60_000);
    // c goes silent; b's clock moves by 20 ms. Two clocks cannot tell which is right: nothing moves.
    const later = T0 + CLOCK_OFFSET_MAX_AGE_MS + 1000;
    exchange(sync, 'b', { at: later, leaderSkew: 60_000, peerSkew: 20 });
    expect(sync.correctionMs).toBe(-60_000);
    const offsets = sync.offsets(later + 60_000 + 10);
    expect(offsets.has('c')).toBe(false);
    expect(offsets.get('b')?.offsetMs).toBe(20);
    // The correction was last confirmed by c's sample, at T0 + 5.
    expect(offsets.get('a')?.ageMs).toBe(CLOCK_OFFSET_MAX_AGE_MS + 1000 + 5);
    // c is back: a robust median again.
    exchange(sync, 'c', { at: later + 100, leaderSkew: 60_000 });
    expect(sync.correctionMs).toBe(-60_000 + 20);
    expect(sync.offsets(later + 60_000 + 200).get('a')?.ageMs).toBeLessThan(200);
  });

  it('never synced and seeing only a majority, waits before settling for the median of two', () => {
    const sync = leader({}, T0);
    exchange(sync, 'b', { at: T0, peerSkew: 100 });
    expect(sync.synced).toBe(false);
    expect(sync.correctionMs).toBe(0);
    expect(sync.offsets(T0 + 10).size).toBe(0);
    exchange(sync, 'b', { at: T0 + CLOCK_BOOTSTRAP_AFTER_MS, peerSkew: 100 });
    expect(sync.synced).toBe(true);
    expect(sync.correctionMs).toBe(50);
  });

  it('is synced at once when alone', () => {
    const sync = new ClockSync({ self: 'a', voters: ['a'] });
    expect(sync.synced).toBe(true);
    expect(sync.clusterTime(T0)).toBe(T0);
    expect(sync.offsets(T0)).toEqual(new Map([['a', { offsetMs: 0, rttMs: 0, ageMs: 0 }]]));
  });

  it('before sync: the local clock, no offsets, and heartbeats that carry no estimate', () => {
    const sync = leader();
    expect(sync.synced).toBe(false);
    expect(sync.clusterTime(T0 + 5)).toBe(T0 + 5);
    const hb = sync.stamp(heartbeat('a', 'b'), T0) as HeartbeatMessage;
    expect(hb.clock).toEqual({ sentAt: T0 });
  });
});

describe('ClockSync over heartbeats', () => {
  /**
   * Three members exchanging stamped heartbeats, with true time `now`, per-member skews and a
   * fixed one-way latency. Returns each member's cluster time minus true time.
   */
  function run(
    skews: Record<NodeId, number>,
    leaderId: NodeId,
    rounds = 3,
  ): { syncs: Map<NodeId, ClockSync>; errors: () => Record<NodeId, number>; local: (id: NodeId) => number } {
    let now = T0;
    const syncs = new Map(voters.map((id) => [id, new ClockSync({ self: id, voters })]));
    const local = (id: NodeId): number => now + (skews[id] ?? 0);
    const get = (id: NodeId): ClockSync => syncs.get(id) as ClockSync;
    get(leaderId).setLeading(true, local(leaderId));
    for (let r = 0; r < rounds; r++) {
      for (const peer of voters.filter((id) => id !== leaderId)) {
        const hb = get(leaderId).stamp(heartbeat(leaderId, peer), local(leaderId));
        now += 3;
        get(peer).receive(hb, local(peer), leaderId);
        now += 1;
        const resp = get(peer).stamp(heartbeatResp(peer, leaderId), local(peer));
        expect((resp as HeartbeatResponse).clock).toBeDefined();
        now += 2;
        get(leaderId).receive(resp, local(leaderId), leaderId);
      }
      now += 50;
    }
    const errors = (): Record<NodeId, number> => Object.fromEntries(voters.map((id) => [id, get(id).clusterTime(local(id)) - now]));
    return { syncs, errors, local };
  }

  it.each([
    ['the leader', 'a'],
    ['a follower', 'b'],
  ])('agrees on the good clocks when %s is 60 s ahead', (_name, bad) => {
    const { syncs, errors, local } = run({ [bad]: 60_000 }, 'a');
    for (const [id, error] of Object.entries(errors())) {
      expect(Math.abs(error), id).toBeLessThanOrEqual(1);
      expect(syncs.get(id)?.synced).toBe(true);
    }
    // The bad member is reported 60 s off by the leader, and by itself.
    expect(syncs.get('a')?.offsets(local('a')).get(bad)?.offsetMs).toBeCloseTo(60_000, -1);
    expect(syncs.get(bad)?.offsets(local(bad)).get(bad)?.offsetMs).toBeCloseTo(60_000, -1);
    // A follower knows only itself.
    expect([...(syncs.get('c')?.offsets(local('c')).keys() ?? [])]).toEqual(['c']);
  });

  it('a new leader with a bad clock holds over the time it learned as a follower', () => {
    const { syncs } = run({ b: 60_000 }, 'a');
    const b = syncs.get('b') as ClockSync;
    const c = syncs.get('c') as ClockSync;
    b.setLeading(true, T0 + 60_000 + 1000);
    // b has no samples of its own yet: it holds over, and its first estimate to c carries that.
    expect(Math.abs(b.correctionMs + 60_000)).toBeLessThanOrEqual(1);
    const hb = b.stamp(heartbeat('b', 'c'), T0 + 60_000 + 1000) as HeartbeatMessage;
    expect(hb.clock?.estimate).toBeUndefined();
    b.sample('c', T0 + 60_000 + 1000, T0 + 1002, T0 + 1003, T0 + 60_000 + 1005);
    const hb2 = b.stamp(heartbeat('b', 'c'), T0 + 60_000 + 1010) as HeartbeatMessage;
    expect(hb2.clock?.estimate?.clusterOffsetMs).toBeCloseTo(-60_000, -1);
    c.receive(hb2, T0 + 1012, 'b');
    expect(Math.abs(c.correctionMs)).toBeLessThanOrEqual(1);
  });

  it('follows only the leader the protocol follows, and echoes only to it', () => {
    const c = new ClockSync({ self: 'c', voters });
    const estimate = { offsetMs: 0, rttMs: 1, clusterOffsetMs: 5_000 };
    c.receive({ ...heartbeat('b', 'c'), clock: { sentAt: T0, estimate } }, T0, 'a');
    expect(c.synced).toBe(false);
    expect((c.stamp(heartbeatResp('c', 'b'), T0 + 1) as HeartbeatResponse).clock).toBeUndefined();
    c.receive({ ...heartbeat('a', 'c'), clock: { sentAt: T0, estimate } }, T0, 'a');
    expect(c.correctionMs).toBe(5_000);
    expect((c.stamp(heartbeatResp('c', 'b'), T0 + 1) as HeartbeatResponse).clock).toBeUndefined();
    expect((c.stamp(heartbeatResp('c', 'a'), T0 + 1) as HeartbeatResponse).clock).toEqual({ echo: T0, receivedAt: T0, sentAt: T0 + 1 });
    // Echoed once: a second response has nothing to echo.
    expect((c.stamp(heartbeatResp('c', 'a'), T0 + 2) as HeartbeatResponse).clock).toBeUndefined();
    // An echo reaching a member that does not lead is ignored.
    expect(c.receive({ ...heartbeatResp('a', 'c'), clock: { echo: T0, receivedAt: T0, sentAt: T0 } }, T0 + 5, 'a')).toBeUndefined();
    expect(c.invalidStamps).toBe(0);
  });

  it('leaves other messages alone, and does not stamp with a broken local clock', () => {
    const sync = leader();
    const vote: Message = { type: 'vote', from: 'a', to: 'b', term: 1, lastIndex: 0, lastTerm: 0, transfer: false };
    expect(sync.stamp(vote, T0)).toBe(vote);
    const hb = heartbeat('a', 'b');
    expect(sync.stamp(hb, Number.NaN)).toBe(hb);
    expect(sync.stamp(hb, 1e300)).toBe(hb);
  });
});

describe('ClockSync drops and counts hostile stamps', () => {
  it.each<[string, number, number, number, number]>([
    ['NaN', Number.NaN, T0, T0, T0 + 2],
    ['Infinity', T0, Number.POSITIVE_INFINITY, T0, T0 + 2],
    ['a time beyond the range of dates', T0, 1e300, 1e300, T0 + 2],
    ['an echo of a send in the future', T0 + 100, T0, T0, T0 + 2],
    ['an answer before its question', T0, T0 + 5, T0 + 1, T0 + 10],
    ['a negative round trip', T0, T0 + 1, T0 + 50, T0 + 10],
    ['an offset of centuries', T0, T0 + MAX_CLOCK_OFFSET_MS * 2, T0 + MAX_CLOCK_OFFSET_MS * 2, T0 + 2],
  ])('%s', (_name, t1, t2, t3, t4) => {
    const sync = leader();
    exchange(sync, 'c', { at: T0 - 100 });
    exchange(sync, 'b', { at: T0 - 100, peerSkew: 7 });
    const before = sync.offsets(T0 + 2);
    expect(sync.sample('b', t1, t2, t3, t4)).toBe(false);
    expect(sync.invalidStamps).toBe(1);
    expect(sync.offsets(T0 + 2)).toEqual(before);
  });

  it('tolerates a round trip just below zero from millisecond clocks', () => {
    const sync = leader();
    expect(sync.sample('b', T0, T0 + 1, T0 + 2, T0)).toBe(true);
    expect(sync.invalidStamps).toBe(0);
  });

  it('discards, without blaming the peer, samples too slow to be precise', () => {
    const sync = leader();
    expect(exchange(sync, 'b', { at: T0, out: MAX_CLOCK_SAMPLE_RTT_MS, back: 10 })).toBe(false);
    expect(sync.sample('b', T0, T0, T0 + CLOCK_OFFSET_MAX_AGE_MS, T0 + CLOCK_OFFSET_MAX_AGE_MS + 1)).toBe(false);
    expect(sync.discardedSamples).toBe(2);
    expect(sync.invalidStamps).toBe(0);
  });

  it('samples of non-members', () => {
    const sync = leader();
    expect(sync.sample('z', T0, T0, T0, T0 + 1)).toBe(false);
    expect(sync.sample('a', T0, T0, T0, T0 + 1)).toBe(false);
    expect(sync.invalidStamps).toBe(2);
  });

  it.each<[string, unknown]>([
    ['a string', 'now'],
    ['null', null],
    ['a missing sentAt', {}],
    ['a NaN sentAt', { sentAt: Number.NaN }],
    ['a string sentAt', { sentAt: '1' }],
    ['an estimate that is not an object', { sentAt: T0, estimate: 5 }],
    ['a huge offset', { sentAt: T0, estimate: { offsetMs: 1e200, rttMs: 1, clusterOffsetMs: 0 } }],
    ['a NaN cluster offset', { sentAt: T0, estimate: { offsetMs: 0, rttMs: 1, clusterOffsetMs: Number.NaN } }],
    ['a negative round trip', { sentAt: T0, estimate: { offsetMs: 0, rttMs: -1, clusterOffsetMs: 0 } }],
    ['a missing round trip', { sentAt: T0, estimate: { offsetMs: 0, clusterOffsetMs: 0 } }],
  ])('a heartbeat stamp with %s', (_name, clock) => {
    const c = new ClockSync({ self: 'c', voters });
    c.receive({ ...heartbeat('a', 'c'), clock } as Message, T0, 'a');
    expect(c.invalidStamps).toBe(1);
    expect(c.synced).toBe(false);
    expect((c.stamp(heartbeatResp('c', 'a'), T0 + 1) as HeartbeatResponse).clock).toBeUndefined();
  });

  it.each<[string, unknown]>([
    ['a number', 5],
    ['a missing echo', { receivedAt: T0, sentAt: T0 }],
    ['an Infinity', { echo: T0, receivedAt: Number.NEGATIVE_INFINITY, sentAt: T0 }],
  ])('an echo with %s', (_name, clock) => {
    const sync = leader();
    sync.receive({ ...heartbeatResp('b', 'a'), clock } as Message, T0 + 1, 'a');
    expect(sync.invalidStamps).toBe(1);
  });
});

function heartbeat(from: NodeId, to: NodeId): HeartbeatMessage {
  return { type: 'heartbeat', from, to, term: 1, commit: 0, readCtx: 0 };
}

function heartbeatResp(from: NodeId, to: NodeId): HeartbeatResponse {
  return { type: 'heartbeat-resp', from, to, term: 1, readCtx: 0 };
}
