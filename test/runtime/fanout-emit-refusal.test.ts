/**
 * An emit past its topic's maxPending is refused by its count before its items are encoded, and
 * an emit of none still resolves with a batch of none, however full the topic.
 */
import { describe, expect, it } from 'vitest';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import { FanoutState } from '../../src/fanout/state.js';
import type { FanoutRuntime } from '../../src/runtime/fanout/fanout-runtime.js';
import { idleFanoutRuntime } from '../fixtures/fanout-runtime.js';

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 0, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: 2 };

function fullTopic(): FanoutRuntime {
  const { runtime, apply } = idleFanoutRuntime(new FanoutState());
  // Three items held, then a consumer that takes two at most: the topic is past its maxPending.
  apply({ type: 'consume', topic: 't', member: 'm1', settings: { ...SETTINGS, maxPending: null } });
  apply({ type: 'emit', topic: 't', items: [1, 2, 3].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
  apply({ type: 'consume', topic: 't', member: 'm2', settings: SETTINGS });
  return runtime;
}

describe('fan-out: an emit past maxPending', () => {
  it('is refused by its count, its items never encoded (one JSON would change is not reached)', async () => {
    await expect(fullTopic().emitItems('t', [1, new Map()], undefined, null)).rejects.toMatchObject({ code: 'CRONRAFT_BACKPRESSURE' });
  });

  it('of items that are not an array (null, a string) is refused with CRONRAFT_INVALID_ARGUMENT, not a TypeError (found by a stranger)', async () => {
    for (const items of [null, undefined, 'abc']) {
      await expect(fullTopic().emitItems('t', items as never, undefined, null)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items' });
    }
  });

  it('of no items resolves with a batch of none, settled, however full the topic (found by a review)', async () => {
    const batch = await fullTopic().emitItems('t', [], undefined, null);
    expect(batch.count).toBe(0);
  });
});
