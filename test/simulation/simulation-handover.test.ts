import { describe, expect, it } from 'vitest';
import { HANDOVER_JOBS } from '../../simulations/handover.js';
import { simulate } from '../../simulations/simulate.js';

/**
 * Graceful stops in the simulator: after the fault phase, each member in turn, the leader
 * first, stops as `Cluster.stop()` does and starts again (`simulate({ handover: true })`). Every slot
 * then runs once and on time, and no stopped member leaves a claim waiting on it
 * (simulations/handover.ts). The planted bug that skips the unregistrations is caught as
 * `handover` (simulation-planted-bugs.test.ts).
 */
describe('a rolling restart of graceful stops', () => {
  it('misses, doubles and keeps waiting no slot, over 8 seeds of 3 and 5 members', async () => {
    for (let seed = 1; seed <= 8; seed++) {
      const r = await simulate({ seed, members: seed % 2 === 0 ? 3 : 5, durationMs: 5000, handover: true, jobs: HANDOVER_JOBS, versions: 'same' });
      expect(r.violations, `seed ${seed}`).toEqual([]);
      expect(r.jobs.find((j) => j.name === 'fast')?.runs ?? 0, `seed ${seed}`).toBeGreaterThan(100);
    }
  }, 600_000);
});
