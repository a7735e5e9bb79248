import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { RETRY_COUNT_VERSION } from '../../src/version/versions.js';
import { retriesLeft } from '../../src/scheduler/records.js';

afterEach(stopClusters);

/**
 * Three members; the slot at T0 + 1 s goes to 'a', which is lost mid-run (the leader stops
 * counting it as reachable), so the slot moves to 'b', whose run fails; 'c' succeeds.
 */
async function failoverThenFailure(version: number): Promise<Cluster> {
  let reachable = ['a', 'b', 'c'];
  const c = track(new Cluster(['a', 'b', 'c'], 5, { eligibleMembers: () => reachable }));
  c.version = version;
  c.schedule(['a', 'b', 'c'], 'report', { at: T0 + 1000 }, 5000, { retries: 1, retryDelayMs: 1000 }, (_ctx, member) => {
    if (member === 'b') throw new Error('boom');
  });
  await c.time.advanceTo(T0 + 1500);
  expect(c.runs.map((r) => r.member)).toEqual(['a']);
  reachable = ['b', 'c'];
  await c.time.advanceTo(T0 + 12_000);
  return c;
}

describe("a job's retries", () => {
  it('are not used up by a move after its member was lost: the failure that follows is retried', async () => {
    const c = await failoverThenFailure(RETRY_COUNT_VERSION);
    expect(c.runs.map((r) => [r.member, r.attempt])).toEqual([
      ['a', 1],
      ['b', 2],
      ['c', 3],
    ]);
    const claim = c.claims('report')[0]!;
    expect(claim).toMatchObject({ attempt: 3, retried: 1 });
    expect(claim.outcomes.get('c')).toMatchObject({ outcome: 'succeeded', token: claim.token });
    expect(retriesLeft(c.state().jobs.get('report'), claim)).toBe(0);
  });

  it(`count every move on a cluster version before ${RETRY_COUNT_VERSION}, as a member of an earlier release counts them`, async () => {
    const c = await failoverThenFailure(RETRY_COUNT_VERSION - 1);
    expect(c.runs.map((r) => r.member)).toEqual(['a', 'b']);
    const claim = c.claims('report')[0]!;
    expect(claim).toMatchObject({ attempt: 2, retried: 1 });
    expect(claim.outcomes.get('b')).toMatchObject({ outcome: 'failed', token: claim.token });
  });

  it('back off from the retries used, not the moves: the retry after a move waits retryDelayMs', async () => {
    const c = await failoverThenFailure(RETRY_COUNT_VERSION);
    const failedAtMs = c.claims('report')[0]!.outcomes.get('b')!.atMs;
    const retried = c.runs[2]!;
    // The retry waits the first back-off (1 s; 2 s if the move counted), plus a plan interval and commits.
    expect(retried.startMs - failedAtMs).toBeGreaterThanOrEqual(1000);
    expect(retried.startMs - failedAtMs).toBeLessThan(1500);
  });
});
