import { describe, it } from 'vitest';
import { memberSettings } from '../../src/runtime/member-settings.js';
import type { SimJob } from '../../simulations/jobs.js';
import { expectMovedAfterItEnded, runOnFollower, watchRuns } from '../fixtures/follower-run.js';
import { MembershipSim } from '../fixtures/membership-sim.js';

const VOTERS = ['m1', 'm2', 'm3', 'm4', 'm5'];
const SETTINGS = memberSettings();
/** A slot every 15 s, each run 12 s. */
const JOB: SimJob = { name: 'long', spec: { every: '15s' }, runMs: [12_000, 12_000], options: { mode: 'one' } };
/** A clog this long is a partition that closes no connection, as a real one does not at first. */
const FOREVER_MS = 3_600_000;

// Found by a reviewing helper: the old leader, cut off with a follower X running a slot, went on
// leading X until CheckQuorum deposed it, and each heartbeat renewed X's lease; the new leader,
// which had never heard from X, moved X's claim after its grace of two heartbeats, and the slot
// ran on two members at once until X's lease ran out.
describe('a new leader that has not heard from a member since it began to lead', () => {
  it("moves the member's claims only once the lease the deposed leader renewed has run out", async () => {
    for (const seed of [1, 2, 3]) {
      const sim = new MembershipSim(seed, SETTINGS, [JOB], VOTERS);
      for (const id of VOTERS) await sim.start(id);
      const { starts, ends } = watchRuns(sim);
      // A run on a follower X, under leader L.
      const { x, leader } = await runOnFollower(sim, starts);
      await sim.run(2000);
      // L and X cut off from the other three, no connection closed.
      const minority = [leader, x.id];
      for (const a of minority) {
        for (const b of VOTERS.filter((id) => !minority.includes(id))) {
          sim.network.clog(a, b, FOREVER_MS);
          sim.network.clog(b, a, FOREVER_MS);
        }
      }
      await sim.run(10_000);
      // The slot moved to the majority's side, and X's run ended (aborted) before it started there.
      expectMovedAfterItEnded(starts, ends, x, `seed ${seed}`);
    }
  }, 120_000);
});
