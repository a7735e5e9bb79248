import { defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

/**
 * Two projects, which `npm test` runs together: `unit` (the pure protocol and scheduler, the
 * runtime on simulated time, storage, transport and byte helpers: `npm run test:unit`, for the
 * edit-test loop) and `system` (simulator runs and sweeps, real member processes, real clusters
 * on loopback, the CLI). CI runs both.
 */
const UNIT = ['test/raft/**/*.test.ts', 'test/version/**/*.test.ts', 'test/scheduler/**/*.test.ts', 'test/fanout/**/*.test.ts', 'test/runtime/**/*.test.ts', 'test/storage/**/*.test.ts', 'test/transport/**/*.test.ts', 'test/bytes/**/*.test.ts', 'test/api/**/*.test.ts', 'test/time/**/*.test.ts'];
/** The simulator's own parts that run no simulation of a cluster, or a short one. */
const SIMULATOR_UNITS = ['test/simulation/simulation-summary.test.ts', 'test/simulation/fanout-draws.test.ts', 'test/simulation/run-checkers-permits.test.ts', 'test/simulation/retry-checker-stamps.test.ts', 'test/simulation/fanout-checker.test.ts', 'test/simulation/simulation-settings.test.ts', 'test/simulation/sim-network.test.ts'];

/**
 * The CI sweeps first, one on each worker, then the order vitest gives the rest (the system
 * project's files before the unit project's, the larger first). The sweeps are the longest
 * files, and their own files are small: taken last among the system files, the last sweep
 * still ran alone on one worker once the other had done every other file.
 */
class SweepsFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const sweep = (file: TestSpecification): boolean => /\/simulation-sweep-[ab]\.test\.ts$/.test(file.moduleId);
    return [...sorted.filter(sweep), ...sorted.filter((file) => !sweep(file))];
  }
}

export default defineConfig({
  test: {
    // Real-process tests start several Node processes; two cores cannot run many at once.
    maxWorkers: 2,
    // A test file leaves nothing behind (its clusters and processes stopped, its ports closed,
    // its mocks and planted bugs restored), so a worker runs one file after another in one module
    // graph, its code compiled once: each file imported the whole code base afresh before, in a
    // fresh isolate, which took much of CI's time. (Isolated in one project and not the other,
    // the projects ran one after the other, as two groups, which cost more than it saved.)
    isolate: false,
    sequence: { sequencer: SweepsFirst },
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'unit', include: [...UNIT, ...SIMULATOR_UNITS] } },
      // Real-process tests run members from dist/, which the global setup builds first.
      { extends: true, test: { name: 'system', include: ['test/**/*.test.ts'], exclude: [...UNIT, ...SIMULATOR_UNITS], globalSetup: ['test/global-setup.ts'] } },
    ],
  },
});
