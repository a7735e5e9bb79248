import { afterEach, describe, expect, it } from 'vitest';
import { cluster, Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { MISSED, PAUSED_REASON, type SchedulerCommand } from '../../src/scheduler/command.js';
import { encodeSchedulerSnapshot, restoreSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { initialHighWaterMs } from '../../src/scheduler/apply-rules.js';
import { SchedulerState } from '../../src/scheduler/state.js';
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
async function hourlyAfterOutage(version: number, beforeOutage?: (c: Cluster) => Promise<void>): Promise<Cluster> {
  let leading = true;
  const c = track(new Cluster(['a', 'b'], 5, {}, (id) => ({ isLeader: () => leading && id === 'a' })));
  c.version = version;
  c.schedule(['a', 'b'], 'hourly', { every: '1h' }, 10);
  await c.time.advanceTo(T0 + 3600_000 + 1000);
  expect(c.runs.map((r) => (r.slotMs - T0) / 1000)).toEqual([3600]);
  await beforeOutage?.(c);
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

  it('of a job paused before the outage is recorded skipped (paused), not run, and a resume runs none of the slots the outage missed', async () => {
    const c = await hourlyAfterOutage(CLAIM_TIME_VERSION, async (cluster) => {
      const paused = cluster.members.get('a')!.operations.setPaused('hourly', true);
      await cluster.time.advanceTo(T0 + 3600_000 + 2000);
      await paused;
    });
    const late = c.claims('hourly')[1]!;
    expect(late.slotMs).toBe(T0 + 7200_000);
    expect(late.outcomes.get(late.assignees[0]!)).toMatchObject({ outcome: 'skipped', error: PAUSED_REASON });
    expect(c.state().jobs.get('hourly')).toMatchObject({ missedSlots: 0, skippedRuns: 1 });
    const resumed = c.members.get('a')!.operations.setPaused('hourly', false);
    await c.time.advanceTo(T0 + 2.5 * 3600_000 + 16 * 60_000);
    await resumed;
    await c.time.advanceTo(T0 + 3 * 3600_000 + 1000);
    expect(c.runs.map((r) => (r.slotMs - T0) / 1000)).toEqual([3600, 10_800]);
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

describe(`an { at } job registered before cluster version ${AT_CATCH_UP_VERSION}, after its instant`, () => {
  const register = (job: string, atMs: number, registeredAtMs: number): SchedulerCommand => ({ type: 'register', job, spec: parseSpec({ at: atMs }), mode: 'one', policy: POLICY, member: 'a', atMs: registeredAtMs });

  it('has that slot due once the version is raised, in a state restored from a snapshot of before it too; nothing else moves', () => {
    const s = new SchedulerState();
    s.apply(1, register('late', T0 + 1000, T0 + 5000), AT_CATCH_UP_VERSION - 1);
    s.apply(2, register('ahead', T0 + 9000, T0 + 5000), AT_CATCH_UP_VERSION - 1);
    s.apply(3, { type: 'register', job: 'tick', spec: parseSpec({ every: '1s' }), mode: 'one', policy: POLICY, member: 'a', atMs: T0 + 5000 }, AT_CATCH_UP_VERSION - 1);
    const before = encodeSchedulerSnapshot(s);
    const restored = new SchedulerState();
    restoreSchedulerSnapshot(restored, before);
    for (const state of [s, restored]) {
      state.versionRaised(AT_CATCH_UP_VERSION - 1);
      expect(state.jobs.get('late')?.highWaterMs).toBe(T0 + 5000);
      state.versionRaised(AT_CATCH_UP_VERSION);
      expect([...state.jobs.values()].map((j) => [j.name, j.highWaterMs - T0])).toEqual([
        ['late', 999],
        ['ahead', 5000],
        ['tick', 5000],
      ]);
    }
    expect(encodeSchedulerSnapshot(restored)).toEqual(encodeSchedulerSnapshot(s));
    // Raised again (a later version), nothing more moves: the slot claimed stays claimed.
    s.apply(4, { type: 'claim', job: 'late', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 + 999 }, AT_CATCH_UP_VERSION);
    const after = encodeSchedulerSnapshot(s);
    s.versionRaised(AT_CATCH_UP_VERSION + 1);
    expect(encodeSchedulerSnapshot(s)).toEqual(after);
  });

  it('runs once the version is raised, as on a new cluster whose jobs registered at start under version 1', async () => {
    const c = cluster(['a', 'b']);
    c.version = AT_CATCH_UP_VERSION - 1;
    await c.time.advanceTo(T0 + 5000);
    c.schedule(['a', 'b'], 'launch', { at: T0 + 1000 }, 10);
    await c.time.advanceTo(T0 + 6000);
    expect(c.runs).toEqual([]);
    // Every member applies the raise at the same entry.
    c.version = AT_CATCH_UP_VERSION;
    for (const m of c.members.values()) m.versionRaised(AT_CATCH_UP_VERSION);
    await c.time.advanceTo(T0 + 7000);
    expect(c.runs.map((r) => [r.slotMs - T0, r.startMs - T0 < 6200])).toEqual([[1000, true]]);
    await c.time.advanceTo(T0 + 20_000);
    expect(c.outcomes('launch')).toEqual([[1, 'succeeded']]);
  });
});
