import { describe, expect, it } from 'vitest';
import type { SimJob } from '../../simulations/jobs.js';
import { watchRunSpans } from '../fixtures/follower-run.js';
import { FOUNDERS, MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';

/** Mode 'one' jobs whose runs last 1.5 to 2.5 s. */
const JOBS: SimJob[] = Array.from({ length: 6 }, (_, i) => ({ name: `one${i}`, spec: { every: '1s' }, runMs: [1500, 2500], options: {} }));
/** Mode 'one' jobs whose runs are short: a member holds claims ahead (the look-ahead) between them. */
const SHORT_JOBS: SimJob[] = Array.from({ length: 6 }, (_, i) => ({ name: `short${i}`, spec: { every: '1s' }, runMs: [50, 150], options: {} }));

/**
 * A live, connected member removed while it runs a slot. The removed member's run must end as
 * it applies its own removal (its signal aborted), not once its lease runs out (about 0.6 s
 * later, before the fix), or one mode 'one' slot runs on two members at once. One that never
 * learns of its removal (it hears nothing more) keeps its claim at the leader until it has been
 * silent for its lease and a plan interval, as a silent member does: before, the leader moved
 * it as it applied the removal, while the run went on until the member's lease ran out (seed 6
 * of the default swarm, its partitions quiet). The same holds for a claim it holds ahead and has
 * not started: the leader unregisters a removed member from its jobs only once it counts it
 * lost, since the member, not knowing, starts the claim at its instant while its lease lasts
 * (before, the unregistration let the leader take the claim as given back and move it: seed 6 of
 * a swarm with runExclusive's calls, 3 members, 20 s).
 */
describe('removing a live member while it runs a slot', () => {
  for (const { deaf, ahead } of [
    { deaf: false, ahead: false },
    { deaf: true, ahead: false },
    { deaf: true, ahead: true },
  ]) {
    const title = `${deaf ? ', though the member hears nothing more (it never learns of its removal)' : ''}${ahead ? ', removed with a claim whose instant comes within its lease' : ''}`;
    it(`never has the slot running on the removed member and on another at once${title}`, async () => {
      const sim = new MembershipSim(1, SETTINGS, ahead ? SHORT_JOBS : JOBS);
      const now = (): number => sim.scheduler.nowMs;
      const { spans: runs, overlaps } = watchRunSpans(sim);
      const { leader, follower } = await sim.foundersLed(3, 3000);
      const victim = follower.id;
      if (ahead) {
        // A claim of the victim, not started, whose instant comes within its lease but after the removal commits.
        const state = leader.member!.scheduler.state;
        const clusterNow = (): number => leader.member!.driver.clusterClock().now();
        await sim.until('the victim holds a claim due in 150 to 250 ms', () => ([...state.claims.values()].some((c) => c.assignees[0] === victim && c.slotMs - clusterNow() >= 150 && c.slotMs - clusterNow() <= 250) ? true : undefined));
      } else {
        await sim.until('the victim runs a slot', () => ([...runs.values()].some((rs) => rs.some((r) => r.id === victim && r.to === Number.POSITIVE_INFINITY && now() - r.from > 10)) ? true : undefined));
      }
      // Deaf: what is sent to the victim is lost, its connections open (a partition as it begins).
      if (deaf) for (const id of FOUNDERS) if (id !== victim) sim.network.mute(id, victim);
      await sim.settle(leader.member!.proposeConfChange({ type: 'remove', id: victim }));
      await sim.run(4000);
      if (!deaf) expect(sim.fatal.get(victim)).toMatchObject({ code: 'CRONRAFT_REMOVED' });
      expect(overlaps()).toEqual([]);
      // Lost by now, the removed member handles no job any more.
      const handling = [...sim.leader()!.member!.scheduler.state.jobs.values()].filter((job) => job.handlers.has(victim)).map((job) => job.name);
      expect(handling).toEqual([]);
    });
  }
});
