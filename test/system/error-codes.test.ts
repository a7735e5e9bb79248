import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { RaftNode } from '../../src/raft/node.js';
import { EntryType } from '../../src/raft/types.js';
import { RaftDriver } from '../../src/runtime/driver.js';
import { MemoryLogStorage } from '../../src/storage/memory-log-storage.js';
import { SeededRandom } from '../../src/time/random.js';
import { freePort } from '../fixtures/process-cluster.js';
import { RecordingTransport } from '../fixtures/recording-transport.js';
import { NO_SNAPSHOT_STATE } from '../fixtures/state-machine.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

/**
 * The codes of the README's "Errors" table that no other test asserts, each where it is made:
 * a proposal refused for backpressure, one that outlives its request timeout, one a new leader
 * replaced, a read barrier that outlives its timeout, runExclusive on a member that has not
 * learned the cluster's time, a second start(), and a proposal aborted with a reason not an Error. (The others are asserted beside what they guard; the run abort
 * codes are checked by the simulator on every abort: docs/PROMISES.md lists where.)
 */

const REQUEST_TIMEOUT_MS = 1000;

/** Member 'a' of three, following 'b' (term 1), on timers the test moves. */
async function follower(maxPendingProposals = 100): Promise<{ driver: RaftDriver; transport: RecordingTransport; timers: ManualTimers }> {
  const storage = new MemoryLogStorage();
  const stored = await storage.open();
  const node = new RaftNode({ id: 'a', voters: ['a', 'b', 'c'], electionTicks: 1000, heartbeatTicks: 1 }, { hardState: stored.hardState, snapshot: stored.snapshot, entries: stored.entries }, new SeededRandom(1));
  const transport = new RecordingTransport();
  const timers = new ManualTimers();
  const driver = new RaftDriver({
    node,
    storage,
    transport,
    stateMachine: { apply: (e) => e.index, ...NO_SNAPSHOT_STATE },
    clock: { now: () => timers.now() },
    timers,
    tickMs: 10,
    requestTimeoutMs: REQUEST_TIMEOUT_MS,
    maxPendingProposals,
    maxProposalBatch: 10,
    maxProposalBatchBytes: 1024,
    maxPendingReads: 10,
    leaderSilenceMs: 10 * REQUEST_TIMEOUT_MS,
    bootId: 'test',
  });
  driver.start();
  transport.deliver({ type: 'heartbeat', from: 'b', to: 'a', term: 1, commit: 0, readCtx: 0 });
  await settle();
  return { driver, transport, timers };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 10; i++) await Promise.resolve();
};

describe('error codes', () => {
  it('CRONRAFT_BACKPRESSURE: a proposal beyond maxPendingProposals, at once', async () => {
    const { driver } = await follower(1);
    const waiting = driver.propose(new Uint8Array([1]));
    await expect(driver.propose(new Uint8Array([2]))).rejects.toMatchObject({ code: 'CRONRAFT_BACKPRESSURE' });
    driver.stop();
    await expect(waiting).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
  });

  it('CRONRAFT_TIMEOUT: a proposal, and a read barrier, not done within requestTimeoutMs', async () => {
    const { driver, timers } = await follower();
    const proposal = driver.propose(new Uint8Array([1]));
    const read = driver.readBarrier();
    const failed = Promise.all([expect(proposal).rejects.toMatchObject({ code: 'CRONRAFT_TIMEOUT' }), expect(read).rejects.toMatchObject({ code: 'CRONRAFT_TIMEOUT' })]);
    timers.advance(REQUEST_TIMEOUT_MS - 20);
    await settle();
    let settledEarly = false;
    void Promise.race([proposal, read]).catch(() => (settledEarly = true));
    await settle();
    expect(settledEarly).toBe(false);
    timers.advance(40);
    await failed;
    driver.stop();
  });

  it('CRONRAFT_PROPOSAL_DROPPED: a proposal placed at an index that a new leader filled with another entry', async () => {
    const { driver, transport } = await follower();
    const proposal = driver.propose(new Uint8Array([1]));
    await settle();
    const forwarded = transport.sent.find((m) => m.type === 'propose');
    expect(forwarded?.type).toBe('propose');
    const pids = forwarded?.type === 'propose' ? forwarded.proposals.map((p) => p.pid) : [];
    // b appends it at index 1, then c, leading term 2, commits another entry there.
    transport.deliver({ type: 'propose-resp', from: 'b', to: 'a', term: 1, index: 1, pids, reject: false, leader: 'b' });
    await settle();
    transport.deliver({ type: 'append', from: 'c', to: 'a', term: 2, prevIndex: 0, prevTerm: 0, commit: 1, entries: [{ index: 1, term: 2, type: EntryType.Normal, data: new Uint8Array([9]), pid: 'c.1' }] });
    await expect(proposal).rejects.toMatchObject({ code: 'CRONRAFT_PROPOSAL_DROPPED' });
    driver.stop();
  });

  it('a proposal whose index a later proposal of this member took is not told CRONRAFT_PROPOSAL_DROPPED at once: the old leader’s entry may still commit there, and then it is answered with its commit (found by a reviewing helper)', async () => {
    const { driver, transport } = await follower();
    const forwardedPids = (): string[][] => transport.sent.flatMap((m) => (m.type === 'propose' ? [m.proposals.map((p) => p.pid)] : []));
    const old = driver.propose(new Uint8Array([1]));
    await settle();
    const [oldPids] = forwardedPids();
    // b, leading term 1, appends it at index 1.
    transport.deliver({ type: 'propose-resp', from: 'b', to: 'a', term: 1, index: 1, pids: oldPids!, reject: false, leader: 'b' });
    await settle();
    // c, leading term 2, appends this member's next proposal at index 1 too.
    transport.sent.length = 0;
    const next = driver.propose(new Uint8Array([2]));
    await settle();
    const [nextPids] = forwardedPids();
    transport.deliver({ type: 'propose-resp', from: 'c', to: 'a', term: 2, index: 1, pids: nextPids!, reject: false, leader: 'c' });
    await settle();
    let oldSettled = false;
    void old.then(() => (oldSettled = true), () => (oldSettled = true));
    await settle();
    expect(oldSettled).toBe(false);
    // c fails before anyone else has its entry; b leads again in term 3 and commits its own entry at index 1.
    transport.deliver({ type: 'append', from: 'b', to: 'a', term: 3, prevIndex: 0, prevTerm: 0, commit: 1, entries: [{ index: 1, term: 1, type: EntryType.Normal, data: new Uint8Array([1]), pid: oldPids![0]! }] });
    await expect(old).resolves.toMatchObject({ index: 1 });
    await expect(next).rejects.toMatchObject({ code: 'CRONRAFT_PROPOSAL_DROPPED' });
    driver.stop();
  });
});

describe('runExclusive before the cluster’s time is known', () => {
  const clusters: Cluster[] = [];
  afterEach(async () => {
    await Promise.all(clusters.splice(0).map((c) => c.stop()));
  });

  it('CRONRAFT_CLOCK_UNSYNCED: two of three members know a leader, but settle for two clocks only after a while', async () => {
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    // The third member never starts: with two clocks in sight, the leader waits (CLOCK_BOOTSTRAP_AFTER_MS) before it trusts them.
    const two = addrs.slice(0, 2).map((listen) => new Cluster(addrs, { storage: 'memory', listen, requestTimeoutMs: 300 }));
    clusters.push(...two);
    await Promise.all(two.map((c) => c.start()));
    await expect.poll(() => two.every((c) => c.state().leader !== null), { timeout: 10_000, interval: 20 }).toBe(true);
    let ran = false;
    await expect(two[0]!.runExclusive('x', { atMostFor: 1000 }, () => (ran = true))).rejects.toMatchObject({ code: 'CRONRAFT_CLOCK_UNSYNCED' });
    expect(ran).toBe(false);
  });

  it('CRONRAFT_ALREADY_STARTED: start() called again', async () => {
    const c = new Cluster([], { storage: 'memory' });
    try {
      await c.start();
      await expect(c.start()).rejects.toMatchObject({ code: 'CRONRAFT_ALREADY_STARTED' });
    } finally {
      await c.stop();
    }
  });

  it("CRONRAFT_ABORTED: a proposal whose signal aborted with a reason that is not an Error; one that is, is what it rejects with", async () => {
    const { driver } = await follower();
    const plain = new AbortController();
    plain.abort('no longer wanted');
    await expect(driver.propose(new Uint8Array([1]), plain.signal)).rejects.toMatchObject({ code: 'CRONRAFT_ABORTED' });
    const withError = new AbortController();
    const reason = new Error('the app gave up');
    withError.abort(reason);
    await expect(driver.propose(new Uint8Array([2]), withError.signal)).rejects.toBe(reason);
    driver.stop();
  });
});
