import { describe, expect, it } from 'vitest';
import { memberSettings } from '../../src/runtime/member-settings.js';
import type { SimJob } from '../../simulations/jobs.js';
import { drainMicrotasks } from '../../simulations/scheduler.js';
import { slotKey, watchRunSpans } from '../fixtures/follower-run.js';
import { LIMIT_MS, MembershipSim } from '../fixtures/membership-sim.js';

/** Mode 'one' jobs whose runs are short: a member holds claims ahead (the look-ahead) between them. */
const JOBS: SimJob[] = Array.from({ length: 6 }, (_, i) => ({ name: `short${i}`, spec: { every: '1s' }, runMs: [50, 150], options: {} }));

/** Compaction often enough that a follower whose disk stops keeping up falls behind the leader's log within a slot. */
const SETTINGS = memberSettings({ snapshotEveryEntries: 20, snapshotRetainEntries: 2 });

/** How long each fsync of the victim's disk takes once it slows (ms): it stops acknowledging appends. */
const SLOW_FSYNC_MS = 4000;

/** How long what the leader sends the victim is lost (ms): a fraction of its lease, which it keeps. */
const MUTE_MS = 150;

/**
 * A follower that falls behind the leader's compaction while it still answers the leader (its
 * disk slow: heartbeats need no write) is sent a snapshot. It holds its lease all the while, and
 * runs the claims it applied before at their instants. The leader moved its claims as soon as
 * it began sending the snapshot, and the slot ran on two members at once (seed 222 of the
 * default swarm, 5 members, 120 s). It now keeps them with the member until it is lost, as a
 * silent member's are.
 */
describe('a follower the leader sends a snapshot to, while it answers', () => {
  for (const seed of [1, 2, 3]) {
    it(`keeps its claims: no slot runs on it and on another member at once (seed ${seed})`, async () => {
      const sim = new MembershipSim(seed, SETTINGS, JOBS);
      const now = (): number => sim.scheduler.nowMs;
      const { spans, overlaps } = watchRunSpans(sim);
      const { leader, follower: victim } = await sim.foundersLed(3, 3000);
      // A claim the victim applied, due soon enough that the snapshot is still on its way then.
      const own = victim.member!.scheduler.state;
      const clusterNow = (): number => victim.member!.driver.clusterClock().now();
      const claim = await sim.until('the victim applied a claim of its own due in 600 to 900 ms', () =>
        [...own.claims.values()].find((c) => c.assignees[0] === victim.id && c.slotMs - clusterNow() >= 600 && c.slotMs - clusterNow() <= 900),
      );
      // What the leader sends it is lost for a while (far less than its lease), and its disk
      // slows: it falls behind the leader's compaction, which entries of the app's bring on, and
      // then answers heartbeats while the snapshot waits for its disk.
      sim.network.muteFor(leader.id, victim.id, MUTE_MS);
      for (let i = 0; i < 3 * SETTINGS.compaction.everyEntries; i++) leader.driver!.propose(Uint8Array.of(i)).catch(() => undefined);
      let sentSnapshot = false;
      const until = now() + 6000;
      while (now() < until) {
        if (!sim.scheduler.step(until)) break;
        await drainMicrotasks();
        for (const m of sim.members.values()) if (m.up) m.scheduleSync(() => (m === victim ? SLOW_FSYNC_MS : 1), (pending) => pending);
        if (leader.driver?.node.progressOf(victim.id)?.state === 'snapshot' && clusterNow() < claim.slotMs) sentSnapshot = true;
      }
      // The case the test is about came to pass: a snapshot on its way to the victim before its claim's instant.
      expect(sentSnapshot).toBe(true);
      await sim.run(LIMIT_MS / 4);
      expect((spans.get(slotKey(claim.job, claim.slotMs)) ?? []).map((r) => r.id)).toContain(victim.id);
      expect(overlaps()).toEqual([]);
    });
  }
});
