import { describe, expect, it } from 'vitest';
import { RemovedError, VersionNotActiveError } from '../../src/errors.js';
import type { NodeId } from '../../src/raft/types.js';
import type { MemberSettings } from '../../src/runtime/member-settings.js';
import { MEMBERSHIP_VERSION } from '../../src/version/versions.js';
import type { SimMember } from '../../simulations/member.js';
import { simPeerIdOf } from '../../simulations/network.js';
import { drainMicrotasks } from '../../simulations/scheduler.js';
import { conf, FOUNDERS, JOB, LIMIT_MS, MembershipSim, SETTINGS, WITHOUT_MEMBERSHIP } from '../fixtures/membership-sim.js';

/**
 * Configuration changes wired through the production member (driver, member, configuration
 * keeper, simulated transport), on simulated time: a member joins as a learner, catches up,
 * runs its share of a mode 'all' job, is promoted; a founding member is removed and stops,
 * disrupting nothing. And the version gate: no change before the cluster runs version 2.
 */
describe('configuration changes on the production member', () => {
  it('adds a learner that catches up and takes work, promotes it, and removes a founding member, which stops and disrupts nothing', async () => {
    const sim = new MembershipSim(3);
    for (const id of FOUNDERS) await sim.start(id);
    // The version rises to 2 by itself: every member reads it.
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const m4 = await sim.start('m4');
    const leader = await sim.until('a leader', () => sim.leader());

    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id: 'm4' }));
    expect(conf(leader)).toEqual({ voters: FOUNDERS, learners: ['m4'] });
    // The learner catches up, learns that it is one, and runs its share of the mode 'all' job.
    await sim.until('m4 applies its own addition', () => (conf(m4).learners.includes('m4') ? true : undefined));
    await sim.until('m4 runs a slot', () => sim.runs.find((r) => r.id === 'm4'));
    expect(m4.driver?.node.role).toBe('follower');
    expect(leader.member?.eligibleMembers()).toContain('m4');

    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'promote', id: 'm4' }));
    await sim.until('every member sees m4 a voter', () => ([...sim.members.values()].every((m) => conf(m).voters.includes('m4')) ? true : undefined));

    // A founding follower is removed: it stops as it applies the change, and no election follows.
    const removed = FOUNDERS.find((id) => id !== leader.id) as NodeId;
    const term = leader.driver?.node.term;
    const termsBefore = sim.terms.length;
    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'remove', id: removed }));
    await sim.until('the removed member stops', () => sim.fatal.get(removed));
    expect(sim.fatal.get(removed)).toBeInstanceOf(RemovedError);
    expect(sim.fatal.get(removed)).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    await expect(sim.get(removed).driver?.propose(Uint8Array.of(1))).rejects.toMatchObject({ code: 'CRONRAFT_REMOVED' });
    const runsBefore = sim.runs.filter((r) => r.id === removed).length;
    await sim.run(10_000);
    expect(sim.runs.filter((r) => r.id === removed).length).toBe(runsBefore);
    expect(sim.leader()).toBe(leader);
    expect(leader.driver?.node.term).toBe(term);
    expect(sim.terms.slice(termsBefore).every((t) => t.term === term)).toBe(true);
    const remaining = [...sim.members.values()].filter((m) => m.id !== removed);
    for (const m of remaining) expect(conf(m)).toEqual({ voters: ['m4', ...FOUNDERS.filter((id) => id !== removed)].sort(), learners: [] });
    // The three left still commit, and run the job.
    const runsNow = sim.runs.length;
    await sim.until('runs go on', () => (new Set(sim.runs.slice(runsNow).map((r) => r.id)).size === 3 ? true : undefined));
    expect(sim.fatal.size).toBe(1);
  });

  it('removes the leader: it stops, hands over, and the voters left elect a leader and go on', async () => {
    const sim = new MembershipSim(7);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'remove', id: leader.id }));
    await sim.until('the removed leader stops', () => sim.fatal.get(leader.id));
    expect(sim.fatal.get(leader.id)).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    const next = await sim.until('a new leader', () => sim.leader());
    expect(next.id).not.toBe(leader.id);
    const left = FOUNDERS.filter((id) => id !== leader.id);
    await sim.until('the voters left apply the change', () => (left.every((id) => conf(sim.get(id)).voters.length === 2) ? true : undefined));
    for (const id of left) expect(conf(sim.get(id))).toEqual({ voters: left, learners: [] });
    // Two voters commit on: a proposal through the new leader is applied.
    await sim.settle((next.driver as NonNullable<SimMember['driver']>).propose(Uint8Array.of(7)));
    expect(sim.fatal.size).toBe(1);
  });

  it('catches a learner up by a snapshot that carries the configuration, and it restarts from it', async () => {
    const small: MemberSettings = { ...SETTINGS, compaction: { everyEntries: 20, retainEntries: 5 } };
    const sim = new MembershipSim(5, small);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    // Enough entries that the leader's log no longer starts at 1.
    await sim.until('the leader compacted', () => ((leader.driver?.node.log.firstIndex() ?? 1) > 1 ? true : undefined));
    const m4 = await sim.start('m4');
    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id: 'm4' }));
    // m4's disk is slow: while the snapshot waits for it, m4 answers heartbeats, its clock is
    // measured, yet it is given no work.
    const until = sim.scheduler.nowMs + LIMIT_MS;
    while (!(leader.driver?.node.progressOf('m4')?.state === 'snapshot' && leader.driver.clockOffsets().has('m4') && leader.driver.contact.lastHeard('m4') !== undefined)) {
      if (!sim.scheduler.step(until)) throw new Error('m4 never live and measured while a snapshot is on its way');
      await drainMicrotasks();
      for (const m of sim.members.values()) if (m.up) m.scheduleSync(() => (m === m4 ? 2_000 : 1), (pending) => pending);
    }
    expect(leader.member?.eligibleMembers()).not.toContain('m4');
    await sim.until('m4 learns it is a learner', () => (conf(m4).learners.includes('m4') ? true : undefined));
    expect(m4.driver?.snapshotsInstalled).toBeGreaterThan(0);
    await sim.until('m4 given work once caught up', () => (leader.member?.eligibleMembers().includes('m4') === true ? true : undefined));
    // Once compacted past the change, a snapshot holds it: m4 restarts from it a learner.
    await sim.until('m4 compacted past its addition', () => (m4.driver?.node.latestSnapshot.conf?.learners.includes('m4') === true && (m4.driver?.snapshotsTaken ?? 0) > 0 ? true : undefined));
    m4.crash();
    await m4.start(sim.network, { voters: FOUNDERS, jobs: [JOB], settings: small }, { onStart: () => undefined, onApplied: () => undefined, onSnapshotInstalled: () => undefined, onSchedulerApplied: () => undefined, onSoftState: () => undefined, onRunStart: () => undefined, onRun: () => undefined, onFatal: (id, e) => sim.fatal.set(id, e) });
    expect(conf(m4)).toEqual({ voters: FOUNDERS, learners: ['m4'] });
    expect(sim.fatal.size).toBe(0);
  });

  it('refuses a change while the cluster runs version 1: before the version rose, and while a member cannot read version 2', async () => {
    const sim = new MembershipSim(4);
    await sim.start('m1');
    await sim.start('m2');
    await sim.start('m3', WITHOUT_MEMBERSHIP);
    const leader = await sim.until('a leader', () => sim.leader());
    expect(leader.member?.versions.active).toBe(1);
    expect(() => leader.member?.proposeConfChange({ type: 'remove', id: 'm3' })).toThrow(VersionNotActiveError);
    // With a member that cannot read it, the version never rises, and the gate holds.
    await sim.run(10_000);
    expect(leader.member?.versions.active).toBe(1);
    expect(() => leader.member?.proposeConfChange({ type: 'remove', id: 'm3' })).toThrow(expect.objectContaining({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', needs: MEMBERSHIP_VERSION }));
    expect(conf(leader)).toEqual({ voters: FOUNDERS, learners: [] });
  });

  it('forwards a change from a follower to the leader, and its refusal back', async () => {
    const sim = new MembershipSim(6);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    const follower = sim.get(FOUNDERS.find((id) => id !== leader.id) as NodeId);
    await sim.start('m4');
    const added = await sim.settle((follower.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id: 'm4' }));
    // Resolved on the follower once it applied the change, at the index the leader gave it.
    expect(conf(follower)).toEqual({ voters: FOUNDERS, learners: ['m4'] });
    expect(follower.driver?.node.log.term(added.index)).toBe(leader.driver?.node.term);
    await expect(sim.settle((follower.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'remove', id: 'nobody' }))).rejects.toMatchObject({ code: 'CRONRAFT_MEMBERSHIP_REFUSED', reason: 'not-member' });
    await expect(leader.member?.proposeConfChange({ type: 'remove', id: 'nobody' })).rejects.toMatchObject({ code: 'CRONRAFT_MEMBERSHIP_REFUSED', reason: 'not-member' });
  });
});

describe('binding members to their peer ids (trust on first use)', () => {
  /** The peer ids `m`'s configuration binds, by member. */
  const peerIds = (m: SimMember): Record<NodeId, string> => Object.fromEntries(m.member?.configuration.conf.peerIds ?? []);
  const boundAs = (ids: readonly NodeId[]): Record<NodeId, string> => Object.fromEntries(ids.map((id) => [id, simPeerIdOf(id)]));

  it('binds every founding member once the cluster runs version 2, each to the peer id its connection authenticated, and a learner added without one', async () => {
    const sim = new MembershipSim(8);
    for (const id of FOUNDERS) await sim.start(id);
    const leader = await sim.until('a leader', () => sim.leader());
    // Nothing is bound before version 2: a binding is a conf change.
    expect(leader.member?.versions.active).toBe(1);
    expect(peerIds(leader)).toEqual({});
    await sim.until('every member bound on every member', () => (FOUNDERS.every((id) => Object.keys(peerIds(sim.get(id))).length === FOUNDERS.length) ? true : undefined));
    for (const id of FOUNDERS) expect(peerIds(sim.get(id))).toEqual(boundAs(FOUNDERS));
    // The transports took the bindings, and the frames of each member pass them: the cluster commits on.
    const current = await sim.until('a leader', () => sim.leader());
    await sim.settle((current.driver as NonNullable<SimMember['driver']>).propose(Uint8Array.of(1)));

    const m4 = await sim.start('m4');
    await sim.settle((current.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id: 'm4' }));
    await sim.until('m4 bound on m4', () => (peerIds(m4).m4 !== undefined ? true : undefined));
    expect(peerIds(m4)).toEqual(boundAs([...FOUNDERS, 'm4']));
    expect(sim.fatal.size).toBe(0);
  });
});
