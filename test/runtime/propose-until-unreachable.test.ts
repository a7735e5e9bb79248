import { describe, expect, it } from 'vitest';
import type { SimJob } from '../../simulations/jobs.js';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

/** A job on every member, its runs long enough that some end while the member is cut off. */
const JOBS: SimJob[] = [{ name: 'everyone', spec: { every: '1s' }, runMs: [200, 400], options: { mode: 'all' } }];

/** How long the member is cut off from every other (ms): far past its leader's silence bound. */
const CUT_OFF_MS = 5000;

/**
 * A member cut off from the leader holds a loop per record of its runs (a start, an outcome, an
 * interrupted slot), each proposed until applied. Each try used to encode its command and be
 * refused with a NotLeaderError at once, every plan interval, for as long as the leader stayed
 * out of reach. Now no try is made while the driver knows the leader out of reach, and the
 * records still go in once it is back.
 */
describe('a member cut off from the leader with records of its runs to propose', () => {
  it('proposes none while the leader is out of reach, and every one once it is back', async () => {
    const sim = new MembershipSim(1, undefined, JOBS);
    const { follower: victim } = await sim.foundersLed(3, 3000);
    const driver = victim.member!.driver;
    const propose = driver.propose.bind(driver);
    let whileUnreachable = 0;
    let ended = 0;
    driver.propose = (...args) => {
      if (driver.leaderUnreachable) whileUnreachable++;
      return propose(...args);
    };
    sim.onRun = (id) => {
      if (id === victim.id) ended++;
    };
    for (const other of FOUNDERS) {
      if (other === victim.id) continue;
      sim.network.block(victim.id, other);
      sim.network.block(other, victim.id);
    }
    await sim.run(CUT_OFF_MS);
    // The case came to pass: runs ended (or were aborted) with the leader out of reach.
    expect(driver.leaderUnreachable).toBe(true);
    expect(ended).toBeGreaterThan(0);
    // Without the check, each record's loop tried every plan interval: hundreds of tries.
    expect(whileUnreachable).toBe(0);
    sim.network.healAll();
    const state = sim.leader()!.member!.scheduler.state;
    const unrecorded = (): number => [...state.claims.values()].filter((c) => c.assignees.includes(victim.id) && c.starts.get(victim.id) !== undefined && c.outcomes.get(victim.id) === undefined).length;
    await sim.until('the victim’s records applied on the leader', () => (unrecorded() === 0 ? true : undefined));
  });
});
