import { describe, expect, it } from 'vitest';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

/** How many vote requests, each under an id of its own, a stranger sends a member. */
const STRANGERS = 1_000;

describe('vote requests from strangers on the production member', () => {
  it('leave nothing of their senders in what the member keeps of its peers, and are counted', async () => {
    const sim = new MembershipSim(31);
    for (const id of FOUNDERS) await sim.start(id);
    const leader = await sim.until('a leader', () => sim.leader());
    const victim = sim.get(FOUNDERS.find((id) => id !== leader.id) as string);
    const driver = victim.driver;
    if (driver === null) throw new Error('no driver');
    const term = driver.node.term;
    // Pre-votes from a log behind the member's: refused, and answered by nobody.
    for (let i = 0; i < STRANGERS; i++) sim.network.send({ type: 'prevote', from: `10.9.${i >> 8}.${i & 255}:7001`, to: victim.id, term: term + 1, lastIndex: 0, lastTerm: 0 });
    await sim.run(100);
    expect(driver.node.fromNonMembers).toBe(STRANGERS);
    // Before: every sender stayed in PeerContact's maps for good.
    for (let i = 0; i < STRANGERS; i++) expect(driver.contact.lastHeard(`10.9.${i >> 8}.${i & 255}:7001`)).toBeUndefined();
    expect(driver.contact.lastHeard(leader.id)).toBeDefined();
    expect(driver.node.term).toBe(term);
  });
});
