import { mkdtemp, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, expect, it } from 'vitest';
import { Cluster, NotRunningError } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';

/** Tries, each stopping later in the start (by turns of the event loop), until the start is done first. */
const MAX_TRIES = 60;

/** Turns of the event loop the try waits after start() before it stops: one by one, then a quarter more each time. */
const turnsOf = (attempt: number): number => (attempt < 8 ? attempt : Math.round(8 * 1.25 ** (attempt - 8)));

const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

it('a stop() at any step of the start ends it: start() rejects, and the port and data directory are let go', async () => {
  // Before, a stop() early in the start resolved, and so did the start, which went on past the
  // stop: the member ran on, status 'running', holding its port and its data directory's lock.
  let stoppedDuringStart = 0;
  for (let attempt = 0; attempt < MAX_TRIES; attempt++) {
    const port = await freePort();
    const dir = await mkdtemp(join(tmpdir(), 'cronraft-stop-while-starting-'));
    dirs.push(dir);
    const address = `127.0.0.1:${port}`;
    const c = new Cluster([address], { listen: address, dataDir: dir });
    let started: 'pending' | 'resolved' | unknown = 'pending';
    const starting = c.start().then(
      () => (started = 'resolved'),
      (error: unknown) => (started = error),
    );
    for (let i = 0; i < turnsOf(attempt) && started === 'pending'; i++) await turn();
    const before = started;
    await c.stop();
    await starting;
    expect(c.state().status).toBe('stopped');
    if (before === 'pending') {
      stoppedDuringStart++;
      expect(started).toBeInstanceOf(NotRunningError);
      expect(started).toMatchObject({ code: 'CRONRAFT_NOT_RUNNING', state: 'stopping' });
    } else {
      expect(before).toBe('resolved');
    }
    expect(await portFree(port)).toBe(true);
    // The data directory opens again (its LevelDB lock was let go), for the same member.
    const again = new Cluster([address], { listen: address, dataDir: dir });
    await again.start();
    if (before !== 'pending') {
      // A member stopped leads nothing and knows no leader: before, state() showed its last role.
      await again.waitForLeader({ timeoutMs: 5_000 });
      expect(again.state()).toMatchObject({ role: 'leader', leader: again.id });
      await again.stop();
      expect(again.state()).toMatchObject({ status: 'stopped', role: 'follower', leader: null });
      break;
    }
    await again.stop();
  }
  // The stop came during the start at every step it has, and the last start was done before its stop.
  expect(stoppedDuringStart).toBeGreaterThan(5);
  expect(stoppedDuringStart).toBeLessThan(MAX_TRIES);
});

it('a stop() while the member waits to join a cluster it cannot reach ends the wait', async () => {
  const self = `127.0.0.1:${await freePort()}`;
  // Nothing listens there: an empty member asks it whether a cluster runs before it forms one.
  const absent = `127.0.0.1:${await freePort()}`;
  // It would form the cluster alone after joinTimeoutMs (its own address is among the seeds).
  const c = new Cluster([self, absent], { listen: self, storage: 'memory', joinTimeoutMs: 60_000 });
  let started: 'pending' | unknown = 'pending';
  const starting = c.start().then(
    () => (started = 'resolved'),
    (error: unknown) => (started = error),
  );
  // Into its rounds of questions (each asks the absent peer, and waits JOIN_RETRY_MS).
  await new Promise((resolve) => setTimeout(resolve, 300));
  expect(started).toBe('pending');
  expect(c.state().status).toBe('starting');
  await c.stop();
  await starting;
  expect(started).toMatchObject({ code: 'CRONRAFT_NOT_RUNNING', state: 'stopping' });
  expect(c.state().status).toBe('stopped');
});
