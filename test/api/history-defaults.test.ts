import { afterEach, describe, expect, it } from 'vitest';
import { historyOf } from '../../src/api/history.js';
import { readRoutes, type HttpSource } from '../../src/http/routes.js';
import { cluster, stopClusters, T0 } from '../fixtures/scheduler-cluster.js';

afterEach(stopClusters);

describe("history()'s defaults (README, 'History' under 'Scheduling work once across the cluster', and GET /v1/history)", () => {
  it('gives the latest 100 claims, the latest claimed first, unless a limit says otherwise', async () => {
    const c = cluster(['a']);
    c.schedule(['a'], 'tick', { every: '100ms' }, 1);
    await c.time.advanceTo(T0 + 15_500);
    const all = historyOf(c.state('a'), { limit: 1000 });
    expect(all.length).toBeGreaterThan(120);
    // One member, nothing moved: the order of the slots' first claims is the tokens' (a moved
    // slot keeps its place under its new token: cli-ops.test.ts meets one).
    const tokens = all.map((h) => h.fencingToken);
    expect(tokens).toEqual([...tokens].sort((x, y) => y - x));
    expect(new Set(tokens).size).toBe(tokens.length);
    expect(historyOf(c.state('a'))).toEqual(all.slice(0, 100));
    expect(historyOf(c.state('a'), { limit: 3 })).toEqual(all.slice(0, 3));
  });

  it('keeps a moved slot at the place of its first claim, under its new token', async () => {
    const c = cluster(['a', 'b']);
    c.schedule(['a', 'b'], 'tick', { every: '100ms' }, 1);
    await c.time.advanceTo(T0 + 2000);
    // The earliest claim still ahead of its instant (the look-ahead claimed later ones too):
    // moved to the other member.
    const claimedAhead = historyOf(c.state('a'), { limit: 1000 }).filter((h) => h.slot.getTime() > c.time.now() + 200);
    expect(claimedAhead.length).toBeGreaterThan(1);
    const ahead = claimedAhead[claimedAhead.length - 1]!;
    const to = ahead.assignees[0] === 'a' ? 'b' : 'a';
    void c.propose({ type: 'reassign', job: 'tick', slotMs: ahead.slot.getTime(), fromToken: ahead.fencingToken, assignees: [to], reason: 'assignee-lost' });
    await c.time.advanceTo(T0 + 3000);
    const all = historyOf(c.state('a'), { limit: 1000 });
    const moved = all.find((h) => h.slot.getTime() === ahead.slot.getTime())!;
    expect(moved.assignees).toEqual([to]);
    expect(moved.fencingToken).toBeGreaterThan(ahead.fencingToken);
    // Its place is its slot's among the slots claimed in order, not its new token's.
    const slots = all.map((h) => h.slot.getTime());
    expect(slots).toEqual([...slots].sort((x, y) => y - x));
    expect(all.filter((h) => h.slot.getTime() < moved.slot.getTime()).some((h) => h.fencingToken < moved.fencingToken)).toBe(true);
    expect(all.filter((h) => h.slot.getTime() > moved.slot.getTime()).some((h) => h.fencingToken < moved.fencingToken)).toBe(true);
  });

  it('GET /v1/history asks for 100 when no limit is given', () => {
    const asked: Array<{ job?: string; limit?: number }> = [];
    const source = { history: (options: { job?: string; limit?: number }) => (asked.push(options), []) } as unknown as HttpSource;
    const route = readRoutes(source).find((r) => r.path === '/v1/history')!;
    route.handle({ params: {}, query: new URLSearchParams(), body: undefined });
    route.handle({ params: {}, query: new URLSearchParams('job=tick&limit=7'), body: undefined });
    expect(asked).toEqual([{ limit: 100 }, { job: 'tick', limit: 7 }]);
  });
});
