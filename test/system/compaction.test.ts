import { copyFile, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, type ClusterOptions } from '../../src/index.js';
import { PEER_KEY_FILE } from '../../src/transport/constants.js';
import { freePort } from '../fixtures/process-cluster.js';

const started: Cluster[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

/** Snapshots every 100 entries, keeping 10: a short run compacts many times. */
const COMPACT: ClusterOptions = { snapshotEveryEntries: 100, snapshotRetainEntries: 10 };

interface Slot {
  readonly addrs: readonly string[];
  readonly listen: string;
  readonly dataDir: string;
}

async function slots(size: number): Promise<Slot[]> {
  const addrs: string[] = [];
  for (let i = 0; i < size; i++) addrs.push(`127.0.0.1:${await freePort()}`);
  return Promise.all(
    addrs.map(async (listen) => {
      const dataDir = await mkdtemp(join(tmpdir(), 'cronraft-compaction-'));
      dirs.push(dataDir);
      return { addrs, listen, dataDir };
    }),
  );
}

function member(slot: Slot): Cluster {
  const c = new Cluster([...slot.addrs], { ...COMPACT, listen: slot.listen, dataDir: slot.dataDir, sync: false });
  started.push(c);
  c.schedule('tick', { every: 200 }, () => undefined);
  return c;
}

describe('log compaction on a real cluster (level, loopback)', () => {
  it('a member that was down while the others compacted catches up from the leader’s snapshot', async () => {
    const all = await slots(3);
    const members = all.map(member);
    await Promise.all(members.map((m) => m.start()));
    const { leader } = await members[0]!.waitForLeader();
    await Promise.all(members.map((m) => m.waitForLeader()));
    // Registered (once members have learned the cluster's time) and claiming slots.
    await expect.poll(() => members[0]!.history({ limit: 1 }).length, { timeout: 20_000, interval: 50 }).toBe(1);
    const downIndex = members.findIndex((m) => m.id !== leader);
    const down = members[downIndex]!;
    await down.stop();
    const lead = members.find((m) => m.id === leader)!;
    // Enough entries to compact several times past where the stopped member's log ends.
    for (let i = 0; i < 400; i++) await lead.propose(`v${i}`);
    expect(lead.state().log.snapshotsTaken).toBeGreaterThan(1);
    expect(lead.state().log.firstIndex).toBeGreaterThan(down.state().lastIndex + 1);

    const back = member(all[downIndex]!);
    await back.start();
    const target = lead.state().commitIndex;
    await expect.poll(() => back.state().appliedIndex, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(target);
    expect(back.state().log.snapshotsInstalled).toBeGreaterThanOrEqual(1);
    // The scheduler's state came with it: the same job, its claims and their tokens.
    await back.barrier();
    await lead.barrier();
    expect(back.state().jobs.map((j) => j.name)).toEqual(['tick']);
    const leaderClaims = new Map(lead.history({ limit: 20 }).map((c) => [c.slot.getTime(), c.fencingToken]));
    const claimsThere = back.history({ limit: 20 }).filter((c) => leaderClaims.has(c.slot.getTime()));
    expect(claimsThere.length).toBeGreaterThan(0);
    for (const c of claimsThere) expect(c.fencingToken).toBe(leaderClaims.get(c.slot.getTime()));
  });

  it('a member whose data directory was moved aside rejoins empty, keeping its peer key, and catches up from a snapshot (the README’s way back)', async () => {
    const all = await slots(3);
    const members = all.map(member);
    await Promise.all(members.map((m) => m.start()));
    const { leader } = await members[0]!.waitForLeader();
    const lead = members.find((m) => m.id === leader)!;
    const downIndex = members.findIndex((m) => m.id !== leader);
    const down = members[downIndex]!;
    await down.waitForLeader();
    for (let i = 0; i < 200; i++) await lead.propose(`v${i}`);
    const peerId = down.state().peerId;
    await down.stop();
    const { dataDir } = all[downIndex]!;
    const aside = `${dataDir}.aside`;
    dirs.push(aside);
    await rename(dataDir, aside);
    await mkdir(dataDir);
    await copyFile(join(aside, PEER_KEY_FILE), join(dataDir, PEER_KEY_FILE));

    const back = member(all[downIndex]!);
    await back.start();
    expect(back.state().peerId).toBe(peerId);
    const target = lead.state().commitIndex;
    await expect.poll(() => back.state().appliedIndex, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(target);
    expect(back.state().log.snapshotsInstalled).toBeGreaterThanOrEqual(1);
  });

  it('restarts from its stored snapshot: the scheduler state is back before any leader is heard', async () => {
    const [slot] = await slots(1);
    const first = new Cluster([], { ...COMPACT, listen: slot!.listen, dataDir: slot!.dataDir, sync: false });
    started.push(first);
    first.schedule('tick', { every: 200 }, () => undefined);
    await first.start();
    await first.waitForLeader();
    await expect.poll(() => first.state().jobs.length, { timeout: 20_000, interval: 50 }).toBe(1);
    for (let i = 0; i < 250; i++) await first.propose(`v${i}`);
    const before = first.state();
    expect(before.log.snapshotIndex).toBeGreaterThan(0);
    await first.stop();

    const second = new Cluster([], { ...COMPACT, listen: slot!.listen, dataDir: slot!.dataDir, sync: false });
    started.push(second);
    await second.start();
    const after = second.state();
    expect(after.log.snapshotIndex).toBe(before.log.snapshotIndex);
    expect(after.log.firstIndex).toBe(before.log.snapshotIndex + 1);
    expect(after.jobs.map((j) => j.name)).toEqual(['tick']);
    await second.waitForLeader();
    await second.barrier();
    expect(second.state().appliedIndex).toBeGreaterThanOrEqual(before.commitIndex);
  });
});
