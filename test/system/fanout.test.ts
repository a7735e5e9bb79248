import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { freePort } from '../fixtures/process-cluster.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** WIP (issue 19): fan-out through the facade, on loopback. */
describe('fan-out on a real cluster (loopback)', () => {
  it('a slot emits items from its handler (ctx.emit), each run once with the job and slot it came from', async () => {
    const seeds: string[] = [];
    for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
    const members = seeds.map((listen) => new Cluster(seeds, { listen, storage: 'memory', electionTimeoutMs: 500, heartbeatMs: 50 }));
    for (const m of members) cleanups.push(() => m.stop());
    const runs: Array<{ id: number; job: string | null; slot: Date | null }> = [];
    const emitted: number[] = [];
    for (const m of members) {
      m.consume('work', (_item, ctx) => void runs.push({ id: ctx.id, job: ctx.job, slot: ctx.slot }), { parallelism: 8 });
      // Emits only once the cluster runs fan-out's version; before that, ctx.emit is refused.
      m.schedule('fan', { every: '1s' }, async (ctx) => {
        if (m.state().version.active < FANOUT_VERSION || emitted.length > 0) return;
        emitted.push((await ctx.emit('work', Array.from({ length: 30 }, (_, i) => i))).count);
      });
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => runs.length, { timeout: 20_000, interval: 50 }).toBe(30);
    expect(emitted).toEqual([30]);
    expect(new Set(runs.map((r) => r.id)).size).toBe(30);
    expect(new Set(runs.map((r) => `${r.job}@${r.slot?.getTime()}`)).size).toBe(1);
    expect(runs[0]?.job).toBe('fan');
  });

  it('items emitted on one member run once each across the members that consume the topic', async () => {
    const seeds: string[] = [];
    for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
    const members = seeds.map((listen) => new Cluster(seeds, { listen, storage: 'memory', electionTimeoutMs: 500, heartbeatMs: 50 }));
    for (const m of members) cleanups.push(() => m.stop());
    const runs: Array<{ member: string; item: unknown; token: number }> = [];
    for (const m of members) m.consume('thumbnails', (item, ctx) => void runs.push({ member: m.id, item, token: ctx.fencingToken }), { parallelism: 4 });
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => members.every((m) => m.state().version.active === FANOUT_VERSION), { timeout: 15_000, interval: 50 }).toBe(true);
    const items = Array.from({ length: 200 }, (_, i) => ({ id: i }));
    await expect(members[0]!.emitItems('thumbnails', [undefined])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    expect(await members[0]!.emitItems('thumbnails', items)).toEqual({ count: 200 });
    await expect.poll(() => runs.length, { timeout: 15_000, interval: 50 }).toBe(200);
    expect(new Set(runs.map((r) => (r.item as { id: number }).id)).size).toBe(200);
    expect(new Set(runs.map((r) => r.member)).size).toBeGreaterThan(1);
    // Every member shows the topic settled, with its three consumers.
    await expect.poll(() => members.map((m) => m.state().topics.find((t) => t.name === 'thumbnails')?.done), { timeout: 10_000, interval: 50 }).toEqual([200, 200, 200]);
    const topic = members[1]!.state().topics[0];
    expect(topic).toMatchObject({ name: 'thumbnails', pending: 0, inFlight: {}, emitted: 200, dead: 0, stale: 0 });
    expect(Object.values(topic?.consumers ?? {})).toEqual([4, 4, 4]);
  });
});
