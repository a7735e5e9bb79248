import { mkdtemp, readdir, rm, stat, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { STORE_DIRECTORY } from '../../src/storage/data-dir.js';
import { SCHEDULER_DEFAULTS } from '../../src/scheduler/state.js';
import { Cluster, InvalidArgumentError, NotLeaderError, StorageError, type ClusterOptions } from '../../src/index.js';
import { PEER_KEY_FILE } from '../../src/transport/constants.js';
import { useTestTiming } from '../../src/runtime/test-timing.js';
import { freePort } from '../fixtures/process-cluster.js';

/** Synced proposals a member commits before its write-ahead log is cut to half. */
const PROPOSALS_BEFORE_DAMAGE = 200;

const started: Cluster[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cronraft-cluster-'));
  dirs.push(dir);
  return dir;
}

async function startCluster(size: number, options: ClusterOptions = {}): Promise<Cluster[]> {
  const addrs: string[] = [];
  for (let i = 0; i < size; i++) addrs.push(`127.0.0.1:${await freePort()}`);
  const members = addrs.map((listen) => new Cluster(addrs, { storage: 'memory', ...options, listen }));
  started.push(...members);
  await Promise.all(members.map((m) => m.start()));
  return members;
}

describe('options', () => {
  const cases: Array<[string, () => unknown, string]> = [
    ['an unparseable peer', () => new Cluster(['not an address']), 'peers[0]'],
    ['an unparseable listen address', () => new Cluster([], { listen: '127.0.0.1' }), 'listen'],
    ['a negative timeout', () => new Cluster([], { electionTimeoutMs: -5 }), 'electionTimeoutMs'],
    ['a timeout past the whole numbers a double holds', () => new Cluster([], { stopTimeoutMs: 2 ** 60 }), 'stopTimeoutMs'],
    ['a heartbeat not shorter than the election timeout', () => new Cluster([], { heartbeatMs: 300, electionTimeoutMs: 300 }), 'heartbeatMs'],
    // Shorter in milliseconds, but two ticks each once rounded: start() threw a plain Error.
    ['a heartbeat as long as the election timeout in ticks', () => new Cluster([], { tickMs: 100, heartbeatMs: 150, electionTimeoutMs: 200 }), 'heartbeatMs'],
    ['port 0 with other members', () => new Cluster(['127.0.0.1:7002'], { listen: '127.0.0.1:0' }), 'listen'],
    ['an unknown storage', () => new Cluster([], { storage: 'disk' as 'level' }), 'storage'],
    ['an even number of voters', () => new Cluster([], { voters: 4 }), 'voters'],
    // Seams of another shape failed start() with a TypeError.
    ['a clock without now()', () => new Cluster([], { clock: {} as never }), 'clock'],
    ['timers without clearTimeout()', () => new Cluster([], { timers: { now: () => 0, setTimeout: () => 0 } as never }), 'timers'],
    // A cluster formed of them would hold more voters than a configuration may.
    ['more peers than a configuration holds', () => new Cluster(Array.from({ length: 256 }, (_, i) => `10.0.${i >> 8}.${i & 255}:7001`), { listen: '127.0.0.1:7001' }), 'peers'],
    ['a dead member time below the election timeout', () => new Cluster([], { deadMemberAfterMs: 100, electionTimeoutMs: 250 }), 'deadMemberAfterMs'],
    // A misspelt option kept its default, unsaid (stopTimeoutMs stayed 1 s).
    ['an option of another name', () => new Cluster([], { stopTimeotMs: 30_000 } as ClusterOptions), 'stopTimeotMs'],
  ];
  it.each(cases)('rejects %s, naming the option and the value', (_name, make, option) => {
    let error: unknown;
    try {
      make();
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option });
    expect((error as Error).message).toContain(option);
  });

  it("refuses a call's options that are not an object, or hold a bad value, with CRONRAFT_INVALID_ARGUMENT rather than a TypeError", async () => {
    const c = new Cluster([], { storage: 'memory' });
    const invalid = { code: 'CRONRAFT_INVALID_ARGUMENT' };
    await expect(c.waitForLeader(null as never)).rejects.toMatchObject({ ...invalid, option: 'options' });
    await expect(c.waitForLeader({ timeoutMs: -1 })).rejects.toMatchObject({ ...invalid, option: 'timeoutMs' });
    await expect(c.propose('x', null as never)).rejects.toMatchObject({ ...invalid, option: 'options' });
    await expect(c.propose('x', { signal: 5 as never })).rejects.toMatchObject({ ...invalid, option: 'signal' });
    expect(() => c.history(null as never)).toThrow(expect.objectContaining({ ...invalid, option: 'options' }));
    // A limit of 0 or less returned every claim kept.
    for (const limit of [0, -1, 1.5, '2']) expect(() => c.history({ limit: limit as number })).toThrow(expect.objectContaining({ ...invalid, option: 'limit' }));
    // A count of slots, not "milliseconds or a count".
    expect(() => c.history({ limit: 0 })).toThrow(/a positive integer \(a count of slots\)/);
    expect(() => c.consume('t', () => undefined, null as never)).toThrow(expect.objectContaining({ ...invalid, option: 'options' }));
    // A back-off past the longest wait a retry gets (5 minutes) was taken, and cut to it unsaid.
    expect(() => c.consume('t', () => undefined, { backoffMs: 300_001 })).toThrow(expect.objectContaining({ ...invalid, option: 'backoffMs' }));
    // A misspelt leave stopped without leaving; a string with a lone surrogate came back as U+FFFD.
    await expect(c.stop({ leve: true } as never)).rejects.toMatchObject({ ...invalid, option: 'leve' });
    await expect(c.stop(5 as never)).rejects.toMatchObject({ ...invalid, option: 'options' });
    await expect(c.propose('a\ud800')).rejects.toMatchObject({ ...invalid, option: 'data' });
    // A misspelt slot cancelled every run of the job, where it meant one.
    await expect(c.cancel('job', { slots: new Date() } as never)).rejects.toMatchObject({ ...invalid, option: 'slots' });
    // An invalid Date was told as "got null".
    await expect(c.cancel('job', { slot: new Date(NaN) })).rejects.toThrow(/got Invalid Date/);
    // A refused value of megabytes made a message of megabytes.
    let long: unknown;
    try {
      c.schedule('x'.repeat(5_000_000), { every: '1s' }, () => undefined);
    } catch (error) {
      long = error;
    }
    expect(long).toMatchObject({ ...invalid, option: 'name' });
    expect((long as Error).message.length).toBeLessThan(400);
    expect((long as Error).message).toMatch(/… \(5000002 characters\)$/);
  });

  it('once stopped, refuses what would only run at a start that never comes, and says why start() is refused', async () => {
    const c = new Cluster([], { storage: 'memory' });
    await c.stop();
    const notRunning = { code: 'CRONRAFT_NOT_RUNNING', state: 'stopped' };
    expect(() => c.schedule('job', { every: '1s' }, () => undefined)).toThrow(expect.objectContaining(notRunning));
    expect(() => c.consume('t', () => undefined)).toThrow(expect.objectContaining(notRunning));
    await expect(c.start()).rejects.toThrow(/starts once, and this one was stopped/);
  });

  it('refuses at start a founding list that names one member twice (an address and a name of it)', async () => {
    // Before, it formed a cluster of three voters over two processes: the one listed twice as
    // localhost never answered, and the cluster lost its majority at the first failure.
    const [p, q] = [await freePort(), await freePort()];
    const c = new Cluster([`127.0.0.1:${p}`, `localhost:${p}`, `127.0.0.1:${q}`], { listen: `127.0.0.1:${p}`, storage: 'memory' });
    started.push(c);
    expect(c.state().members.map((m) => m.id).sort()).toEqual([`127.0.0.1:${p}`, `127.0.0.1:${q}`, `localhost:${p}`].sort());
    await expect(c.start()).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'peers', message: expect.stringContaining(`both reach 127.0.0.1:${p}`) });
    expect(c.state().status).toBe('failed');
  });

  it('accepts multiaddrs with a peer id, host:port, and its own address in the peer list', () => {
    const c = new Cluster(['/ip4/127.0.0.1/tcp/7001', '127.0.0.1:7002', '/ip4/127.0.0.1/tcp/7003/p2p/12D3KooWNpEjHiwXBKhVJvQy5aGA5n6TgqSEAHMAbkjYZj9nVKPL'], { listen: '/ip4/127.0.0.1/tcp/7001' });
    expect(c.id).toBe('127.0.0.1:7001');
    expect(c.state().members.map((m) => m.id)).toEqual(['127.0.0.1:7001', '127.0.0.1:7002', '127.0.0.1:7003']);
  });
});

describe('a single-member cluster', () => {
  it('a second stop() while the first is under way resolves only once the member has stopped, its run ended', async () => {
    // An app that stops from a signal handler and a shutdown hook: the second resolved at once,
    // and the app exited mid-run.
    const c = new Cluster([], { storage: 'memory', stopTimeoutMs: 3000 });
    started.push(c);
    let finished = false;
    let running!: () => void;
    const isRunning = new Promise<void>((resolve) => (running = resolve));
    c.schedule('slow', { every: 200 }, async () => {
      running();
      await new Promise((resolve) => setTimeout(resolve, 300));
      finished = true;
    });
    await c.start();
    await isRunning;
    const first = c.stop();
    await c.stop();
    expect({ status: c.state().status, finished }).toEqual({ status: 'stopped', finished: true });
    await first;
  });

  it("state() hands out a job's entry again, frozen, until the job changes (thousands of jobs are not built on every call)", async () => {
    const c = new Cluster([], { storage: 'memory' });
    started.push(c);
    await c.start();
    c.schedule('hourly', { every: '1h' }, () => undefined);
    await expect.poll(() => c.state().jobs.length, { timeout: 10_000 }).toBe(1);
    const job = c.state().jobs[0];
    expect(c.state().jobs[0]).toBe(job);
    expect(Object.isFrozen(job)).toBe(true);
    expect(job).toMatchObject({ name: 'hourly', spec: 'every 3600000', handlers: [c.id], conflicts: {}, lastClaim: null, running: [] });
  });

  it('new Cluster([]) leads at once and commits', async () => {
    const c = new Cluster([], { storage: 'memory' });
    started.push(c);
    await c.start();
    const { index } = await c.propose('hello');
    expect(index).toBeGreaterThan(0);
    const s = c.state();
    expect(s.role).toBe('leader');
    expect(s.appliedIndex).toBeGreaterThanOrEqual(index);
    expect(await c.barrier()).toEqual({ index: s.commitIndex });
  });

  it('removeMember: waits for cluster version 2 when called before it, then refused for a member that is none or the last voter', async () => {
    const c = new Cluster([], { storage: 'memory' });
    started.push(c);
    await c.start();
    await expect(c.removeMember('')).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'id' });
    // Alone, the version rises to 2 within a couple of the keeper's looks (half a second each):
    // a call before waits for it rather than being refused, and is then refused for what it asks.
    expect(c.state().version.active).toBe(1);
    const early = await c.removeMember('nobody:1').catch((error: unknown) => error);
    expect(c.state().version.active).toBeGreaterThanOrEqual(2);
    // Not a member; or, first, the change binding this member to its peer id still pending.
    expect(early).toMatchObject({ code: 'CRONRAFT_MEMBERSHIP_REFUSED' });
    expect(['not-member', 'pending']).toContain((early as { reason: string }).reason);
    // Then it binds itself to its own peer id (a change of its own, which would be pending).
    await expect.poll(() => c.state().configuration.peerIds, { timeout: 10_000, interval: 50 }).toEqual({ [c.id]: c.state().peerId });
    await expect(c.removeMember('nobody:1')).rejects.toMatchObject({ code: 'CRONRAFT_MEMBERSHIP_REFUSED', reason: 'not-member' });
    await expect(c.removeMember(c.id)).rejects.toMatchObject({ code: 'CRONRAFT_MEMBERSHIP_REFUSED', reason: 'last-voter' });
    expect(c.state().configuration).toEqual({ voters: [c.id], learners: [], peerIds: { [c.id]: c.state().peerId } });
    expect(c.state().members.map((m) => [m.id, m.voter])).toEqual([[c.id, true]]);
  });

  it('removeMember from a follower reaches the leader; stop({ leave: true }) of the leader hands over, leaves and stops cleanly', async () => {
    const members = await startCluster(3, { heartbeatMs: 20, electionTimeoutMs: 100, stopTimeoutMs: 3000 });
    await expect.poll(() => members.every((m) => m.state().version.active >= 2), { timeout: 10_000, interval: 50 }).toBe(true);
    // Then each member's peer id is bound, a configuration change each: one still pending would
    // refuse the removal below (`pending`).
    await expect.poll(() => members.every((m) => Object.keys(m.state().configuration.peerIds).length === 3), { timeout: 10_000, interval: 50 }).toBe(true);
    const leader = members.find((m) => m.state().role === 'leader') as Cluster;
    const [follower, other] = members.filter((m) => m !== leader) as [Cluster, Cluster];
    // The lag is the leader's view: a number there for every member, null on a follower.
    await expect.poll(() => leader.state().members.map((m) => m.lag), { timeout: 5_000, interval: 20 }).toEqual([0, 0, 0]);
    expect(follower.state().members.map((m) => m.lag)).toEqual([null, null, null]);
    const removedErrors: unknown[] = [];
    other.on('error', (e) => removedErrors.push(e));
    const events: Array<[string, string]> = [];
    for (const type of ['member-joined', 'member-promoted', 'member-left', 'member-removed'] as const) follower.on(type, ({ id }) => events.push([type, id]));
    // A mode 'all' job whose run on the member to be removed never ends: its share of that slot
    // is unreported when it goes, so the leader records it missed, and every member tells of it.
    let hung: number | null = null;
    for (const m of members) {
      m.schedule('share', { every: 100 }, async (ctx) => {
        if (m !== other) return;
        hung ??= ctx.slot.getTime();
        await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
      }, { mode: 'all' });
    }
    const missed: Array<{ job: string; slotMs: number; reason: string }> = [];
    follower.on('missed', ({ job, slot, reason }) => missed.push({ job, slotMs: slot.getTime(), reason }));
    await expect.poll(() => hung, { timeout: 5_000, interval: 20 }).not.toBeNull();
    await follower.removeMember(other.id);
    const two = [leader.id, follower.id].sort();
    expect(follower.state().configuration).toMatchObject({ voters: two, learners: [] });
    await expect.poll(() => leader.state().configuration, { timeout: 5_000, interval: 20 }).toMatchObject({ voters: two, learners: [] });
    // The member removed learns it, whether or not it held the change when it committed.
    await expect.poll(() => removedErrors.length, { timeout: 5_000, interval: 20 }).toBe(1);
    expect(removedErrors[0]).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    await expect.poll(() => missed.find((m) => m.slotMs === hung), { timeout: 5_000, interval: 20 }).toEqual({ job: 'share', slotMs: hung, reason: 'member-removed' });

    const leaderErrors: unknown[] = [];
    leader.on('error', (e) => leaderErrors.push(e));
    await expect(leader.stop({ leave: 'yes' as unknown as boolean })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'leave' });
    await leader.stop({ leave: true });
    expect(leader.state().status).toBe('stopped');
    expect(leaderErrors).toEqual([]);
    await expect.poll(() => follower.state().configuration, { timeout: 5_000, interval: 20 }).toMatchObject({ voters: [follower.id], learners: [] });
    // Alone, it leads: at once if the leader handed over to it, else after an election timeout
    // (on a loaded machine the hand-over can arrive after it timed out and stood as a candidate).
    await expect.poll(() => follower.state().role, { timeout: 5_000, interval: 20 }).toBe('leader');
    expect(events).toEqual([
      ['member-removed', other.id],
      ['member-left', leader.id],
    ]);
    // The leader's view of itself: nothing to catch up, and its own peer id.
    expect(follower.state().members).toEqual([expect.objectContaining({ id: follower.id, voter: true, lag: 0, peerId: follower.state().peerId })]);
  });

  it('tells the membership changes and version rises it replays from its log again after a restart, at the indexes it told them first (README, "Events")', async () => {
    const addrs: string[] = [];
    for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
    const dataDirs = await Promise.all(addrs.map(() => tempDir()));
    const options = { heartbeatMs: 20, electionTimeoutMs: 100 };
    const members = addrs.map((listen, i) => new Cluster(addrs, { ...options, listen, dataDir: dataDirs[i] }));
    started.push(...members);
    // The cluster version's rises, told as their entries apply, are told again the same way.
    const activated = members.map(() => [] as Array<{ from: number; to: number; index: number }>);
    members.forEach((m, i) => m.on('version-activated', (e) => activated[i]!.push(e)));
    await Promise.all(members.map((m) => m.start()));
    // Each member's peer id bound first (a configuration change each; one pending refuses a removal).
    await expect.poll(() => members.every((m) => Object.keys(m.state().configuration.peerIds).length === 3), { timeout: 10_000, interval: 50 }).toBe(true);
    const leader = members.find((m) => m.state().role === 'leader') as Cluster;
    const [follower, other] = members.filter((m) => m !== leader) as [Cluster, Cluster];
    const firstLife: Array<{ id: string; index: number }> = [];
    follower.on('member-removed', (e) => firstLife.push(e));
    await leader.removeMember(other.id);
    await expect.poll(() => firstLife, { timeout: 5_000, interval: 20 }).toHaveLength(1);
    expect(firstLife[0]?.id).toBe(other.id);
    await other.stop();
    await follower.stop();

    const again = new Cluster(addrs, { ...options, listen: follower.id, dataDir: dataDirs[members.indexOf(follower)] });
    started.push(again);
    const secondLife: Array<{ id: string; index: number }> = [];
    again.on('member-removed', (e) => secondLife.push(e));
    const activatedAgain: Array<{ from: number; to: number; index: number }> = [];
    again.on('version-activated', (e) => activatedAgain.push(e));
    await again.start();
    // Two voters, one of them stopped: the leader stepped down, and the two elect one again.
    await expect.poll(() => secondLife, { timeout: 5_000, interval: 20 }).toEqual(firstLife);
    const activatedFirst = activated[members.indexOf(follower)]!;
    expect(activatedFirst.length).toBeGreaterThan(0);
    expect(activatedAgain.slice(0, activatedFirst.length)).toEqual(activatedFirst);
    expect(again.state().configuration.voters).toEqual([leader.id, follower.id].sort());
  });

  it('keeps its log and term across a restart from its data directory', async () => {
    const dataDir = await tempDir();
    const port = await freePort();
    const first = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
    await first.start();
    for (let i = 0; i < 5; i++) await first.propose(`v${i}`);
    const before = first.state();
    await first.stop();
    const second = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
    started.push(second);
    const applied: string[] = [];
    second.on('applied', (e) => applied.push(new TextDecoder().decode(e.data)));
    await second.start();
    await second.waitForLeader();
    await second.barrier();
    expect(second.state().term).toBeGreaterThan(before.term);
    expect(applied).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
    // The libp2p identity is kept too.
    expect(second.state().peerId).toBe(before.peerId);
  });

  it('refuses a data directory that belongs to another member, naming the path', async () => {
    const dataDir = await tempDir();
    const a = new Cluster([], { listen: `127.0.0.1:${await freePort()}`, dataDir });
    await a.start();
    await a.stop();
    const b = new Cluster([], { listen: `127.0.0.1:${await freePort()}`, dataDir });
    const error = await b.start().then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_MISMATCH' });
    expect((error as Error).message).toContain(dataDir);
    expect(b.state().status).toBe('failed');
  });

  it('refuses to start, naming its log, when its write-ahead log lost committed entries', async () => {
    const dataDir = await tempDir();
    const port = await freePort();
    const first = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
    await first.start();
    for (let i = 0; i < PROPOSALS_BEFORE_DAMAGE; i++) await first.propose(`v${i}`);
    await first.stop();
    const storePath = join(dataDir, STORE_DIRECTORY);
    const log = (await readdir(storePath)).filter((name) => name.endsWith('.log'));
    expect(log.length).toBe(1);
    const file = join(storePath, log[0] as string);
    await truncate(file, Math.floor((await stat(file)).size / 2));

    const second = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
    const error = await second.start().then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_CORRUPT', path: storePath });
    expect(second.state().status).toBe('failed');
    // Why, as for a failure while running (a reviewer found it null after a failed start).
    expect(second.state().failure).toEqual({ code: 'CRONRAFT_STORAGE_CORRUPT', message: (error as Error).message });
    await expect(second.waitForLeader()).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING', state: 'failed', cause: error });
  });

  it('refuses to start with a new identity when its peer key is gone but its log is not', async () => {
    const dataDir = await tempDir();
    const port = await freePort();
    const first = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
    await first.start();
    await first.stop();
    await rm(join(dataDir, PEER_KEY_FILE));
    const second = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
    const error = await second.start().then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(StorageError);
    expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_CORRUPT', path: join(dataDir, PEER_KEY_FILE) });
    expect(await readdir(dataDir)).toEqual([STORE_DIRECTORY]);
  });
});

describe('two members in one process', () => {
  it("tells the app of a job refused at the cap of jobs ('job-refused'), and keeps the jobs the cluster has", async () => {
    const [a, b] = (await startCluster(2)) as [Cluster, Cluster];
    const refused: Array<{ member: string; job: string; reason: string }> = [];
    for (const m of [a, b]) m.on('job-refused', ({ job, reason }) => refused.push({ member: m === a ? 'a' : 'b', job, reason }));
    // a fills the cluster with jobs it handles, so none can make room for another.
    for (let i = 0; i < SCHEDULER_DEFAULTS.maxJobs; i++) a.schedule(`job-${i}`, { every: '1h' }, () => undefined);
    await expect.poll(() => b.state().jobs.length, { timeout: 30_000, interval: 50 }).toBe(SCHEDULER_DEFAULTS.maxJobs);
    expect(refused).toEqual([]);
    // a itself schedules no more: refused at the call, saying why.
    expect(() => a.schedule('one-more', { every: '1h' }, () => undefined)).toThrow(`it schedules that many already`);
    // b holds none of them, so it may schedule one more: the cluster refuses it, and b says so.
    b.schedule('one-too-many', { every: '1h' }, () => undefined);
    // Only the member whose registration it was tells of it, once.
    await expect.poll(() => refused.length, { timeout: 10_000, interval: 20 }).toBeGreaterThan(0);
    expect(b.state().jobs.length).toBe(SCHEDULER_DEFAULTS.maxJobs);
    expect(b.state().jobs.some((j) => j.name === 'one-too-many')).toBe(false);
    expect(refused).toEqual([{ member: 'b', job: 'one-too-many', reason: 'too-many-jobs' }]);
  }, 60_000);
});

describe('three members in one process', () => {
  it('waitForLeader gives up by default after 20 election timeouts while no majority runs (the README says so)', async () => {
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    // One member of three up, the others never started: no leader can be elected.
    const alone = new Cluster(addrs, { storage: 'memory', listen: addrs[0], electionTimeoutMs: 100, joinTimeoutMs: 200 });
    started.push(alone);
    await alone.start();
    await expect(alone.waitForLeader()).rejects.toMatchObject({ code: 'CRONRAFT_TIMEOUT', message: 'Waiting for a leader did not complete within 2000 ms' });
  });

  it('a waitForLeader under way ends as its member fails (removed while it was down), naming why; state() and /readyz say it too', async () => {
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    const dataDirs = new Map<string, string>();
    for (const a of addrs) dataDirs.set(a, await tempDir());
    const timing = { heartbeatMs: 20, electionTimeoutMs: 100 };
    const members = addrs.map((listen) => new Cluster(addrs, { ...timing, listen, dataDir: dataDirs.get(listen) }));
    started.push(...members);
    await Promise.all(members.map((m) => m.start()));
    // Each member's peer id bound, so that the one removed can ask whether it still is one.
    await expect.poll(() => members.every((m) => m.state().version.active >= 2 && Object.keys(m.state().configuration.peerIds).length === 3), { timeout: 10_000, interval: 50 }).toBe(true);
    const gone = members[2] as Cluster;
    await gone.stop();
    await (members[0] as Cluster).removeMember(gone.id);
    // The leader keeps a removed member among its transport's peers for an election timeout, to
    // send it the farewell that tells it of its removal (configuration-keeper.ts). A member back
    // within it hears that farewell, and so knows the leader for a moment, before it applies its
    // removal: its wait for a leader ends with the leader then (it did once in CI). This test is
    // of a member back later, which hears from no leader. The leader set its timer as it applied
    // the removal, before removeMember resolved here, and timers of one event loop fire in the
    // order they are due: once this one fires, it has.
    await new Promise((resolve) => setTimeout(resolve, timing.electionTimeoutMs * 2));
    const back = new Cluster(addrs, { ...timing, listen: gone.id, dataDir: dataDirs.get(gone.id), http: { listen: '127.0.0.1:0' } });
    // It asks the others whether it is still a member once it has heard no leader this long (15 s by default).
    useTestTiming(back, { leaderlessBeforeProbeMs: 300 });
    started.push(back);
    const errors: unknown[] = [];
    back.on('error', (e) => errors.push(e));
    await back.start();
    // Far beyond this test's own timeout: before, the wait ran it out although the member had failed.
    const waiting = back.waitForLeader({ timeoutMs: 600_000 });
    waiting.catch(() => undefined);
    await expect(waiting).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING', state: 'failed', cause: { code: 'CRONRAFT_REMOVED' } });
    expect(errors).toEqual([expect.objectContaining({ code: 'CRONRAFT_REMOVED' })]);
    const failure = back.state().failure;
    expect(failure).toEqual({ code: 'CRONRAFT_REMOVED', message: (errors[0] as Error).message });
    await expect(waiting).rejects.toThrow(`The cluster member is failed: ${failure?.message} (CRONRAFT_REMOVED)`);
    await expect(back.waitForLeader()).rejects.toThrow(`(CRONRAFT_REMOVED)`);
    expect(members[0]?.state().failure).toBeNull();
    const ready = await fetch(`http://${back.httpAddress}/readyz`);
    expect(ready.status).toBe(503);
    expect(await ready.json()).toMatchObject({ ready: false, reason: `the member is failed: ${failure?.message} (CRONRAFT_REMOVED)` });
  });

  it('elect one leader, report it in state() and events, and commit from any member', async () => {
    const members = await startCluster(3);
    const events: string[] = [];
    members[1]!.on('leader', (e) => events.push(`${e.leader}@${e.term}`));
    const { leader } = await members[0]!.waitForLeader();
    await Promise.all(members.map((m) => m.waitForLeader()));
    for (const m of members) expect(m.state().leader).toBe(leader);
    // A follower's proposal is forwarded to the leader.
    const follower = members.find((m) => m.id !== leader)!;
    const { index } = await follower.propose('from a follower');
    expect(follower.state().appliedIndex).toBeGreaterThanOrEqual(index);
    await follower.barrier();
    const s = follower.state();
    expect(s.members).toHaveLength(3);
    expect(s.members.every((m) => m.reachable)).toBe(true);
    expect(s.members.find((m) => m.id === leader)!.lastContactMs).not.toBeNull();
    // The member announced the leader it follows (the election came after the listener).
    expect(events.some((e) => e.startsWith(`${leader}@`))).toBe(true);
  });

  it('a stopping leader hands over leadership instead of leaving the others to time out', async () => {
    // The first member campaigns after 200 ms; the others only after 20 s. So once the first
    // leads, a new leader within 5 s of its stop() can only come from a handover.
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    const members = addrs.map(
      (listen, i) => new Cluster(addrs, { storage: 'memory', listen, heartbeatMs: 50, electionTimeoutMs: i === 0 ? 200 : 20_000, stopTimeoutMs: 3000 }),
    );
    started.push(...members);
    await Promise.all(members.map((m) => m.start()));
    const first = members[0]!;
    await expect.poll(() => first.state().role, { timeout: 10_000 }).toBe('leader');
    const { term } = first.state();
    await Promise.all(members.map((m) => m.waitForLeader()));
    await first.propose('before the handover');
    const unreachable: Array<{ by: string; id: string }> = [];
    for (const m of members.slice(1)) m.on('member-unreachable', ({ id }) => unreachable.push({ by: m.id, id }));
    await first.stop();
    const other = members[1]!;
    await expect.poll(() => other.state().leader, { timeout: 5000 }).not.toBe(first.id);
    await expect.poll(() => other.state().leader, { timeout: 5000 }).not.toBeNull();
    expect(other.state().term).toBe(term + 1);
    await other.propose('after the handover');
    // Each member left tells once that the one stopped is unreachable ('member-unreachable'), of no other.
    await expect.poll(() => unreachable.map((u) => u.by).sort(), { timeout: 5000, interval: 50 }).toEqual([members[1]!.id, members[2]!.id].sort());
    expect(unreachable.every((u) => u.id === first.id)).toBe(true);
  });

  it('commits a burst of proposals forwarded by a follower, in frames that fit the transport', async () => {
    const members = await startCluster(3);
    await Promise.all(members.map((m) => m.waitForLeader()));
    const follower = members.find((m) => m.state().role !== 'leader')!;
    const payload = new Uint8Array(8192).fill(7);
    // 1,000 proposals of 8 KiB queued at once are 8 MiB: one batch of them would not fit in a
    // 4 MiB frame, so the driver must split batches by bytes as well as by count.
    const results = await Promise.all(Array.from({ length: 1000 }, () => follower.propose(payload)));
    expect(new Set(results.map((r) => r.index)).size).toBe(1000);
    expect(follower.state().unsendableMessages).toBe(0);
    const big = await follower.propose(new Uint8Array(2 * 1024 * 1024)).then(() => null, (e: unknown) => e);
    expect(big).toBeInstanceOf(InvalidArgumentError);
    expect(big).toMatchObject({ option: 'data' });
  });

  it('catches up a follower restarted with its log lost, with no storm of messages', async () => {
    const heartbeatMs = 50;
    const addrs: string[] = [];
    for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
    const dataDirs = new Map<string, string>();
    for (const listen of addrs) dataDirs.set(listen, await tempDir());
    const members = addrs.map((listen) => new Cluster(addrs, { listen, dataDir: dataDirs.get(listen), heartbeatMs }));
    started.push(...members);
    await Promise.all(members.map((m) => m.start()));
    await Promise.all(members.map((m) => m.waitForLeader()));
    const leader = members.find((m) => m.state().role === 'leader')!;
    for (let i = 0; i < 5; i++) await leader.propose(`before ${i}`);
    await leader.barrier();
    // Once the members' peer ids are bound, a member comes back only with its own key: a
    // restart on storage: 'memory', which makes a new key, would be refused (README, "Security").
    await expect.poll(() => Object.keys(leader.state().configuration.peerIds).length, { timeout: 10_000 }).toBe(3);
    // The follower comes back with the same address and key and nothing else: no log, term or
    // vote (README, "Recovering a member"), as a restart on storage: 'memory' did before binding.
    const follower = members.find((m) => m !== leader)!;
    await follower.stop();
    await rm(join(dataDirs.get(follower.id)!, STORE_DIRECTORY), { recursive: true });
    const restarted = new Cluster(addrs, { listen: follower.id, dataDir: dataDirs.get(follower.id), heartbeatMs });
    started.push(restarted);
    await restarted.start();
    await restarted.waitForLeader();
    const sentBefore = leader.state().transport.sent;
    const since = performance.now();
    // A new entry sets the leader probing the follower, which used to loop at once for ever.
    const { index } = await leader.propose('after the restart');
    // Its first second: the leader sends each follower one heartbeat every heartbeatMs, and a
    // few appends to catch one up; a follower probed in a loop takes thousands, ever more.
    const windowMs = 1000;
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, since + windowMs - performance.now())));
    const sentPerSecond = ((leader.state().transport.sent - sentBefore) * 1000) / (performance.now() - since);
    const maxSentPerSecond = 4 * (members.length - 1) * (1000 / heartbeatMs);
    expect(sentPerSecond).toBeLessThan(maxSentPerSecond);
    await expect.poll(() => restarted.state().appliedIndex, { timeout: 10_000 }).toBeGreaterThanOrEqual(index);
    expect(leader.state().followerLogsLost).toBe(1);
  });

  it('fails a proposal at once with NotLeaderError when no leader is known', async () => {
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    // Its peers never come up: it forms the cluster once it stops looking for a running one.
    const lonely = new Cluster(addrs, { storage: 'memory', listen: addrs[0], joinTimeoutMs: 100 });
    started.push(lonely);
    await lonely.start();
    const error = await lonely.propose('x').then(() => null, (e: unknown) => e);
    expect(error).toBeInstanceOf(NotLeaderError);
    expect(error).toMatchObject({ code: 'CRONRAFT_NOT_LEADER', leader: null });
  });

  it('members given different peer lists never form one cluster together', async () => {
    const a = `127.0.0.1:${await freePort()}`;
    const b = `127.0.0.1:${await freePort()}`;
    const c = `127.0.0.1:${await freePort()}`;
    // Neither finds the other forming the same cluster: each forms its own once it stops looking.
    const one = new Cluster([a, b], { storage: 'memory', listen: a, electionTimeoutMs: 100, heartbeatMs: 20, joinTimeoutMs: 100 });
    const two = new Cluster([a, b, c], { storage: 'memory', listen: b, electionTimeoutMs: 100, heartbeatMs: 20, joinTimeoutMs: 100 });
    started.push(one, two);
    await Promise.all([one.start(), two.start()]);
    // Both campaign and reach each other, but every message carries the other cluster's id.
    await expect.poll(() => two.state().transport.droppedUnexpected, { timeout: 10_000 }).toBeGreaterThan(0);
    expect(one.state().leader).toBe(null);
    expect(two.state().leader).toBe(null);
  });
});
