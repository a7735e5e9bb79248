import { describe, expect, it } from 'vitest';
import { leaseMs } from '../../src/runtime/lease.js';
import { heartbeatIntervalMs, memberSettings } from '../../src/runtime/member-settings.js';
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

// The other side of the same promise (README, "Failures"): answers late by less than the lease (a
// loaded machine, a slow link) still renew the lease, as the leader's heartbeats echo them, and
// the leader never counts the member silent: its run goes on to its end, and its slot stays.
describe('a follower whose answers reach the leader late by less than its lease', () => {
  // Late, with a heartbeat interval and a round trip on top, still well within the lease.
  const lateMs = Math.floor(leaseMs(SETTINGS.timing.electionTimeoutMs) / 2) - heartbeatIntervalMs(SETTINGS.timing);

  it(`keeps its lease and its slot: its run succeeds, and the slot runs nowhere else (answers ${lateMs} ms late)`, async () => {
    for (const seed of [1, 2, 3]) {
      const sim = new MembershipSim(seed, SETTINGS, [JOB], FOUNDERS);
      for (const id of FOUNDERS) await sim.start(id);
      const { starts, ends } = watchRuns(sim);
      const { x, leader } = await runOnFollower(sim, starts);
      await sim.run(2000);
      sim.network.clog(x.id, leader, lateMs);
      await sim.run(12_000);
      const label = `seed ${seed}`;
      expect(starts.filter((s) => s.slotMs === x.slotMs).map((s) => s.id), label).toEqual([x.id]);
      const xRun = ends.find((e) => e.slotMs === x.slotMs);
      expect(xRun?.id, label).toBe(x.id);
      expect(xRun?.outcome, label).toBe('succeeded');
    }
  }, 120_000);
});
