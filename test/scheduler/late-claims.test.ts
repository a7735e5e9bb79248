import { afterEach, describe, expect, it } from 'vitest';
import { cluster, Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { MISSED } from '../../src/scheduler/command.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { initialHighWaterMs, SchedulerState } from '../../src/scheduler/state.js';
import { AT_CATCH_UP_VERSION, CLAIM_TIME_VERSION, FIRST_CLUSTER_VERSION } from '../../src/version/versions.js';

afterEach(stopClusters);

const POLICY = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } } as const;

describe("an { at } job whose instant passed before its registration applied", () => {
  it('runs once, late, at the instant it names, under the default catch-up', async () => {
    const c = cluster(['a', 'b']);
    // The registration waited (no leader, no cluster time yet): it applies 4 s after the instant.
    await c.time.advanceTo(T0 + 5000);
    c.schedule(['a', 'b'], 'launch', { at: T0 + 1000 }, 10);
    await c.time.advanceTo(T0 + 6000);
    expect(c.runs.map((r) => ({ slot: r.slotMs - T0, late: r.startMs - T0 }))).toEqual([{ slot: 1000, late: expect.any(Number) as number }]);
    expect(c.runs[0]!.startMs).toBeLessThan(T0 + 5000 + 200);
    expect(c.outcomes('launch')).toEqual([[1, 'succeeded']]);
    // Once: later plans find nothing more due.
    await c.time.advanceTo(T0 + 20_000);
    expect(c.runs).toHaveLength(1);
  });

  it("is recorded missed, not run, under catchUp 'none'", async () => {
    const c = cluster(['a', 'b']);
    await c.time.advanceTo(T0 + 5000);
    c.schedule(['a', 'b'], 'launch', { at: T0 + 1000 }, 10, { catchUp: 'none' });
    await c.time.advanceTo(T0 + 6000);
    expect(c.runs).toEqual([]);
    expect(c.state().jobs.get('launch')).toMatchObject({ missedSlots: 1, highWaterMs: T0 + 1000 });
  });

  it('runs, once, an instant older than the reassignment horizon: its claim is not expired before its run starts', async () => {
    const c = cluster(['a', 'b']);
    await c.time.advanceTo(T0 + 30 * 60_000);
    c.schedule(['a', 'b'], 'launch', { at: T0 + 1000 }, 10);
    await c.time.advanceTo(T0 + 31 * 60_000);
    expect(c.runs.map((r) => r.slotMs - T0)).toEqual([1000]);
    expect(c.outcomes('launch')).toEqual([[1, 'succeeded']]);
  });

  it(`is never claimed on a cluster version before ${AT_CATCH_UP_VERSION}, as a member of an earlier release applies it`, async () => {
    const c = cluster(['a', 'b']);
    c.version = AT_CATCH_UP_VERSION - 1;
    await c.time.advanceTo(T0 + 5000);
    c.schedule(['a', 'b'], 'launch', { at: T0 + 1000 }, 10);
    await c.time.advanceTo(T0 + 10_000);
    expect(c.runs).toEqual([]);
    expect(c.state().jobs.get('launch')).toMatchObject({ missedSlots: 0, highWaterMs: T0 + 5000 });
  });

  it('a job registered before its instant, or of another kind, starts its mark at the registration whatever the version', () => {
    for (const version of [FIRST_CLUSTER_VERSION, AT_CATCH_UP_VERSION]) {
      expect(initialHighWaterMs(parseSpec({ at: T0 + 1000 }), T0, version)).toBe(T0);
      expect(initialHighWaterMs(parseSpec({ every: '1s' }), T0, version)).toBe(T0);
    }
    expect(initialHighWaterMs(parseSpec({ at: T0 + 1000 }), T0 + 1000, AT_CATCH_UP_VERSION)).toBe(T0 + 999);
  });

  it('keeps its mark where it stood when registered again, by another member or after it ran', () => {
    const s = new SchedulerState();
    const register = (index: number, member: string, atMs: number): void => void s.apply(index, { type: 'register', job: 'launch', spec: parseSpec({ at: T0 + 1000 }), mode: 'one', policy: POLICY, member, atMs }, AT_CATCH_UP_VERSION);
    register(1, 'a', T0 + 5000);
    expect(s.jobs.get('launch')?.highWaterMs).toBe(T0 + 999);
    s.apply(100, { type: 'claim', job: 'launch', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 + 999 }, AT_CATCH_UP_VERSION);
    register(101, 'b', T0 + 9000);
    expect(s.jobs.get('launch')).toMatchObject({ highWaterMs: T0 + 1000, anchorMs: T0 + 5000 });
  });
});

/**
 * Two members; an hourly job runs its slot at 1 h, then no member leads from 1 h 0 m 1 s until
 * 2 h 30 m (a cluster down for maintenance), then 'a' leads again.
 */
async function hourlyAfterOutage(version: number): Promise<Cluster> {
  let leading = true;
  const c = track(new Cluster(['a', 'b'], 5, {}, (id) => ({ isLeader: () => leading && id === 'a' })));
  c.version = version;
  c.schedule(['a', 'b'], 'hourly', { every: '1h' }, 10);
  await c.time.advanceTo(T0 + 3600_000 + 1000);
  expect(c.runs.map((r) => (r.slotMs - T0) / 1000)).toEqual([3600]);
  leading = false;
  await c.time.advanceTo(T0 + 2.5 * 3600_000);
  leading = true;
  await c.time.advanceTo(T0 + 2.5 * 3600_000 + 15 * 60_000);
  return c;
}

describe('a slot caught up more than the reassignment horizon after its instant', () => {
  it("runs, under catchUp 'latest': its claim's horizon counts from when it was claimed", async () => {
    const c = await hourlyAfterOutage(CLAIM_TIME_VERSION);
    expect(c.runs.map((r) => (r.slotMs - T0) / 1000)).toEqual([3600, 7200]);
    expect(c.outcomes('hourly')).toEqual([
      [3600, 'succeeded'],
      [7200, 'succeeded'],
    ]);
    const late = c.claims('hourly')[1]!;
    expect(late.claimedAtMs).toBeGreaterThanOrEqual(T0 + 2.5 * 3600_000);
    // A slot claimed ahead of its instant keeps no time.
    expect(c.claims('hourly')[0]!.claimedAtMs).toBeUndefined();
  });

  it(`is recorded missed as soon as it is claimed on a cluster version before ${CLAIM_TIME_VERSION}, as a member of an earlier release records it`, async () => {
    const c = await hourlyAfterOutage(CLAIM_TIME_VERSION - 1);
    expect(c.runs.map((r) => (r.slotMs - T0) / 1000)).toEqual([3600]);
    expect(c.outcomes('hourly')).toEqual([
      [3600, 'succeeded'],
      [7200, MISSED],
    ]);
    expect(c.claims('hourly')[1]!.claimedAtMs).toBeUndefined();
  });

  it('is still recorded missed once its member was lost and nobody took it over for the horizon after it was claimed', async () => {
    let reachable = ['a', 'b'];
    const c = track(new Cluster(['a', 'b'], 5, { eligibleMembers: () => reachable }));
    await c.time.advanceTo(T0 + 30 * 60_000);
    // Only 'b' handles the job; it starts the late slot, then is lost: nobody else can take it.
    c.schedule(['b'], 'launch', { at: T0 + 1000 }, 3600_000, { timeoutMs: 3600_000 });
    await c.time.advanceTo(T0 + 30 * 60_000 + 1000);
    expect(c.runs.map((r) => r.member)).toEqual(['b']);
    reachable = ['a'];
    await c.time.advanceTo(T0 + 39 * 60_000);
    expect(c.outcomes('launch')).toEqual([[1, undefined]]);
    await c.time.advanceTo(T0 + 41 * 60_000);
    expect(c.outcomes('launch')).toEqual([[1, MISSED]]);
  });
});
