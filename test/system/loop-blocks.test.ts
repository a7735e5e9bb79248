import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, type LoopBlocked } from '../../src/index.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { parseSamples, valueOf } from '../fixtures/prometheus-text.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/**
 * Three times the default election timeout: a lease (two of them) of 1.5 s, past which a
 * machine's stall (CI's, a test worker's GC) would be told too and spoil the counts below.
 */
const ELECTION_TIMEOUT_MS = 750;
const LEASE_MS = 2 * ELECTION_TIMEOUT_MS;

/** Holds the event loop for `ms`, as synchronous work does (a parse, a hash, a loop over rows). */
function holdLoop(ms: number): void {
  const until = performance.now() + ms;
  while (performance.now() < until);
}

/**
 * A handler that holds the event loop for the member's lease leaves the member silent meanwhile:
 * in a cluster of three, the leader moved each such slot to another member, which ran it again
 * (every slot of a job every 4 s whose handler held the loop 2 s ran two or three times), each
 * member telling its run succeeded. Nothing said why. The member now tells `blocked`.
 * (test/runtime/loop-blocks.test.ts: how a tick's lateness is told, step by step.)
 */
describe("a handler that holds the member's event loop for its lease", () => {
  it("is told as 'blocked', for a job's run and for a work item, with how long it held the loop, once each, and so is work after an await, as the loop's; counted at /metrics; a handler that awaits at once is not", async () => {
    const member = new Cluster([], { storage: 'memory', electionTimeoutMs: ELECTION_TIMEOUT_MS, http: { listen: '127.0.0.1:0' } });
    cleanups.push(() => member.stop());
    const blocked: LoopBlocked[] = [];
    member.on('blocked', (b) => blocked.push(b));
    const runs: Array<{ slot: Date; token: number }> = [];
    member.schedule('heavy', { every: '1h' }, (ctx) => {
      runs.push({ slot: ctx.slot, token: ctx.fencingToken });
      holdLoop(LEASE_MS + 50);
    });
    member.schedule('heavy-later', { every: '1h' }, async () => {
      await Promise.resolve();
      holdLoop(LEASE_MS + 50);
    });
    let light = 0;
    member.schedule('light', { every: '1h' }, async () => {
      await Promise.resolve();
      light++;
    });
    const items: Array<{ id: number; token: number }> = [];
    member.consume('rows', (_data, ctx) => {
      items.push({ id: ctx.id, token: ctx.fencingToken });
      holdLoop(LEASE_MS + 50);
    });
    await member.start();
    await member.trigger('light');
    await expect.poll(() => light, { timeout: 15_000, interval: 20 }).toBe(1);
    await member.trigger('heavy');
    await expect.poll(() => blocked.length, { timeout: 15_000, interval: 20 }).toBe(1);
    expect(blocked[0]).toEqual({ kind: 'run', job: 'heavy', slot: runs[0]?.slot, fencingToken: runs[0]?.token, ms: expect.any(Number) as number, leaseMs: LEASE_MS });
    expect(blocked[0]?.ms).toBeGreaterThanOrEqual(LEASE_MS + 50);
    await expect.poll(() => member.state().version.active >= FANOUT_VERSION, { timeout: 15_000, interval: 50 }).toBe(true);
    await member.emitItems('rows', ['a']);
    await expect.poll(() => blocked.length, { timeout: 15_000, interval: 20 }).toBe(2);
    expect(blocked[1]).toEqual({ kind: 'item', topic: 'rows', id: items[0]?.id, fencingToken: items[0]?.token, ms: expect.any(Number) as number, leaseMs: LEASE_MS });
    expect(blocked[1]?.ms).toBeGreaterThanOrEqual(LEASE_MS + 50);
    // Work after the first await holds the loop the same way: the member's next tick comes that
    // late, and tells it as the loop's (the holds above were told once each, not again so).
    await member.trigger('heavy-later');
    await expect.poll(() => blocked.length, { timeout: 15_000, interval: 20 }).toBe(3);
    expect(blocked[2]).toEqual({ kind: 'loop', ms: expect.any(Number) as number, leaseMs: LEASE_MS });
    expect(blocked[2]?.ms).toBeGreaterThanOrEqual(LEASE_MS);
    expect(light).toBe(1);
    // And counted by kind at /metrics, for an alert (examples/alerts.yml).
    const samples = parseSamples(await (await fetch(`http://${member.httpAddress}/metrics`)).text());
    expect(['run', 'item', 'loop'].map((kind) => valueOf(samples, 'cronraft_event_loop_blocked_total', { kind }))).toEqual([1, 1, 1]);
  });
});
