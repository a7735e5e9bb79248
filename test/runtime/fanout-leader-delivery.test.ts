import { describe, expect, it } from 'vitest';
import { MAX_ITEMS_PER_EMIT, MAX_ITEMS_PER_LEASE, type ConsumerSettings, type FanoutCommand } from '../../src/fanout/command.js';
import { MAX_PREFETCH_PER_PARALLELISM, PREFETCH_PER_PARALLELISM } from '../../src/fanout/prefetch.js';
import { FanoutState } from '../../src/fanout/state.js';
import { DELIVERY_INTERVAL_MS, LeaderDelivery } from '../../src/runtime/fanout/leader-delivery.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const settings = (parallelism: number): ConsumerSettings => ({ parallelism, retries: 1, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null });

/** A leader whose proposals apply to `state` at the next index once released (held until then when `hold`). */
function leader(hold = false): { state: FanoutState; timers: ManualTimers; delivery: LeaderDelivery; proposed: FanoutCommand[]; release: () => Promise<void>; releaseOne: () => Promise<void>; flags: { leading: boolean; term: number; eligible: Set<string>; configured: Set<string>; lost: Set<string> }; apply: (c: FanoutCommand) => number } {
  const state = new FanoutState();
  const timers = new ManualTimers();
  let index = 0;
  const apply = (c: FanoutCommand): number => {
    state.apply(++index, c);
    return index;
  };
  const proposed: FanoutCommand[] = [];
  const held: Array<() => void> = [];
  const flags = { leading: true, term: 1, eligible: new Set(['a', 'b']), configured: new Set(['a', 'b']), lost: new Set<string>() };
  const delivery = new LeaderDelivery({
    state,
    timers,
    isLeader: () => flags.leading,
    term: () => flags.term,
    clusterNowMs: () => timers.now(),
    appliedIndex: () => index,
    eligible: (m) => flags.eligible.has(m),
    configured: (m) => flags.configured.has(m),
    lost: (m) => flags.lost.has(m),
    propose: (c) => {
      proposed.push(c);
      return new Promise<void>((resolve) => {
        const run = (): void => {
          apply(c);
          resolve();
        };
        if (hold) held.push(run);
        else queueMicrotask(run);
      });
    },
  });
  const release = async (): Promise<void> => {
    for (const run of held.splice(0)) run();
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  /** Applies the oldest proposal held, alone. */
  const releaseOne = async (): Promise<void> => {
    held.shift()?.();
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  return { state, timers, delivery, proposed, release, releaseOne, flags, apply };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe("the leader's delivery of work items (LeaderDelivery)", () => {
  it('leases what the consumers have room for as items apply, and more as outcomes free room', async () => {
    const t = leader();
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(2) });
    t.apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1) });
    t.apply({ type: 'emit', topic: 't', items: Array.from({ length: 3 * (1 + PREFETCH_PER_PARALLELISM) + 2 }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
    t.delivery.soon();
    await settle();
    expect(t.proposed.map((c) => c.type)).toEqual(['lease', 'lease']);
    const leased = (): number => [...t.state.items.values()].filter((i) => i.phase.kind === 'leased').length;
    // Each member's parallelism and as much again leased ahead (fanout/prefetch.ts).
    expect(leased()).toBe(3 * (1 + PREFETCH_PER_PARALLELISM));
    const first = [...t.state.items.values()].find((i) => i.phase.kind === 'leased');
    if (first?.phase.kind !== 'leased') throw new Error('no lease');
    t.apply({ type: 'done', member: first.phase.member, outcomes: [{ id: first.id, token: first.phase.token, error: null }], atMs: 0 });
    t.delivery.soon();
    await settle();
    expect(leased()).toBe(3 * (1 + PREFETCH_PER_PARALLELISM));
    expect(t.state.items.size).toBe(3 * (1 + PREFETCH_PER_PARALLELISM) + 1);
  });

  it('leases deeper to a member that ran all it held before its next lease, and not to one that still holds its items', async () => {
    const t = leader();
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(2) });
    t.apply({ type: 'consume', topic: 't', member: 'b', settings: settings(2) });
    t.apply({ type: 'emit', topic: 't', items: Array.from({ length: 200 }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
    const leaseSizes = (member: string): number[] => t.proposed.flatMap((c) => (c.type === 'lease' && c.member === member ? [c.ids.length] : []));
    /** `a` runs everything it holds at once; `b` runs nothing. */
    const aRunsAll = (): void => {
      const ran = [...t.state.items.values()].flatMap((i) => (i.phase.kind === 'leased' && i.phase.member === 'a' ? [{ id: i.id, token: i.phase.token, error: null }] : []));
      t.apply({ type: 'done', member: 'a', outcomes: ran, atMs: 0 });
    };
    t.delivery.soon();
    await settle();
    for (let round = 0; round < 3; round++) {
      aRunsAll();
      t.delivery.soon();
      await settle();
    }
    const first = 2 * (1 + PREFETCH_PER_PARALLELISM);
    const deep = 2 * (1 + MAX_PREFETCH_PER_PARALLELISM);
    expect(leaseSizes('a')).toEqual([first, deep, deep, deep]);
    expect(leaseSizes('b')).toEqual([first]);
    expect(t.state.topics.get('t')?.inFlight.get('b')).toBe(first);
  });

  it('gives a member nothing more while its lease proposal waits, and plans nothing when not leading', async () => {
    const t = leader(true);
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(10) });
    t.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    t.delivery.plan();
    t.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(2), key: null }], origin: null, atMs: 0 });
    t.delivery.plan();
    expect(t.proposed).toHaveLength(1);
    await t.release();
    await settle();
    expect(t.proposed).toHaveLength(2);
    await t.release();
    t.flags.leading = false;
    t.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(3), key: null }], origin: null, atMs: 0 });
    t.delivery.plan();
    expect(t.proposed).toHaveLength(2);
  });

  it("leases an emit's items as it is appended, before it applies; the plan after its apply leases them to no one else", async () => {
    const t = leader(true);
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(2) });
    t.apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1) });
    const emit = (n: number, key: string | null = null): FanoutCommand => ({ type: 'emit', topic: 't', items: Array.from({ length: n }, (_, i) => ({ data: Uint8Array.of(i), key })), origin: null, atMs: 0 });
    // Appended at index 3, everything before it applied: its items will be ids 1 to 5.
    t.delivery.appended(3, 3, [{ index: 3, topic: 't', count: 5, keyed: false }]);
    expect(t.proposed.flatMap((c) => (c.type === 'lease' ? c.ids : [])).sort()).toEqual([1, 2, 3, 4, 5]);
    const proposed = t.proposed.length;
    t.apply(emit(5));
    t.delivery.soon();
    await settle();
    expect(t.proposed).toHaveLength(proposed);
    await t.release();
    expect([...t.state.items.values()].every((i) => i.phase.kind === 'leased')).toBe(true);
    t.delivery.soon();
    await settle();
    expect(t.proposed).toHaveLength(proposed);

    // A keyed emit waits for its apply: only then are its lines known.
    const next = t.apply({ type: 'consume', topic: 'u', member: 'a', settings: settings(2) }) + 1;
    t.delivery.appended(next, next, [{ index: next, topic: 't', count: 2, keyed: true }]);
    expect(t.proposed).toHaveLength(proposed);
    // Nor does a member that does not lead lease early; the same emit appended once it leads again is.
    const last = t.apply({ type: 'consume', topic: 'u', member: 'b', settings: settings(1) }) + 1;
    t.flags.leading = false;
    t.delivery.appended(last, last, [{ index: last, topic: 't', count: 1, keyed: false }]);
    expect(t.proposed).toHaveLength(proposed);
    t.flags.leading = true;
    t.delivery.appended(last, last, [{ index: last, topic: 't', count: 1, keyed: false }]);
    expect(t.proposed).toHaveLength(proposed + 1);
  });

  it("leases no later emit early while an earlier one's items wait for its apply", () => {
    const t = leader(true);
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(1) });
    t.apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1) });
    t.flags.eligible = new Set(['a']);
    // Ten items at index 3: a has room for four (its parallelism and prefetch); six wait for the apply.
    t.delivery.appended(3, 3, [{ index: 3, topic: 't', count: 10, keyed: false }]);
    expect(t.proposed.flatMap((c) => (c.type === 'lease' ? c.ids : []))).toEqual([1, 2, 3, 4]);
    // b may take work now, and a second emit comes before the first applied: its items wait too.
    t.flags.eligible = new Set(['a', 'b']);
    t.delivery.appended(4, 4, [{ index: 4, topic: 't', count: 2, keyed: false }]);
    expect(t.proposed).toHaveLength(1);
  });

  it("leases none of another topic's items when an emit ahead of one leased early is refused, and its ids go to others", async () => {
    const t = leader(true);
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(3) });
    t.apply({ type: 'consume', topic: 'u', member: 'b', settings: { ...settings(3), maxPending: 1 } });
    const emit = (topic: string, n: number): FanoutCommand => ({ type: 'emit', topic, items: Array.from({ length: n }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
    // Appended: two items of u (guessed ids 1-2), three of t (3-5), one of u (6); each leased early.
    t.delivery.appended(3, 5, [
      { index: 3, topic: 'u', count: 2, keyed: false },
      { index: 4, topic: 't', count: 3, keyed: false },
      { index: 5, topic: 'u', count: 1, keyed: false },
    ]);
    expect(t.proposed.map((c) => (c.type === 'lease' ? [c.topic, c.member, c.ids] : null))).toEqual([
      ['u', 'b', [1, 2]],
      ['t', 'a', [3, 4, 5]],
      ['u', 'b', [6]],
    ]);
    // u's first emit is refused (over its maxPending): t's items take ids 1-3, and u's next, id 4.
    expect([emit('u', 2), emit('t', 3), emit('u', 1)].map(t.apply)).toEqual([3, 4, 5]);
    const topicOf = (id: number): string | undefined => t.state.items.get(id)?.topic;
    expect([1, 2, 3, 4].map(topicOf)).toEqual(['t', 't', 't', 'u']);
    await t.release();
    // Each lease took only items of the topic it names: t's lease got item 3, not u's item 4.
    const holder = (id: number): string | null => {
      const phase = t.state.items.get(id)?.phase;
      return phase?.kind === 'leased' ? phase.member : null;
    };
    expect([1, 2, 3, 4].map(holder)).toEqual([null, null, 'a', null]);
    // The plan after the applies leases what the wrong guesses left, each to its topic's consumer.
    t.delivery.soon();
    await settle();
    await t.release();
    expect([1, 2, 3, 4].map(holder)).toEqual(['a', 'a', 'a', 'b']);
  });

  it("starts a new term of leading with empty rate buckets, though no plan saw it lose the lead in between", async () => {
    const t = leader();
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: { ...settings(50), ratePerSecond: 10 } });
    t.apply({ type: 'emit', topic: 't', items: Array.from({ length: 40 }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
    const leased = (): number => t.proposed.flatMap((c) => (c.type === 'lease' ? c.ids : [])).length;
    // The first look starts the buckets empty; a second later, one second's worth.
    t.delivery.plan();
    t.timers.advance(1000);
    t.delivery.plan();
    await settle();
    expect(leased()).toBe(10);
    // Another member leads for a while, and this one leads again in a later term: a bucket filled
    // meanwhile would let ten more start at once, on top of what the other leader leased.
    t.timers.advance(1000);
    t.flags.term = 3;
    t.delivery.plan();
    await settle();
    expect(leased()).toBe(10);
  });

  it('keeps a member busy until the last of the leases it was given at once applies (more than a command holds)', async () => {
    const t = leader(true);
    // Room for more than MAX_ITEMS_PER_LEASE items: the plan gives them in two leases.
    const parallelism = 400;
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(parallelism) });
    for (let k = 0; k < 2; k++) t.apply({ type: 'emit', topic: 't', items: Array.from({ length: MAX_ITEMS_PER_EMIT }, (_, i) => ({ data: Uint8Array.of(i % 256), key: null })), origin: null, atMs: 0 });
    t.delivery.plan();
    const leases = (): number[] => t.proposed.flatMap((c) => (c.type === 'lease' ? [c.ids.length] : []));
    expect(leases()).toEqual([MAX_ITEMS_PER_LEASE, parallelism * (1 + PREFETCH_PER_PARALLELISM) - MAX_ITEMS_PER_LEASE]);
    // The first applies; the second is still in flight: the member is still busy, and nothing
    // more is leased to it (without the count, a third lease went for what the second holds).
    await t.releaseOne();
    t.delivery.plan();
    expect(leases()).toHaveLength(2);
    await t.releaseOne();
    await settle();
    expect(leases()).toHaveLength(2);
    // Once both applied it is free: items it finishes make room for a lease again.
    const done = [...t.state.items.values()].slice(0, 10).flatMap((i) => (i.phase.kind === 'leased' ? [{ id: i.id, token: i.phase.token, error: null }] : []));
    t.apply({ type: 'done', member: 'a', outcomes: done, atMs: 0 });
    t.delivery.plan();
    expect(leases()).toEqual([MAX_ITEMS_PER_LEASE, parallelism * (1 + PREFETCH_PER_PARALLELISM) - MAX_ITEMS_PER_LEASE, done.length]);
  });

  it('takes back the leases of a member lost, on its timer', async () => {
    const t = leader();
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(1) });
    t.apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1) });
    t.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    t.delivery.start();
    t.timers.advance(DELIVERY_INTERVAL_MS);
    await settle();
    const item = t.state.items.get(1);
    expect(item?.phase.kind).toBe('leased');
    const holder = item?.phase.kind === 'leased' ? item.phase.member : '';
    t.flags.eligible.delete(holder);
    // Not eligible, it keeps what it runs; lost, its leases are taken back.
    t.timers.advance(DELIVERY_INTERVAL_MS);
    await settle();
    expect(t.proposed.some((c) => c.type === 'reclaim')).toBe(false);
    t.flags.lost.add(holder);
    t.timers.advance(DELIVERY_INTERVAL_MS);
    await settle();
    expect(t.proposed.some((c) => c.type === 'reclaim')).toBe(true);
    // Taken back, then leased to the other member.
    const after = t.state.items.get(1);
    expect(after?.redeliveries).toBe(1);
    t.timers.advance(DELIVERY_INTERVAL_MS);
    await settle();
    const again = t.state.items.get(1);
    expect(again?.phase.kind === 'leased' ? again.phase.member : null).not.toBe(holder);
    t.delivery.stop();
  });

  it('drops the registrations of a member removed from the configuration, one at a time, and takes its leases back', async () => {
    const t = leader();
    t.apply({ type: 'consume', topic: 't', member: 'a', settings: settings(1) });
    t.apply({ type: 'consume', topic: 'u', member: 'a', settings: settings(1) });
    t.apply({ type: 'consume', topic: 't', member: 'b', settings: settings(1) });
    t.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    t.delivery.plan();
    await settle();
    t.flags.configured.delete('a');
    t.flags.eligible.delete('a');
    t.flags.lost.add('a');
    t.delivery.plan();
    await settle();
    expect(t.proposed.filter((c) => c.type === 'unconsume')).toEqual([
      { type: 'unconsume', topic: 't', member: 'a' },
      { type: 'unconsume', topic: 'u', member: 'a' },
    ]);
    expect([...(t.state.topics.get('t')?.consumers.keys() ?? [])]).toEqual(['b']);
    expect(t.state.topics.has('u')).toBe(false);
    const item = t.state.items.get(1);
    expect(item?.phase.kind === 'leased' ? item.phase.member : null).toBe('b');
  });
});
