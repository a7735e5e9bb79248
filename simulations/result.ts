import { describeSpec } from './jobs.js';
import type { SimulationResult } from './simulate.js';
import { summarizeJobs } from './summary.js';
import type { SimWorld } from './world.js';

/**
 * The end of every run, however it ended (an event that threw ends it early): the last check
 * (every acknowledged proposal committed), the members stopped, and the SimulationResult
 * assembled from the world's checkers and counters.
 */
export function finishRun(world: SimWorld): SimulationResult {
  const { scheduler, safety, members, network, slots, jobs, configurations, versionChecks, membership } = world;
  safety.checkAcknowledged(scheduler.nowMs);
  for (const m of members) {
    if (m.up) world.runChecks.onStop(scheduler.nowMs, m.id);
    m.member?.stop();
  }
  return {
    seed: world.seed,
    members: [...world.ids],
    snapshotsInstalled: world.snapshotsInstalled,
    violations: safety.violations,
    violationKinds: safety.kinds,
    simulatedMs: scheduler.nowMs,
    healedAtMs: world.healedAtT ?? scheduler.nowMs,
    committed: safety.committedCount,
    acknowledged: world.acknowledged,
    crashes: world.crashes,
    delivered: network.delivered,
    dropped: network.dropped,
    jobs: summarizeJobs(jobs.map((j) => ({ name: j.name, spec: describeSpec(j) })), slots, scheduler.nowMs),
    staleStarts: slots.staleStarts,
    reRuns: slots.reRuns,
    traceHash: world.trace.digest('hex').slice(0, 16),
    drawn: world.drawn,
    settings: world.settings,
    varied: world.varied,
    deploy:
      world.deploy === null
        ? null
        : { jobsChanged: world.deploy.changed.map((j) => j.name), jobsTakenOver: world.deploy.changed.map((j) => j.name).filter((name) => world.slots.takenOver.has(name)), jobsDropped: world.deploy.dropped },
    versions: { mode: world.versionsMode, notesRefused: versionChecks.refusedNotes, notesCommitted: versionChecks.committedNotes, clusterVersion: Math.max(0, ...members.map((m) => m.member?.versions.active ?? 0)) },
    membership: { ...(membership?.counts ?? { mode: world.membershipMode, added: 0, promoted: 0, removed: 0, returned: 0, farBehind: 0 }), voters: configurations.latest.voters, learners: configurations.latest.learners },
    fanout: world.fanout === null || world.fanoutChecks === null ? null : { topics: world.fanout.topics.map((t) => t.name), emitted: world.fanoutChecks.emitted, succeeded: world.fanoutChecks.succeeded, dead: world.fanoutChecks.dead },
    locks: world.locks === null ? null : { names: world.locks.names, tasks: world.runChecks.locks.started, aborted: world.runChecks.locks.aborted },
    barriers: world.readChecks === null ? null : { asked: world.readChecks.asks, answered: world.readChecks.answers },
    ...(world.options.timeline === true ? { timeline: world.timeline } : {}),
  };
}
