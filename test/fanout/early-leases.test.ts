import { describe, expect, it } from 'vitest';
import { cluster, emitN, settings } from './plan-fixture.js';
import { MAX_WAITING_SCAN, planEarlyLeases, type EarlyLeaseInput } from '../../src/fanout/early-leases.js';
import { EmitIds, MAX_EMITS_AHEAD } from '../../src/fanout/emit-ids.js';
import { RateBuckets } from '../../src/fanout/planner.js';
import { PREFETCH_PER_PARALLELISM } from '../../src/fanout/prefetch.js';
import type { FanoutState } from '../../src/fanout/state.js';

function input(state: FanoutState, over: Partial<EarlyLeaseInput> = {}): EarlyLeaseInput {
  return { state, topic: 't', firstId: state.nextItemId, count: 10, nowMs: 0, eligible: () => true, leasingOf: () => 0, leasing: new Set(), rates: new RateBuckets(), prefetch: () => PREFETCH_PER_PARALLELISM, ...over };
}

describe("the leases of an emit's items as the leader appends it (planEarlyLeases)", () => {
  it('gives the ids the emit will take to the eligible consumers in runs of their parallelism, within their room, counting the items of their leases in flight as held', () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(2) });
    apply({ type: 'consume', topic: 't', member: 'b', settings: settings(3) });
    apply({ type: 'consume', topic: 't', member: 'c', settings: settings(4) });
    // a may hold 2 * (1 + 3) = 8; b 12, with 10 in a lease in flight: 2; c is not eligible.
    const leases = planEarlyLeases(input(state, { firstId: 100, count: 20, eligible: (m) => m !== 'c', leasingOf: (m) => (m === 'b' ? 10 : 0) }));
    const given = new Map(leases.map((l) => [l.member, l.ids]));
    expect(given.get('a')).toHaveLength(8);
    expect(given.get('b')).toHaveLength(2);
    expect(given.has('c')).toBe(false);
    expect([...leases.flatMap((l) => l.ids)].sort((x, y) => x - y)).toEqual(Array.from({ length: 10 }, (_, i) => 100 + i));
    // Planned before the emit applies and applied after it, the leases hold all they name.
    const leasesOfTwenty = planEarlyLeases(input(state, { count: 20 }));
    apply(emitN(20));
    for (const lease of leasesOfTwenty) apply({ type: 'lease', member: lease.member, ids: lease.ids, atMs: 0 });
    const topic = state.topics.get('t');
    expect(topic?.ready.size).toBe(0);
    expect([...(topic?.inFlight.values() ?? [])].reduce((a, b) => a + b, 0)).toBe(20);
  });

  it('leases nothing early while items of the topic wait to be leased: those go first, at the plan after the apply', () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(2) });
    apply(emitN(3));
    const waitingIds = [...(state.topics.get('t')?.ready ?? [])];
    expect(planEarlyLeases(input(state))).toEqual([]);
    // Items in lease proposals in flight do not wait.
    expect(planEarlyLeases(input(state, { leasing: new Set(waitingIds) })).length).toBe(1);
    // Past MAX_WAITING_SCAN items looked at, some are taken to wait.
    apply(emitN(MAX_WAITING_SCAN));
    expect(planEarlyLeases(input(state, { leasing: new Set(state.topics.get('t')?.ready) }))).toEqual([]);
  });

  it("takes the items from the topic's rate and gives back what it did not use; nothing for a topic it does not know or with no consumer eligible", () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(50, 10) });
    const rates = new RateBuckets();
    // A new bucket is empty: nothing at first, ten a second later.
    expect(planEarlyLeases(input(state, { rates, count: 30 }))).toEqual([]);
    expect(planEarlyLeases(input(state, { rates, count: 30, nowMs: 1000 }))[0]?.ids).toHaveLength(10);
    expect(rates.take('t', 10, 1000, 100)).toBe(0);
    // 5 taken of the 10 a second gave: 5 left for the next.
    expect(planEarlyLeases(input(state, { rates, count: 5, nowMs: 2000 }))[0]?.ids).toHaveLength(5);
    expect(rates.take('t', 10, 2000, 100)).toBe(5);
    expect(planEarlyLeases(input(state, { topic: 'other' }))).toEqual([]);
    expect(planEarlyLeases(input(state, { eligible: () => false, nowMs: 9000 }))).toEqual([]);
  });
});

describe('the ids of the emits a leader appends (EmitIds)', () => {
  it("follows the state's next id and the emits ahead of the one appended, and forgets them as they apply", () => {
    const ids = new EmitIds();
    ids.seen(5, 9);
    // Everything before index 5 applied (4): the next emit's items start at the state's next id.
    expect(ids.emitted(5, 10, 1, 4)).toBe(1);
    expect(ids.emitted(6, 3, 1, 4)).toBe(11);
    // Index 5 applied (ids 1-10): 6 is still ahead.
    expect(ids.emitted(8, 2, 11, 5)).toBe(14);
    expect(ids.emitted(9, 1, 16, 8)).toBe(16);
  });

  it('knows nothing while entries before the first it saw are not applied, past a requeue until it applies, or after a reset', () => {
    const ids = new EmitIds();
    expect(ids.emitted(3, 1, 1, 2)).toBeNull();
    ids.reset();
    ids.seen(5, 6);
    // Entries 3 and 4 may hold emits of an earlier term.
    expect(ids.emitted(5, 1, 1, 2)).toBeNull();
    expect(ids.emitted(6, 1, 1, 4)).toBe(2);
    // A requeue takes as many ids as it finds dead letters at apply.
    ids.seen(7, 9);
    expect(ids.emitted(7, null, 1, 4)).toBeNull();
    expect(ids.emitted(8, 2, 1, 4)).toBeNull();
    // Applied up to 7 (the state took the requeue's ids): known again.
    expect(ids.emitted(9, 2, 40, 7)).toBe(42);
    ids.reset();
    expect(ids.emitted(10, 2, 44, 9)).toBeNull();
  });

  it('starts over at a gap in the entries it is told of (it did not lead for a while): the entries in it may hold emits', () => {
    const ids = new EmitIds();
    ids.seen(1, 2);
    expect(ids.emitted(2, 5, 1, 0)).toBe(1);
    // Entries 3 to 9 were appended while another led; this member leads again from 10.
    ids.seen(10, 11);
    expect(ids.emitted(10, 1, 1, 2)).toBeNull();
    // Once 9 applied (ids 1 to 5, and whatever 3 to 9 took: the next is 6), 11's follow 10's.
    expect(ids.emitted(11, 1, 6, 9)).toBe(7);
  });

  it('holds at most MAX_EMITS_AHEAD emits: past it, it knows nothing until those after it applied', () => {
    const ids = new EmitIds();
    ids.seen(1, MAX_EMITS_AHEAD + 1);
    for (let i = 1; i <= MAX_EMITS_AHEAD; i++) expect(ids.emitted(i, 1, 1, 0)).toBe(i);
    expect(ids.emitted(MAX_EMITS_AHEAD + 1, 1, 1, 0)).toBeNull();
    ids.seen(MAX_EMITS_AHEAD + 2, MAX_EMITS_AHEAD + 3);
    expect(ids.emitted(MAX_EMITS_AHEAD + 2, 1, MAX_EMITS_AHEAD + 1, MAX_EMITS_AHEAD)).toBeNull();
    expect(ids.emitted(MAX_EMITS_AHEAD + 3, 1, MAX_EMITS_AHEAD + 3, MAX_EMITS_AHEAD + 2)).toBe(MAX_EMITS_AHEAD + 3);
  });
});
