/**
 * Disk full (ENOSPC): a member's data directory on a small tmpfs, filled until its writes fail.
 * The README's yardstick: a disk failure stops the member with CRONRAFT_FATAL (its cause a
 * StorageError naming the path), the others go on, and once space is back the member restarts
 * with everything it acknowledged (never less), rejoins and catches up.
 */
import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';
import { cleanupDisks, disksUnavailable, fillLeaving, mountTmpfs, readStore, remount, sleep, storeHolds } from '../fixtures/disks.js';

const started: Cluster[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop().catch(() => undefined)));
  cleanupDisks();
});

const PAYLOAD = 'z'.repeat(2_000);

function marker(n: number): string {
  return `ack-${String(n).padStart(6, '0')}:`;
}

function newMember(peers: string[], listen: string, dataDir: string): Cluster {
  const c = new Cluster(peers, { listen, dataDir });
  started.push(c);
  return c;
}

const UNAVAILABLE = disksUnavailable();
if (UNAVAILABLE !== null) console.log(`skipped: ${UNAVAILABLE}`);

describe.skipIf(UNAVAILABLE !== null)('disk full (ENOSPC)', () => {
  it('a single member: fails with a typed error naming its store, and comes back with every acknowledged entry once space is freed', async () => {
    const mnt = mountTmpfs('2m');
    const dataDir = join(mnt, 'm0');
    const listen = `127.0.0.1:${await freePort()}`;
    const c = newMember([], listen, dataDir);
    const errors: Array<{ code?: string; message: string }> = [];
    c.on('error', (e) => errors.push(e as { code?: string; message: string }));
    await c.start();
    const acked: number[] = [];
    let failure: { code?: string; message: string } | null = null;
    for (let n = 0; n < 5_000; n++) {
      try {
        await c.propose(marker(n) + PAYLOAD);
        acked.push(n);
      } catch (error) {
        failure = error as { code?: string; message: string };
        break;
      }
    }
    expect(failure?.code).toBe('CRONRAFT_FATAL');
    expect(failure?.message).toContain('No space left on device');
    expect(errors[0]).toMatchObject({ code: 'CRONRAFT_STORAGE_UNREADABLE', path: join(dataDir, 'raft') });
    expect(c.state().status).toBe('failed');
    await c.stop().catch(() => undefined);

    remount(mnt, 'size=64m');
    const back = newMember([], listen, dataDir);
    const applied = new Set<string>();
    back.on('applied', (e) => applied.add(Buffer.from(e.data).subarray(0, 11).toString()));
    await back.start();
    await back.barrier();
    const missing = acked.filter((n) => !applied.has(marker(n)));
    expect(acked.length).toBeGreaterThan(100);
    expect(missing).toEqual([]);
  });

  it('a single member compacting often: whatever write meets the full disk (log, snapshot, durable mark, removal), it fails typed and restarts with all it acknowledged', async () => {
    for (const size of ['1m', '1200k', '1500k', '1700k', '2m', '2300k']) {
      const mnt = mountTmpfs(size);
      const dataDir = join(mnt, 'm0');
      const listen = `127.0.0.1:${await freePort()}`;
      const options = { listen, dataDir, snapshotEveryEntries: 40, snapshotRetainEntries: 5 };
      const c = new Cluster([], options);
      started.push(c);
      const errors: Array<{ code?: string; path?: string; message: string }> = [];
      c.on('error', (e) => errors.push(e as { code?: string; path?: string; message: string }));
      await c.start();
      const acked: Array<{ n: number; index: number }> = [];
      let failure: { code?: string; message: string } | null = null;
      for (let n = 0; n < 5_000; n++) {
        try {
          const { index } = await c.propose(marker(n) + PAYLOAD);
          acked.push({ n, index });
        } catch (error) {
          failure = error as { code?: string; message: string };
          break;
        }
      }
      expect({ size, code: failure?.code }).toEqual({ size, code: 'CRONRAFT_FATAL' });
      expect(errors[0]?.code).toMatch(/^CRONRAFT_STORAGE_(UNREADABLE|CORRUPT)$/);
      expect(typeof errors[0]?.path).toBe('string');
      await c.stop().catch(() => undefined);
      remount(mnt, 'size=64m');
      const stored = await readStore(dataDir);
      const lastAcked = acked.at(-1)!.index;
      expect({ size, last: stored.snapshot.index + stored.entries.length >= lastAcked }).toEqual({ size, last: true });
      const missing = acked.filter((a) => a.index > stored.snapshot.index && !storeHolds(stored, marker(a.n)));
      expect({ size, missing }).toEqual({ size, missing: [] });
      const back = new Cluster([], options);
      started.push(back);
      await back.start();
      await back.barrier();
      expect(back.state().commitIndex).toBeGreaterThanOrEqual(lastAcked);
    }
  });

  it('a full disk at start, with a store or empty: refused with a typed error naming a path; once space is freed it starts with all it had', async () => {
    const mnt = mountTmpfs('4m');
    const dataDir = join(mnt, 'm0');
    const options = { listen: `127.0.0.1:${await freePort()}`, dataDir };
    const c = new Cluster([], options);
    await c.start();
    for (let n = 0; n < 50; n++) await c.propose(marker(n));
    await c.stop();
    const filler = join(mnt, 'filler');
    fillLeaving(filler, 0);
    for (let attempt = 0; attempt < 3; attempt++) {
      const full = new Cluster([], options);
      const error = await full.start().then(() => null, (e: { code?: string; path?: string; message: string }) => e);
      expect({ attempt, code: error?.code, hasPath: typeof error?.path === 'string' }).toEqual({ attempt, code: 'CRONRAFT_STORAGE_UNREADABLE', hasPath: true });
    }
    rmSync(filler);
    const back = newMember([], options.listen, dataDir);
    const applied = new Set<string>();
    back.on('applied', (e) => applied.add(Buffer.from(e.data).toString()));
    await back.start();
    await back.barrier();
    expect(Array.from({ length: 50 }, (_, n) => marker(n)).filter((m) => !applied.has(m))).toEqual([]);

    // A new member on a full disk: its key cannot be written.
    const mnt2 = mountTmpfs('1m');
    const filler2 = join(mnt2, 'filler');
    fillLeaving(filler2, 0);
    const freshDir = join(mnt2, 'fresh');
    const fresh = new Cluster([], { listen: `127.0.0.1:${await freePort()}`, dataDir: freshDir });
    const error = await fresh.start().then(() => null, (e: { code?: string; path?: string }) => e);
    expect(error?.code).toBe('CRONRAFT_STORAGE_UNREADABLE');
    expect(typeof error?.path).toBe('string');
    rmSync(filler2);
    const fresh2 = newMember([], `127.0.0.1:${await freePort()}`, freshDir);
    await fresh2.start();
    await fresh2.propose('ok');
  });

  for (const victimRole of ['follower', 'leader'] as const) {
    it(`three members, the ${victimRole}'s disk fills: it stops with a typed error, the others go on, and it comes back with all it acknowledged`, async () => {
      const mnts = [mountTmpfs('16m'), mountTmpfs('16m'), mountTmpfs('16m')];
      const addrs: string[] = [];
      for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
      const dirs = mnts.map((m) => join(m, 'data'));
      const members = addrs.map((a, i) => newMember(addrs, a, dirs[i] as string));
      await Promise.all(members.map((m) => m.start()));
      const { leader } = await members[0]!.waitForLeader();
      await Promise.all(members.map((m) => m.waitForLeader()));
      const victimIndex = victimRole === 'leader' ? addrs.indexOf(leader) : addrs.findIndex((a) => a !== leader);
      const victim = members[victimIndex]!;
      const others = members.filter((m) => m !== victim);
      const victimErrors: Array<{ code?: string; path?: string; message: string }> = [];
      victim.on('error', (e) => victimErrors.push(e as { code?: string; path?: string; message: string }));
      // Warm up, then leave ~200 KB free on the victim's disk.
      for (let n = 0; n < 10; n++) await others[0]!.propose(`warm-${n}`);
      const filler = join(mnts[victimIndex]!, 'filler');
      fillLeaving(filler, 200_000);

      // A client that proposes through the two healthy members, counting what was acknowledged.
      const acked: number[] = [];
      let highestMatch = 0;
      let failedAt = -1;
      let n = 0;
      const deadline = Date.now() + 45_000;
      while (Date.now() < deadline && (failedAt < 0 || acked.length < failedAt + 100)) {
        const via = others[n % 2]!;
        try {
          await via.propose(marker(n) + PAYLOAD);
          acked.push(n);
        } catch (error) {
          const code = (error as { code?: string }).code;
          if (!['CRONRAFT_NOT_LEADER', 'CRONRAFT_TIMEOUT', 'CRONRAFT_OUTCOME_UNKNOWN', 'CRONRAFT_PROPOSAL_DROPPED'].includes(code ?? '')) throw error;
          await sleep(20);
        }
        n++;
        if (victimRole === 'follower') {
          const lead = others.find((m) => m.state().role === 'leader');
          const match = lead?.state().members.find((m) => m.id === victim.id)?.matchIndex ?? 0;
          highestMatch = Math.max(highestMatch, match);
        }
        if (failedAt < 0 && victim.state().status === 'failed') failedAt = acked.length;
      }
      // The victim failed with a typed error naming its store, and the others went on.
      expect(failedAt).toBeGreaterThanOrEqual(0);
      expect(victimErrors[0]).toMatchObject({ code: 'CRONRAFT_STORAGE_UNREADABLE', path: join(dirs[victimIndex]!, 'raft') });
      expect(victimErrors[0]!.message).toContain('No space left on device');
      expect(acked.length).toBeGreaterThanOrEqual(failedAt + 100);
      const newLeader = others.find((m) => m.state().role === 'leader');
      expect(newLeader).toBeDefined();

      // Its store, read as it was left (space freed first: LevelDB writes as it opens).
      await victim.stop().catch(() => undefined);
      rmSync(filler);
      const left = await readStore(dirs[victimIndex]!);
      const lastIndex = left.snapshot.index + left.entries.length;
      if (victimRole === 'follower') expect(lastIndex).toBeGreaterThanOrEqual(highestMatch);

      // Restarted with space, it rejoins and catches up.
      const back = newMember(addrs, addrs[victimIndex]!, dirs[victimIndex]!);
      await back.start();
      const target = newLeader!.state().commitIndex;
      await expect.poll(() => back.state().appliedIndex, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(target);

      // Every acknowledged entry is in every member's store.
      await Promise.all([back, ...others].map((m) => m.stop()));
      for (const dir of dirs) {
        const stored = await readStore(dir);
        const missing = acked.filter((k) => !storeHolds(stored, marker(k)));
        expect({ dir, missing }).toEqual({ dir, missing: [] });
      }
    });
  }
});
