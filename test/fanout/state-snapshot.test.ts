import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CodecError } from '../../src/errors.js';
import type { FanoutCommand } from '../../src/fanout/command.js';
import { FanoutState, type FanoutLimits, type ItemRecord } from '../../src/fanout/state.js';
import { decode, encode } from 'cborg';
import { concatBytes } from '../../src/bytes/concat-bytes.js';
import { decodeFanoutSnapshot, encodeFanoutSnapshot, fanoutSnapshotSteps, restoreFanoutSnapshot, SNAPSHOT_ITEMS_PER_PIECE } from '../../src/fanout/state-snapshot.js';
import { richState, SETTINGS } from './snapshot-fixture.js';

const LIMITS: Required<FanoutLimits> = { maxPendingPerTopic: 12, maxTopics: 2, maxDeadLettersPerTopic: 3, maxUnsettledBytes: 4096, maxLeaseBytes: 4096, maxTopicBytes: 4096, maxDeadLetterBytes: 4096 };

/** What restore derives rather than reads: each topic's unsettled count and items in flight per member. */
function derived(state: FanoutState): unknown {
  return [...state.topics.values()].map((t) => [t.name, t.unsettled, [...t.inFlight].sort()]);
}

/** Everything of the state in its order (Maps and Sets as arrays), to compare two states. */
function contents(state: FanoutState): unknown {
  const topics = [...state.topics.values()].map((t) => ({ ...t, ready: [...t.ready], consumers: [...t.consumers], inFlight: [...t.inFlight].sort() }));
  return { nextItemId: state.nextItemId, topics, items: [...state.items], batches: [...state.batches] };
}

describe('fan-out snapshots', () => {
  it('taken in steps while the state moves on, are the state as it was when they began, in the bytes cborg writes at once', () => {
    const state = richState();
    // Enough items for several pieces of items and of a ready set (READY_IDS_PER_PIECE is 2048).
    state.apply(20, { type: 'emit', topic: 't', items: Array.from({ length: 4500 }, (_, i) => ({ data: Uint8Array.of(i & 0xff), key: i % 3 === 0 ? `k${i % 7}` : null })), origin: null, atMs: 50 });
    const before = encodeFanoutSnapshot(state);
    const steps = fanoutSnapshotSteps(state);
    let next = steps.next();
    let pieces = 0;
    let index = 21;
    while (next.done !== true) {
      pieces++;
      // Between steps, the state changes: leases, outcomes, a new emit.
      const id = [...state.topics.get('t')!.ready][0]!;
      const token = index++;
      state.apply(token, { type: 'lease', member: 'm1', ids: [id], atMs: 60 });
      state.apply(index++, { type: 'done', member: 'm1', outcomes: [{ id, token, error: pieces % 2 === 0 ? null : 'no' }], atMs: 61 });
      state.apply(index++, { type: 'emit', topic: 'u', items: [{ data: Uint8Array.of(9), key: null }], origin: null, atMs: 62 });
      next = steps.next();
    }
    expect(pieces).toBeGreaterThan(4500 / SNAPSHOT_ITEMS_PER_PIECE);
    const stepped = concatBytes(next.value);
    expect(stepped).toEqual(before);
    expect(encode(decode(stepped))).toEqual(stepped);
    expect(encodeFanoutSnapshot(state)).not.toEqual(before);
  });

  it('restore a state whole: encoded, decoded and restored into a fresh state, it encodes to the same bytes', () => {
    const state = richState();
    const bytes = encodeFanoutSnapshot(state);
    const restored = new FanoutState();
    restoreFanoutSnapshot(restored, bytes);
    expect(encodeFanoutSnapshot(restored)).toEqual(bytes);
    expect(contents(restored)).toEqual(contents(state));
    expect(derived(restored)).toEqual([['t', 4, [['m1', 1]]], ['u', 1, []]]);
    // The leased index is rebuilt too: the same items as the original's.
    expect([...restored.leased].sort((x, y) => x - y)).toEqual([...state.leased].sort((x, y) => x - y));
    expect(restored.leased.size).toBe(1);
  });

  it('rebuild the key lines: the next item of a key becomes ready when its head settles', () => {
    const restored = new FanoutState();
    restoreFanoutSnapshot(restored, encodeFanoutSnapshot(richState()));
    // Item 2 is the head of key k, leased to m1 under token 5; item 3 waits behind it.
    expect(restored.apply(9, { type: 'done', member: 'm1', outcomes: [{ id: 2, token: 5, error: null }], atMs: 40 })).toMatchObject({ ok: true, stale: 0 });
    expect([...(restored.topics.get('t')?.ready ?? [])]).toEqual([1, 4, 3]);
    expect(restored.topics.get('t')?.inFlight.size).toBe(0);
  });

  it('replace what a state held, in place', () => {
    const state = new FanoutState();
    state.apply(1, { type: 'consume', topic: 'other', member: 'm9', settings: SETTINGS });
    state.apply(2, { type: 'emit', topic: 'other', items: [{ data: Uint8Array.of(1), key: 'k' }], origin: null, atMs: 0 });
    const bytes = encodeFanoutSnapshot(richState());
    restoreFanoutSnapshot(state, bytes);
    expect([...state.topics.keys()]).toEqual(['t', 'u']);
    expect(encodeFanoutSnapshot(state)).toEqual(bytes);
  });

  it('leave the state untouched when refused', () => {
    const state = richState();
    const before = encodeFanoutSnapshot(state);
    const other = richState();
    other.apply(9, { type: 'consume', topic: 'v', member: 'm1', settings: SETTINGS });
    // Three topics, for a state that keeps two; then bytes cut short.
    const tight = richState({ maxTopics: 2 });
    expect(() => restoreFanoutSnapshot(tight, encodeFanoutSnapshot(other))).toThrow(CodecError);
    expect(encodeFanoutSnapshot(tight)).toEqual(before);
    expect(() => restoreFanoutSnapshot(state, before.subarray(0, before.length - 3))).toThrow(CodecError);
    expect(encodeFanoutSnapshot(state)).toEqual(before);
  });

  it('decode into fresh records, so that two states restored from one snapshot share nothing', () => {
    const bytes = encodeFanoutSnapshot(richState());
    const a = new FanoutState();
    const b = new FanoutState();
    a.restore(decodeFanoutSnapshot(bytes));
    b.restore(decodeFanoutSnapshot(bytes));
    a.apply(9, { type: 'done', member: 'm1', outcomes: [{ id: 2, token: 5, error: null }], atMs: 40 });
    expect(encodeFanoutSnapshot(b)).toEqual(bytes);
  });

  it('whatever the commands, equal states encode to equal bytes, and a restored state goes on as the original', () => {
    const members = ['m1', 'm2', 'm3'];
    const topics = ['t', 'u', 'w'];
    const draw = fc.oneof(
      { weight: 2, arbitrary: fc.record({ type: fc.constant('consume' as const), topic: fc.constantFrom(...topics), member: fc.constantFrom(...members), retries: fc.integer({ min: 0, max: 1 }), rate: fc.option(fc.integer({ min: 1, max: 9 }), { nil: null }) }) },
      { weight: 1, arbitrary: fc.record({ type: fc.constant('unconsume' as const), topic: fc.constantFrom(...topics), member: fc.constantFrom(...members) }) },
      { weight: 3, arbitrary: fc.record({ type: fc.constant('emit' as const), topic: fc.constantFrom(...topics), n: fc.integer({ min: 1, max: 4 }), keyed: fc.boolean(), origin: fc.boolean() }) },
      { weight: 3, arbitrary: fc.record({ type: fc.constant('lease' as const), member: fc.constantFrom(...members), asConsumer: fc.boolean(), picks: fc.array(fc.nat(), { minLength: 1, maxLength: 4 }) }) },
      { weight: 3, arbitrary: fc.record({ type: fc.constant('done' as const), pick: fc.nat(), ok: fc.boolean(), stale: fc.boolean() }) },
      { weight: 1, arbitrary: fc.record({ type: fc.constant('reclaim' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ type: fc.constant('requeue' as const), topic: fc.constantFrom(...topics), pick: fc.nat() }) },
    );
    // Weighted towards what builds a state up: registrations, emits, leases and outcomes.
    type Drawn = typeof draw extends fc.Arbitrary<infer T> ? T : never;

    /** The command `d` stands for at `index`, against `state` (leases and dead letters it holds). */
    function command(d: Drawn, state: FanoutState, index: number): FanoutCommand {
      const atMs = index * 250.25;
      const leased = [...state.items.values()].filter((i): i is ItemRecord & { phase: { kind: 'leased' } } => i.phase.kind === 'leased');
      switch (d.type) {
        case 'consume':
          return { type: 'consume', topic: d.topic, member: d.member, settings: { ...SETTINGS, retries: d.retries, ratePerSecond: d.rate } };
        case 'unconsume':
          return { type: 'unconsume', topic: d.topic, member: d.member };
        case 'emit': {
          const items = Array.from({ length: d.n }, (_, k) => ({ data: Uint8Array.of(index, k), key: d.keyed ? `k${k % 2}` : null }));
          return { type: 'emit', topic: d.topic, items, origin: d.origin ? { job: 'nightly', slotMs: index } : null, atMs };
        }
        case 'lease': {
          // Pending items, mostly to a consumer of the first one's topic (else few leases apply).
          const pending = [...state.items.values()].filter((i) => i.phase.kind === 'pending');
          const ids = d.picks.map((p) => pending[p % Math.max(1, pending.length)]?.id ?? state.nextItemId);
          const first = state.items.get(ids[0] ?? 0);
          const consumers = [...(state.topics.get(first?.topic ?? '')?.consumers.keys() ?? [])];
          const member = d.asConsumer ? (consumers[index % Math.max(1, consumers.length)] ?? d.member) : d.member;
          return { type: 'lease', member, ids, atMs };
        }
        case 'done': {
          const item = leased[d.pick % Math.max(1, leased.length)];
          if (item === undefined) return { type: 'done', member: 'm1', outcomes: [{ id: 1, token: 0, error: null }], atMs };
          return { type: 'done', member: item.phase.member, outcomes: [{ id: item.id, token: item.phase.token - (d.stale ? 1 : 0), error: d.ok ? null : `failed at ${index}` }], atMs };
        }
        case 'reclaim': {
          const item = leased[d.pick % Math.max(1, leased.length)];
          return { type: 'reclaim', leases: item === undefined ? [] : [{ id: item.id, token: item.phase.token }], atMs };
        }
        case 'requeue': {
          const letters = state.topics.get(d.topic)?.deadLetters ?? [];
          return { type: 'requeue', topic: d.topic, ids: letters.length === 0 ? [] : [letters[d.pick % letters.length]?.id ?? 0], atMs };
        }
      }
    }

    fc.assert(
      fc.property(fc.array(draw, { maxLength: 80, size: 'max' }), fc.array(draw, { maxLength: 40, size: 'max' }), (before, after) => {
        const a = new FanoutState(LIMITS);
        const b = new FanoutState(LIMITS);
        let index = 0;
        for (const d of before) {
          const c = command(d, a, ++index);
          expect(b.apply(index, c)).toEqual(a.apply(index, c));
        }
        const bytes = encodeFanoutSnapshot(a);
        expect(encodeFanoutSnapshot(b)).toEqual(bytes);

        const restored = new FanoutState(LIMITS);
        restoreFanoutSnapshot(restored, bytes);
        expect(encodeFanoutSnapshot(restored)).toEqual(bytes);
        expect(contents(restored)).toEqual(contents(a));
        for (const d of after) {
          const c = command(d, a, ++index);
          expect(restored.apply(index, c)).toEqual(a.apply(index, c));
        }
        expect(encodeFanoutSnapshot(restored)).toEqual(encodeFanoutSnapshot(a));
        expect(derived(restored)).toEqual(derived(a));
      }),
      { numRuns: 300 },
    );
  });
});
