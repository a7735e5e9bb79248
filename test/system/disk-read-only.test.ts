/**
 * A data directory that refuses writes: made immutable (chattr +i) while the member runs (on
 * ext4 that fails writes to files already open too, as a file system gone read-only would), and
 * a read-only mount at start; and one removed while the member runs.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { STORE_DIRECTORY_CHECK_MS, STORE_DIRECTORY_LOOK_FRESH_MS } from '../../src/storage/store-directory-watch.js';
import { freePort } from '../fixtures/process-cluster.js';
import { cleanupDisks, disksUnavailable, mountTmpfs, remount, tempDir } from '../fixtures/disks.js';

const started: Cluster[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop().catch(() => undefined)));
  cleanupDisks();
});

const UNAVAILABLE = disksUnavailable();
if (UNAVAILABLE !== null) console.log(`skipped: ${UNAVAILABLE}`);

describe.skipIf(UNAVAILABLE !== null)('a data directory that refuses writes', () => {
  it('made immutable while the member runs: the next write fails it with a typed error naming its store; writable again, it restarts with all it acknowledged', async () => {
    const dataDir = tempDir('cronraft-disk-ro-');
    const options = { listen: `127.0.0.1:${await freePort()}`, dataDir };
    const c = new Cluster([], options);
    started.push(c);
    const errors: Array<{ code?: string; path?: string }> = [];
    c.on('error', (e) => errors.push(e as { code?: string; path?: string }));
    await c.start();
    const acked: string[] = [];
    for (let i = 0; i < 20; i++) {
      await c.propose(`before-${i}`);
      acked.push(`before-${i}`);
    }
    execFileSync('chattr', ['-R', '+i', dataDir]);
    let failure: { code?: string } | null = null;
    for (let i = 0; i < 50 && failure === null; i++) {
      await c.propose(`after-${i}`).then(
        () => acked.push(`after-${i}`),
        (e: { code?: string }) => (failure = e),
      );
    }
    expect(failure).toMatchObject({ code: 'CRONRAFT_FATAL' });
    expect(errors[0]).toMatchObject({ code: 'CRONRAFT_STORAGE_UNREADABLE', path: join(dataDir, 'raft') });
    await c.stop().catch(() => undefined);
    execFileSync('chattr', ['-R', '-i', dataDir]);

    const back = new Cluster([], options);
    started.push(back);
    const applied: string[] = [];
    back.on('applied', (e) => applied.push(Buffer.from(e.data).toString()));
    await back.start();
    await back.barrier();
    expect(acked.filter((a) => !applied.includes(a))).toEqual([]);
  });

  it('started on a read-only mount, with its store or empty: refused at start with CRONRAFT_STORAGE_UNREADABLE naming the path', async () => {
    const mnt = mountTmpfs('16m');
    const dataDir = join(mnt, 'm0');
    const options = { listen: `127.0.0.1:${await freePort()}`, dataDir };
    const first = new Cluster([], options);
    await first.start();
    await first.propose('x');
    await first.stop();
    mkdirSync(join(mnt, 'empty-parent'));
    remount(mnt, 'ro');
    const again = new Cluster([], options);
    const error = await again.start().then(() => null, (e: { code?: string; path?: string }) => e);
    expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_UNREADABLE', path: join(dataDir, 'raft') });
    expect(again.state().status).toBe('failed');
    const fresh = new Cluster([], { listen: `127.0.0.1:${await freePort()}`, dataDir: join(mnt, 'empty-parent', 'new') });
    const error2 = await fresh.start().then(() => null, (e: { code?: string; path?: string }) => e);
    expect(error2).toMatchObject({ code: 'CRONRAFT_STORAGE_UNREADABLE', path: join(mnt, 'empty-parent', 'new') });
    remount(mnt, 'rw');
  });

  it('after its disk failed: stop() closes what is left and resolves, and the member stays "failed" (it rejected, and said "stopping" for good)', async () => {
    const dataDir = tempDir('cronraft-disk-ro-stop-');
    const c = new Cluster([], { listen: `127.0.0.1:${await freePort()}`, dataDir });
    started.push(c);
    c.on('error', () => undefined);
    await c.start();
    await c.propose('x');
    execFileSync('chattr', ['-R', '+i', dataDir]);
    await expect(c.propose('y')).rejects.toMatchObject({ code: 'CRONRAFT_FATAL' });
    expect(c.state().status).toBe('failed');
    const stopped = await c.stop().then(() => 'resolved', (e: { code?: string; message?: string }) => `${e.code}: ${e.message}`);
    const after = c.state().status;
    execFileSync('chattr', ['-R', '-i', dataDir]);
    expect({ stopped, after }).toEqual({ stopped: 'resolved', after: 'failed' });
  });
});

describe('a data directory removed while its member runs', () => {
  it('fails the member with a typed error naming its store within STORE_DIRECTORY_CHECK_MS or so, rather than acknowledging writes on no disk', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'cronraft-removed-'));
    const c = new Cluster([], { listen: `127.0.0.1:${await freePort()}`, dataDir });
    started.push(c);
    const errors: Array<{ code?: string; path?: string; message?: string }> = [];
    c.on('error', (e) => errors.push(e as { code?: string; path?: string; message?: string }));
    await c.start();
    await c.propose('before');
    rmSync(dataDir, { recursive: true, force: true });
    const removedAt = Date.now();
    let failure: { code?: string } | null = null;
    // Proposals go on until one fails: before, thousands were acknowledged (LevelDB writes on
    // through the files it holds open).
    while (failure === null && Date.now() - removedAt < 10 * STORE_DIRECTORY_CHECK_MS) {
      await c.propose('after').catch((e: { code?: string }) => (failure = e));
    }
    expect(failure).toMatchObject({ code: 'CRONRAFT_FATAL' });
    expect(Date.now() - removedAt).toBeLessThan(5 * STORE_DIRECTORY_CHECK_MS);
    expect(errors[0]).toMatchObject({ code: 'CRONRAFT_STORAGE_UNREADABLE', path: join(dataDir, 'raft') });
    expect(errors[0]?.message).toMatch(/removed while the member ran/);
    expect(c.state().status).toBe('failed');
  });
});

describe('a follower whose data directory is removed while it runs', () => {
  it('counts toward no commit: with the third member stopped, the leader commits nothing more (before, 300 entries committed on the leader’s disk alone)', async () => {
    const addrs: string[] = [];
    for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
    const dirs = addrs.map(() => mkdtempSync(join(tmpdir(), 'cronraft-removed-')));
    const ms = addrs.map((listen, i) => {
      const m = new Cluster(addrs, { listen, dataDir: dirs[i], requestTimeoutMs: 1000 });
      started.push(m);
      m.on('error', () => undefined);
      return m;
    });
    await Promise.all(ms.map((m) => m.start()));
    const { leader } = await ms[0]!.waitForLeader();
    await Promise.all(ms.map((m) => m.waitForLeader()));
    const lead = ms.find((m) => m.id === leader)!;
    const [victim, third] = ms.filter((m) => m !== lead) as [Cluster, Cluster];
    for (let i = 0; i < 10; i++) await lead.propose(`warm-${i}`);
    rmSync(dirs[ms.indexOf(victim)]!, { recursive: true, force: true });
    // A synced write stands on a look at the directory begun at most STORE_DIRECTORY_LOOK_FRESH_MS
    // before it: past that bound, none may count.
    await sleep(STORE_DIRECTORY_LOOK_FRESH_MS + 1);
    // The third member goes: every commit from here on would count the victim's acknowledgement.
    await third.stop();
    const committed = await lead.propose('after').then(() => true, () => false);
    expect(committed).toBe(false);
    expect(victim.state().status).toBe('failed');
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
});
