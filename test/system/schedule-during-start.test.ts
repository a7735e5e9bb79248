import { expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { stoppedAfterEach } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

/**
 * A lone member elects itself during start(): its 'leader' listener runs after start() handed
 * the jobs and consumers scheduled so far to the member, and before the status turns 'running'.
 * A job or a consumer added from there was kept by the Cluster alone, and never registered.
 */
it("a job and a consumer added from a 'leader' listener during start() are registered and run", async () => {
  const c = new Cluster([], { listen: '127.0.0.1:0', storage: 'memory' });
  started.push(c);
  const statusAtLeader: string[] = [];
  let earlyRuns = 0;
  let lateRuns = 0;
  const consumed: unknown[] = [];
  c.schedule('early', { every: 100 }, () => void earlyRuns++);
  c.once('leader', () => {
    statusAtLeader.push(c.state().status);
    c.schedule('late', { every: 100 }, () => void lateRuns++);
    c.consume('late-topic', (item) => void consumed.push(item));
  });
  await c.start();
  // Not vacuous: the listener ran in the gap, before 'running'.
  expect(statusAtLeader).toEqual(['starting']);
  await expect.poll(() => lateRuns, { timeout: 10_000 }).toBeGreaterThan(0);
  expect(earlyRuns).toBeGreaterThan(0);
  expect(c.state().jobs.map((j) => j.name).sort()).toEqual(['early', 'late']);
  // A new cluster raises its version a step at a time: fan-out takes items from its version on.
  await expect.poll(() => c.state().version.active, { timeout: 10_000 }).toBeGreaterThanOrEqual(FANOUT_VERSION);
  await c.emitItems('late-topic', [{ n: 1 }]);
  await expect.poll(() => consumed, { timeout: 10_000 }).toEqual([{ n: 1 }]);
});
