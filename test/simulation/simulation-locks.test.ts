import { describe, expect, it } from 'vitest';
import { drawLocksMode } from '../../simulations/locks.js';
import { simulate } from '../../simulations/simulate.js';
import { drawnWorkloadTests } from '../fixtures/drawn-workload.js';

/**
 * runExclusive in the fault swarm: every member calls it now and then for a few lock names and
 * runs a task under each lock it is granted, through crashes, partitions, stalls and clock
 * faults, with the member wiring Cluster gives it (a lock proposal that went unanswered is let
 * go as it commits or comes in a snapshot). simulations/checkers/locks.ts looks after every
 * event: no two tasks hold one name at once, none runs on past its atMostFor, and each grant's
 * fencing token is greater than the last. The planted bugs that show it is not vacuous are in test/fixtures/plants.ts.
 */
describe('simulation with runExclusive', () => {
  drawnWorkloadTests({ what: 'runExclusive’s calls', option: 'locks', seed: 5, did: (r) => r.locks?.tasks, draws: drawLocksMode });

  const seeds = 4;
  for (const members of [3, 5]) {
    it(`${members} members: ${seeds} seeds of 60 simulated seconds with runExclusive’s calls: no two tasks under one lock at once, none past its atMostFor, tokens increasing`, async () => {
      const failures: string[] = [];
      let tasks = 0;
      let aborted = 0;
      for (let seed = 1; seed <= seeds; seed++) {
        const r = await simulate({ seed: seed * 100 + members, members, durationMs: 60_000, proposals: false, locks: true });
        tasks += r.locks?.tasks ?? 0;
        aborted += r.locks?.aborted ?? 0;
        if (r.violations.length > 0) failures.push(`seed ${r.seed}: ${r.violations.slice(0, 3).join('; ')} (replay: npx cronraft simulate --seed ${r.seed} --members ${members} --duration 60s --proposals off --locks on)`);
      }
      expect(failures).toEqual([]);
      // Not vacuous: tasks ran under the locks, and some were told to stop as their lock ran out.
      expect(tasks).toBeGreaterThan(seeds * 20);
      expect(aborted).toBeGreaterThan(0);
    }, 300_000);
  }
});
