import { describe, expect, it } from 'vitest';
import { drawBarriersMode } from '../../simulations/barriers.js';
import { simulate } from '../../simulations/simulate.js';
import { drawnWorkloadTests } from '../fixtures/drawn-workload.js';
import { SWEEP_MAX_EMIT } from '../fixtures/sweep.js';

/**
 * `barrier()` in the fault swarm: members drawn at random ask for a linearizable read barrier
 * now and then during the faults, and simulations/checkers/reads.ts holds each answer to what
 * was committed before it was asked (`stale-read`). The planted bugs that show it is not vacuous
 * are in test/fixtures/plants.ts.
 */
describe('simulation with read barriers', () => {
  drawnWorkloadTests({ what: 'read barriers', option: 'barriers', seed: 6, did: (r) => r.barriers?.answered, draws: drawBarriersMode });

  const seeds = 4;
  // Emits as small as the sweep's: a seed that draws fan-out and a rated topic otherwise spends
  // most of its time draining thousands of items at a few a second after healing (seed 305 ran
  // 34 simulated minutes of it), which tests fan-out, not barriers.
  for (const members of [3, 5]) {
    it(`${members} members: ${seeds} seeds of 60 simulated seconds with read barriers: none answered below what was committed before it`, async () => {
      const failures: string[] = [];
      let answered = 0;
      for (let seed = 1; seed <= seeds; seed++) {
        const r = await simulate({ seed: seed * 100 + members, members, durationMs: 60_000, proposals: false, barriers: true, maxEmit: SWEEP_MAX_EMIT });
        answered += r.barriers?.answered ?? 0;
        if (r.violations.length > 0) failures.push(`seed ${r.seed}: ${r.violations.slice(0, 3).join('; ')} (replay: npx cronraft simulate --seed ${r.seed} --members ${members} --duration 60s --proposals off --barriers on --max-emit ${SWEEP_MAX_EMIT})`);
      }
      expect(failures).toEqual([]);
      // Not vacuous: barriers were answered through the faults (many are refused, with no leader known).
      expect(answered).toBeGreaterThan(seeds * 50);
    }, 300_000);
  }
});
