import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cluster, emitN, settings } from './plan-fixture.js';
import { planDelivery, RATE_BURST_SECONDS, RateBuckets, type DeliveryInput } from '../../src/fanout/planner.js';
import { PREFETCH_PER_PARALLELISM } from '../../src/fanout/prefetch.js';
import { LEASE_GRACE_MS, type FanoutState } from '../../src/fanout/state.js';

function input(state: FanoutState, over: Partial<DeliveryInput> = {}): DeliveryInput {
  return { state, nowMs: 0, eligible: () => true, configured: () => true, lost: () => false, busy: new Set(), rates: new RateBuckets(), ...over };
}

describe('the leader delivering items (planDelivery)', () => {
  it('gives each eligible consumer that is not busy at most its free room (parallelism and prefetch), the one with most room first', () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(2) });
    apply({ type: 'consume', topic: 't', member: 'b', settings: settings(3) });
    apply({ type: 'consume', topic: 't', member: 'c', settings: settings(5) });
    apply({ type: 'consume', topic: 't', member: 'd', settings: settings(5) });
    apply(emitN(40));
    const plan = planDelivery(input(state, { eligible: (m) => m !== 'd', busy: new Set(['c']) }));
    expect(plan.reclaim).toEqual([]);
    // b first, with more room, a run of its parallelism at a time (1-3, 4-6), until a has more
    // (7-8); then the one with the most room each time (among equals, the item's id picks).
    expect(plan.leases.map((l) => [l.member, l.ids.length, l.ids[0]])).toEqual([
      ['b', 3 * (1 + PREFETCH_PER_PARALLELISM), 1],
      ['a', 2 * (1 + PREFETCH_PER_PARALLELISM), 7],
    ]);
    for (const lease of plan.leases) apply({ type: 'lease', member: lease.member, ids: lease.ids, atMs: 0 });
    // Full now: a and b get nothing more until they report.
    expect(planDelivery(input(state, { eligible: (m) => m === 'a' || m === 'b' })).leases).toEqual([]);
  });

  it('gives a few items to one member, up to its parallelism, in one lease; the next few to the member with the most room then', () => {
    const { state, apply } = cluster();
    const members = ['a', 'b', 'c'];
    for (const m of members) apply({ type: 'consume', topic: 't', member: m, settings: settings(4) });
    apply(emitN(3));
    const first = planDelivery(input(state)).leases;
    expect(first).toHaveLength(1);
    expect(first[0]?.ids).toEqual([1, 2, 3]);
    for (const lease of first) apply({ type: 'lease', member: lease.member, ids: lease.ids, atMs: 0 });
    apply(emitN(6));
    // The two others have the most room (the first holds three): one takes a run of its
    // parallelism, then the other the rest.
    const next = planDelivery(input(state)).leases;
    expect(next.map((l) => l.ids)).toEqual([
      [4, 5, 6, 7],
      [8, 9],
    ]);
    expect(new Set([first[0]?.member, ...next.map((l) => l.member)]).size).toBe(3);
  });

  it('gives the runs of successive rounds to one member after another when all have as much room, not all to the lowest id', () => {
    const { state, apply } = cluster();
    const members = ['a', 'b', 'c'];
    for (const m of members) apply({ type: 'consume', topic: 't', member: m, settings: settings(4) });
    const runs = new Map<string, number>();
    for (let round = 0; round < 30; round++) {
      apply(emitN(2));
      const leases = planDelivery(input(state)).leases;
      expect(leases).toHaveLength(1);
      const { member, ids } = leases[0] as { member: string; ids: number[] };
      runs.set(member, (runs.get(member) ?? 0) + 1);
      const token = apply({ type: 'lease', member, ids, atMs: 0 });
      // Done at once: every member has as much room again.
      apply({ type: 'done', member, outcomes: ids.map((id) => ({ id, token, error: null })), atMs: 0 });
    }
    for (const m of members) expect(runs.get(m) ?? 0).toBeGreaterThanOrEqual(5);
  });

  it('looks for leases past their deadline only when asked to (the timed rounds); those of a member lost, in every round', () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(1) });
    apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1) });
    apply(emitN(2));
    const ta = apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    const tb = apply({ type: 'lease', member: 'b', ids: [2], atMs: 0 });
    const late = 1000 + LEASE_GRACE_MS + 1;
    expect(planDelivery(input(state, { nowMs: late, deadlines: false })).reclaim).toEqual([]);
    expect(planDelivery(input(state, { nowMs: late })).reclaim).toEqual([{ id: 1, token: ta }, { id: 2, token: tb }]);
    expect(planDelivery(input(state, { nowMs: 0, deadlines: false, lost: (m) => m === 'b' })).reclaim).toEqual([{ id: 2, token: tb }]);
  });

  it('passes over the items of lease proposals in flight: another member gets the next ones', () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(1) });
    apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1) });
    apply(emitN(2 * (1 + PREFETCH_PER_PARALLELISM) + 1));
    const first = planDelivery(input(state, { eligible: (m) => m === 'a' })).leases;
    expect(first).toEqual([{ member: 'a', ids: Array.from({ length: 1 + PREFETCH_PER_PARALLELISM }, (_, i) => i + 1) }]);
    const leasing = new Set(first.flatMap((l) => l.ids));
    const next = planDelivery(input(state, { busy: new Set(['a']), leasing })).leases;
    expect(next).toEqual([{ member: 'b', ids: Array.from({ length: 1 + PREFETCH_PER_PARALLELISM }, (_, i) => i + 2 + PREFETCH_PER_PARALLELISM) }]);
  });

  it('leases an item only once due, and only the head of each key', () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(10) });
    apply(emitN(4, (i) => (i < 3 ? 'k' : null)));
    expect(planDelivery(input(state)).leases).toEqual([{ member: 'a', ids: [1, 4] }]);
    const token = apply({ type: 'lease', member: 'a', ids: [1, 4], atMs: 0 });
    apply({ type: 'done', member: 'a', outcomes: [{ id: 1, token, error: 'no' }], atMs: 0 });
    // Item 1 waits out its backoff; item 2 of the same key waits for it.
    expect(planDelivery(input(state, { nowMs: 50 })).leases).toEqual([]);
    expect(planDelivery(input(state, { nowMs: 100 })).leases).toEqual([{ member: 'a', ids: [1] }]);
  });

  it('takes back the leases of a member lost, and those past their deadline; not those of one merely not eligible, nor of a live one that stopped consuming', () => {
    const { state, apply } = cluster();
    for (const m of ['a', 'b', 'c']) apply({ type: 'consume', topic: 't', member: m, settings: settings(1) });
    apply(emitN(3));
    const tokens = ['a', 'b', 'c'].map((m, i) => apply({ type: 'lease', member: m, ids: [i + 1], atMs: 0 }));
    apply({ type: 'unconsume', topic: 't', member: 'b' });
    // b is handing over: it finishes or gives back what it holds; c, not eligible for a while, keeps running what it holds.
    expect(planDelivery(input(state, { lost: (m) => m === 'a', eligible: (m) => m !== 'a' && m !== 'c' })).reclaim).toEqual([{ id: 1, token: tokens[0] }]);
    const deadline = 1000 + LEASE_GRACE_MS;
    expect(planDelivery(input(state, { nowMs: deadline })).reclaim).toEqual([]);
    expect(planDelivery(input(state, { nowMs: deadline + 1 })).reclaim).toHaveLength(3);
  });

  it('drops the registrations of members out of the configuration, and leases them nothing once they are not eligible', () => {
    const { state, apply } = cluster();
    for (const m of ['a', 'b']) apply({ type: 'consume', topic: 't', member: m, settings: settings(1) });
    apply({ type: 'consume', topic: 'u', member: 'b', settings: settings(1) });
    expect(planDelivery(input(state)).departed).toEqual([]);
    expect(planDelivery(input(state, { configured: (m) => m !== 'b' })).departed).toEqual([
      { topic: 't', member: 'b' },
      { topic: 'u', member: 'b' },
    ]);
  });

  it('keeps a topic within its rate: an empty bucket at first, then the rate, a burst capped at a second of it', () => {
    const { state, apply } = cluster();
    apply({ type: 'consume', topic: 't', member: 'a', settings: settings(1000, 10) });
    apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1000, 50) });
    apply(emitN(200));
    const rates = new RateBuckets();
    const count = (nowMs: number): number => planDelivery(input(state, { nowMs, rates })).leases.reduce((n, l) => n + l.ids.length, 0);
    expect(count(0)).toBe(0);
    // The least rate of the consumers, 10 a second.
    expect(count(500)).toBe(5);
    expect(count(60_000)).toBe(10 * RATE_BURST_SECONDS);
    // Unused tokens go back: with no consumer room, nothing is spent.
    const empty = new RateBuckets();
    empty.take('t', 10, 0, 0);
    expect(empty.take('t', 10, 1000, 3)).toBe(3);
    empty.giveBack('t', 3);
    expect(empty.take('t', 10, 1000, 100)).toBe(10);
  });

  it('whatever fails and whoever may work, no consumer holds more than its parallelism and prefetch, and with all healthy every item settles', () => {
    fc.assert(
      fc.property(fc.array(fc.record({ eligible: fc.subarray(['a', 'b', 'c']), outcomes: fc.array(fc.constantFrom('ok', 'fail', 'lost'), { minLength: 1, maxLength: 8 }) }), { maxLength: 30 }), (rounds) => {
        const { state, apply } = cluster();
        const parallelism = { a: 1, b: 2, c: 3 };
        for (const [m, p] of Object.entries(parallelism)) apply({ type: 'consume', topic: 't', member: m, settings: { ...settings(p), retries: 100 } });
        apply(emitN(25, (i) => (i % 5 === 0 ? 'k' : null)));
        const rates = new RateBuckets();
        let nowMs = 0;
        const step = (eligible: readonly string[], outcomes: readonly string[]): void => {
          nowMs += 200;
          const plan = planDelivery(input(state, { nowMs, rates, eligible: (m) => eligible.includes(m) }));
          if (plan.reclaim.length > 0) apply({ type: 'reclaim', leases: plan.reclaim, atMs: nowMs });
          for (const lease of plan.leases) apply({ type: 'lease', member: lease.member, ids: lease.ids, atMs: nowMs });
          for (const [member, p] of Object.entries(parallelism)) expect(state.topics.get('t')?.inFlight.get(member) ?? 0).toBeLessThanOrEqual(p * (1 + PREFETCH_PER_PARALLELISM));
          let k = 0;
          for (const item of [...state.items.values()]) {
            if (item.phase.kind !== 'leased') continue;
            const what = outcomes[k++ % outcomes.length];
            if (what === 'lost') continue;
            apply({ type: 'done', member: item.phase.member, outcomes: [{ id: item.id, token: item.phase.token, error: what === 'ok' ? null : 'x' }], atMs: nowMs });
          }
        };
        for (const r of rounds) step(r.eligible, r.outcomes);
        // Healed: everyone may work, and every attempt succeeds.
        for (let i = 0; i < 200 && state.items.size > 0; i++) step(['a', 'b', 'c'], ['ok']);
        expect(state.items.size).toBe(0);
      }),
      { numRuns: 200 },
    );
  });
});
