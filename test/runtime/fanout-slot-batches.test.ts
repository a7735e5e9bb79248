import { describe, expect, it } from 'vitest';
import { MAX_SLOTS_WITH_BATCHES, SlotBatchTally } from '../../src/runtime/fanout/slot-batches.js';

describe("a slot's batches, as history() shows them (SlotBatchTally)", () => {
  it('counts the batches and items a slot emitted, and what settled of them', () => {
    const tally = new SlotBatchTally();
    tally.emitted(10, { job: 'nightly', slotMs: 1000 }, 5);
    tally.emitted(11, { job: 'nightly', slotMs: 1000 }, 2);
    expect(tally.of('nightly', 1000)).toEqual({ batches: 2, items: 7, open: 2, done: 0, dead: 0 });
    tally.settled({ index: 10, topic: 't', total: 5, done: 4, dead: 1 });
    // A batch not of a slot (cluster.emitItems) counts nowhere.
    tally.settled({ index: 12, topic: 't', total: 1, done: 1, dead: 0 });
    expect(tally.of('nightly', 1000)).toEqual({ batches: 2, items: 7, open: 1, done: 4, dead: 1 });
    expect(tally.of('nightly', 2000)).toBeNull();
  });

  it('keeps the newest MAX_SLOTS_WITH_BATCHES slots, forgetting the open batches of those dropped', () => {
    const tally = new SlotBatchTally();
    for (let i = 0; i <= MAX_SLOTS_WITH_BATCHES; i++) tally.emitted(i + 1, { job: 'j', slotMs: i }, 1);
    expect(tally.of('j', 0)).toBeNull();
    expect(tally.of('j', 1)).toEqual({ batches: 1, items: 1, open: 1, done: 0, dead: 0 });
    tally.settled({ index: 1, topic: 't', total: 1, done: 1, dead: 0 });
    expect(tally.of('j', 0)).toBeNull();
  });
});
