import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

/**
 * A member whose driver failed (here its disk) records nothing more: it must start nothing more
 * either, though it holds claims of slots still to come (the leader claims ahead).
 */
describe('a member whose driver failed', () => {
  it('starts no run after, of the slots claimed for it before', async () => {
    const sim = new MembershipSim(5);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('every member runs a slot', () => (FOUNDERS.every((id) => sim.runs.some((r) => r.id === id)) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    const victim = sim.get(FOUNDERS.find((id) => id !== leader.id) as NodeId);
    // Once it has applied a claim of its own for a slot still some way off, its disk fails (at
    // its next write), before that slot comes.
    const ahead = (): boolean => [...(victim.member?.scheduler.state.claims.values() ?? [])].some((c) => c.assignees.includes(victim.id) && c.slotMs > victim.clock.now() + 300);
    await sim.until('the victim holds a claim of a slot to come', () => (ahead() ? true : undefined));
    victim.disk.write = (): Promise<void> => Promise.reject(new Error('disk on fire'));
    await sim.until('the victim fails', () => sim.fatal.get(victim.id));
    expect(ahead()).toBe(true);
    const failedAt = sim.scheduler.nowMs;
    await sim.run(5_000);
    expect(sim.runs.filter((r) => r.id === victim.id && r.t > failedAt)).toEqual([]);
    // The others go on.
    expect(sim.runs.filter((r) => r.id === leader.id && r.t > failedAt).length).toBeGreaterThan(0);
  });
});

describe('a leader whose driver failed', () => {
  it('plans and proposes nothing after, though its node still says it leads', async () => {
    const sim = new MembershipSim(5);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('every member runs a slot', () => (FOUNDERS.every((id) => sim.runs.some((r) => r.id === id)) ? true : undefined));
    const victim = await sim.until('a leader', () => sim.leader());
    const driver = victim.member?.driver;
    if (driver === undefined) throw new Error('the leader has no member');
    // Every proposal the member makes once its failure is known is counted: its scheduler's
    // planning (claims), fan-out's delivery and the keepers of versions, bindings and membership
    // all propose through the driver, and so do its runs' records, which fail at once and are not
    // tried again (it halts as it fails, flushing what it holds once).
    let failed = false;
    let proposedAfter = 0;
    const propose = driver.propose.bind(driver);
    const proposeConfChange = driver.proposeConfChange.bind(driver);
    driver.propose = (...args) => {
      if (failed) proposedAfter++;
      return propose(...args);
    };
    driver.proposeConfChange = (...args) => {
      if (failed) proposedAfter++;
      return proposeConfChange(...args);
    };
    victim.disk.write = (): Promise<void> => Promise.reject(new Error('disk on fire'));
    await sim.until('the leader fails', () => sim.fatal.get(victim.id));
    failed = true;
    expect(driver.node.role).toBe('leader');
    await sim.run(5_000);
    expect(proposedAfter).toBe(0);
    // The others elect a leader of their own (a failed member is not one: sim.leader()).
    const next = await sim.until('another leader', () => sim.leader());
    expect(next.id).not.toBe(victim.id);
  });
});
