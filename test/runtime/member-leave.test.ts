import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { MEMBERSHIP_VERSION } from '../../src/version/versions.js';
import type { SimMember } from '../../simulations/member.js';
import { conf, FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

/**
 * A member leaves the configuration as `cluster.stop({ leave: true })` does, on simulated time:
 * its graceful handover, then its own removal, asked of the leader (the new one, for a leader);
 * it stops as the removal applies, and that is no failure.
 */
const STOP_TIMEOUT_MS = 1_000;

async function leave(sim: MembershipSim, m: SimMember): Promise<boolean> {
  const member = m.member as NonNullable<SimMember['member']>;
  await sim.settle(member.stopGracefully(STOP_TIMEOUT_MS));
  return sim.settle(member.leave(STOP_TIMEOUT_MS));
}

describe('leaving the configuration', () => {
  it('a leader hands over and leaves, then a follower; the last voter cannot, and none of them failed', async () => {
    const sim = new MembershipSim(13, undefined, []);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    expect(await leave(sim, leader)).toBe(true);
    expect(leader.driver?.fatalError).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    const left = FOUNDERS.filter((id) => id !== leader.id);
    await sim.until('the voters left apply it', () => (left.every((id) => conf(sim.get(id)).voters.length === 2) ? true : undefined));

    const follower = sim.get(left.find((id) => sim.get(id) !== sim.leader()) as NodeId);
    expect(await leave(sim, follower)).toBe(true);
    const last = sim.get(left.find((id) => id !== follower.id) as NodeId);
    await sim.until('the last voter applies it', () => (conf(last).voters.length === 1 ? true : undefined));
    expect(conf(last)).toEqual({ voters: [last.id], learners: [] });
    // The last voter cannot leave: it stops all the same, still a member.
    expect(await sim.settle((last.member as NonNullable<SimMember['member']>).leave(STOP_TIMEOUT_MS))).toBe(false);
    expect(sim.fatal.size).toBe(0);
  });
});
