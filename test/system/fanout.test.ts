import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, type JobContext } from '../../src/index.js';
import { FANOUT_DEFAULTS } from '../../src/fanout/state.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { freePort } from '../fixtures/process-cluster.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Fan-out through the facade, on loopback (issue 19). */
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
    // Each member's history shows what the slot emitted, once settled.
    const slotMs = runs[0]?.slot?.getTime();
    await expect
      .poll(() => members.map((m) => m.history({ job: 'fan' }).find((h) => h.slot.getTime() === slotMs)?.batches), { timeout: 10_000, interval: 50 })
      .toEqual(members.map(() => ({ batches: 1, items: 30, open: 0, done: 30, dead: 0 })));
  });

  it("refuses a slot's ctx.emit once its run's signal aborted (with its reason) or its run ended (CRONRAFT_RUN_ENDED): an attempt that lost its slot emits nothing its retry emits", async () => {
    const m = new Cluster([], { listen: '127.0.0.1:0', storage: 'memory' });
    cleanups.push(() => m.stop());
    const consumed: unknown[] = [];
    m.consume('work', (item) => void consumed.push(item));
    const refused: unknown[] = [];
    let kept: JobContext | null = null;
    let quick: JobContext | null = null;
    let ended = false;
    // Returns at once: its context is kept past the run's end.
    m.schedule('quick', { every: 200 }, (ctx) => {
      if (m.state().version.active >= FANOUT_VERSION && quick === null) quick = ctx;
    });
    m.schedule(
      'late',
      { every: 200 },
      async (ctx) => {
        if (m.state().version.active < FANOUT_VERSION || kept !== null) return;
        kept = ctx;
        await ctx.emit('work', ['while it runs']);
        // Emits after the run's timeout aborted its signal.
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        await ctx.emit('work', ['after the timeout']).catch((error: unknown) => refused.push(error));
        ended = true;
      },
      { timeoutMs: 300 },
    );
    await m.start();
    await expect.poll(() => ended, { timeout: 20_000, interval: 20 }).toBe(true);
    expect(refused).toEqual([expect.objectContaining({ code: 'CRONRAFT_RUN_TIMEOUT', reason: 'timeout' })]);
    // A context kept past its run's end, its signal not aborted.
    await expect.poll(() => quick !== null, { timeout: 10_000, interval: 20 }).toBe(true);
    expect((quick as JobContext | null)?.signal.aborted).toBe(false);
    await expect((quick as JobContext | null)?.emit('work', ['after the end'])).rejects.toMatchObject({ code: 'CRONRAFT_RUN_ENDED', reason: 'ended' });
    await expect.poll(() => consumed, { timeout: 10_000, interval: 20 }).toEqual(['while it runs']);
  });

  it('items emitted on one member run once each across the members that consume the topic', async () => {
    const seeds: string[] = [];
    for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
    const members = seeds.map((listen) => new Cluster(seeds, { listen, storage: 'memory', electionTimeoutMs: 500, heartbeatMs: 50 }));
    for (const m of members) cleanups.push(() => m.stop());
    const runs: Array<{ member: string; item: unknown; token: number }> = [];
    for (const m of members) m.consume('thumbnails', (item, ctx) => void runs.push({ member: m.id, item, token: ctx.fencingToken }), { parallelism: 4 });
    await Promise.all(members.map((m) => m.start()));
    // Every consumer registered first: delivery is quick enough that the first registered could take all 200.
    await expect.poll(() => members.every((m) => m.state().version.active === FANOUT_VERSION && Object.keys(m.state().topics[0]?.consumers ?? {}).length === 3), { timeout: 15_000, interval: 50 }).toBe(true);
    const items = Array.from({ length: 200 }, (_, i) => ({ id: i }));
    await expect(members[0]!.emitItems('thumbnails', [undefined])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    expect(await members[0]!.emitItems('thumbnails', items)).toMatchObject({ topic: 'thumbnails', count: 200 });
    await expect.poll(() => runs.length, { timeout: 15_000, interval: 50 }).toBe(200);
    expect(new Set(runs.map((r) => (r.item as { id: number }).id)).size).toBe(200);
    expect(new Set(runs.map((r) => r.member)).size).toBeGreaterThan(1);
    // Every member shows the topic settled, with its three consumers.
    await expect.poll(() => members.map((m) => m.state().topics.find((t) => t.name === 'thumbnails')?.done), { timeout: 10_000, interval: 50 }).toEqual([200, 200, 200]);
    const topic = members[1]!.state().topics[0];
    expect(topic).toMatchObject({ name: 'thumbnails', pending: 0, inFlight: {}, emitted: 200, dead: 0, stale: 0, ratePerSecond: null, maxPending: 100_000, deadLetters: 0 });
    expect(Object.values(topic?.consumers ?? {})).toEqual([4, 4, 4]);
  });

  it('a batch settles with its counts; failures retry, then go to the dead letters, from which they are dropped or emitted again; maxPending refuses a whole emit', async () => {
    const seeds: string[] = [];
    for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
    const members = seeds.map((listen) => new Cluster(seeds, { listen, storage: 'memory', electionTimeoutMs: 500, heartbeatMs: 50 }));
    for (const m of members) cleanups.push(() => m.stop());
    let healed = false;
    const failures: Array<{ id: number; attempt: number; dead: boolean }> = [];
    for (const m of members) {
      m.consume('work', (item) => {
        if (!healed && (item as number) % 5 === 0) throw new Error(`item ${String(item)} is bad`);
      }, { parallelism: 4, retries: 1, backoffMs: 10, maxPending: 50 });
      m.on('item-failed', (e) => failures.push({ id: e.id, attempt: e.attempt, dead: e.dead }));
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => members.every((m) => m.state().version.active === FANOUT_VERSION && m.state().topics[0]?.consumers !== undefined && Object.keys(m.state().topics[0]!.consumers).length === 3), { timeout: 15_000, interval: 50 }).toBe(true);
    const emitter = members[1]!;
    const settledEvents: unknown[] = [];
    emitter.on('batch-settled', (e) => settledEvents.push(e.summary));
    const batch = await emitter.emitItems('work', Array.from({ length: 20 }, (_, i) => i));
    expect(await batch.settled({ timeoutMs: 15_000 })).toEqual({ topic: 'work', count: 20, done: 16, dead: 4 });
    expect(settledEvents).toEqual([{ topic: 'work', count: 20, done: 16, dead: 4 }]);
    // Each bad item failed twice (its retry too), the second time for good; the events come from the members that ran them.
    await expect.poll(() => failures.length, { timeout: 5000, interval: 20 }).toBe(8);
    expect(failures.filter((f) => f.dead).map((f) => f.attempt)).toEqual([2, 2, 2, 2]);
    const letters = emitter.deadLetters('work');
    expect(letters.map((l) => l.item).sort()).toEqual([0, 10, 15, 5]);
    expect(letters[0]).toMatchObject({ failures: 2, error: expect.stringMatching(/is bad/), job: null, slot: null });
    // Beyond maxPending (50), an emit is refused whole.
    await expect(emitter.emitItems('work', Array.from({ length: 51 }, (_, i) => i))).rejects.toMatchObject({ code: 'CRONRAFT_BACKPRESSURE' });
    // By its count, before its items are encoded: one that JSON would change is not reached.
    await expect(emitter.emitItems('work', [...Array.from({ length: 50 }, (_, i) => i), new Map()])).rejects.toMatchObject({ code: 'CRONRAFT_BACKPRESSURE' });
    // One is dropped for good (from another member: the log carries it), the rest emitted again.
    expect(await members[2]!.dropDeadLetters('work', [letters[0]!.id, 999])).toEqual({ dropped: 1 });
    await expect.poll(() => emitter.deadLetters('work').length, { timeout: 5000, interval: 20 }).toBe(3);
    healed = true;
    // One by its id; the other two dropped with no ids given: every one left.
    const [requeued, ...rest] = emitter.deadLetters('work');
    const again = await emitter.requeue('work', [requeued!.id]);
    expect(again.count).toBe(1);
    expect(await again.settled({ timeoutMs: 15_000 })).toEqual({ topic: 'work', count: 1, done: 1, dead: 0 });
    expect(emitter.deadLetters('work').map((l) => l.id)).toEqual(rest.map((l) => l.id));
    expect(await emitter.dropDeadLetters('work')).toEqual({ dropped: 2 });
    await expect.poll(() => members.map((m) => m.deadLetters('work').length), { timeout: 5000, interval: 20 }).toEqual([0, 0, 0]);
    await expect(emitter.requeue('nothing')).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    await expect(emitter.dropDeadLetters('nothing')).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT' });
    await expect(emitter.dropDeadLetters('work', [0])).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'ids' });
    await expect.poll(() => members.map((m) => m.state().topics[0]?.done), { timeout: 5000, interval: 20 }).toEqual([17, 17, 17]);
  });

  it("names the job and the slot whose run emitted a dead letter's item", async () => {
    const member = new Cluster([], { storage: 'memory' });
    cleanups.push(() => member.stop());
    member.consume('work', () => {
      throw new Error('always');
    }, { retries: 0 });
    const slots: Date[] = [];
    member.schedule('fan', { every: '1h' }, async (ctx) => {
      slots.push(ctx.slot);
      await ctx.emit('work', ['x']);
    });
    await member.start();
    await expect.poll(() => member.state().version.active >= FANOUT_VERSION, { timeout: 15_000, interval: 50 }).toBe(true);
    await member.trigger('fan');
    await expect.poll(() => member.deadLetters('work').length, { timeout: 15_000, interval: 50 }).toBe(1);
    expect(member.deadLetters('work')[0]).toMatchObject({ item: 'x', failures: 1, error: expect.stringMatching(/always/), job: 'fan', slot: slots[0] });
  });

  it("tells the app of a consumer refused past the topics the cluster holds ('consume-refused'), which runs nothing", async () => {
    const member = new Cluster([], { storage: 'memory' });
    cleanups.push(() => member.stop());
    const refused: unknown[] = [];
    member.on('consume-refused', (e) => refused.push(e));
    for (let t = 0; t < FANOUT_DEFAULTS.maxTopics; t++) member.consume(`topic-${t}`, () => undefined);
    await member.start();
    // The cluster's topics full first: registrations go through the log each on its own, in no
    // order the app chose.
    await expect.poll(() => member.state().topics.length, { timeout: 20_000, interval: 50 }).toBe(FANOUT_DEFAULTS.maxTopics);
    expect(refused).toEqual([]);
    let ran = 0;
    member.consume('one-too-many', () => void ran++);
    await expect.poll(() => refused.length, { timeout: 20_000, interval: 50 }).toBe(1);
    expect(refused).toEqual([{ topic: 'one-too-many', reason: 'too-many-topics', index: expect.any(Number) as number }]);
    expect(member.state().topics.length).toBe(FANOUT_DEFAULTS.maxTopics);
    expect(member.state().topics.some((t) => t.name === 'one-too-many')).toBe(false);
    // Its emits find no consumer here: the topic is refused too, as the cluster holds as many as it may.
    await expect(member.emitItems('one-too-many', [1])).rejects.toMatchObject({ code: 'CRONRAFT_BACKPRESSURE', message: expect.stringContaining('holds as many topics as it may') as string });
    expect(ran).toBe(0);
  });

  it("a batch's settled() rejects with CRONRAFT_NOT_RUNNING when its member stops first, and after", async () => {
    const member = new Cluster([], { storage: 'memory', stopTimeoutMs: 1000 });
    cleanups.push(() => member.stop());
    let started = 0;
    // A consumer that runs until its run is aborted: the batch cannot settle before the stop.
    member.consume('slow', (_item, ctx) => new Promise<void>((resolve) => {
      started++;
      ctx.signal.addEventListener('abort', () => resolve(), { once: true });
    }));
    await member.start();
    await expect.poll(() => member.state().version.active, { timeout: 10_000, interval: 20 }).toBe(FANOUT_VERSION);
    const batch = await member.emitItems('slow', [1]);
    const settled = batch.settled();
    await expect.poll(() => started, { timeout: 10_000, interval: 20 }).toBe(1);
    await member.stop();
    await expect(settled).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
    await expect(batch.settled()).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
  });
});
