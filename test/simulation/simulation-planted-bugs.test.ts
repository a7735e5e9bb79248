import { afterEach, describe, expect, it } from 'vitest';
import type { ViolationKind } from '../../simulations/simulate.js';
import { simulate } from '../../simulations/simulate.js';
import { PLANTS, type CatchRate } from '../fixtures/plants.js';

/**
 * The checkers are not vacuous: each test plants a known bug in the production code
 * (test/fixtures/plants.ts), then shows that the simulator reports it as the violation of the
 * promise it breaks, by kind, within a bounded number of seeds. Without the bug the same kind
 * is never reported (the simulation tests and the sweeps). Each test's name gives the bug's
 * catch rate as measured: in how many seeds of how many it was caught, and the first.
 */
let unplant: (() => void) | null = null;
afterEach(() => {
  unplant?.();
  unplant = null;
});

const rate = (r: CatchRate): string => `caught in ${r.caught} of ${r.tried} seeds, first at seed ${r.first}`;

describe('planted bugs are caught, each as the violation of the promise it breaks', () => {
  for (const plant of PLANTS) {
    const before = plant.before === undefined ? '' : `; before ${plant.before.change}: ${rate(plant.before)}`;
    it(`${plant.name}: ${plant.kind} (${rate(plant.measured)}${before})`, async () => {
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
