import { describe, expect, it } from 'vitest';
import type { ConsumerSettings, FanoutCommand } from '../../src/fanout/command.js';
import { FanoutState } from '../../src/fanout/state.js';
import { FanoutConsumer, type ItemContext } from '../../src/runtime/fanout/consumer.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 1, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null };

/** Member `a` consuming, its proposals applied to one state at the next index, the consumer told of every apply. */
function member(): { state: FanoutState; timers: ManualTimers; consumer: FanoutConsumer; apply: (c: FanoutCommand) => number; proposed: FanoutCommand[] } {
  const state = new FanoutState();
  const timers = new ManualTimers();
  const proposed: FanoutCommand[] = [];
  let index = 0;
  let consumer: FanoutConsumer | null = null;
  const apply = (c: FanoutCommand): number => {
    const result = state.apply(++index, c);
    consumer?.applied(index, c, result);
    return index;
  };
  consumer = new FanoutConsumer({
    self: 'a',
    state,
    timers,
    clusterNowMs: () => timers.now(),
    propose: (c) => {
      proposed.push(c);
      apply(c);
      return Promise.resolve();
    },
  });
  return { state, timers, consumer, apply, proposed };
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

  it('aborts a run whose lease is taken back, or that runs past its timeout; its late outcome is stale', async () => {
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
    expect(signals[0]?.reason).toMatchObject({ code: 'CRONRAFT_RUN_REASSIGNED' });
    expect(m.state.topics.get('t')?.counts.stale).toBe(1);
    m.timers.advance(SETTINGS.timeoutMs);
    await settle();
    expect(signals[1]?.reason).toMatchObject({ code: 'CRONRAFT_RUN_TIMEOUT' });
    // Aborted at its timeout, the attempt counts as failed under its own lease.
    expect(m.state.items.get(2)?.failures).toBe(1);
    expect(m.consumer.running).toBe(0);
  });
});
