import { afterEach, describe, expect, it } from 'vitest';
import type { ViolationKind } from '../../simulations/simulate.js';
import { simulate } from '../../simulations/simulate.js';
import { FANOUT_PLANTS } from '../fixtures/fanout-plants.js';
import type { CatchRate } from '../fixtures/plants.js';

/**
 * Fan-out's checkers are not vacuous: each test plants a known bug in fan-out's production code
 * (test/fixtures/fanout-plants.ts), then shows that the simulator reports it as the violation of
 * the promise it breaks, by kind, within a bounded number of seeds. Each test's name gives the
 * bug's catch rate as measured: in how many seeds of how many it was caught, and the first.
 */
let unplant: (() => void) | null = null;
afterEach(() => {
  unplant?.();
  unplant = null;
});

const rate = (r: CatchRate): string => `caught in ${r.caught} of ${r.tried} seeds, first at seed ${r.first}`;

describe('fan-out: planted bugs are caught, each as the violation of the promise it breaks', () => {
  for (const plant of FANOUT_PLANTS) {
    it(`${plant.name}: ${plant.kind} (${rate(plant.measured)})`, async () => {
      unplant = plant.plant();
      const seen = new Set<ViolationKind>();
      let caughtAt: number | null = null;
      for (let seed = 1; seed <= plant.seeds && caughtAt === null; seed++) {
        const r = await simulate({ ...plant.options, seed });
        for (const kind of r.violationKinds) seen.add(kind);
        if (r.violationKinds.includes(plant.kind)) caughtAt = seed;
      }
      expect(caughtAt, `not reported as ${plant.kind} in ${plant.seeds} seeds (reported: ${[...seen].join(', ') || 'nothing'})`).not.toBeNull();
    }, 600_000);
  }
});
