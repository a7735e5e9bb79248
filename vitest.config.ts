import { defineConfig } from 'vitest/config';

/**
 * Two projects, which `npm test` runs together: `unit` (the pure protocol and scheduler, the
 * runtime on simulated time, storage, transport and byte helpers: `npm run test:unit`, for the
 * edit-test loop) and `system` (simulator runs and sweeps, real member processes, real clusters
 * on loopback, the CLI). CI runs both.
 */
const UNIT = ['test/raft/**/*.test.ts', 'test/version/**/*.test.ts', 'test/scheduler/**/*.test.ts', 'test/fanout/**/*.test.ts', 'test/runtime/**/*.test.ts', 'test/storage/**/*.test.ts', 'test/transport/**/*.test.ts', 'test/bytes/**/*.test.ts', 'test/api/**/*.test.ts', 'test/time/**/*.test.ts'];
/** The simulator's own parts that run no simulation of a cluster, or a short one. */
const SIMULATOR_UNITS = ['test/simulation/simulation-summary.test.ts', 'test/simulation/run-checkers-permits.test.ts', 'test/simulation/retry-checker-stamps.test.ts', 'test/simulation/fanout-checker.test.ts', 'test/simulation/simulation-settings.test.ts', 'test/simulation/sim-network.test.ts'];

export default defineConfig({
  test: {
    // Real-process tests start several Node processes; two cores cannot run many at once.
    maxWorkers: 2,
    testTimeout: 60_000,
    hookTimeout: 60_000,
    projects: [
      // A unit test file leaves nothing behind (no process, no port, mocks restored), so a worker
      // runs one after another in one module graph: each imported the whole code base afresh
      // before, which took more than half of the project's time.
      { extends: true, test: { name: 'unit', include: [...UNIT, ...SIMULATOR_UNITS], isolate: false } },
      // Real-process tests run members from dist/, which the global setup builds first.
      { extends: true, test: { name: 'system', include: ['test/**/*.test.ts'], exclude: [...UNIT, ...SIMULATOR_UNITS], globalSetup: ['test/global-setup.ts'] } },
    ],
  },
});
