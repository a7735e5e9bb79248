import { afterEach, describe, expect, it } from 'vitest';
import { ProcessCluster, type MemberProcess } from './fixtures/process-cluster.js';

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
    const leader = await cluster.waitForLeader();
    for (let i = 0; i < 20; i++) await leader.request('propose', { data: `before-${i}` });
    const before = await leader.state();
    expect(before.commitIndex).toBeGreaterThanOrEqual(21);

    await leader.kill();
    const next = await cluster.waitForLeader(20_000, leader);
    expect(next).not.toBe(leader);
    const afterKill = await next.state();
    expect(afterKill.term).toBeGreaterThan(before.term);
    // Nothing acknowledged is lost, and the new leader commits.
    expect(afterKill.commitIndex).toBeGreaterThanOrEqual(before.commitIndex);
    const { index } = await next.request<{ index: number }>('propose', { data: 'after-kill' });
    expect(index).toBeGreaterThan(before.commitIndex);

    // The killed member restarts from its data directory: it kept its log and term ...
    cluster.startMember(leader);
    await leader.waitEvent((e) => e.event === 'started');
    const restarted = await leader.state();
    expect(restarted.lastIndex).toBeGreaterThanOrEqual(before.commitIndex);
    expect(restarted.term).toBeGreaterThanOrEqual(before.term);
    // ... and catches up with what was committed while it was down.
    await expect.poll(async () => (await leader.state()).appliedIndex, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(index);
    await next.request('propose', { data: 'after-restart' });
    const states = await Promise.all(cluster.members.map((m) => m.state()));
    expect(new Set(states.map((s) => s.leader)).size).toBe(1);
  });

  it('forms one cluster when members start one by one, several election timeouts apart', async () => {
    cluster = await ProcessCluster.create(3, { electionTimeoutMs: 150, heartbeatMs: 30 });
    const members = cluster.members as [MemberProcess, MemberProcess, MemberProcess];
    cluster.startMember(members[2]);
    await members[2].waitEvent((e) => e.event === 'started');
    // Alone, a member can never win: it has one vote of three.
    await expect.poll(async () => (await members[2].state()).term >= 0, { timeout: 5000 }).toBe(true);
    expect((await members[2].state()).leader).toBe(null);
    cluster.startMember(members[0]);
    await members[0].waitEvent((e) => e.event === 'started');
    const leader = await cluster.waitForLeader();
    cluster.startMember(members[1]);
    await members[1].waitEvent((e) => e.event === 'started');
    await leader.request('propose', { data: 'x' });
    const agreed = await cluster.waitForLeader();
    const states = await Promise.all(members.map((m) => m.state()));
    expect(new Set(states.map((s) => `${s.leader}@${s.term}`)).size).toBe(1);
    expect(states.every((s) => s.leader === agreed.address)).toBe(true);
  });
});
