import { describe, it } from 'vitest';
import { memberSettings } from '../../src/runtime/member-settings.js';
import type { SimJob } from '../../simulations/jobs.js';
import { expectMovedAfterItEnded, runOnFollower, watchRuns } from '../fixtures/follower-run.js';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

const SETTINGS = memberSettings();
/** A slot every 15 s, each run 12 s: long enough to be running when the link slows. */
const JOB: SimJob = { name: 'long', spec: { every: '15s' }, runMs: [12_000, 12_000], options: { mode: 'one' } };

// Seen in the default swarm (seeds 7 and 8): a follower X whose answers reached the leader late,
// while the leader's heartbeats reached X on time. The leader counted X silent and moved its
// claim; X, hearing the leader, kept its lease, and its run went on beside the moved one. The
// lease now counts from X's own answer the leader last acknowledged, so both sides measure
// the same silence.
describe('a follower whose answers reach the leader late while it hears the leader', () => {
  for (const lateMs of [1_000, 3_600_000]) {
    it(`has its run aborted before its moved slot starts elsewhere (answers ${lateMs} ms late)`, async () => {
      for (const seed of [1, 2, 3]) {
        const sim = new MembershipSim(seed, SETTINGS, [JOB], FOUNDERS);
        for (const id of FOUNDERS) await sim.start(id);
        const { starts, ends } = watchRuns(sim);
        const { x, leader } = await runOnFollower(sim, starts);
        await sim.run(2000);
        // X's messages to the leader go slow; the leader's to X do not. No connection closes.
        sim.network.clog(x.id, leader, lateMs);
        await sim.run(9_000);
        expectMovedAfterItEnded(starts, ends, x, `seed ${seed}`);
      }
    }, 120_000);
  }
});
