import { describe, expect, it } from 'vitest';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import type { ItemContext } from '../../src/runtime/fanout/consumer.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

const SETTINGS: ConsumerSettings = { parallelism: 4, retries: 2, timeoutMs: 5000, backoffMs: 100, ratePerSecond: null, maxPending: null };

/** WIP (issue 19): fan-out on the production member, on simulated time. */
describe('fan-out on the production member', () => {
  it('items emitted on a follower run once each across the consumers, and the topic settles', async () => {
    const sim = new MembershipSim(3);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 3 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === FANOUT_VERSION) ? true : undefined));
    const runs: Array<{ member: string; ctx: ItemContext }> = [];
    for (const id of FOUNDERS) {
      const member = sim.get(id).member;
      if (member === undefined || member === null) throw new Error(`${id} has no member`);
      await sim.settle(member.fanoutRuntime.consume('t', (_data, ctx) => void runs.push({ member: id, ctx }), SETTINGS));
    }
    const leader = await sim.until('a leader', () => sim.leader());
    const follower = sim.get(FOUNDERS.find((id) => id !== leader.id) as string).member;
    const items = Array.from({ length: 50 }, (_, i) => ({ data: Uint8Array.of(i), key: null }));
    await sim.settle(follower?.fanoutRuntime.emit('t', items, null) as Promise<unknown>);
    await sim.until('every item done', () => (leader.member?.fanout.topics.get('t')?.counts.done === 50 ? true : undefined));
    expect(new Set(runs.map((r) => r.ctx.id)).size).toBe(50);
    expect(runs).toHaveLength(50);
    // Spread over the consumers.
    expect(new Set(runs.map((r) => r.member)).size).toBeGreaterThan(1);
    // Every member settles the same way, once it applied the last outcomes.
    await sim.until('every member settled', () => (FOUNDERS.every((id) => sim.get(id).member?.fanout.items.size === 0) ? true : undefined));
    for (const id of FOUNDERS) expect(sim.get(id).member?.fanout.topics.get('t')?.counts).toMatchObject({ emitted: 50, done: 50, stale: 0 });
  });
});
