import { describe, expect, it } from 'vitest';
import type { ConsumerSettings, FanoutCommand } from '../../src/fanout/command.js';
import { FanoutState } from '../../src/fanout/state.js';
import { FanoutConsumer, type ItemContext } from '../../src/runtime/fanout/consumer.js';
import { LEASE_CHECK_MS } from '../../src/runtime/lease.js';
import { ManualTimers } from '../fixtures/manual-timers.js';
import { RunAbortedError } from '../../src/errors.js';

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 1, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };

interface TestMember {
  readonly state: FanoutState;
  readonly timers: ManualTimers;
  readonly consumer: FanoutConsumer;
  readonly apply: (c: FanoutCommand, mine?: boolean) => number;
  readonly proposed: FanoutCommand[];
  /** With `hold`, applies the proposals held so far (and stops holding). */
  readonly release: () => void;
  /** Holds the proposals from now on, until `release`. */
  readonly holdFromNow: () => void;
  /** Whether the member holds its lease (a leader heard lately). */
  readonly lease: { held: boolean };
}

/** Member `a` consuming, its proposals applied to one state at the next index (held until `release` with `hold`), the consumer told of every apply. */
function member(options: { hold?: boolean } = {}): TestMember {
  const state = new FanoutState();
  const timers = new ManualTimers();
  const proposed: FanoutCommand[] = [];
  const held: Array<() => void> = [];
  let hold = options.hold ?? false;
  let index = 0;
  const lease = { held: true };
  let consumer: FanoutConsumer | null = null;
  // What this member proposes is its own (mine); what a test applies directly came from elsewhere, or from a life before.
  const apply = (c: FanoutCommand, mine = false): number => {
    const at = ++index;
    const result = state.apply(at, c);
    consumer?.applied(at, c, result, mine);
    return at;
  };
  consumer = new FanoutConsumer({
    self: 'a',
    state,
    timers,
    clusterNowMs: () => timers.now(),
    holdsLease: () => lease.held,
    propose: (c) => {
      proposed.push(c);
      if (hold) return new Promise<void>((resolve) => held.push(() => (apply(c, true), resolve())));
      apply(c, true);
      return Promise.resolve();
    },
  });
  const release = (): void => {
    hold = false;
    for (const next of held.splice(0)) next();
  };
  return { state, timers, consumer, apply, proposed, release, lease, holdFromNow: () => void (hold = true) };
}

/** Consumes topic 't' on `m` with a handler that records each run's context and never ends: the contexts seen. */
async function consumeHolding(m: TestMember, settings: ConsumerSettings): Promise<ItemContext[]> {
  const seen: ItemContext[] = [];
  await m.consumer.consume('t', (_data, ctx) => {
    seen.push(ctx);
    return new Promise(() => undefined);
  }, settings);
  return seen;
}

/** Consumes topic 't' on `m` with a handler that ends each run when the test calls its end: the ids started, in order, and each run's end. */
async function consumeEnding(m: TestMember, settings: ConsumerSettings): Promise<{ started: number[]; ends: Map<number, () => void> }> {
  const ends = new Map<number, () => void>();
  const started: number[] = [];
  await m.consumer.consume('t', (_data, ctx) => {
    started.push(ctx.id);
    return new Promise<void>((resolve) => ends.set(ctx.id, resolve));
  }, settings);
  return { started, ends };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 20; i++) await Promise.resolve();
};

describe("a member's side of fan-out (FanoutConsumer)", () => {
  it('runs the items leased to it under their token and records each outcome once', async () => {
    const m = member();
    const seen: ItemContext[] = [];
    await m.consumer.consume('t', (data, ctx) => {
      seen.push(ctx);
      if (data[0] === 2) throw new Error('bad item');
    }, SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: { job: 'nightly', slotMs: 60_000 }, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [1, 2], atMs: 0 });
    // Leases to another member start nothing here.
    m.apply({ type: 'lease', member: 'b', ids: [1], atMs: 0 });
    await settle();
    m.timers.advance(0);
    expect(seen.map((c) => [c.id, c.fencingToken, c.attempt, c.job])).toEqual([
      [1, token, 1, 'nightly'],
      [2, token, 1, 'nightly'],
    ]);
    // Each outcome proposed once (in one batch or two, as they finish).
    expect(m.proposed.flatMap((c) => (c.type === 'done' ? c.outcomes.map((o) => o.id) : [])).sort()).toEqual([1, 2]);
    expect(m.state.topics.get('t')?.counts).toMatchObject({ done: 1, failed: 1 });
    expect(m.state.items.get(2)?.lastError).toBe('bad item');
    expect(m.consumer.running).toBe(0);
  });

  it("records a RunAbortedError its handler throws itself as a failed attempt, not a lease given back (which would lease the item again for ever)", async () => {
    const m = member();
    await m.consumer.consume('t', () => {
      throw new RunAbortedError('interrupted', 'a run of its own was interrupted');
    }, SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    m.timers.advance(0);
    expect(m.proposed.map((c) => c.type)).toEqual(['consume', 'done']);
    expect(m.state.items.get(1)?.failures).toBe(1);
    expect(m.state.items.get(1)?.lastError).toMatch(/interrupted/);
  });

  it('aborts a run whose lease is taken back (recording nothing), or that runs past its timeout (a failed attempt)', async () => {
    const m = member();
    const signals: AbortSignal[] = [];
    await m.consumer.consume('t', (_data, ctx) => {
      signals.push(ctx.signal);
      return new Promise<void>((resolve) => ctx.signal.addEventListener('abort', () => resolve()));
    }, SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [1, 2], atMs: 0 });
    await settle();
    expect(m.consumer.running).toBe(2);
    m.apply({ type: 'reclaim', leases: [{ id: 1, token }], atMs: 10 });
    await settle();
    m.timers.advance(0);
    expect(signals[0]?.reason).toMatchObject({ code: 'CRONRAFT_RUN_REASSIGNED' });
    expect(m.proposed.filter((c) => c.type === 'done')).toEqual([]);
    m.timers.advance(SETTINGS.timeoutMs);
    await settle();
    expect(signals[1]?.reason).toMatchObject({ code: 'CRONRAFT_RUN_TIMEOUT' });
    // Aborted at its timeout, the attempt counts as failed under its own lease.
    expect(m.state.items.get(2)?.failures).toBe(1);
    expect(m.consumer.running).toBe(0);
  });

  it('ends a run at its timeout even when the handler ignores the signal, and runs the item again when leased again', async () => {
    const m = member();
    let starts = 0;
    await m.consumer.consume('t', () => {
      starts++;
      return new Promise<void>(() => undefined);
    }, SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    m.timers.advance(SETTINGS.timeoutMs);
    await settle();
    expect(m.consumer.running).toBe(0);
    expect(m.state.items.get(1)?.failures).toBe(1);
    m.timers.advance(SETTINGS.backoffMs);
    m.apply({ type: 'lease', member: 'a', ids: [1], atMs: m.timers.now() });
    await settle();
    expect(starts).toBe(2);
  });

  it('times out every run started in one turn, and a run started in a turn after all of that turn\'s runs ended', async () => {
    const m = member();
    const seen = await consumeHolding(m, SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [1, 2, 3].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    // In one turn: item 1 leased and taken back (its turn's runs all ended), then 2 and 3 leased.
    const first = m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    m.apply({ type: 'reclaim', leases: [{ id: 1, token: first }], atMs: 0 });
    m.apply({ type: 'lease', member: 'a', ids: [2, 3], atMs: 0 });
    await settle();
    // Item 1 ended before its handler was called: only 2 and 3 ran.
    expect(seen.map((ctx) => ctx.id)).toEqual([2, 3]);
    m.timers.advance(SETTINGS.timeoutMs - 1);
    await settle();
    expect(m.consumer.running).toBe(2);
    m.timers.advance(1);
    await settle();
    expect(seen.map((ctx) => (ctx.signal.reason as { code?: string }).code)).toEqual(['CRONRAFT_RUN_TIMEOUT', 'CRONRAFT_RUN_TIMEOUT']);
    expect(m.consumer.running).toBe(0);
  });

  it('a late outcome, under a lease taken back meanwhile, is refused as stale and counted', async () => {
    const m = member();
    let finish: () => void = () => undefined;
    await m.consumer.consume('t', () => new Promise<void>((resolve) => (finish = resolve)), SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    // The leader took the lease back, but this member has not applied that yet when it finishes.
    m.state.apply(100, { type: 'reclaim', leases: [{ id: 1, token }], atMs: 10 });
    finish();
    await settle();
    m.timers.advance(0);
    expect(m.proposed.filter((c) => c.type === 'done')).toHaveLength(1);
    expect(m.state.topics.get('t')?.counts).toMatchObject({ stale: 1, done: 0 });
  });

  it('after a restart, runs none of the leases of its life before: it gives them back once its registration applies', async () => {
    const m = member();
    let starts = 0;
    // The life before: registered, leased two items, then died. Its entries replay here.
    m.apply({ type: 'consume', topic: 't', member: 'a', settings: SETTINGS });
    m.apply({ type: 'emit', topic: 't', items: [1, 2, 3].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    const old = m.apply({ type: 'lease', member: 'a', ids: [1, 2], atMs: 0 });
    await settle();
    expect(starts).toBe(0);
    // This life registers; meanwhile the leader leased one more under the old registration.
    const registering = m.consumer.consume('t', () => {
      starts++;
    }, SETTINGS);
    await registering;
    await settle();
    expect(starts).toBe(0);
    expect(m.proposed.filter((c) => c.type === 'reclaim')).toEqual([{ type: 'reclaim', leases: [{ id: 1, token: old }, { id: 2, token: old }], atMs: 0 }]);
    expect(m.state.items.get(1)?.phase.kind).toBe('pending');
    expect(m.state.topics.get('t')?.counts.redelivered).toBe(2);
    // A lease of this life runs.
    m.apply({ type: 'lease', member: 'a', ids: [1, 2, 3], atMs: 0 });
    await settle();
    expect(starts).toBe(3);
  });

  it("a registration of the life before, replayed after this life's handler is set, does not let the old leases run", async () => {
    const m = member({ hold: true });
    let starts = 0;
    const registering = m.consumer.consume('t', () => {
      starts++;
    }, SETTINGS);
    // The replay: the old registration and an old lease apply before this life's registration.
    m.apply({ type: 'consume', topic: 't', member: 'a', settings: SETTINGS });
    m.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    const old = m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    expect(starts).toBe(0);
    m.release();
    await registering;
    await settle();
    expect(starts).toBe(0);
    expect(m.proposed.filter((c) => c.type === 'reclaim')).toEqual([{ type: 'reclaim', leases: [{ id: 1, token: old }], atMs: 0 }]);
  });

  it('hands over before stopping: stops consuming, lets runs finish in time, gives back the rest, and leases arriving meanwhile', async () => {
    const m = member();
    const ran: number[] = [];
    await m.consumer.consume('t', async (data, ctx) => {
      if (data[0] === 1) return void ran.push(1);
      if (data[0] === 2) await new Promise<void>((resolve) => m.timers.setTimeout(resolve, 50));
      else await new Promise<void>(() => undefined);
      ran.push(data[0] as number);
      void ctx;
    }, { ...SETTINGS, timeoutMs: 10_000 });
    m.apply({ type: 'emit', topic: 't', items: [1, 2, 3, 4].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [2, 3], atMs: 0 });
    await settle();
    const handing = m.consumer.handOver(200);
    await settle();
    expect(m.proposed.some((c) => c.type === 'unconsume' && c.topic === 't')).toBe(true);
    // A lease proposed before the unconsume applied arrives while handing over: given back, not run.
    m.state.apply(50, { type: 'consume', topic: 't', member: 'a', settings: SETTINGS });
    const lateToken = m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    m.timers.advance(50);
    await settle();
    m.timers.advance(200);
    await settle();
    m.timers.advance(10);
    expect(await handing).toBe(true);
    expect(ran).toEqual([2]);
    expect(m.state.topics.get('t')?.counts.done).toBe(1);
    expect(m.proposed.filter((c) => c.type === 'reclaim').flatMap((c) => (c.type === 'reclaim' ? c.leases : []))).toEqual(
      expect.arrayContaining([
        { id: 1, token: lateToken },
        { id: 3, token },
      ]),
    );
    expect(m.state.items.get(3)?.phase.kind).toBe('pending');
    expect(m.state.items.get(3)?.failures).toBe(0);
  });

  it('aborts its runs once it no longer holds its lease, and gives their leases back', async () => {
    const m = member();
    const signals: AbortSignal[] = [];
    await m.consumer.consume('t', (_data, ctx) => {
      signals.push(ctx.signal);
      return new Promise<void>(() => undefined);
    }, SETTINGS);
    m.consumer.start();
    m.apply({ type: 'emit', topic: 't', items: [{ data: Uint8Array.of(1), key: null }], origin: null, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    m.timers.advance(LEASE_CHECK_MS);
    expect(signals[0]?.aborted).toBe(false);
    m.lease.held = false;
    m.timers.advance(LEASE_CHECK_MS);
    await settle();
    expect(signals[0]?.reason).toMatchObject({ code: 'CRONRAFT_RUN_INTERRUPTED' });
    expect(m.proposed.filter((c) => c.type === 'reclaim')).toEqual([{ type: 'reclaim', leases: [{ id: 1, token }], atMs: LEASE_CHECK_MS * 2 }]);
    expect(m.state.items.get(1)?.failures).toBe(0);
    m.consumer.stop();
  });

  it("aborts a run whose lease a leader's snapshot no longer holds, and only that one", async () => {
    const m = member();
    const seen = await consumeHolding(m, SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [1, 2], atMs: 0 });
    await settle();
    expect(seen.map((c) => c.id)).toEqual([1, 2]);
    // The leader took item 1 back while this member was behind: the snapshot it installs holds
    // the reclaim, which this member never applies one by one (the state changes, unannounced).
    m.state.apply(99, { type: 'reclaim', leases: [{ id: 1, token }], atMs: 0 });
    m.consumer.restored();
    expect(seen[0]?.signal.aborted).toBe(true);
    expect((seen[0]?.signal.reason as { code?: string }).code).toBe('CRONRAFT_RUN_REASSIGNED');
    expect(seen[1]?.signal.aborted).toBe(false);
    expect(m.consumer.running).toBe(1);
  });

  it("runs a lease to it that a leader's snapshot holds but it never applied, once", async () => {
    const m = member();
    const seen = await consumeHolding(m, SETTINGS);
    m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    // Leased while this member was behind: the snapshot holds the leases, which it never applies one by one.
    m.state.apply(50, { type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    expect(seen).toEqual([]);
    m.consumer.restored();
    await settle();
    expect(seen.map((c) => [c.id, c.fencingToken])).toEqual([[1, 50]]);
    expect(m.consumer.running).toBe(1);
    // Restored again, it does not run the same lease twice.
    m.consumer.restored();
    await settle();
    expect(seen).toHaveLength(1);
    m.consumer.stop();
  });

  it("does not run again a lease whose run ended here while its outcome is on its way, though a leader's snapshot still holds it", async () => {
    const m = member({ hold: true });
    const seen: ItemContext[] = [];
    // Its registration applies as if proposed (its own proposal stays held, as every one after).
    void m.consumer.consume('t', (_data, ctx) => void seen.push(ctx), SETTINGS);
    m.apply({ type: 'consume', topic: 't', member: 'a', settings: SETTINGS }, true);
    m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    m.timers.advance(0);
    expect(seen.map((c) => c.id)).toEqual([1]);
    expect(m.proposed.filter((c) => c.type === 'done').map((c) => c.outcomes.map((o) => o.id))).toEqual([[1]]);
    // Its outcome is proposed, not applied: a snapshot taken before it still holds item 1's lease (and one of item 2 never applied here).
    m.state.apply(50, { type: 'lease', member: 'a', ids: [2], atMs: 0 });
    expect(m.state.items.get(1)?.phase.kind).toBe('leased');
    m.consumer.restored();
    await settle();
    expect(seen.map((c) => c.id)).toEqual([1, 2]);
    m.consumer.stop();
  });

  it("queues a lease a leader's snapshot holds behind its runs when its parallelism is full, once", async () => {
    const m = member();
    const seen = await consumeHolding(m, { ...SETTINGS, parallelism: 1 });
    m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
    await settle();
    expect(seen.map((c) => c.id)).toEqual([1]);
    m.state.apply(50, { type: 'lease', member: 'a', ids: [2], atMs: 0 });
    m.consumer.restored();
    m.consumer.restored();
    await settle();
    expect(seen.map((c) => c.id)).toEqual([1]);
    expect([m.consumer.running, m.consumer.waiting]).toEqual([1, 1]);
    m.consumer.stop();
  });

  it('runs at most its parallelism of a topic at once: the items leased ahead wait, start in lease order as runs end, and one taken back meanwhile never starts', async () => {
    const m = member();
    const { started, ends } = await consumeEnding(m, { ...SETTINGS, parallelism: 2 });
    m.apply({ type: 'emit', topic: 't', items: [1, 2, 3, 4].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [1, 2, 3, 4], atMs: 0 });
    await settle();
    expect(started).toEqual([1, 2]);
    expect([m.consumer.running, m.consumer.waiting]).toEqual([2, 2]);
    // Item 3, waiting, is taken back: it is passed over when a run ends.
    m.apply({ type: 'reclaim', leases: [{ id: 3, token }], atMs: 0 });
    ends.get(1)?.();
    await settle();
    expect(started).toEqual([1, 2, 4]);
    expect([m.consumer.running, m.consumer.waiting]).toEqual([2, 0]);
    ends.get(2)?.();
    ends.get(4)?.();
    await settle();
    m.timers.advance(0);
    expect(m.proposed.flatMap((c) => (c.type === 'done' ? c.outcomes.map((o) => o.id) : [])).sort()).toEqual([1, 2, 4]);
    expect(m.consumer.running).toBe(0);
  });

  it('halted (its driver stopped), starts no item: neither those waiting as runs end, nor those leased after; its runs go on', async () => {
    const m = member();
    const { started, ends } = await consumeEnding(m, { ...SETTINGS, parallelism: 2 });
    m.apply({ type: 'emit', topic: 't', items: [1, 2, 3, 4, 5].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    m.apply({ type: 'lease', member: 'a', ids: [1, 2, 3, 4], atMs: 0 });
    await settle();
    expect([m.consumer.running, m.consumer.waiting]).toEqual([2, 2]);
    m.consumer.halt();
    ends.get(1)?.();
    await settle();
    m.apply({ type: 'lease', member: 'a', ids: [5], atMs: 0 });
    await settle();
    expect(started).toEqual([1, 2]);
    expect([m.consumer.running, m.consumer.waiting]).toEqual([1, 0]);
  });

  it('records in one command the outcomes of the runs that end in one turn, those of items that started as others ended included', async () => {
    const m = member();
    const started: number[] = [];
    await m.consumer.consume('t', async (_data, ctx) => {
      started.push(ctx.id);
      await Promise.resolve();
    }, { ...SETTINGS, parallelism: 2 });
    const ids = [1, 2, 3, 4, 5, 6, 7, 8];
    m.apply({ type: 'emit', topic: 't', items: ids.map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    m.apply({ type: 'lease', member: 'a', ids, atMs: 0 });
    await settle();
    // Every item ran in this turn, two at a time, each started as a run before it ended.
    expect(started).toEqual(ids);
    expect(m.proposed.filter((c) => c.type === 'done')).toEqual([]);
    m.timers.advance(0);
    const dones = m.proposed.filter((c) => c.type === 'done');
    expect(dones.map((c) => c.outcomes.map((o) => o.id))).toEqual([ids]);
  });

  it('gives back the items waiting to start when it loses its lease, and when it hands over', async () => {
    for (const how of ['lease', 'handover'] as const) {
      const m = member();
      const started: number[] = [];
      await m.consumer.consume('t', (_data, ctx) => {
        started.push(ctx.id);
        return new Promise<void>(() => undefined);
      }, { ...SETTINGS, parallelism: 1 });
      m.consumer.start();
      m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
      const token = m.apply({ type: 'lease', member: 'a', ids: [1, 2], atMs: 0 });
      await settle();
      expect(m.consumer.waiting).toBe(1);
      if (how === 'lease') {
        m.lease.held = false;
        m.timers.advance(LEASE_CHECK_MS);
      } else {
        void m.consumer.handOver(1000);
      }
      await settle();
      expect(started).toEqual([1]);
      expect(m.consumer.waiting).toBe(0);
      const givenBack = m.proposed.flatMap((c) => (c.type === 'reclaim' ? c.leases : []));
      expect(givenBack).toContainEqual({ id: 2, token });
      expect(m.state.items.get(2)?.phase.kind).toBe('pending');
      m.consumer.stop();
    }
  });

  it('starts no item leased to it while it holds no lease: the item waits for the next look at the lease, and starts then if the lease is held again, else is given back', async () => {
    for (const regained of [true, false]) {
      const m = member();
      const { started, ends } = await consumeEnding(m, { ...SETTINGS, parallelism: 1 });
      m.consumer.start();
      m.apply({ type: 'emit', topic: 't', items: [1, 2, 3].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
      m.apply({ type: 'lease', member: 'a', ids: [1], atMs: 0 });
      await settle();
      expect(started).toEqual([1]);
      // A silence: the member applies leases to it before it renews its own.
      m.lease.held = false;
      const token = m.apply({ type: 'lease', member: 'a', ids: [2, 3], atMs: 0 });
      // A run that ends meanwhile frees room, but starts nothing.
      ends.get(1)?.();
      await settle();
      m.timers.advance(0);
      expect(started).toEqual([1]);
      expect(m.consumer.waiting).toBe(2);
      m.lease.held = regained;
      m.timers.advance(LEASE_CHECK_MS);
      await settle();
      const givenBack = m.proposed.flatMap((c) => (c.type === 'reclaim' ? c.leases : []));
      if (regained) {
        // In lease order, one at a time (parallelism 1).
        expect(started).toEqual([1, 2]);
        expect(givenBack).toEqual([]);
        ends.get(2)?.();
        await settle();
        expect(started).toEqual([1, 2, 3]);
      } else {
        expect(started).toEqual([1]);
        expect(givenBack).toEqual([{ id: 2, token }, { id: 3, token }]);
      }
      m.consumer.stop();
    }
  });

  it('starts nothing waiting once it hands over, while its unconsume waits for an answer: neither as a run ends nor at the look at its lease', async () => {
    const m = member();
    const { started, ends } = await consumeEnding(m, { ...SETTINGS, parallelism: 1 });
    m.consumer.start();
    m.apply({ type: 'emit', topic: 't', items: [1, 2].map((n) => ({ data: Uint8Array.of(n), key: null })), origin: null, atMs: 0 });
    const token = m.apply({ type: 'lease', member: 'a', ids: [1, 2], atMs: 0 });
    await settle();
    expect(started).toEqual([1]);
    m.holdFromNow();
    void m.consumer.handOver(1000);
    await settle();
    ends.get(1)?.();
    await settle();
    m.timers.advance(LEASE_CHECK_MS);
    await settle();
    expect(started).toEqual([1]);
    // Once its unconsume is answered, what waits is given back.
    m.release();
    await settle();
    expect(m.proposed.flatMap((c) => (c.type === 'reclaim' ? c.leases : []))).toContainEqual({ id: 2, token });
    expect(started).toEqual([1]);
    m.consumer.stop();
  });
});
