/**
 * The `item-failed` event on the member that ran the attempt carries the error it reported, also
 * when fan-out's state keeps it cut short to stay within its bound (footprint.ts).
 */
import { describe, expect, it } from 'vitest';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import { BATCH_RECORD_BYTES, ITEM_RECORD_BYTES } from '../../src/fanout/footprint.js';
import { FanoutState } from '../../src/fanout/state.js';
import type { FanoutEvent } from '../../src/runtime/fanout/fanout-runtime.js';
import { idleFanoutRuntime } from '../fixtures/fanout-runtime.js';

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 3, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };

describe('fan-out: item-failed', () => {
  it("tells the error this member reported, which the state keeps cut short at its bound", () => {
    // Room for the item (a byte of data) and its batch, and none more: no error fits.
    const state = new FanoutState({ maxUnsettledBytes: ITEM_RECORD_BYTES + 1 + BATCH_RECORD_BYTES });
    const events: FanoutEvent[] = [];
    const { apply } = idleFanoutRuntime(state, (e) => events.push(e));
    apply({ type: 'consume', topic: 't', member: 'm1', settings: SETTINGS });
    apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    apply({ type: 'lease', member: 'm1', ids: [1], atMs: 0 });
    const done = apply({ type: 'done', member: 'm1', outcomes: [{ id: 1, token: 3, error: 'the whole reason it failed' }], atMs: 0 });
    expect(state.items.get(1)?.lastError).toBeNull();
    // With the entry that recorded it: a restart replays it, and an app tells the two apart by it.
    expect(events).toEqual([{ type: 'item-failed', topic: 't', id: 1, attempt: 1, error: 'the whole reason it failed', dead: false, index: done }]);
  });

  it('tells an item gone dead before the batch it settles (a stranger saw batch-settled first)', () => {
    const state = new FanoutState();
    const events: FanoutEvent[] = [];
    const { runtime, apply } = idleFanoutRuntime(state, (e) => events.push(e));
    apply({ type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, retries: 0 } });
    apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    // This member emitted it: its batch is tracked, and settles as the item goes dead.
    runtime.batches.track('t', [{ index: 2, count: 1, firstId: 1 }]);
    apply({ type: 'lease', member: 'm1', ids: [1], atMs: 0 });
    apply({ type: 'done', member: 'm1', outcomes: [{ id: 1, token: 3, error: 'broken' }], atMs: 0 });
    expect(events.map((e) => (e.type === 'item-failed' ? `${e.type} dead=${String(e.dead)}` : e.type))).toEqual(['item-failed dead=true', 'batch-settled']);
  });
});
