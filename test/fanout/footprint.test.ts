/**
 * Fan-out's state counts what its records take in a snapshot (footprint.ts), and bounds it, so
 * that a member's snapshot stays within what a follower takes in (MAX_SNAPSHOT_BYTES). Before,
 * it counted the items' data alone, up to 64 MiB: 120,000 items of 400 bytes made a snapshot of
 * 53 MB, which no follower that needed it ever took in.
 */
import fc from 'fast-check';
import { fullness } from '../../src/fanout/fullness.js';
import { encode } from 'cborg';
import { headBytes } from '../../src/bytes/cbor-heads.js';
import { describe, expect, it } from 'vitest';
import type { ConsumerSettings, FanoutCommand } from '../../src/fanout/command.js';
import { BATCH_RECORD_BYTES, ITEM_RECORD_BYTES, consumerBytes, deadLetterBytes, itemBytes, textBytes, textWithin, topicBytes } from '../../src/fanout/footprint.js';
import { FanoutState } from '../../src/fanout/state.js';
import { decodeFanoutSnapshot, encodeFanoutSnapshot } from '../../src/fanout/state-snapshot.js';
import { planEarlyLeases } from '../../src/fanout/early-leases.js';
import { planDelivery, RateBuckets } from '../../src/fanout/planner.js';
import { cluster, emitN, settings } from './plan-fixture.js';

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 1, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };

/** The bytes the state should count, from its records. */
function recount(state: FanoutState): { unsettled: number; leases: number; dead: number; topics: number } {
  let unsettled = state.batches.size * BATCH_RECORD_BYTES;
  let leases = 0;
  for (const item of state.items.values()) {
    unsettled += itemBytes(item);
    if (item.phase.kind === 'leased') leases += textBytes(item.phase.member);
  }
  let dead = 0;
  let topics = 0;
  for (const topic of state.topics.values()) {
    for (const letter of topic.deadLetters) dead += deadLetterBytes(letter);
    topics += topicBytes(topic.name);
    for (const member of topic.consumers.keys()) topics += consumerBytes(member);
  }
  return { unsettled, leases, dead, topics };
}

/** A snapshot's frame: its array's head, version and next id, and its lists' heads. */
const FRAME_BYTES = 32;

/** The bytes of `state`'s snapshot without its items, batches and dead letters: its topics alone. */
function topicsAloneBytes(state: FanoutState): number {
  const bare = new FanoutState(state.limits);
  bare.restore({
    nextItemId: state.nextItemId,
    topics: [...state.topics.values()].map((t) => ({ name: t.name, ready: new Set(), consumers: t.consumers, counts: t.counts, deadLetters: [] })),
    items: [],
    batches: [],
  });
  return encodeFanoutSnapshot(bare).byteLength;
}

describe('fan-out state: bytes as a snapshot takes them', () => {
  it('keeps the start of an error that fits, whole pairs of surrogates, or none', () => {
    expect(textWithin('boom', 4)).toBe('boom');
    expect(textWithin('boom', 3)).toBe('boo');
    expect(textWithin('éboom', 1)).toBeNull();
    expect(textWithin('a\u{1F600}b', 4)).toBe('a');
    expect(textWithin('a\u{1F600}b', 5)).toBe('a\u{1F600}');
    expect(textBytes('a\u{1F600}')).toBe(5);
  });

  it('counts the UTF-8 bytes CBOR holds a text in, exactly, and cuts one within any bound at the longest whole start', () => {
    // Any code unit alone (lone surrogates, which CBOR holds as U+FFFD), and whole code points of every length.
    const codeUnit = fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c));
    const text = fc.oneof(fc.string({ unit: codeUnit, maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 40 }));
    fc.assert(
      fc.property(text, fc.integer({ min: 0, max: 200 }), (text, maxBytes) => {
        expect(encode(text).byteLength).toBe(textBytes(text) + headBytes(textBytes(text)));
        const cut = textWithin(text, maxBytes);
        if (cut === null) {
          expect(textBytes(text.slice(0, (text.codePointAt(0) ?? 0) > 0xffff ? 2 : 1))).toBeGreaterThan(maxBytes);
          return;
        }
        expect(text.startsWith(cut) && textBytes(cut) <= maxBytes).toBe(true);
        // The longest: one more code point would not fit, and no pair is cut in two.
        if (cut.length < text.length) {
          const next = text.codePointAt(cut.length) ?? 0;
          expect(textBytes(text.slice(0, cut.length + (next > 0xffff ? 2 : 1)))).toBeGreaterThan(maxBytes);
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('refuses an emit whose records would pass the bound, though its data alone fits (each item takes ITEM_RECORD_BYTES and its text besides)', () => {
    const state = new FanoutState({ maxUnsettledBytes: 10_000 });
    const tiny = Array.from({ length: 200 }, () => ({ data: Uint8Array.of(1), key: null }));
    expect(state.apply(1, { type: 'emit', topic: 't', items: tiny, origin: null, atMs: 0 })).toMatchObject({ ok: false, reason: 'backpressure' });
    expect(state.apply(2, { type: 'emit', topic: 't', items: tiny.slice(0, 50), origin: { job: 'nightly', slotMs: 0 }, atMs: 0 })).toMatchObject({ ok: true });
    expect(state.unsettledBytes).toBe(BATCH_RECORD_BYTES + 50 * (1 + ITEM_RECORD_BYTES + textBytes('nightly')));
    // An emit to another topic is refused for the bytes that one holds, which no member consumes (a mistyped name, say): the error says so.
    expect(state.apply(3, { type: 'emit', topic: 'u', items: tiny, origin: null, atMs: 0 })).toMatchObject({ ok: false, reason: 'backpressure' });
    expect(fullness(state, 'u', 200)).toMatch(/^the unsettled items of every topic together take \d+ bytes of the 10000 they may \(u holds 0\); the topic holding the most is t, with 50, which no member consumes$/);
  });

  it('forgets the oldest dead letters of the topic that keeps the most bytes of them, and a topic left with nothing', () => {
    // A dead letter of 10 bytes of data and the error 'x'.
    const letter = deadLetterBytes({ id: 0, data: new Uint8Array(10), key: null, failures: 1, error: 'x', origin: null, atMs: 0 });
    const state = new FanoutState({ maxDeadLetterBytes: 3 * letter });
    let index = 0;
    const apply = (c: FanoutCommand): ReturnType<FanoutState['apply']> => state.apply(++index, c);
    const kill = (topic: string, size: number): void => {
      apply({ type: 'consume', topic, member: 'm', settings: { ...SETTINGS, retries: 0 } });
      const emitted = apply({ type: 'emit', topic, items: [{ data: new Uint8Array(size), key: null }], origin: null, atMs: 0 });
      const id = emitted.ok ? (emitted.firstId as number) : -1;
      apply({ type: 'lease', member: 'm', ids: [id], atMs: 0 });
      apply({ type: 'done', member: 'm', outcomes: [{ id, token: index, error: 'x' }], atMs: 0 });
    };
    kill('a', 10);
    kill('b', 11);
    apply({ type: 'unconsume', topic: 'b', member: 'm' });
    // A third passes the bound: the only one of 'b', which keeps the most, goes, and 'b', left
    // with nothing and no consumer, is forgotten.
    kill('c', 10);
    expect([...state.topics.values()].map((t) => [t.name, t.deadLetters.map((l) => l.id)])).toEqual([['a', [1]], ['c', [3]]]);
    kill('a', 10);
    expect(state.deadLetterBytes).toBe(3 * letter);
    // 'a' and 'c' then keep as much: the one the new letter joined gives up its oldest.
    kill('c', 10);
    expect([...state.topics.values()].map((t) => [t.name, t.deadLetters.map((l) => l.id)])).toEqual([['a', [1, 4]], ['c', [5]]]);
    expect(state.deadLetterBytes).toBe(3 * letter);
    expect(state.deadLetterBytes).toBe(recount(state).dead);
  });

  it('whatever the commands, counts its bytes as its records take them, within their bounds, and its snapshot takes no more', () => {
    const members = ['m1', 'm\u{1F600}-two', 'a-member-with-a-long-name:7001'];
    const text = fc.string({ unit: 'grapheme', maxLength: 12 });
    const command = fc.oneof(
      fc.record({ type: fc.constant('consume' as const), topic: fc.constantFrom('t', 'u', 'a-topic-with-a-longer-name'), member: fc.constantFrom(...members) }),
      fc.record({ type: fc.constant('unconsume' as const), topic: fc.constantFrom('t', 'u', 'a-topic-with-a-longer-name'), member: fc.constantFrom(...members) }),
      fc.record({ type: fc.constant('emit' as const), topic: fc.constantFrom('t', 'u'), sizes: fc.array(fc.integer({ min: 0, max: 200 }), { minLength: 1, maxLength: 4 }), key: fc.option(text), job: fc.option(text) }),
      fc.record({ type: fc.constant('lease' as const), member: fc.constantFrom(...members), ids: fc.array(fc.integer({ min: 1, max: 40 }), { maxLength: 6 }) }),
      fc.record({ type: fc.constant('done' as const), id: fc.integer({ min: 1, max: 40 }), error: fc.option(fc.string({ unit: 'grapheme', maxLength: 60 })) }),
      fc.record({ type: fc.constant('reclaim' as const), id: fc.integer({ min: 1, max: 40 }) }),
      fc.record({ type: fc.constant('drop' as const), topic: fc.constantFrom('t', 'u'), id: fc.integer({ min: 1, max: 40 }) }),
      fc.record({ type: fc.constant('requeue' as const), topic: fc.constantFrom('t', 'u'), id: fc.integer({ min: 1, max: 40 }) }),
    );
    fc.assert(
      fc.property(fc.array(command, { maxLength: 60 }), fc.integer({ min: 400, max: 3000 }), fc.integer({ min: 100, max: 1500 }), fc.integer({ min: 0, max: 400 }), fc.integer({ min: 100, max: 800 }), (drawn, maxUnsettledBytes, maxDeadLetterBytes, maxLeaseBytes, maxTopicBytes) => {
        const state = new FanoutState({ maxUnsettledBytes, maxDeadLetterBytes, maxLeaseBytes, maxTopicBytes });
        drawn.forEach((d, i) => {
          const index = i + 1;
          const atMs = index * 250.5;
          let c: FanoutCommand;
          if (d.type === 'consume') c = { type: 'consume', topic: d.topic, member: d.member, settings: SETTINGS };
          else if (d.type === 'unconsume') c = { type: 'unconsume', topic: d.topic, member: d.member };
          else if (d.type === 'emit') c = { type: 'emit', topic: d.topic, items: d.sizes.map((n) => ({ data: new Uint8Array(n).fill(7), key: d.key === null || d.key === '' ? null : d.key })), origin: d.job === null || d.job === '' ? null : { job: d.job, slotMs: atMs }, atMs };
          else if (d.type === 'lease') c = { type: 'lease', member: d.member, ids: d.ids, atMs };
          else if (d.type === 'done' || d.type === 'reclaim') {
            const phase = state.items.get(d.id)?.phase;
            const [member, token] = phase?.kind === 'leased' ? [phase.member, phase.token] : ['m1', 0];
            c = d.type === 'done' ? { type: 'done', member, outcomes: [{ id: d.id, token, error: d.error }], atMs } : { type: 'reclaim', leases: [{ id: d.id, token }], atMs };
          } else c = { type: d.type, topic: d.topic, ids: [d.id], atMs };
          state.apply(index, c);
          const counted = recount(state);
          expect([state.unsettledBytes, state.leaseBytes, state.deadLetterBytes, state.topicBytes]).toEqual([counted.unsettled, counted.leases, counted.dead, counted.topics]);
          expect(state.deadLetterBytes).toBeLessThanOrEqual(maxDeadLetterBytes);
          expect(state.boundedUnsettledBytes).toBeLessThanOrEqual(maxUnsettledBytes);
          expect(state.leaseBytes).toBeLessThanOrEqual(maxLeaseBytes);
          expect(state.topicBytes).toBeLessThanOrEqual(maxTopicBytes);
        });
        const bytes = encodeFanoutSnapshot(state);
        expect(topicsAloneBytes(state)).toBeLessThanOrEqual(FRAME_BYTES + state.topicBytes);
        expect(bytes.byteLength).toBeLessThanOrEqual(FRAME_BYTES + state.topicBytes + state.unsettledBytes + state.deadLetterBytes);
        const restored = new FanoutState(state.limits);
        restored.restore(decodeFanoutSnapshot(bytes, state.limits));
        expect([restored.unsettledBytes, restored.leaseBytes, restored.deadLetterBytes, restored.topicBytes]).toEqual([state.unsettledBytes, state.leaseBytes, state.deadLetterBytes, state.topicBytes]);
      }),
      { numRuns: 200 },
    );
  });

  it('leases past maxLeaseBytes leave items pending, and neither plan proposes them until leases end', () => {
    const member = 'a-member:7001';
    const { state, apply } = cluster({ maxLeaseBytes: 10 * textBytes(member) });
    apply({ type: 'consume', topic: 't', member, settings: settings(64) });
    apply({ type: 'consume', topic: 'u', member, settings: settings(64) });
    apply(emitN(100));
    const plan = (): number => planDelivery({ state, nowMs: 0, eligible: () => true, configured: () => true, lost: () => false, busy: new Set(), rates: new RateBuckets() }).leases.reduce((n, l) => n + l.ids.length, 0);
    expect(plan()).toBe(10);
    const index = apply({ type: 'lease', member, ids: Array.from({ length: 100 }, (_, i) => i + 1), atMs: 0 });
    expect([...state.leased]).toEqual(Array.from({ length: 10 }, (_, i) => i + 1));
    expect(state.leaseBytes).toBe(10 * textBytes(member));
    expect(plan()).toBe(0);
    // An emit to topic u, with nothing waiting there: leased early only within the share too.
    const early = (): number => planEarlyLeases({ state, topic: 'u', firstId: state.nextItemId, count: 10, nowMs: 0, eligible: () => true, leasingOf: () => 0, leasing: new Set<number>(), rates: new RateBuckets(), prefetch: () => 1 }).reduce((n, l) => n + l.ids.length, 0);
    expect(early()).toBe(0);
    apply({ type: 'done', member, outcomes: [{ id: 1, token: index, error: null }], atMs: 0 });
    expect(state.leaseBytes).toBe(9 * textBytes(member));
    expect(plan()).toBe(1);
    expect(early()).toBe(1);
  });

  it("holds by default 100,000 items of 100 bytes emitted by a job whose name has up to 29 characters, as the README says (issue 19's bench)", () => {
    const held = (nameLength: number): number => {
      const { state, apply } = cluster();
      apply({ type: 'consume', topic: 't', member: 'm1', settings: settings(64) });
      const origin = { job: 'j'.repeat(nameLength), slotMs: 0 };
      for (let k = 0; k < 100_000; k += 1024) {
        const items = Array.from({ length: Math.min(1024, 100_000 - k) }, () => ({ data: new Uint8Array(100), key: null }));
        if (!state.apply(1000 + k, { type: 'emit', topic: 't', items, origin, atMs: 0 }).ok) break;
      }
      return state.items.size;
    };
    expect(held(29)).toBe(100_000);
    expect(held(30)).toBeLessThan(100_000);
  });

});
