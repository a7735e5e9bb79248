import { describe, expect, it } from 'vitest';
import { BackpressureError } from '../../src/errors.js';
import { MAX_ITEMS_PER_EMIT, type EmittedItem } from '../../src/fanout/command.js';
import { EMIT_ENTRIES_IN_FLIGHT, entryBounds, MAX_EMIT_ENTRY_BYTES, proposeEntries, type ProposeEntry } from '../../src/runtime/fanout/emit-entries.js';

const item = (n: number): EmittedItem => ({ data: Uint8Array.of(n % 256, n >> 8), key: null });
const itemsOf = (count: number): EmittedItem[] => Array.from({ length: count }, (_, i) => item(i));

interface FakeLog {
  /** Every proposal, in order, with what applies it (`ok`), refuses it (`full`) or fails it. */
  readonly calls: Array<{ readonly items: readonly EmittedItem[]; readonly settle: (outcome: 'ok' | 'full' | Error) => void }>;
  readonly propose: ProposeEntry;
  readonly maxInFlight: () => number;
}

/** A propose whose entries the test applies (or fails) one by one, in any order, and that counts what is in flight. */
function fakeLog(): FakeLog {
  const calls: FakeLog['calls'] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  let nextIndex = 100;
  const propose = (items: readonly EmittedItem[]): Promise<{ index: number; result: unknown }> => {
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    return new Promise((resolve, reject) => {
      calls.push({
        items,
        settle: (outcome) => {
          inFlight--;
          if (outcome instanceof Error) reject(outcome);
          else resolve({ index: nextIndex++, result: outcome === 'ok' ? { ok: true, firstId: 7 } : { ok: false, reason: 'backpressure' } });
        },
      });
    });
  };
  return { calls, propose, maxInFlight: () => maxInFlight };
}

/** Lets the emit's proposers go on after a settle (its awaits are microtasks). */
const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('proposeEntries: an emit in entries, a few in flight', () => {
  it("proposes no more entries once `stopped` gives an error (a slot's run that aborted mid-emit), and rejects with it once those in flight settle", async () => {
    const log = fakeLog();
    const aborted = new Error('the run exceeded its timeout');
    let why: Error | null = null;
    // With keys: one entry at a time.
    const items = Array.from({ length: MAX_ITEMS_PER_EMIT * 3 }, (_, i) => ({ ...item(i), key: 'k' }));
    const emitted = proposeEntries('t', items, log.propose, undefined, () => why);
    await turn();
    expect(log.calls).toHaveLength(1);
    // The run aborts while its first entry is on its way: that one may apply, no other is proposed.
    why = aborted;
    log.calls[0]!.settle('ok');
    await expect(emitted).rejects.toBe(aborted);
    expect(log.calls).toHaveLength(1);
  });

  it('proposes the entries in the order of their items, at most EMIT_ENTRIES_IN_FLIGHT at once, and resolves with all once all are applied', async () => {
    const log = fakeLog();
    const entries = 9;
    const items = itemsOf(MAX_ITEMS_PER_EMIT * (entries - 1) + 5);
    let done: Awaited<ReturnType<typeof proposeEntries>> | null = null;
    const emitted = proposeEntries('t', items, log.propose).then((e) => (done = e));
    await turn();
    expect(log.calls).toHaveLength(EMIT_ENTRIES_IN_FLIGHT);
    // Applied out of order: the third first, then the others as they come.
    log.calls[2]!.settle('ok');
    await turn();
    expect(log.calls).toHaveLength(EMIT_ENTRIES_IN_FLIGHT + 1);
    for (let k = 0; k < entries; k++) {
      await turn();
      if (k !== 2) log.calls[k]!.settle('ok');
    }
    await emitted;
    expect(log.maxInFlight()).toBe(EMIT_ENTRIES_IN_FLIGHT);
    // Every item proposed once, in order, in entries of MAX_ITEMS_PER_EMIT.
    expect(log.calls.flatMap((c) => c.items)).toEqual(items);
    expect(log.calls.map((c) => c.items.length)).toEqual([...Array.from({ length: entries - 1 }, () => MAX_ITEMS_PER_EMIT), 5]);
    // The entries in item order, with the index each was applied at.
    expect(done!.map((e) => e.count)).toEqual(log.calls.map((c) => c.items.length));
    expect(done![2]!.index).toBe(100);
  });

  it('proposes none more once the topic refused an entry, and names the items kept once those in flight are settled', async () => {
    const log = fakeLog();
    const emitted = proposeEntries('thumbnails', itemsOf(MAX_ITEMS_PER_EMIT * 8), log.propose);
    emitted.catch(() => undefined);
    await turn();
    log.calls[0]!.settle('ok');
    await turn();
    log.calls[1]!.settle('full');
    await turn();
    // The refusal stops the proposing: those in flight (2 to 4) are all there is.
    expect(log.calls).toHaveLength(EMIT_ENTRIES_IN_FLIGHT + 1);
    let settled = false;
    void emitted.catch(() => (settled = true));
    log.calls[2]!.settle('ok');
    log.calls[3]!.settle('full');
    await turn();
    expect(settled).toBe(false);
    log.calls[4]!.settle('ok');
    const error = await emitted.then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(BackpressureError);
    // Entries 0, 2 and 4 were applied, 1 and 3 refused: the items kept, by their place in the emit.
    const m = MAX_ITEMS_PER_EMIT;
    expect((error as Error).message).toBe(`The emit to thumbnails was refused (backpressure): the topic thumbnails holds too many unsettled items; ${3 * m} items of this emit were kept: the items at 0-${m - 1}, ${2 * m}-${3 * m - 1}, ${4 * m}-${5 * m - 1}`);
    // The same as a field, for an app that emits the rest again.
    expect((error as BackpressureError).kept).toEqual([[0, m - 1], [2 * m, 3 * m - 1], [4 * m, 5 * m - 1]]);
    expect(log.calls).toHaveLength(EMIT_ENTRIES_IN_FLIGHT + 1);
  });

  it('holds at most MAX_EMIT_ENTRY_BYTES of items (keys counted) in an entry: 80 items of 60,000 bytes are five entries, and the items kept are named by their places', async () => {
    const big = (n: number, key: string | null = null): EmittedItem => ({ data: new Uint8Array(60_000).fill(n % 256), key });
    const items = Array.from({ length: 80 }, (_, i) => big(i));
    // 17 items are 1,020,000 bytes; an 18th would pass 1 MiB.
    expect(entryBounds(items)).toEqual([0, 17, 34, 51, 68, 80]);
    // A key counts three bytes a character: the seventeenth item's key tips it into the next entry.
    const keyed = items.map((it, i) => (i === 16 ? { ...it, key: 'k'.repeat(10_000) } : it));
    expect(entryBounds(keyed).slice(0, 3)).toEqual([0, 16, 32]);
    // Small items still go MAX_ITEMS_PER_EMIT to an entry.
    expect(entryBounds(itemsOf(MAX_ITEMS_PER_EMIT + 1))).toEqual([0, MAX_ITEMS_PER_EMIT, MAX_ITEMS_PER_EMIT + 1]);
    const log = fakeLog();
    const emitted = proposeEntries('t', items, log.propose);
    emitted.catch(() => undefined);
    await turn();
    for (const call of log.calls) expect(call.items.reduce((sum, it) => sum + it.data.byteLength, 0)).toBeLessThanOrEqual(MAX_EMIT_ENTRY_BYTES);
    log.calls[1]!.settle('full');
    await turn();
    for (const k of [0, 2, 3]) log.calls[k]!.settle('ok');
    const error = await emitted.then(() => null, (e: unknown) => e);
    expect(log.calls).toHaveLength(4);
    expect((error as Error).message).toMatch(/51 items of this emit were kept: the items at 0-16, 34-67$/);
    expect((error as BackpressureError).kept).toEqual([[0, 16], [34, 67]]);
  });

  it('rejects with the first error once those in flight are settled, and proposes none more', async () => {
    const log = fakeLog();
    const emitted = proposeEntries('t', itemsOf(MAX_ITEMS_PER_EMIT * 8), log.propose);
    emitted.catch(() => undefined);
    await turn();
    const first = new Error('outcome unknown');
    log.calls[1]!.settle(first);
    await turn();
    log.calls[0]!.settle('ok');
    log.calls[2]!.settle(new Error('a later one'));
    log.calls[3]!.settle('ok');
    await expect(emitted).rejects.toBe(first);
    expect(log.calls).toHaveLength(EMIT_ENTRIES_IN_FLIGHT);
  });

  it('proposes an emit with keys one entry at a time, so that a failed one keeps the entries before it and no other', async () => {
    const log = fakeLog();
    const items = itemsOf(MAX_ITEMS_PER_EMIT * 3).map((it, i) => (i === 5 ? { ...it, key: 'k' } : it));
    const emitted = proposeEntries('t', items, log.propose);
    emitted.catch(() => undefined);
    await turn();
    expect(log.calls).toHaveLength(1);
    log.calls[0]!.settle('ok');
    await turn();
    expect(log.calls).toHaveLength(2);
    log.calls[1]!.settle('full');
    const error = await emitted.then(() => null, (e: unknown) => e);
    expect((error as Error).message).toMatch(new RegExp(`${MAX_ITEMS_PER_EMIT} items of this emit were kept: the items at 0-${MAX_ITEMS_PER_EMIT - 1}$`));
    expect(log.calls).toHaveLength(2);
    expect(log.maxInFlight()).toBe(1);
  });

  it('proposes an emit of one entry alone', async () => {
    const log = fakeLog();
    const emitted = proposeEntries('t', itemsOf(3), log.propose);
    await turn();
    expect(log.calls).toHaveLength(1);
    log.calls[0]!.settle('ok');
    expect(await emitted).toEqual([{ index: 100, count: 3, firstId: 7 }]);
  });
});
