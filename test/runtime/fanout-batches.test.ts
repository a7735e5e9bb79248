import { describe, expect, it } from 'vitest';
import type { ConsumerSettings, FanoutCommand } from '../../src/fanout/command.js';
import { FanoutState } from '../../src/fanout/state.js';
import { MAX_SLOTS_WITH_BATCHES, SlotBatchTally } from '../../src/runtime/fanout/slot-batches.js';
import { BatchTracker, type BatchSummary } from '../../src/runtime/fanout/batches.js';
import { idleFanoutRuntime } from '../fixtures/fanout-runtime.js';

const emit = (count: number, firstId: number): { topic: string; count: number; firstId: number } => ({ topic: 't', count, firstId });

/**
 * A state in which the batch of an emit of three items at index 2 (ids 1 to 3) settled with
 * item 2 dead (retries 0), and a later emit at index 6 (id 4) is still open: what a leader's
 * snapshot shows a member that missed the entries.
 */
function settledState(): FanoutState {
  const settings: ConsumerSettings = { parallelism: 4, retries: 0, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };
  const state = new FanoutState();
  let index = 0;
  const apply = (c: FanoutCommand): void => void state.apply(++index, c);
  apply({ type: 'consume', topic: 't', member: 'm1', settings });
  apply({ type: 'emit', topic: 't', items: [1, 2, 3].map((i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
  apply({ type: 'lease', member: 'm1', ids: [1, 2, 3], atMs: 1 });
  apply({ type: 'done', member: 'm1', outcomes: [1, 2, 3].map((id) => ({ id, token: 3, error: id === 2 ? 'boom' : null })), atMs: 2 });
  apply({ type: 'consume', topic: 'u', member: 'm1', settings });
  apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(4), key: null }], origin: null, atMs: 3 });
  expect([...state.batches.keys()]).toEqual([6]);
  expect(state.topics.get('t')?.deadLetters.map((l) => l.id)).toEqual([2]);
  return state;
}

describe("a slot's batches, as history() shows them (SlotBatchTally)", () => {
  it('counts the batches and items a slot emitted, and what settled of them', () => {
    const tally = new SlotBatchTally();
    tally.emitted(10, { job: 'nightly', slotMs: 1000 }, emit(5, 1));
    tally.emitted(11, { job: 'nightly', slotMs: 1000 }, emit(2, 6));
    expect(tally.of('nightly', 1000)).toEqual({ batches: 2, items: 7, open: 2, done: 0, dead: 0 });
    tally.settled({ index: 10, topic: 't', total: 5, done: 4, dead: 1 });
    // A batch not of a slot (cluster.emitItems) counts nowhere.
    tally.settled({ index: 12, topic: 't', total: 1, done: 1, dead: 0 });
    expect(tally.of('nightly', 1000)).toEqual({ batches: 2, items: 7, open: 1, done: 4, dead: 1 });
    expect(tally.of('nightly', 2000)).toBeNull();
  });

  it('keeps the newest MAX_SLOTS_WITH_BATCHES slots, forgetting the open batches of those dropped', () => {
    const tally = new SlotBatchTally();
    for (let i = 0; i <= MAX_SLOTS_WITH_BATCHES; i++) tally.emitted(i + 1, { job: 'j', slotMs: i }, emit(1, i + 1));
    expect(tally.of('j', 0)).toBeNull();
    expect(tally.of('j', 1)).toEqual({ batches: 1, items: 1, open: 1, done: 0, dead: 0 });
    tally.settled({ index: 1, topic: 't', total: 1, done: 1, dead: 0 });
    expect(tally.of('j', 0)).toBeNull();
  });

  it("settles, once a leader's snapshot replaced the state, the batches it no longer holds: its dead letters of them dead, the rest done", () => {
    const tally = new SlotBatchTally();
    tally.emitted(2, { job: 'nightly', slotMs: 1000 }, emit(3, 1));
    tally.emitted(6, { job: 'nightly', slotMs: 1000 }, emit(1, 4));
    tally.restored(settledState());
    expect(tally.of('nightly', 1000)).toEqual({ batches: 2, items: 4, open: 1, done: 2, dead: 1 });
  });
});

describe('the batches a member emitted (BatchTracker)', () => {
  it("settles, once a leader's snapshot replaced the state, a batch whose entries it no longer holds, and tells settled() and onSettled", async () => {
    const told: BatchSummary[] = [];
    const tracker = new BatchTracker((fn, ms) => {
      const t = setTimeout(fn, ms);
      return () => clearTimeout(t);
    }, (_batch, summary) => told.push(summary));
    const settled = tracker.track('t', [{ index: 2, count: 3, firstId: 1 }]);
    const open = tracker.track('t', [{ index: 6, count: 1, firstId: 4 }]);
    tracker.restored(settledState());
    await expect(settled.settled({ timeoutMs: 1000 })).resolves.toEqual({ topic: 't', count: 3, done: 2, dead: 1 });
    expect(told).toEqual([{ topic: 't', count: 3, done: 2, dead: 1 }]);
    // The batch the snapshot still holds waits for its entries' outcomes, applied one by one.
    expect(tracker.open).toBe(1);
    tracker.settled({ index: 6, topic: 't', total: 1, done: 1, dead: 0 });
    await expect(open.settled({ timeoutMs: 1000 })).resolves.toEqual({ topic: 't', count: 1, done: 1, dead: 0 });
  });

  it('says, when a wait times out, that no member consumes the topic (an emit to such a topic is taken, and its items wait)', async () => {
    const state = new FanoutState();
    const { runtime, apply, timers } = idleFanoutRuntime(state);
    const index = apply({ type: 'emit', topic: 'orphan', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    const batch = runtime.batches.track('orphan', [{ index, count: 1, firstId: 1 }]);
    const waited = batch.settled({ timeoutMs: 100 });
    timers.advance(100);
    await expect(waited).rejects.toMatchObject({ code: 'CRONRAFT_TIMEOUT', message: `The batch ${index} of orphan (no member consumes the topic now: its items wait for one) did not complete within 100 ms` });
    // A topic with a consumer times out without the hint.
    apply({ type: 'consume', topic: 'orphan', member: 'm1', settings: { parallelism: 4, retries: 0, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null } });
    const again = batch.settled({ timeoutMs: 100 });
    timers.advance(100);
    await expect(again).rejects.toMatchObject({ message: `The batch ${index} of orphan did not complete within 100 ms` });
  });

  it('rejects options that are not an object, or of another name, with InvalidArgumentError (a misspelt timeoutMs waited for good)', async () => {
    const tracker = new BatchTracker(
      (fn, ms) => {
        const t = setTimeout(fn, ms);
        return () => clearTimeout(t);
      },
      () => undefined,
    );
    const batch = tracker.track('t', [{ index: 2, count: 1, firstId: 1 }]);
    await expect(batch.settled({ timeout: 5 } as never)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'timeout' });
    await expect(batch.settled(null as never)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'options' });
  });
});
