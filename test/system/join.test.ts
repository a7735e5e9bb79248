import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encode } from 'cborg';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, type ClusterOptions, type RunRecord } from '../../src/index.js';
import { parsePeerAddress } from '../../src/transport/address.js';
import { withPrefix } from '../../src/transport/framing.js';
import { JOIN_PROTOCOL_ID, requestJoin, type JoinAnswer, type JoinRequest } from '../../src/transport/join-protocol.js';
import { Libp2pTransport } from '../../src/transport/libp2p-transport.js';
import { DIAL_BACK_TIMEOUT_MS, MAX_SILENT_LEARNERS } from '../../src/runtime/join-server.js';
import { useTestTiming } from '../../src/runtime/test-timing.js';
import { SUPPORTED } from '../../src/version/versions.js';
import { freePort } from '../fixtures/process-cluster.js';

const cleanups: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Snapshots every 50 entries, keeping 5: the leader has compacted past index 1 before the joiner comes. */
const OPTIONS: ClusterOptions = { snapshotEveryEntries: 50, snapshotRetainEntries: 5, sync: false, electionTimeoutMs: 500, heartbeatMs: 50 };

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cronraft-join-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

function member(seeds: readonly string[], listen: string, options: ClusterOptions): Cluster {
  const c = new Cluster(seeds, { ...OPTIONS, listen, ...options });
  cleanups.push(() => c.stop());
  return c;
}

/** Three founding members on memory storage, at cluster version 2, whose leader has compacted its log. */
async function founders(): Promise<{ readonly seeds: string[]; readonly members: Cluster[]; readonly leader: Cluster }> {
  const seeds: string[] = [];
  for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
  const members = seeds.map((listen) => member(seeds, listen, { storage: 'memory' }));
  await Promise.all(members.map((m) => m.start()));
  const { leader: leaderId } = await members[0]!.waitForLeader({ timeoutMs: 10_000 });
  const leader = members.find((m) => m.id === leaderId)!;
  await expect.poll(() => members.every((m) => m.state().version.active >= 2), { timeout: 10_000, interval: 50 }).toBe(true);
  await Promise.all(Array.from({ length: 120 }, (_, i) => leader.propose(`v${i}`)));
  expect(leader.state().log.firstIndex).toBeGreaterThan(1);
  return { seeds, members, leader };
}

/** Three founding members with `options`, at cluster version 2, each bound to its key in the configuration. */
async function boundFounders(options: ClusterOptions): Promise<{ readonly seeds: string[]; readonly members: Cluster[]; readonly leader: Cluster }> {
  const seeds: string[] = [];
  for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
  const members = seeds.map((listen) => member(seeds, listen, options));
  await Promise.all(members.map((m) => m.start()));
  await members[0]!.waitForLeader({ timeoutMs: 10_000 });
  await expect.poll(() => members.every((m) => m.state().version.active >= 2 && m.state().members.every((x) => x.peerId !== null)), { timeout: 10_000, interval: 50 }).toBe(true);
  return { seeds, members, leader: members.find((m) => m.state().role === 'leader') as Cluster };
}

/** A client on the cluster's network that speaks the join protocol as a stranger would. */
async function stranger(): Promise<Libp2pTransport> {
  const t = new Libp2pTransport({ self: '127.0.0.1:1', clusterId: 'x', listen: '/ip4/127.0.0.1/tcp/0', peers: new Map() });
  await t.start();
  cleanups.push(() => t.stop());
  return t;
}

describe('joining a running cluster (real network, loopback)', () => {
  it('refuses hostile join requests, counted; an empty member given the seeds joins as a learner, installs the snapshot, runs a mode all slot, and restarts from its data without asking', async () => {
    const { seeds, members, leader } = await founders();

    // Hostile or impossible requests first: refused and counted, the configuration unchanged.
    const t = await stranger();
    const target = parsePeerAddress(leader.id, 'leader');
    const before = leader.state().joins;
    /** Asks `at` to add `id`, reading versions up to `reads`. */
    const ask = (at: string, id: string, reads = SUPPORTED.stateMachine.max): Promise<JoinAnswer> =>
      requestJoin((signal) => t.openStream(parsePeerAddress(at, 'member'), JOIN_PROTOCOL_ID, signal), { id, protocol: { min: 1, max: Math.min(reads, SUPPORTED.protocol.max) }, stateMachine: { min: 1, max: reads } }, 5000);
    expect(await ask(leader.id, 'not an address')).toMatchObject({ type: 'refused', reason: 'bad-id' });
    expect(await ask(leader.id, leader.id)).toMatchObject({ type: 'refused', reason: 'self' });
    expect(await ask(leader.id, '/ip4/127.0.0.1/tcp/9/p2p/12D3KooWNpEjHiwXBKhVJvQy5aGA5n6TgqSEAHMAbkjYZj9nVKPL')).toMatchObject({ type: 'refused', reason: 'bad-id' });
    expect(await ask(leader.id, '127.0.0.1:9', 1)).toMatchObject({ type: 'refused', reason: 'version-too-old', needs: 2 });
    // A follower sends a stranger's well-formed request to the leader and changes nothing.
    const follower = members.find((m) => m !== leader)!;
    expect(await ask(follower.id, '127.0.0.1:9')).toEqual({ type: 'redirect', leader: leader.id });
    expect(leader.state().joins).toMatchObject({ requests: before.requests + 4, refused: before.refused + 4, accepted: before.accepted });

    // Garbage and an oversized length prefix: each stream reset, counted.
    for (const bytes of [withPrefix(encode(['nonsense'])), Uint8Array.of(0xff, 0xff, 0xff, 0xff, 0x0f)]) {
      const { stream } = await t.openStream(target, JOIN_PROTOCOL_ID, AbortSignal.timeout(5000));
      stream.send(bytes);
      await new Promise<void>((resolve) => stream.addEventListener('close', () => resolve(), { once: true }));
    }
    expect(leader.state().joins.unreadable).toBe(before.unreadable + 2);
    expect(leader.state().configuration).toMatchObject({ voters: [...seeds].sort(), learners: [] });

    const port = await freePort();
    const dataDir = await tempDir();
    const joiner = member(seeds, `127.0.0.1:${port}`, { dataDir });
    const runs: RunRecord[] = [];
    joiner.on('run', (r) => runs.push(r));
    joiner.schedule('everywhere', { every: 200 }, () => undefined, { mode: 'all' });
    for (const m of members) m.schedule('everywhere', { every: 200 }, () => undefined, { mode: 'all' });
    // Founding members on memory storage asked one another as they started: count from here.
    const acceptedBefore = leader.state().joins.accepted;
    await joiner.start();
    expect(leader.state().configuration.learners).toEqual([joiner.id]);
    expect(leader.state().joins.accepted).toBe(acceptedBefore + 1);
    await expect.poll(() => joiner.state().configuration.learners, { timeout: 10_000, interval: 50 }).toEqual([joiner.id]);
    expect(joiner.state().configuration.voters).toEqual([...seeds].sort());
    expect(joiner.state().log.snapshotsInstalled).toBeGreaterThanOrEqual(1);
    expect(joiner.state().role).toBe('follower');
    // The joiner is bound to the peer id it asked with: another key asking under its id is refused.
    expect(await ask(leader.id, joiner.id)).toMatchObject({ type: 'refused', reason: 'peer-id-mismatch' });
    await expect.poll(() => runs.some((r) => r.job === 'everywhere' && r.outcome === 'succeeded'), { timeout: 15_000, interval: 50 }).toBe(true);

    await joiner.stop();
    const requests = members.map((m) => m.state().joins.requests);
    const again = member(seeds, `127.0.0.1:${port}`, { dataDir });
    await again.start();
    // Its storage kept the cluster it joined: it asked no seed, and catches up as a learner.
    expect(members.map((m) => m.state().joins.requests)).toEqual(requests);
    await again.waitForLeader({ timeoutMs: 10_000 });
    await again.barrier();
    expect(again.state().configuration.learners).toEqual([again.id]);
    expect(again.state().role).toBe('follower');
  });

  it('a joiner removed at once, before it applied its own addition, learns it by asking and stops as removed', async () => {
    const { seeds, leader } = await founders();
    const listen = `127.0.0.1:${await freePort()}`;
    const joiner = member(seeds, listen, { storage: 'memory' });
    useTestTiming(joiner, { leaderlessBeforeProbeMs: 1000 });
    const errors: unknown[] = [];
    joiner.on('error', (e) => errors.push(e));
    await joiner.start();
    // Removed before it applied its addition, nothing reaches it through the log, and as no voter
    // of its own configuration it never campaigns: it kept the last leader's name, never asked,
    // and ran on for good (a stranger's attack found it, 3 times of 3). Silent, that leader is none.
    await leader.removeMember(listen);
    await expect.poll(() => errors.length, { timeout: 15_000, interval: 50 }).toBe(1);
    expect(errors[0]).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    expect(joiner.state().status).toBe('failed');
  });

  it('a member removed while it was down learns it when it comes back with its data: it asks the members it knows, and stops as removed', async () => {
    const seeds: string[] = [];
    for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
    const dirs = await Promise.all(seeds.map(() => tempDir()));
    const members = seeds.map((listen, i) => member(seeds, listen, { dataDir: dirs[i] as string }));
    await Promise.all(members.map((m) => m.start()));
    await members[0]!.waitForLeader({ timeoutMs: 10_000 });
    // Version 2, and every member bound to its key: the member to be removed knows whom to believe.
    await expect.poll(() => members.every((m) => m.state().version.active >= 2 && m.state().members.every((x) => x.peerId !== null)), { timeout: 10_000, interval: 50 }).toBe(true);
    const leader = members.find((m) => m.state().role === 'leader') as Cluster;
    const victim = members.find((m) => m !== leader) as Cluster;
    await victim.stop();
    await leader.removeMember(victim.id);
    await leader.propose('after the removal');
    // The leader keeps a removed member among its transport's peers for an election timeout
    // (ConfigurationKeeper's removeAfterMs), so that its last message, which tells it, may still
    // reach it; after that nothing goes to it. Waited out here on real time, as the transport runs.
    await new Promise((resolve) => setTimeout(resolve, 4 * (OPTIONS.electionTimeoutMs as number)));
    // Back with its data, it holds a configuration with itself: the log can no longer tell it.
    const back = member(seeds, victim.id, { dataDir: dirs[members.indexOf(victim)] as string });
    useTestTiming(back, { leaderlessBeforeProbeMs: 1000 });
    const errors: unknown[] = [];
    back.on('error', (e) => errors.push(e));
    await back.start();
    expect(back.state().configuration.voters).toContain(victim.id);
    await expect.poll(() => errors.length, { timeout: 15_000, interval: 50 }).toBe(1);
    expect(errors[0]).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    expect(back.state().status).toBe('failed');
    // It learned it by asking: a member answered it `removed`.
    expect(members.filter((m) => m !== victim).reduce((n, m) => n + m.state().joins.removed, 0)).toBeGreaterThan(0);
    expect(leader.state().configuration.voters).not.toContain(victim.id);
  });

  it('a member removed and started again empty at its address joins again, twice: the removals its log replays are earlier members’, its own stops it', async () => {
    // No compaction: a joiner replays the leader's log, the removals of its address among it. A
    // stranger's attack found such a joiner stopped as removed as it applied the first of them
    // (README, "Replacing a machine": start it again with an empty data directory).
    const options: ClusterOptions = { storage: 'memory', snapshotEveryEntries: 10_000 };
    const { seeds, members, leader } = await boundFounders(options);
    const address = (members.find((m) => m !== leader) as Cluster).id;
    let previous = members.find((m) => m.id === address) as Cluster;
    let previousErrors: unknown[] = [];
    const removals: number[] = [];
    for (let round = 1; round <= 2; round++) {
      if (round === 1) {
        await previous.stop();
        removals.push((await leader.removeMember(address)).index);
      } else {
        // The member that joined, removed while it runs, applies its own removal and stops
        // (sooner than it would ask whether it was removed, after 15 s without a leader).
        removals.push((await leader.removeMember(address)).index);
        await expect.poll(() => previousErrors.length, { timeout: 5_000, interval: 50 }).toBe(1);
        expect(previousErrors[0]).toMatchObject({ code: 'CRONRAFT_REMOVED' });
        // Failed, it still holds its address until the app stops it.
        await previous.stop();
      }
      expect(leader.state().log.firstIndex).toBe(1);
      // The leader drops a removed member's connection an election timeout after the removal
      // (ConfigurationKeeper's removeAfterMs): waited out on real time, as the transport runs.
      await new Promise((resolve) => setTimeout(resolve, 4 * (OPTIONS.electionTimeoutMs as number)));
      const again = member(seeds, address, options);
      const errors: unknown[] = [];
      again.on('error', (e) => errors.push(e));
      // The removals of its address that it replays are told to it too (README, "Events").
      const told: number[] = [];
      again.on('member-removed', ({ id, index }) => id === address && told.push(index));
      await again.start();
      const { index } = await leader.propose(`after round ${round}`);
      await expect.poll(() => again.state().appliedIndex, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(index);
      expect(errors).toEqual([]);
      expect(told).toEqual(removals);
      expect(again.state().status).toBe('running');
      const conf = leader.state().configuration;
      expect([...conf.voters, ...conf.learners]).toContain(address);
      previous = again;
      previousErrors = errors;
    }
  });

  it('a member removed and started again empty at its address joins again once the leader compacted its log past the removal: the snapshot it installs first, taken before its addition, is not its removal', async () => {
    // A stranger found it stopped as removed every time ("applied at or before" the snapshot's
    // index), leaving a dead learner in the leader's configuration.
    const options: ClusterOptions = { storage: 'memory', snapshotEveryEntries: 50, snapshotRetainEntries: 5 };
    const { seeds, members, leader } = await boundFounders(options);
    const removed = members.find((m) => m !== leader) as Cluster;
    const address = removed.id;
    await removed.stop();
    const { index: removedAt } = await leader.removeMember(address);
    await Promise.all(Array.from({ length: 120 }, (_, i) => leader.propose(`v${i}`)));
    expect(leader.state().log.firstIndex).toBeGreaterThan(removedAt);
    await new Promise((resolve) => setTimeout(resolve, 4 * (OPTIONS.electionTimeoutMs as number)));
    const again = member(seeds, address, options);
    const errors: unknown[] = [];
    again.on('error', (e) => errors.push(e));
    await again.start();
    const { index } = await leader.propose('after the rejoin');
    await expect.poll(() => again.state().appliedIndex, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(index);
    expect(again.state().log.snapshotsInstalled).toBeGreaterThan(0);
    // A few heartbeats on, it still runs (it failed some 0.6 s after it joined).
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(errors).toEqual([]);
    expect(again.state().status).toBe('running');
    const conf = leader.state().configuration;
    expect([...conf.voters, ...conf.learners]).toContain(address);
  });

  it('adds no joiner whose id the leader cannot dial back to its key: another member\'s address written otherwise, or an address nothing listens at', async () => {
    const { seeds, leader } = await founders();
    const follower = seeds.find((id) => id !== leader.id) as string;
    const nobody = `127.0.0.1:${await freePort()}`;
    // An alias of a live follower (the leader dials it and meets the follower's key), of the
    // leader itself, and an address with nothing there: each would have made a voter the others
    // cannot dial, counted towards the majority. Each is answered alike, and no sooner than the
    // dial back's timeout, however fast it failed: the answer tells nothing of what is there.
    const t = await stranger();
    const request = (id: string): JoinRequest => ({ id, protocol: { min: 1, max: SUPPORTED.protocol.max }, stateMachine: { min: 1, max: SUPPORTED.stateMachine.max } });
    const details = new Set<string>();
    for (const id of [follower.replace('127.0.0.1', 'localhost'), leader.id.replace('127.0.0.1', 'localhost'), nobody]) {
      const began = performance.now();
      const answer = await requestJoin((signal) => t.openStream(parsePeerAddress(leader.id, 'leader'), JOIN_PROTOCOL_ID, signal), request(id), 5000);
      // Timers fire no sooner than asked; the margin is for the clocks the two ends read.
      expect(performance.now() - began, id).toBeGreaterThanOrEqual(DIAL_BACK_TIMEOUT_MS - 50);
      expect(answer, id).toMatchObject({ type: 'retry', detail: expect.stringContaining("the leader could not dial this member's id and reach its key") });
      details.add((answer as { detail: string }).detail);
    }
    expect(details.size).toBe(1);
    expect(leader.state().joins.unreachable).toBe(3);
    expect(leader.state().configuration).toMatchObject({ voters: [...seeds].sort(), learners: [] });

    // A member started so fails, saying why; one at its own address, written as the others dial it, gets in.
    const joiner = member(seeds, `127.0.0.1:${await freePort()}`, { storage: 'memory', advertise: nobody, joinTimeoutMs: DIAL_BACK_TIMEOUT_MS + 1000 });
    const error = await joiner.start().then(() => null, (e: unknown) => e);
    expect(error).toMatchObject({ code: 'CRONRAFT_JOIN_FAILED' });
    expect((error as Error).message).toContain("the leader could not dial this member's id and reach its key");
    expect(leader.state().configuration).toMatchObject({ voters: [...seeds].sort(), learners: [] });
    const port = await freePort();
    const honest = member(seeds, `127.0.0.1:${port}`, { storage: 'memory', advertise: `localhost:${port}` });
    await honest.start();
    expect(leader.state().configuration.learners).toEqual([`localhost:${port}`]);
  });

  it(`adds no joiner while ${MAX_SILENT_LEARNERS} learners it does not hear from are in the configuration, saying so`, async () => {
    const { seeds, leader } = await founders();
    // Strangers with the secret (none here) that ask under their own addresses, reached there as
    // their keys, and then never follow: learners the leader does not hear from.
    for (let i = 0; i < MAX_SILENT_LEARNERS; i++) {
      const t = await stranger();
      const port = /\/tcp\/(\d+)/.exec(t.listenAddresses()[0] ?? '')?.[1];
      const request = { id: `127.0.0.1:${port}`, protocol: { min: 1, max: SUPPORTED.protocol.max }, stateMachine: { min: 1, max: SUPPORTED.stateMachine.max } };
      // The leader makes one change at a time: asked again while the one before is applied.
      await expect
        .poll(() => requestJoin((signal) => t.openStream(parsePeerAddress(leader.id, 'leader'), JOIN_PROTOCOL_ID, signal), request, 5000), { timeout: 10_000, interval: 50 })
        .toMatchObject({ type: 'accepted' });
    }
    expect(leader.state().configuration.learners).toHaveLength(MAX_SILENT_LEARNERS);
    const joiner = member(seeds, `127.0.0.1:${await freePort()}`, { storage: 'memory', joinTimeoutMs: 1500 });
    const error = await joiner.start().then(() => null, (e: unknown) => e);
    expect(error).toMatchObject({ code: 'CRONRAFT_JOIN_FAILED' });
    expect((error as Error).message).toContain(`the leader hears from ${MAX_SILENT_LEARNERS} learners no more`);
    expect(leader.state().joins.silentLearners).toBeGreaterThan(0);
    expect(leader.state().configuration.learners).toHaveLength(MAX_SILENT_LEARNERS);
  });

  it('a member whose seeds do not answer forms the cluster if it is among them, and otherwise refuses to start', async () => {
    const own = `127.0.0.1:${await freePort()}`;
    const silent = `127.0.0.1:${await freePort()}`;
    const founding = member([own, silent], own, { storage: 'memory', joinTimeoutMs: 300 });
    await founding.start();
    expect(founding.state().configuration.voters).toEqual([own, silent].sort());
    const stray = member([silent], `127.0.0.1:${await freePort()}`, { storage: 'memory', joinTimeoutMs: 300 });
    await expect(stray.start()).rejects.toMatchObject({ code: 'CRONRAFT_JOIN_FAILED' });
  });
});
