import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';
import { stoppedAfterEach, threeMembers } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

/** runExclusive('reindex') on `member`, and its stop() in the same turn: how the call ended, and whether its task ran. */
async function lockThenStop(member: Cluster): Promise<{ outcome: string; taskRan: boolean }> {
  let taskRan = false;
  const call = member
    .runExclusive('reindex', { atMostFor: 600_000 }, () => {
      taskRan = true;
    })
    .then((ran) => `resolved ${ran}`, (e: unknown) => `rejected ${(e as { code?: string }).code}`);
  await member.stop();
  return { outcome: await call, taskRan };
}

describe('stop() racing a runExclusive whose lock is still being proposed (the call is waited for from its lock\'s proposal on)', () => {
  it('single member: the call is refused CRONRAFT_NOT_RUNNING, runs nothing, and the lock is let go (before, it stayed held for atMostFor across a restart)', async () => {
    const root = await mkdtemp(join(tmpdir(), 'cronraft-attack-lock-stop-'));
    try {
      const listen = `127.0.0.1:${await freePort()}`;
      const dataDir = join(root, 'member');
      const first = new Cluster([listen], { listen, dataDir, sync: false, stopTimeoutMs: 300 });
      started.push(first);
      await first.start();
      await first.waitForLeader();
      // The app starts a task under a lock and is asked to shut down in the same turn.
      const { outcome, taskRan } = await lockThenStop(first);
      const second = new Cluster([listen], { listen, dataDir, sync: false });
      started.push(second);
      await second.start();
      await second.waitForLeader();
      // The caller was told the member is not running; nothing ran. README ("Stopping for an
      // upgrade"): a stop lets runExclusive tasks end and release their locks, so the cluster is
      // not locked out of them until atMostFor (here ten minutes).
      expect(outcome).toBe('rejected CRONRAFT_NOT_RUNNING');
      expect(taskRan).toBe(false);
      expect(await second.runExclusive('reindex', { atMostFor: 1000 }, () => undefined)).toBe(true);
    } finally {
      await Promise.all(started.splice(0).map((c) => c.stop()));
      await rm(root, { recursive: true, force: true });
    }
  });

  for (const role of ['follower', 'leader'] as const) {
    it(`three members: the ${role} stopped right after runExclusive() leaves the others free to take the lock a second after`, async () => {
      const members = await threeMembers(started, { stopTimeoutMs: 300 });
      await Promise.all(members.map((m) => m.start()));
      await Promise.all(members.map((m) => m.waitForLeader()));
      // Every member has learned the cluster's time (a lock taken and let go on each).
      for (const m of members) expect(await m.runExclusive(`warm-${m.id}`, { atMostFor: 5000 }, () => undefined)).toBe(true);
      const leaderId = members[0]!.state().leader;
      const stopping = members.find((m) => (role === 'leader') === (m.id === leaderId))!;
      const other = members.find((m) => m !== stopping)!;
      const { outcome, taskRan } = await lockThenStop(stopping);
      // The lock was granted while the member stopped: no task started under it, and it was let
      // go (README, "Stopping for an upgrade"); before, the stop did not wait for the call.
      expect(outcome).toBe('rejected CRONRAFT_NOT_RUNNING');
      expect(taskRan).toBe(false);
      await new Promise((r) => setTimeout(r, 1000));
      const after1s = await other.runExclusive('reindex', { atMostFor: 1000 }, () => undefined);
      expect(after1s).toBe(true);
    });
  }
});
