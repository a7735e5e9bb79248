import { describe, expect, it } from 'vitest';
import { MAX_ITEM_BYTES, MAX_ITEMS_PER_EMIT } from '../../src/fanout/command.js';
import { isFanoutCommand, MAX_PARALLELISM } from '../../src/fanout/command-shape.js';

const SETTINGS = { parallelism: 4, retries: 2, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };
const item = { data: Uint8Array.of(1), key: null };

describe('fan-out commands read from the log (isFanoutCommand)', () => {
  it('takes every command of the right shape', () => {
    for (const c of [
      { type: 'consume', topic: 't', member: 'm1', settings: SETTINGS },
      { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, ratePerSecond: 50 } },
      { type: 'unconsume', topic: 't', member: 'm1' },
      { type: 'emit', topic: 't', items: [item, { data: Uint8Array.of(), key: 'k' }], origin: { job: 'nightly', slotMs: 1000 }, atMs: 5 },
      { type: 'lease', member: 'm1', ids: [1, 2], atMs: 5 },
      { type: 'lease', member: 'm1', ids: [1, 2], atMs: 5, topic: 't' },
      { type: 'done', member: 'm1', outcomes: [{ id: 1, token: 7, error: null }, { id: 2, token: 7, error: 'boom' }], atMs: 5 },
      { type: 'reclaim', leases: [{ id: 1, token: 7 }], atMs: 5 },
      { type: 'requeue', topic: 't', ids: [1], atMs: 5 },
      { type: 'drop', topic: 't', ids: [1], atMs: 5 },
    ]) {
      expect(isFanoutCommand(c), JSON.stringify(c)).toBe(true);
    }
  });

  it.each([
    ['an unknown type', { type: 'drop', topic: 't' }],
    ['an array', [1, 2]],
    ['an empty topic', { type: 'unconsume', topic: '', member: 'm1' }],
    ['parallelism 0', { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, parallelism: 0 } }],
    ['parallelism past the bound', { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, parallelism: MAX_PARALLELISM + 1 } }],
    ['a fractional retry count', { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, retries: 1.5 } }],
    ['a rate of 0', { type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, ratePerSecond: 0 } }],
    ['an emit of no item', { type: 'emit', topic: 't', items: [], origin: null, atMs: 5 }],
    ['an item too large', { type: 'emit', topic: 't', items: [{ data: new Uint8Array(MAX_ITEM_BYTES + 1), key: null }], origin: null, atMs: 5 }],
    ['too many items', { type: 'emit', topic: 't', items: Array.from({ length: MAX_ITEMS_PER_EMIT + 1 }, () => item), origin: null, atMs: 5 }],
    ['an item of text', { type: 'emit', topic: 't', items: [{ data: 'x', key: null }], origin: null, atMs: 5 }],
    ['a time that is not finite', { type: 'lease', member: 'm1', ids: [1], atMs: Number.POSITIVE_INFINITY }],
    ['a negative id', { type: 'lease', member: 'm1', ids: [-1], atMs: 5 }],
    ['a lease of an empty topic', { type: 'lease', member: 'm1', ids: [1], atMs: 5, topic: '' }],
    ['a lease of a topic that is not text', { type: 'lease', member: 'm1', ids: [1], atMs: 5, topic: 7 }],
    ['an id past safe integers', { type: 'requeue', topic: 't', ids: [2 ** 53], atMs: 5 }],
    ['a drop of ids not a list', { type: 'drop', topic: 't', ids: 1, atMs: 5 }],
    ['an outcome without a token', { type: 'done', member: 'm1', outcomes: [{ id: 1, error: null }], atMs: 5 }],
    ['an error too long', { type: 'done', member: 'm1', outcomes: [{ id: 1, token: 1, error: 'x'.repeat(501) }], atMs: 5 }],
  ])('refuses %s', (_name, value) => {
    expect(isFanoutCommand(value)).toBe(false);
  });
});
