import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { MISSED } from '../../src/scheduler/command.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { FIRST_CLUSTER_VERSION } from '../../src/version/versions.js';

afterEach(stopClusters);

/** The reassignment horizon of these tests: runs outlast it, as a run of an hour outlasts production's ten minutes. */
const HORIZON_MS = 3000;

/** Two members with a short horizon, on cluster version `version` (this release's latest by default). */
function twoMembers(version?: number): Cluster {
  const c = track(new Cluster(['a', 'b'], 5, { reassignHorizonMs: HORIZON_MS }));
  if (version !== undefined) c.version = version;
  return c;
}

// Found by the simulator once it drew short horizons: the leader counted the horizon from the
// slot's instant alone, so a run that outlasted it and failed was never retried.
describe('a run longer than the reassignment horizon', () => {
  it('that fails is retried on another member, which arms the claim moved late', async () => {
    const c = twoMembers();
    const runs: Array<{ member: string; attempt: number; token: number; at: number }> = [];
    for (const id of ['a', 'b']) {
      c.members.get(id)!.schedule(
        'report',
        parseSpec({ at: new Date(T0 + 1000) }),
        async (ctx) => {
          runs.push({ member: id, attempt: ctx.attempt, token: ctx.fencingToken, at: c.time.now() - T0 });
          await c.time.sleep(5000, ctx.signal);
          if (ctx.attempt === 1) throw new Error('the first try fails, after five seconds');
        },
        { retries: 1, retryDelayMs: 100 },
      );
    }
    await c.time.advanceTo(T0 + 15_000);
    expect(runs.map((r) => r.attempt)).toEqual([1, 2]);
    expect(runs[1]!.member).not.toBe(runs[0]!.member);
    // The retry, six seconds after the instant, past the horizon from it: its claim keeps when it moved.
    expect(runs[1]!.at).toBeGreaterThan(6000);
    const claim = c.claims('report')[0]!;
    expect(claim.claimedAtMs).toBeGreaterThanOrEqual(T0 + 6000);
    expect(claim.outcomes.get(runs[1]!.member)).toMatchObject({ outcome: 'succeeded', token: claim.token });
  });

  it('that fails is retried after a back-off longer than the horizon', async () => {
    const c = twoMembers();
    let tries = 0;
    for (const id of ['a', 'b']) {
      c.members.get(id)!.schedule(
        'report',
        parseSpec({ at: new Date(T0 + 1000) }),
        async (ctx) => {
          tries++;
          if (ctx.attempt === 1) throw new Error('fails at once');
        },
        { retries: 1, retryDelayMs: 2 * HORIZON_MS },
      );
    }
    await c.time.advanceTo(T0 + 1000 + 2 * HORIZON_MS + 2000);
    expect(tries).toBe(2);
    const claim = c.claims('report')[0]!;
    expect(claim.outcomes.get(claim.assignees[0]!)).toMatchObject({ outcome: 'succeeded', token: claim.token });
  });

  it("queued behind another (overlap 'queue') runs once that ends, where before version 3 the leader recorded it missed", async () => {
    const queued = async (version?: number): Promise<Cluster> => {
      const c = twoMembers(version);
      // Only a handles the job, so its slots queue there, each run five seconds, a slot every two.
      c.schedule(['a'], 'import', { every: '2s' }, 5000, { overlap: 'queue' });
      await c.time.advanceTo(T0 + 16_000);
      return c;
    };
    const c = await queued();
    // Slot 6 s waited from 6 s to 12 s, past the horizon from its instant.
    expect(c.runs.slice(0, 3).map((r) => [r.slotMs - T0, r.startMs - T0])).toEqual([
      [2000, 2000],
      [4000, 7000],
      [6000, 12_000],
    ]);
    expect(c.outcomes('import').slice(0, 2)).toEqual([
      [2, 'succeeded'],
      [4, 'succeeded'],
    ]);
    expect(c.outcomes('import').filter(([, outcome]) => outcome === MISSED)).toEqual([]);
    const old = await queued(FIRST_CLUSTER_VERSION);
    expect(old.outcomes('import').find(([slot]) => slot === 6)).toEqual([6, MISSED]);
  });
});

describe('a run that outlasts the horizon on a member then lost', () => {
  it('is moved, its horizon counted from when the leader last saw its member, not from its start', async () => {
    let bAway = false;
    const c = track(new Cluster(['a', 'b'], 5, { reassignHorizonMs: HORIZON_MS, eligibleMembers: () => (bAway ? ['a'] : ['a', 'b']) }));
    // b alone handles the job at first, and its run is long; a takes it on later.
    c.schedule(['b'], 'report', { at: T0 + 1000 }, 60_000);
    await c.time.advanceTo(T0 + 1500);
    c.schedule(['a'], 'report', { at: T0 + 1000 }, 100);
    // b is lost 4 s into its run: past the horizon from the instant and from the start.
    await c.time.advanceTo(T0 + 5000);
    bAway = true;
    await c.time.advanceTo(T0 + 7000);
    const claim = c.claims('report')[0]!;
    expect(claim.assignees).toEqual(['a']);
    expect(claim.outcomes.get('a')).toMatchObject({ outcome: 'succeeded', token: claim.token });
    expect(c.runs.map((r) => r.member)).toEqual(['b', 'a']);
  });
});

describe('a fixed-delay job whose run outlasts the horizon', () => {
  it('claims its next slot only once that run ended, while its member is seen (cluster version 3)', async () => {
    const c = twoMembers();
    c.schedule(['a'], 'sync', { delayAfterCompletion: 1000, initialDelay: 500 }, 5000);
    await c.time.advanceTo(T0 + 14_000);
    const runs = c.runs.map((r) => [r.startMs - T0, (r.endMs ?? Number.NaN) - T0]);
    // Each run five seconds, the next a second after: none beside another.
    expect(runs.slice(0, 2)).toEqual([
      [500, 5500],
      [6500, 11_500],
    ]);
    expect(c.maxOverlap('sync')).toBe(1);
  });
});
