import { expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';
import { stoppedAfterEach } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

it("runs on when the app's listener of role, leader or run throws, and still tells what comes after", async () => {
  // Before, a `leader` or `role` listener that threw as the member elected itself failed it
  // during its start (start() resolved all the same, the status said running, nothing ran), and a
  // `run` listener that threw kept `failed` from being told.
  const c = new Cluster([], { storage: 'memory' });
  started.push(c);
  const errors: Error[] = [];
  c.on('error', (e) => errors.push(e));
  for (const event of ['role', 'leader', 'run'] as const) {
    c.on(event, () => {
      throw new Error(`the app's ${event} listener`);
    });
  }
  const failed: number[] = [];
  c.on('failed', (run) => failed.push(run.fencingToken));
  let runs = 0;
  c.schedule('tick', { every: 100 }, () => {
    runs++;
    throw new Error('every run fails');
  });
  const warnings: Error[] = [];
  const onWarning = (w: Error): void => void warnings.push(w);
  process.on('warning', onWarning);
  try {
    await c.start();
    await expect.poll(() => failed.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(2);
    expect(runs).toBeGreaterThanOrEqual(2);
    expect(c.state().status).toBe('running');
    expect(errors).toEqual([]);
    expect((await c.propose('still writes')).index).toBeGreaterThan(0);
    // Each event's listener that threw is told once, as a process warning (before, not at all),
    // though the run listener threw at every run. (Warnings are emitted on the next tick.)
    await expect
      .poll(() => warnings.filter((w) => w.name === 'CronraftListenerWarning').map((w) => [(w as Error & { code?: string }).code, w.message]), { timeout: 5_000, interval: 20 })
      .toEqual(
        (['role', 'leader', 'run'] as const).map((event) => [
          'CRONRAFT_LISTENER_THREW',
          `A listener of the cluster's '${event}' event threw: the app's ${event} listener (the member goes on; later throws of its listeners are not told again)`,
        ]),
      );
  } finally {
    process.off('warning', onWarning);
  }
});

it('ends a waitForLeader() pending on a member that stops, with CRONRAFT_NOT_RUNNING', async () => {
  // Before, it ran its whole timeout and rejected with CRONRAFT_TIMEOUT (or, with nothing else
  // keeping the process alive, the process exited with it pending).
  const [self, absent, alsoAbsent] = [await freePort(), await freePort(), await freePort()].map((port) => `127.0.0.1:${port}`);
  // Its peers never come up: it forms the cluster alone, and no majority ever elects a leader.
  const c = new Cluster([self!, absent!, alsoAbsent!], { storage: 'memory', listen: self, joinTimeoutMs: 100 });
  started.push(c);
  await c.start();
  const waiting = c.waitForLeader({ timeoutMs: 60_000 });
  const stopping = c.stop();
  await expect(waiting).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
  await stopping;
});
