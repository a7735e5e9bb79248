import { afterEach, describe, expect, it } from 'vitest';
import { ProcessCluster, type MemberProcess } from '../fixtures/process-cluster.js';

/**
 * Three OS processes on 127.0.0.1, durable in level with sync on: they elect a leader, commit,
 * survive kill -9 of the leader, and the killed member restarts with its data and catches up.
 */
describe('real processes', () => {
  let cluster: ProcessCluster | null = null;
  afterEach(async () => {
    await cluster?.cleanup();
    cluster = null;
  });

  it('elect, commit, survive kill -9 of the leader, restart and catch up', async () => {
    cluster = await ProcessCluster.create(3);
    await cluster.startAll();
    for (let i = 0; i < 20; i++) await cluster.propose(`before-${i}`);
    const leader = await cluster.waitForLeader();
    const before = await leader.state();
    expect(before.commitIndex).toBeGreaterThanOrEqual(21);

    await leader.kill();
    const next = await cluster.waitForLeader(20_000, leader);
    expect(next).not.toBe(leader);
    const afterKill = await next.state();
    expect(afterKill.term).toBeGreaterThan(before.term);
    // Nothing acknowledged is lost, and the new leader commits. (Just elected, it may not know
    // the old commit index yet: it learns it once the first entry of its term commits.)
    await expect.poll(async () => (await next.state()).commitIndex, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(before.commitIndex);
    const { index } = await cluster.propose('after-kill', 20_000, leader);
    expect(index).toBeGreaterThan(before.commitIndex);

    // The killed member restarts from its data directory: it kept its log and term ...
    cluster.startMember(leader);
    await leader.waitEvent((e) => e.event === 'started');
    const restarted = await leader.state();
    expect(restarted.lastIndex).toBeGreaterThanOrEqual(before.commitIndex);
    expect(restarted.term).toBeGreaterThanOrEqual(before.term);
    // ... and catches up with what was committed while it was down.
    await expect.poll(async () => (await leader.state()).appliedIndex, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(index);
    await cluster.propose('after-restart');
    // All three agree on one leader again (waitForLeader polls until they do).
    const agreed = await cluster.waitForLeader();
    expect(agreed.running).toBe(true);
  });

  it('forms one cluster when members start one by one, several election timeouts apart', async () => {
    cluster = await ProcessCluster.create(3, { electionTimeoutMs: 150, heartbeatMs: 30 });
    const members = cluster.members as [MemberProcess, MemberProcess, MemberProcess];
    cluster.startMember(members[2]);
    await members[2].waitEvent((e) => e.event === 'started');
    // Alone, a member can never win: it has one vote of three. It campaigns (a pre-vote, so its
    // term stays put) and stays without a leader.
    await expect.poll(async () => (await members[2].state()).role, { timeout: 10_000 }).toBe('precandidate');
    expect(await members[2].state()).toMatchObject({ leader: null, term: 0 });
    cluster.startMember(members[0]);
    await members[0].waitEvent((e) => e.event === 'started');
    // Two of three are a majority: they elect one of themselves.
    const leader = await cluster.waitForLeader();
    expect([members[0], members[2]]).toContain(leader);
    cluster.startMember(members[1]);
    await members[1].waitEvent((e) => e.event === 'started');
    await cluster.propose('x');
    const agreed = await cluster.waitForLeader();
    const states = await Promise.all(members.map((m) => m.state()));
    expect(new Set(states.map((s) => `${s.leader}@${s.term}`)).size).toBe(1);
    expect(states.every((s) => s.leader === agreed.address)).toBe(true);
  });
});
