import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';
import { FIRST_CLUSTER_VERSION } from '../../src/version/versions.js';

afterEach(stopClusters);

const HORIZON_MS = 3000;

/**
 * b runs one job at a time (maxConcurrent 1) and is busy with `long` (an `{ at }` run of 8 s from
 * T0 + 0.5 s). The fixed-delay job `sync` (a second after each run's end) is handled by b alone at
 * first, so its first slot (T0 + 1 s) is claimed for b and waits there for b's permit; a handles
 * `sync` too from T0 + 1.5 s. Both members stay reachable all along.
 */
async function busyMember(version?: number): Promise<Cluster> {
  const c = track(new Cluster(['a', 'b'], 5, { reassignHorizonMs: HORIZON_MS }, (id) => (id === 'b' ? { maxConcurrent: 1 } : {})));
  if (version !== undefined) c.version = version;
  c.schedule(['b'], 'long', { at: T0 + 500 }, 8000);
  c.schedule(['b'], 'sync', { delayAfterCompletion: 1000, initialDelay: 1000 }, 100);
  await c.time.advanceTo(T0 + 1500);
  c.schedule(['a'], 'sync', { delayAfterCompletion: 1000, initialDelay: 1000 }, 100);
  await c.time.advanceTo(T0 + 15_000);
  return c;
}

describe("a fixed-delay job's slot waiting on its reachable member past the horizon (cluster version 3)", () => {
  it('has its next slot claimed only once that slot has a final outcome, and never runs after a later slot', async () => {
    // Before version 3: the waiting slot is recorded missed at the horizon, then the next one is claimed.
    const old = await busyMember(FIRST_CLUSTER_VERSION);
    const oldSync = old.runs.filter((r) => r.job === 'sync');
    expect(oldSync.map((r) => r.slotMs)).toEqual([...oldSync.map((r) => r.slotMs)].sort((x, y) => x - y));

    const c = await busyMember();
    // The leader leaves the first slot to b (reachable), which runs it once `long` ends at 8.5 s;
    // the planner waits for its outcome too (it took that slot for over at the horizon, and
    // claimed the next ones meanwhile, which ran on a before it).
    const sync = c.runs.filter((r) => r.job === 'sync').map((r) => [r.member, r.slotMs - T0, r.startMs - T0]);
    const firstOutcomeIndex = c.log.findIndex((command) => command.type === 'outcome' && command.job === 'sync' && command.slotMs === T0 + 1000);
    const secondClaimIndex = c.log.findIndex((command) => command.type === 'claim' && command.job === 'sync' && command.slotMs > T0 + 1000);
    // Fixed delay (README): each next slot after the previous one's final outcome is committed.
    expect(secondClaimIndex === -1 || (firstOutcomeIndex !== -1 && firstOutcomeIndex < secondClaimIndex), JSON.stringify({ sync, firstOutcomeIndex, secondClaimIndex })).toBe(true);
    // Runs in slot order.
    const slots = c.runs.filter((r) => r.job === 'sync').map((r) => r.slotMs);
    expect(slots).toEqual([...slots].sort((x, y) => x - y));
  });
});
