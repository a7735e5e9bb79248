import { describe, expect, it } from 'vitest';
import { runExclusive } from '../../src/api/run-exclusive.js';
import { unansweredLockHooks } from '../../src/api/unanswered-locks.js';
import { memberSettings } from '../../src/runtime/member-settings.js';
import { FOUNDERS, JOB, MembershipSim } from '../fixtures/membership-sim.js';
import { exclusiveContextOf } from '../fixtures/sim-exclusive.js';

const TEN_MINUTES = 600_000;

describe('a lock whose proposal went unanswered, brought to its member by a snapshot', () => {
  it('is let go as the snapshot is installed, where it stayed held with no task until its atMostFor', async () => {
    // Snapshots every few entries, so that the leader compacts past the cut-off member soon.
    const sim = new MembershipSim(5, memberSettings({ snapshotEveryEntries: 16, snapshotRetainEntries: 0 }), [JOB]);
    for (const id of FOUNDERS) await sim.start(id);
    const leader = await sim.until('a leader, and every clock synced', () => {
      const l = sim.leader();
      return l !== undefined && FOUNDERS.every((id) => sim.get(id).driver?.clockSynced === true) ? l : undefined;
    });
    const [cut, other] = FOUNDERS.filter((id) => id !== leader.id).map((id) => sim.get(id));
    const ctx = exclusiveContextOf(sim, cut!);
    // The member's wiring (cluster-start.ts): a snapshot installed lets go of such locks.
    const hooks = unansweredLockHooks(cut!.id, ctx.unanswered, () => cut!.member ?? undefined, (run) => void ctx.timers.setTimeout(run, 50));
    sim.onSnapshotInstalled = (id, index) => {
      if (id === cut!.id) hooks.installed(index);
    };
    // The member's proposal reaches the leader, which commits it, but nothing comes back: the
    // member hears no leader any more, and the call is told its outcome is unknown.
    sim.network.block(leader.id, cut!.id);
    let ran = false;
    await expect(sim.settle(runExclusive(ctx, 'reindex', { atMostFor: TEN_MINUTES }, () => void (ran = true)))).rejects.toMatchObject({ code: 'CRONRAFT_OUTCOME_UNKNOWN' });
    const held = leader.member!.scheduler.state.locks.get('reindex');
    expect(held).toMatchObject({ holder: cut!.id });
    // The job's runs fill the log, the leader compacts it, and the cut-off member is sent a snapshot.
    await sim.run(10_000);
    expect(cut!.driver!.snapshotsInstalled).toBe(0);
    sim.network.healAll();
    await sim.until('the snapshot is installed here', () => (cut!.driver!.snapshotsInstalled > 0 ? true : undefined));
    await sim.until('the lock is let go', () => ((leader.member!.scheduler.state.locks.get('reindex')?.untilMs ?? 0) <= leader.driver!.clusterClock().now() ? true : undefined));
    // Another member takes it at once, not ten minutes on.
    let otherRan = false;
    expect(await sim.settle(runExclusive(exclusiveContextOf(sim, other!), 'reindex', { atMostFor: TEN_MINUTES }, () => void (otherRan = true)))).toBe(true);
    expect({ ran, otherRan }).toEqual({ ran: false, otherRan: true });
  }, 60_000);
});
