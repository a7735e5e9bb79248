import type { NodeId } from '../src/raft/types.js';
import type { JobRecord } from '../src/scheduler/records.js';
import { checkReadLiveness } from './barriers.js';
import { entryText } from './checker.js';
import { checkDeployed, checkDropped } from './deploys.js';
import { UNSCHEDULED_AFTER_MS } from '../src/runtime/scheduler/scheduler-runtime.js';
import { checkFanoutSettles, fanoutAtHeal } from './fanout-settle.js';
import { checkHistories } from './history-checker.js';
import { rollingRestart } from './handover.js';
import { outcomeGraceMs } from './jobs.js';
import type { SimMember } from './member.js';
import type { RunLoop } from './run-loop.js';
import { VERSION_LIVENESS_BOUND_MS } from './version-checker.js';
import { proposalBytes, type SimWorld } from './world.js';

/** After healing, the scheduler gets this long to settle before every slot must run on time. */
const SCHEDULER_SETTLE_MS = 10_000;
/** Then slots are watched for this long; a slot due in it must start within LATENESS_BOUND_MS. */
const SCHEDULER_WATCH_MS = 15_000;
/** How late a slot due in the watch (SCHEDULER_WATCH_MS) may start, with nothing going wrong. */
const LATENESS_BOUND_MS = 50;
/** Bound on the time members get, after the outcome grace, to apply what was committed before their history() is read. */
const HISTORY_CATCH_UP_MS = 1000;
/**
 * How long past UNSCHEDULED_AFTER_MS since the latest start of a member a job a deploy dropped
 * gets to leave the log: a slot of it must reach each member that still has it registered (the
 * leader spreads its slots among them), and each one's unregistration commit.
 */
const DROPPED_SETTLE_MS = 15_000;

/**
 * A run's second phase, where liveness is checked: everything is healed, then a new entry must
 * commit on every member within the bound, a barrier on each resolve (with barriers), an upgrade's version must rise, every slot due once
 * the scheduler settled must run on time with an outcome, and every member's history() must
 * show it, and a deploy's changed jobs must have taken their new form; then, if asked, a
 * rolling restart of graceful stops (handover.ts). It ends early if an event throws
 * (`loop.crashed`).
 */
export async function checkAfterHealing(world: SimWorld, loop: RunLoop): Promise<void> {
  const healedAt = await heal(world, loop);
  const fanoutHeal = fanoutAtHeal(world);
  await checkRaftLiveness(world, loop, healedAt);
  if (loop.crashed) return;
  await checkReadLiveness(world, loop);
  if (loop.crashed) return;
  const { scheduler, jobs, slots, runChecks, members, report } = world;
  if (world.versionsMode === 'upgrade') {
    // Every member runs the next release by now (the upgrades end within the fault phase, and
    // healing restarted those down): its version must rise, and a note under it commit.
    await loop.run(healedAt + VERSION_LIVENESS_BOUND_MS, () => world.versionChecks.reached(world.current()));
    if (loop.crashed) return;
    world.versionChecks.checkLiveness(scheduler.nowMs, world.current(), healedAt);
  }
  if (jobs.length === 0) return;
  const watchEnd = healedAt + SCHEDULER_SETTLE_MS + SCHEDULER_WATCH_MS;
  await loop.run(watchEnd + outcomeGraceMs(jobs));
  if (loop.crashed) return;
  const window = { fromT: healedAt + SCHEDULER_SETTLE_MS, toT: watchEnd, latenessMs: LATENESS_BOUND_MS, settledT: watchEnd };
  const t = scheduler.nowMs;
  const dropped = new Set(world.deploy?.dropped ?? []);
  slots.finish(t, { ...window, dropped, excused: (job, slotMs) => runChecks.excused(job, slotMs, undefined, LATENESS_BOUND_MS), underway: (job, slotMs, member) => runChecks.underway(t, job, slotMs, member) });
  runChecks.finish(scheduler.nowMs, window);
  // Each member's history() is read once it applied what any member had committed by now: a
  // follower learns of a commit point with the leader's next message, and shows an outcome
  // then. One that has not caught up by the bound is read as it is (and shows what it lacks).
  const committed = Math.max(0, ...members.map((m) => m.driver?.node.log.committed ?? 0));
  await loop.run(scheduler.nowMs + HISTORY_CATCH_UP_MS, () => members.every((m) => m.driver === null || m.driver.node.log.applied >= committed));
  if (loop.crashed) return;
  const states = members.flatMap((m) => (m.member === null ? [] : [{ id: m.id, state: m.member.scheduler.state }]));
  checkHistories(states, watchEnd, (job, slotMs, member) => runChecks.underway(scheduler.nowMs, job, slotMs, member), (what) => report(scheduler.nowMs, 'history-outcome', what), dropped);
  if (world.deploy !== null) {
    const current = world.current();
    checkDeployed(jobsOf(current), current.map((m) => m.id), world.deploy.changed, (what) => report(scheduler.nowMs, 'deploy', what));
    if (world.deploy.dropped.length > 0) {
      // Every member, started again without the dropped jobs, takes itself off them once a slot reaches it past UNSCHEDULED_AFTER_MS.
      await loop.run(Math.max(scheduler.nowMs, ...current.map((m) => m.startedAtMs + UNSCHEDULED_AFTER_MS + DROPPED_SETTLE_MS)));
      if (loop.crashed) return;
      const now = world.current();
      checkDropped(jobsOf(now), now.map((m) => m.id), world.deploy.dropped, (what) => report(scheduler.nowMs, 'deploy', what));
    }
  }
  await checkFanoutSettles(world, loop, healedAt, fanoutHeal);
  if (loop.crashed) return;
  if (world.options.handover === true) await rollingRestart(world, loop);
}

/** The jobs in each running member's state, by member: what the deploy's checks read. */
function jobsOf(members: readonly SimMember[]): Array<{ readonly id: NodeId; readonly jobs: ReadonlyMap<string, JobRecord> }> {
  return members.flatMap((m) => (m.member === null ? [] : [{ id: m.id, jobs: m.member.scheduler.state.jobs }]));
}

/**
 * Heals the network, sets clocks right, ends stalls and pauses, restarts the dead, stops losing
 * messages; the scheduler's checks are calm from when it has settled. Returns when it healed.
 */
async function heal(world: SimWorld, loop: RunLoop): Promise<number> {
  const { network, scheduler, members } = world;
  network.healAll();
  world.record({ t: scheduler.nowMs, kind: 'partition', blocked: [] });
  network.faults = { ...world.faults, lossRate: 0, duplicateRate: 0 };
  loop.endDiskStalls();
  world.membership?.heal();
  for (const m of members) {
    m.clock.reset();
    m.pausedUntil = 0;
    if (!m.up) world.restart(m);
  }
  await Promise.all(world.restarts.splice(0));
  const healedAt = scheduler.nowMs;
  world.healedAtT = healedAt;
  world.runChecks.calmFrom(healedAt + SCHEDULER_SETTLE_MS);
  world.record({ t: healedAt, kind: 'healed' });
  return healedAt;
}

/** A new entry must then commit and be applied on every member of the configuration within the bound. */
async function checkRaftLiveness(world: SimWorld, loop: RunLoop, healedAt: number): Promise<void> {
  const { scheduler, seed, members, ids, livenessBoundMs } = world;
  const marker = `liveness-${seed}`;
  const markerText = entryText(proposalBytes(marker));
  let appliedEverywhere = false;
  const appliedBy = new Set<NodeId>();
  /** Where the marker was first applied: a member whose state reaches it holds it. */
  let markerIndex = 0;
  world.alsoOnApplied = (id, entry): void => {
    if (entryText(entry.data) !== markerText) return;
    appliedBy.add(id);
    if (markerIndex === 0) markerIndex = entry.index;
  };
  // A member may have the marker from a leader's snapshot (compaction), never applying it one
  // by one: its applied index then passed the marker's.
  const hasMarker = (m: SimMember): boolean => appliedBy.has(m.id) || (markerIndex > 0 && (m.driver?.node.log.applied ?? 0) >= markerIndex);
  const retry = (): void => {
    if (appliedBy.size > 0) return;
    world.propose(marker);
    scheduler.after(500, retry);
  };
  retry();
  await loop.run(healedAt + livenessBoundMs, () => {
    appliedEverywhere = world.current().every(hasMarker);
    return appliedEverywhere;
  });
  if (loop.crashed || appliedEverywhere) return;
  // Where each member that did not apply it stands, so the report says where to look.
  const current = world.current();
  const behind = current
    .filter((m) => !hasMarker(m))
    .map((m) => {
      const node = m.driver?.node;
      if (node === undefined) return `${m.id} down`;
      return `${m.id} ${node.role} term ${node.term} leader ${node.leader ?? 'none'} applied ${node.log.applied} committed ${node.log.committed} last ${node.log.lastIndex()} first ${node.log.firstIndex()} snapshot ${node.latestSnapshot.index}`;
    });
  const leader = members.find((m) => m.driver?.node.role === 'leader')?.driver?.node;
  const progressOf = (id: NodeId): string => {
    const p = leader?.progressOf(id);
    return p === undefined ? `${id} ?` : `${id} ${p.state} match ${p.match} next ${p.next}`;
  };
  const progress = ids.filter((id) => id !== leader?.id).map(progressOf).join(', ');
  const leaderAt = leader === undefined ? 'no leader' : `leader ${leader.id} term ${leader.term} committed ${leader.log.committed} last ${leader.log.lastIndex()} first ${leader.log.firstIndex()} [${progress}]`;
  world.report(scheduler.nowMs, 'raft-liveness', `after healing at ${healedAt} ms, no new entry was applied on every member within ${livenessBoundMs} ms (${current.filter(hasMarker).length}/${current.length}; marker at ${markerIndex || 'none yet'}; ${leaderAt}; ${behind.join('; ')})`);
}
