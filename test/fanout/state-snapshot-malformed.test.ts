import { decode, encode } from 'cborg';
import { describe, expect, it } from 'vitest';
import { CodecError } from '../../src/errors.js';
import { MAX_ERROR_LENGTH, MAX_ITEM_BYTES, MAX_PENDING_PER_TOPIC, MAX_TOPIC_LENGTH } from '../../src/fanout/command.js';
import { MAX_PARALLELISM } from '../../src/fanout/command-shape.js';
import { FANOUT_DEFAULTS, type FanoutLimits } from '../../src/fanout/state.js';
import { decodeFanoutSnapshot, encodeFanoutSnapshot, FANOUT_SNAPSHOT_VERSION } from '../../src/fanout/state-snapshot.js';
import { richState } from './snapshot-fixture.js';

/**
 * The rich state's snapshot as its array, to spoil one part of. Its layout (see
 * state-snapshot.ts): topics[0] is t (ready [1, 4]), topics[1] is u (a dead letter, ready [6]);
 * items[0..4] are ids 1 (pending), 2 (k's head, leased), 3 (k, pending), 4 (pending, failed
 * once) of t and 6 of u; batches [3, t, 4, 0, 0] and [4, u, 2, 0, 1]; nextItemId 7.
 */
function wire(): unknown[] {
  return decode(encodeFanoutSnapshot(richState())) as unknown[];
}

/** The array at `path` inside `w`. */
function at(w: unknown[], ...path: number[]): unknown[] {
  return path.reduce<unknown[]>((a, i) => a[i] as unknown[], w);
}

const TOPICS = 2;
const ITEMS = 3;
const BATCHES = 4;
const topicT = (w: unknown[]): unknown[] => at(w, TOPICS, 0);
const item = (w: unknown[], i: number): unknown[] => at(w, ITEMS, i);

type Case = readonly [name: string, spoil: (w: unknown[]) => unknown, message: RegExp, limits?: FanoutLimits];

const cases: Case[] = [
  ['a wrong version', (w) => { w[0] = FANOUT_SNAPSHOT_VERSION + 1; }, /unsupported version 2/],
  ['not an array', () => ({ version: 1 }), /expected a non-empty array/],
  ['an empty array', () => [], /expected a non-empty array/],
  ['a field too many at the top', (w) => { w.push([]); }, /snapshot: more than 5 items/],
  ['a field too few at the top', (w) => { w.pop(); }, /snapshot: expected 5 fields, got 4/],
  ['a topic missing a field', (w) => { topicT(w).pop(); }, /topics\[0\]: expected 5 fields/],
  ['an item with a field too many', (w) => { item(w, 0).push(0); }, /items\[0\]: more than 10 items/],
  ['a consumer missing its maxPending', (w) => { at(topicT(w), 1, 0).pop(); }, /topics\[0\]\.consumers\[0\]: expected 7 fields/],
  ['a phase of two fields', (w) => { item(w, 0)[9] = [0, 1]; }, /items\[0\]\.phase: expected 1 or 3 fields, got 2/],
  ['an origin of one field', (w) => { item(w, 0)[5] = ['nightly']; }, /items\[0\]\.origin: expected 2 fields/],
  ['nextItemId of 0', (w) => { w[1] = 0; }, /nextItemId: expected 1 or more/],
  ['a topic name that is a number', (w) => { topicT(w)[0] = 5; }, /topics\[0\]\.name: expected a topic name, got 5/],
  ['an empty topic name', (w) => { topicT(w)[0] = ''; }, /topics\[0\]\.name: expected a topic name/],
  ['a topic name too long', (w) => { topicT(w)[0] = 'x'.repeat(MAX_TOPIC_LENGTH + 1); }, /topics\[0\]\.name/],
  ['a topic named twice', (w) => { at(w, TOPICS, 1)[0] = 't'; }, /topics\[1\]\.name: "t" appears twice/],
  ['a consumer registered twice', (w) => { at(topicT(w), 1).push([...at(topicT(w), 1, 0)]); }, /topics\[0\]\.consumers\[1\]\.member: "m1" appears twice/],
  ['parallelism 0', (w) => { at(topicT(w), 1, 0)[1] = 0; }, /topics\[0\]\.consumers\[0\]: settings out of their bounds/],
  ['parallelism past its bound', (w) => { at(topicT(w), 1, 0)[1] = MAX_PARALLELISM + 1; }, /settings out of their bounds/],
  ['a fractional retry count', (w) => { at(topicT(w), 1, 0)[2] = 1.5; }, /settings out of their bounds/],
  ['a maxPending of 0', (w) => { at(topicT(w), 1, 0)[6] = 0; }, /settings out of their bounds/],
  ['a maxPending past MAX_PENDING_PER_TOPIC', (w) => { at(topicT(w), 1, 0)[6] = MAX_PENDING_PER_TOPIC + 1; }, /settings out of their bounds/],
  ['a negative count', (w) => { at(topicT(w), 2)[0] = -1; }, /topics\[0\]\.counts\.emitted: expected a non-negative integer/],
  ['item data as text', (w) => { item(w, 0)[2] = 'a'; }, /items\[0\]\.data: expected bytes/],
  ['item data too large', (w) => { item(w, 0)[2] = new Uint8Array(MAX_ITEM_BYTES + 1); }, /items\[0\]\.data: expected bytes within the item bound, got 65537 bytes/],
  ['a key that is a number', (w) => { item(w, 1)[3] = 5; }, /items\[1\]\.key: expected a key or null/],
  ['an error too long', (w) => { item(w, 3)[8] = 'x'.repeat(MAX_ERROR_LENGTH + 1); }, /items\[3\]\.lastError/],
  ['a dead letter without data', (w) => { at(w, TOPICS, 1, 3, 0)[1] = null; }, /topics\[1\]\.deadLetters\[0\]\.data/],
  ['an infinite time', (w) => { item(w, 0)[9] = [Number.POSITIVE_INFINITY]; }, /Infinity/],
  ['a fractional token', (w) => { at(item(w, 1), 9)[1] = 5.5; }, /items\[1\]\.phase\.token/],
  ['a leased item with no member', (w) => { at(item(w, 1), 9)[0] = ''; }, /items\[1\]\.phase\.member/],
  ['an item id of 0', (w) => { item(w, 0)[0] = 0; }, /items\[0\]\.id: 0 is not an id given out/],
  ['an item id past nextItemId', (w) => { item(w, 4)[0] = 7; }, /items\[4\]\.id: 7 is not an id given out \(1 to 6\)/],
  ['nextItemId below an item id', (w) => { w[1] = 6; }, /items\[4\]\.id: 6 is not an id given out/],
  ['a dead letter id past nextItemId', (w) => { at(w, TOPICS, 1, 3, 0)[0] = 99; }, /topics\[1\]\.deadLetters\[0\]\.id: 99/],
  ['items out of id order', (w) => { const items = at(w, ITEMS); [items[0], items[1]] = [items[1], items[0]]; }, /items\[1\]\.id: 1 is not past the previous item's 2/],
  ['an item twice', (w) => { at(w, ITEMS).splice(1, 0, [...item(w, 0)]); }, /items\[1\]\.id: 1 is not past/],
  ['an item of an unknown topic', (w) => { item(w, 0)[1] = 2; }, /items\[0\]\.topic: no topic at position 2/],
  ['an item leased behind its key\'s head', (w) => { item(w, 2)[9] = ['m1', 9, 5000]; }, /items\[2\]: leased while an older item of its key is unsettled/],
  ['a ready id that is leased', (w) => { at(topicT(w), 4).push(2); }, /topics\[0\]\.ready\[2\]: item 2 is leased/],
  ['a keyed ready item that is not its key\'s head', (w) => { at(topicT(w), 4).push(3); }, /topics\[0\]\.ready\[2\]: item 3 is not the oldest unsettled item of its key/],
  ['a ready id that is no item', (w) => { at(topicT(w), 4).push(5); }, /topics\[0\]\.ready\[2\]: no unsettled item 5 of this topic/],
  ['a ready id of another topic', (w) => { at(topicT(w), 4).push(6); }, /no unsettled item 6 of this topic/],
  ['a ready id twice', (w) => { at(topicT(w), 4).push(1); }, /topics\[0\]\.ready\[2\]: item 1 appears twice/],
  ['a pending item missing from ready', (w) => { at(topicT(w), 4).pop(); }, /topics\[0\]\.ready: 1 items, where 2 may be leased/],
  ['an item of no batch', (w) => { item(w, 0)[4] = 99; }, /item 1: no batch 99 of its topic/],
  ['an item of a batch of another topic', (w) => { item(w, 4)[4] = 3; }, /item 6: no batch 3 of its topic/],
  ['a batch whose counts miss an item', (w) => { at(w, BATCHES, 0)[3] = 1; }, /batch 3: 3 of its items unsettled by its counts, 4 in the items/],
  ['a settled batch kept', (w) => { at(w, BATCHES).push([9, 0, 1, 1, 0]); }, /batch 9: 0 of its items unsettled/],
  ['a batch index twice', (w) => { at(w, BATCHES).push([...at(w, BATCHES, 0)]); }, /batches\[2\]\.index: 3 appears twice/],
  ['too many topics', () => undefined, /topics: more than 1 items/, { maxTopics: 1 }],
  ['too many unsettled items in a topic', () => undefined, /items\[3\]: topic "t" has more than the 3 unsettled items/, { maxPendingPerTopic: 3 }],
  ['too many dead letters', () => undefined, /topics\[1\]\.deadLetters: more than 0 items/, { maxDeadLettersPerTopic: 0 }],
];

describe('fan-out snapshots refused (decodeFanoutSnapshot)', () => {
  it('the unspoiled snapshot decodes, so that each refusal below is its spoiling', () => {
    expect(() => decodeFanoutSnapshot(encode(wire()))).not.toThrow();
  });

  it.each(cases.map(([name, spoil, message, limits]) => ({ name, spoil, message, limits })))('refuses $name', ({ spoil, message, limits }) => {
    const w = wire();
    const replaced = spoil(w);
    const bytes = encode(replaced === undefined ? w : replaced);
    const decodeIt = (): unknown => decodeFanoutSnapshot(bytes, { ...FANOUT_DEFAULTS, ...limits });
    expect(decodeIt).toThrow(CodecError);
    expect(decodeIt).toThrow(message);
  });

  it('refuses bytes that are not CBOR, cut short, or not bytes', () => {
    const good = encodeFanoutSnapshot(richState());
    for (const bad of [Uint8Array.of(0xff, 0x00), good.subarray(0, good.length - 1), Uint8Array.of(...good, 0)]) {
      expect(() => decodeFanoutSnapshot(bad)).toThrow(CodecError);
    }
    expect(() => decodeFanoutSnapshot('x' as unknown as Uint8Array)).toThrow(CodecError);
  });
});
