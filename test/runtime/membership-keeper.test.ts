import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { PROMOTE_STABLE_MS } from '../../src/runtime/membership-decide.js';
import { memberSettings } from '../../src/runtime/member-settings.js';
import { MEMBERSHIP_VERSION } from '../../src/version/versions.js';
import type { SimMember } from '../../simulations/member.js';
import { conf, FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

/**
 * The leader's membership keeper on the production member, on simulated time: learners are
 * promoted once caught up and stable, up to `voters`; a voter that dies for good is removed
 * after `deadMemberAfterMs` and a learner promoted in its place.
 */
const DEAD_MS = 3_000;

async function addLearner(sim: MembershipSim, id: NodeId): Promise<SimMember> {
  const m = await sim.start(id);
  const leader = await sim.until('a leader', () => sim.leader());
  await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id }));
  return m;
}

const everyLive = (sim: MembershipSim, test: (c: ReturnType<typeof conf>) => boolean): true | undefined =>
  [...sim.members.values()].filter((m) => m.up).every((m) => test(conf(m))) ? true : undefined;

describe('the membership keeper', () => {
  it('promotes stable learners up to the voters wanted, then replaces a voter that died for good', async () => {
    const sim = new MembershipSim(11, memberSettings({ deadMemberAfterMs: DEAD_MS }), []);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const added = sim.scheduler.nowMs;
    await addLearner(sim, 'm4');
    await addLearner(sim, 'm5');
    await sim.until('five voters on every member', () => everyLive(sim, (c) => c.voters.length === 5 && c.learners.length === 0));
    // Promoted only once caught up for the stable time.
    expect(sim.scheduler.nowMs - added).toBeGreaterThanOrEqual(PROMOTE_STABLE_MS);

    // A follower dies for good: removed after deadMemberAfterMs (four voters left, all live)...
    const leader = sim.leader() as SimMember;
    const dead = ['m1', 'm2', 'm3', 'm4', 'm5'].find((id) => id !== leader.id) as NodeId;
    sim.get(dead).crash();
    const died = sim.scheduler.nowMs;
    await sim.until('the dead voter removed', () => everyLive(sim, (c) => !c.voters.includes(dead)));
    expect(sim.scheduler.nowMs - died).toBeGreaterThanOrEqual(DEAD_MS);
    // ...and a learner added takes its place.
    await addLearner(sim, 'm6');
    await sim.until('m6 promoted in its place', () => everyLive(sim, (c) => c.voters.length === 5 && c.voters.includes('m6')));
    expect(sim.fatal.size).toBe(0);
  });

  it('counts a member added after the leader took office as silent from its addition, not from the office', async () => {
    const sim = new MembershipSim(12, memberSettings({ deadMemberAfterMs: DEAD_MS }), []);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    // The leader has been in office longer than deadMemberAfterMs when a learner is added whose
    // process is not up yet (a joiner still installing the snapshot says nothing either).
    await sim.run(2 * DEAD_MS);
    const leader = sim.leader() as SimMember;
    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id: 'm4' }));
    const added = sim.scheduler.nowMs;
    await sim.run(DEAD_MS - 1000);
    expect(conf(leader).learners).toEqual(['m4']);
    // It never comes: removed, deadMemberAfterMs after its addition at the earliest.
    await sim.until('the silent learner removed', () => everyLive(sim, (c) => c.learners.length === 0));
    expect(sim.scheduler.nowMs - added).toBeGreaterThanOrEqual(DEAD_MS);
    expect(sim.fatal.size).toBe(0);
  });
});
