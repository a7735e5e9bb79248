import { describe, expect, it } from 'vitest';
import { MAX_ITEM_BYTES } from '../../src/fanout/command.js';
import { MAX_ITEM_DEPTH } from '../../src/fanout/items.js';
import { ITEMS_ENCODED_PER_TURN } from '../../src/runtime/fanout/encode-items.js';
import { Cluster } from '../../src/index.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { freePort } from '../fixtures/process-cluster.js';
import { stoppedAfterEach } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

/** A single-member cluster (it leads at once) running fan-out's cluster version. */
async function oneMember(): Promise<Cluster> {
  const c = new Cluster([], { storage: 'memory' });
  started.push(c);
  await c.start();
  await expect.poll(() => c.state().version.active, { timeout: 10_000, interval: 20 }).toBe(FANOUT_VERSION);
  return c;
}

/**
 * What the README promises of a work item through the facade: bytes or JSON handed back as
 * they were emitted, an emit checked whole before anything is kept, a consumer registered after
 * start() with the default parallelism, and the items of one key run one at a time, in order.
 */
describe('fan-out items through the Cluster', () => {
  it('hands a consumer registered after start() bytes as they were and JSON values as emitted; refuses a bad topic or an item past 64 KiB, keeping nothing of the emit', async () => {
    const c = await oneMember();
    const got: unknown[] = [];
    c.consume('t', (item) => void got.push(item));
    // Registered after start(), with parallelism 1 by default.
    await expect.poll(() => c.state().topics.find((t) => t.name === 't')?.consumers, { timeout: 10_000, interval: 20 }).toEqual({ [c.id]: 1 });

    const bytes = Uint8Array.of(0, 1, 2, 255);
    const json = { id: 'a', n: [1, 2.5, null], nested: { ok: true } };
    await (await c.emitItems('t', [bytes, json, 'text', 7])).settled({ timeoutMs: 10_000 });
    expect(got).toHaveLength(4);
    expect(got[0]).toBeInstanceOf(Uint8Array);
    expect([...(got[0] as Uint8Array)]).toEqual([...bytes]);
    expect(got.slice(1)).toEqual([json, 'text', 7]);

    // The largest item passes; one byte more is refused, and so is the whole emit around it.
    const largest = new Uint8Array(MAX_ITEM_BYTES - 1);
    await expect(c.emitItems('t', [1, new Uint8Array(MAX_ITEM_BYTES)])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items[1]' });
    await expect(c.emitItems('t', [1, () => 2])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items[1]' });
    await expect(c.emitItems('', [1])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' });
    // A line break in a topic: a key's line of 'x\ny' and key 'z' was that of 'x' and key
    // 'y\nz', whose item then waited for good and spun the leader (state.ts lineOf).
    await expect(c.emitItems('x\ny', [1], { key: () => 'z' })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' });
    expect(() => c.consume('x\ny', () => undefined)).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' }));
    // A lone surrogate in a topic or a key: the log would make it another one.
    await expect(c.emitItems('x\uD800', [1])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' });
    await expect(c.emitItems('t', [1], { key: () => 'k\uDC00' })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'key' });
    // An emit of nothing (a nightly slot that found no ids): a batch of none, settled at once.
    const none = await c.emitItems('t', []);
    expect(none.count).toBe(0);
    await expect(none.settled({ timeoutMs: 1 })).resolves.toMatchObject({ count: 0, done: 0, dead: 0 });
    await expect(c.emitItems('t', [1, 2], { key: (item) => (item === 2 ? '' : null) })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'key' });
    // What JSON cannot encode, and a key that is not a function: the same typed refusal, not a TypeError.
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    await expect(c.emitItems('t', [1, 10n])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items[1]' });
    await expect(c.emitItems('t', [cycle])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items[0]' });
    await expect(c.emitItems('t', [1], { key: 'customerId' } as never)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'key' });
    await expect(c.emitItems('t', [1], null as never)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'options' });
    // What JSON would hand the consumer as something else: a Map or a Set as {}, NaN as null, a
    // typed array as an object of indexes, a hole as null, a field undefined dropped.
    const holed: unknown[] = [1];
    holed[2] = 3;
    // And (found by an attack) -0 as 0, an array's field of another name dropped, a field named
    // by a symbol dropped, a boxed number as the number.
    const named: unknown[] = [1, 2];
    (named as unknown as { extra: number }).extra = 3;
    // And a field that is not enumerable, on an object or an array, dropped.
    const hidden = Object.defineProperty({ a: 1 }, 'secret', { value: 2 });
    const hiddenInArray = Object.defineProperty([1], 'secret', { value: 2 });
    // And an instance of a class, as a plain object of its own fields: its getter's value gone.
    class Money {
      readonly #cents = 250;
      readonly currency = 'EUR';
      get cents(): number {
        return this.#cents;
      }
    }
    class Stamp {
      constructor(readonly at: number) {}
      toJSON(): { stamp: number } {
        return { stamp: this.at };
      }
    }
    const unfaithful: unknown[] = [new Money(), hidden, hiddenInArray, new Map([['a', 1]]), new Set([1]), new Error('x'), Number.NaN, Number.POSITIVE_INFINITY, new Uint16Array([1]), new ArrayBuffer(2), holed, { a: undefined }, { bytes: Uint8Array.of(1) }, -0, { n: -0 }, named, { [Symbol('s')]: 1, a: 1 }, new Number(5), { s: new String('x') }];
    for (const item of unfaithful) await expect(c.emitItems('t', [1, item])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items[1]' });
    let deep: unknown = 1;
    for (let i = 0; i <= MAX_ITEM_DEPTH; i++) deep = [deep];
    await expect(c.emitItems('t', [deep])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items[0]' });
    // One array held twice at every level: 2^40 values to JSON, refused at once rather than walked.
    let shared: unknown = 1;
    for (let i = 0; i < 40; i++) shared = [shared, shared];
    await expect(c.emitItems('t', [shared])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'items[0]' });
    // A key with a control character, as a topic.
    await expect(c.emitItems('t', [1], { key: () => 'a\nb' })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'key' });
    // Unicode's control characters past DEL too (U+0085 is a line break), in a key and a topic.
    await expect(c.emitItems('t', [1], { key: () => 'a\u0085b' })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'key' });
    for (const topic of ['a\u0085b', 'a\u009bb']) await expect(c.emitItems(topic, [1])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' });
    // A key function that throws rejects the emit with what it threw.
    await expect(c.emitItems('t', [1], { key: () => { throw new Error('no key'); } })).rejects.toThrow('no key');
    // requeue() rejects a bad argument too, rather than throwing at the call.
    const requeued = c.requeue('t', [1.5]);
    await expect(requeued).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    expect(c.state().topics.find((t) => t.name === 't')?.emitted).toBe(4);
    await (await c.emitItems('t', [largest])).settled({ timeoutMs: 10_000 });
    expect((got[4] as Uint8Array).byteLength).toBe(MAX_ITEM_BYTES - 1);
    // A Date goes as JSON takes it (its toJSON), as in a request's body.
    await (await c.emitItems('t', [{ at: new Date(0) }])).settled({ timeoutMs: 10_000 });
    expect(got[5]).toEqual({ at: '1970-01-01T00:00:00.000Z' });
    // A class's instance goes as the app says: spread into a plain object, or by its class's
    // toJSON; and an object with no prototype is a plain one.
    const bare = Object.assign(Object.create(null) as object, { a: 1 });
    await (await c.emitItems('t', [{ ...new Money() }, new Stamp(7), bare])).settled({ timeoutMs: 10_000 });
    expect(got.slice(6)).toEqual([{ currency: 'EUR' }, { stamp: 7 }, { a: 1 }]);
    expect(c.state().topics.find((t) => t.name === 't')).toMatchObject({ emitted: 9, done: 9 });
  });

  it('encodes a large emit a turn of the event loop at a time, from the array as it was at the call, and keeps nothing of it when an item of a later turn is bad', async () => {
    const c = await oneMember();
    c.consume('t', () => undefined, { parallelism: 64 });
    await expect.poll(() => c.state().topics.find((t) => t.name === 't')?.consumers, { timeout: 10_000, interval: 20 }).toEqual({ [c.id]: 64 });
    // Whether a callback queued on the event loop just before the call had run, as each turn's
    // first item was encoded (a turn yields with setImmediate: timers due and I/O run between).
    let ticked = false;
    const seen: boolean[] = [];
    const item = (i: number): unknown => ({ toJSON: () => (i % ITEMS_ENCODED_PER_TURN === 0 && seen.push(ticked), i) });
    const items = Array.from({ length: 3 * ITEMS_ENCODED_PER_TURN }, (_, i) => item(i));
    setImmediate(() => (ticked = true));
    const emitted = c.emitItems('t', items);
    items.push(item(items.length));
    const batch = await emitted;
    expect(seen).toEqual([false, true, true]);
    expect(await batch.settled({ timeoutMs: 10_000 })).toMatchObject({ count: 3 * ITEMS_ENCODED_PER_TURN, done: 3 * ITEMS_ENCODED_PER_TURN });

    const bad = 2 * ITEMS_ENCODED_PER_TURN + 5;
    const withBad = Array.from({ length: 3 * ITEMS_ENCODED_PER_TURN }, (_, i) => (i === bad ? () => i : i));
    await expect(c.emitItems('t', withBad)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: `items[${bad}]` });
    expect(c.state().topics.find((t) => t.name === 't')?.emitted).toBe(3 * ITEMS_ENCODED_PER_TURN);
  });

  it('takes an emit of items of almost 64 KiB whose one entry would pass a frame of the transport, on three members, and runs them all', async () => {
    // 80 items of 60,000 bytes were one entry of 4.8 MB, past the transport's 4 MiB frame: the
    // leader appended it and could never send it, and nothing committed again (its followers
    // never got it). Now an entry holds at most MAX_EMIT_ENTRY_BYTES of items.
    const ports = await Promise.all([0, 1, 2].map(() => freePort()));
    const addrs = ports.map((port) => `127.0.0.1:${port}`);
    const members = addrs.map((listen) => new Cluster(addrs, { listen, storage: 'memory', electionTimeoutMs: 500, heartbeatMs: 50 }));
    started.push(...members);
    let ran = 0;
    for (const m of members) m.consume('big', () => void ran++, { parallelism: 8 });
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => members.every((m) => m.state().version.active === FANOUT_VERSION && Object.keys(m.state().topics[0]?.consumers ?? {}).length === 3), { timeout: 15_000, interval: 50 }).toBe(true);
    const leader = members.find((m) => m.state().role === 'leader') as Cluster;
    const items = Array.from({ length: 80 }, () => new Uint8Array(60_000));
    const batch = await leader.emitItems('big', items);
    expect(batch.count).toBe(80);
    await batch.settled({ timeoutMs: 30_000 });
    expect(ran).toBe(80);
    expect(leader.state().unsendableMessages).toBe(0);
    // And it goes on committing: a small emit from each member.
    for (const m of members) expect((await m.emitItems('big', [1])).count).toBe(1);
  }, 60_000);

  it('refuses a bad topic, handler or option of consume() at the call, naming it, and a topic consumed twice', () => {
    const c = new Cluster([], { storage: 'memory' });
    const h = (): void => undefined;
    expect(() => c.consume('', h)).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' }));
    // A lone surrogate: the log made it 'x\uFFFD', another topic than the consumer's, and the
    // items emitted to it were leased to this member and ran nowhere.
    expect(() => c.consume('x\uD800', h)).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' }));
    expect(() => c.consume('t', 'h' as unknown as () => void)).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'handler' }));
    for (const option of ['parallelism', 'retries', 'timeoutMs', 'backoffMs', 'ratePerSecond', 'maxPending'] as const) {
      expect(() => c.consume('t', h, { [option]: -1 })).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option }));
      expect(() => c.consume('t', h, { [option]: 1.5 })).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option }));
    }
    expect(() => c.consume('t', h, { maxPending: 100_001 })).toThrow(expect.objectContaining({ option: 'maxPending' }));
    // A misspelt option: dropped unsaid before, and the default used.
    expect(() => c.consume('t', h, { paralelism: 8 } as never)).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'paralelism' }));
    c.consume('t', h);
    expect(() => c.consume('t', h)).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'topic' }));
  });

  it('hands each attempt, and deadLetters(), a copy of an item\'s bytes: a handler that changes them in place changes no retry, dead letter or requeue', async () => {
    const c = await oneMember();
    const got: number[][] = [];
    c.consume('in-place', (item) => {
      const bytes = item as Uint8Array;
      got.push([...bytes]);
      // Decrypting in place, say, then failing.
      bytes.fill(0xee);
      throw new Error('fails');
    }, { retries: 1, backoffMs: 0 });
    await expect.poll(() => c.state().topics.find((t) => t.name === 'in-place')?.consumers, { timeout: 10_000, interval: 20 }).toEqual({ [c.id]: 1 });
    await (await c.emitItems('in-place', [Uint8Array.of(1, 2, 3, 4)])).settled({ timeoutMs: 10_000 });
    // Before, the retry got the first attempt's changes ([238, 238, 238, 238]).
    expect(got).toEqual([[1, 2, 3, 4], [1, 2, 3, 4]]);
    const [letter] = c.deadLetters('in-place');
    expect([...(letter?.item as Uint8Array)]).toEqual([1, 2, 3, 4]);
    (letter?.item as Uint8Array).fill(0x55);
    expect([...(c.deadLetters('in-place')[0]?.item as Uint8Array)]).toEqual([1, 2, 3, 4]);
    await c.requeue('in-place');
    await expect.poll(() => got.length, { timeout: 10_000, interval: 20 }).toBe(4);
    expect(got.slice(2)).toEqual([[1, 2, 3, 4], [1, 2, 3, 4]]);
  });

  it('keeps a topic and a key whose name starts with U+FEFF apart from the same without it (the log\'s CBOR decoder dropped it); refuses such a job or lock name', async () => {
    const c = await oneMember();
    const got: Array<[string, unknown, string]> = [];
    c.consume('x', (item, ctx) => void got.push(['x', item, ctx.topic]));
    c.consume('\ufeffx', (item, ctx) => void got.push(['\ufeffx', item, ctx.topic]));
    await expect.poll(() => c.state().topics.map((t) => t.name).sort(), { timeout: 10_000, interval: 20 }).toEqual(['x', '\ufeffx']);
    await (await c.emitItems('\ufeffx', ['\ufeffvalue'], { key: () => '\ufeffk' })).settled({ timeoutMs: 10_000 });
    await (await c.emitItems('x', ['value'], { key: () => 'k' })).settled({ timeoutMs: 10_000 });
    expect(got).toEqual([['\ufeffx', '\ufeffvalue', '\ufeffx'], ['x', 'value', 'x']]);
    // Registered before the cluster runs version 3 (at start, say), a job so named was read
    // without it, and ran nowhere: its handler is under the name with it.
    expect(() => c.schedule('\ufeffj', { every: '1h' }, () => undefined)).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'name' }));
    await expect(c.runExclusive('\ufeffL', { atMostFor: 1000 }, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'name' });
  });

  it('runs the items of one key one at a time, in emit order, while items of other keys and without one run beside them', async () => {
    const c = await oneMember();
    type Item = { k: string | null; n: number };
    const starts: Item[] = [];
    const held = new Map<string, () => void>();
    const running = new Map<string | null, number>();
    let mostAtOnce = 0;
    c.consume('t', (item, ctx) => {
      const it = item as Item;
      starts.push(it);
      const now = (running.get(it.k) ?? 0) + 1;
      running.set(it.k, now);
      if (it.k !== null) mostAtOnce = Math.max(mostAtOnce, now);
      return new Promise<void>((resolve) => {
        const end = (): void => {
          running.set(it.k, (running.get(it.k) ?? 1) - 1);
          resolve();
        };
        held.set(`${it.k}${it.n}`, end);
        ctx.signal.addEventListener('abort', end, { once: true });
      });
    }, { parallelism: 8 });
    await expect.poll(() => c.state().topics.find((t) => t.name === 't')?.consumers, { timeout: 10_000, interval: 20 }).toEqual({ [c.id]: 8 });
    const items: Item[] = [
      { k: 'a', n: 1 },
      { k: 'a', n: 2 },
      { k: 'b', n: 1 },
      { k: 'a', n: 3 },
      { k: 'b', n: 2 },
      { k: null, n: 0 },
    ];
    // The key function is typed by the items, as the README writes it (it took `unknown` before).
    const batch = await c.emitItems('t', items, { key: (item) => item.k });
    // The head of each key and the item without one start; the others of a key wait for it.
    await expect.poll(() => starts.length, { timeout: 10_000, interval: 10 }).toBe(3);
    // Once the keyless one is recorded done (a round through the log), nothing else has started.
    held.get('null0')?.();
    await expect.poll(() => c.state().topics.find((t) => t.name === 't')?.done, { timeout: 10_000, interval: 10 }).toBe(1);
    expect(starts).toEqual([items[0], items[2], items[5]]);
    // Released one at a time, each key's items follow in emit order.
    const settled = batch.settled({ timeoutMs: 10_000 });
    for (const name of ['a1', 'b1', 'a2', 'b2', 'a3']) {
      await expect.poll(() => held.has(name), { timeout: 10_000, interval: 10 }).toBe(true);
      held.get(name)?.();
    }
    expect(await settled).toMatchObject({ count: 6, done: 6, dead: 0 });
    expect(starts.filter((s) => s.k === 'a').map((s) => s.n)).toEqual([1, 2, 3]);
    expect(starts.filter((s) => s.k === 'b').map((s) => s.n)).toEqual([1, 2]);
    expect(mostAtOnce).toBe(1);
  });

  it('keeps the order of the calls for the items of one key when each emit is awaited before the next', async () => {
    const c = await oneMember();
    const started: number[] = [];
    const release = new Map<number, () => void>();
    c.consume('t', (item) => {
      const n = (item as { n: number }).n;
      started.push(n);
      return new Promise<void>((resolve) => release.set(n, resolve));
    }, { parallelism: 8 });
    await expect.poll(() => c.state().topics.find((t) => t.name === 't')?.consumers, { timeout: 10_000, interval: 20 }).toEqual({ [c.id]: 8 });
    const key = (): string => 'k';
    const first = await c.emitItems('t', [{ n: 1 }, { n: 2 }], { key });
    const second = await c.emitItems('t', [{ n: 3 }], { key });
    // One at a time across both emits: the later emit's item waits for the earlier one's.
    for (const n of [1, 2, 3]) {
      await expect.poll(() => started, { timeout: 10_000, interval: 10 }).toEqual([1, 2, 3].slice(0, n));
      release.get(n)?.();
    }
    await Promise.all([first.settled({ timeoutMs: 10_000 }), second.settled({ timeoutMs: 10_000 })]);
    expect(started).toEqual([1, 2, 3]);
  });
});
