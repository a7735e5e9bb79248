/**
 * The simulator, the subpath export `cronraft/simulate`: `simulate()` runs the production member
 * on simulated time, network, disks and clocks under one seed's faults, and checks the README's
 * promises after every event (README, "Simulations").
 *
 * @module cronraft/simulate
 */
import type { NodeId } from '../src/raft/types.js';
import type { CompactionOptions } from '../src/runtime/compaction.js';
import type { MemberSettings } from '../src/runtime/member-settings.js';
import { checkAfterHealing } from './after-healing.js';
import { runFaultPhase } from './fault-phase.js';
import type { FaultSwitches } from './faults.js';
import type { SimJob } from './jobs.js';
import type { MembershipCounts, MembershipMode } from './membership.js';
import { finishRun } from './result.js';
import { RunLoop } from './run-loop.js';
import type { VariedSetting } from './settings.js';
import type { FanoutSummary, JobSummary, LocksSummary } from './summary.js';
import type { TimelineEvent } from './timeline.js';
import type { VersionsMode } from './upgrades.js';
import type { ViolationKind } from './violations.js';
import { SimWorld } from './world.js';

export type { FaultSwitches } from './faults.js';
export type { SimJob } from './jobs.js';
export type { FanoutSummary, JobSummary, LocksSummary } from './summary.js';
export { VIOLATION_KINDS, type ViolationKind } from './violations.js';
export type { MembershipCounts } from './membership.js';
export type { TimelineEvent } from './timeline.js';
export { SETTING_VARIATIONS, type VariedSetting } from './settings.js';
export type { CompactionOptions } from '../src/runtime/compaction.js';
export type { MemberSettings } from '../src/runtime/member-settings.js';
export type { MemberTiming } from '../src/runtime/member.js';
export type { RaftConfig } from '../src/raft/config.js';
export type { VersionsMode } from './upgrades.js';
export type { MembershipMode } from './membership.js';

export interface SimulationOptions {
  readonly seed: number;
  readonly members?: number;
  /** Simulated time with faults (the safety phase). */
  readonly durationMs?: number;
  /** After healing everything, a new proposal must commit everywhere within this (the liveness phase). */
  readonly livenessBoundMs?: number;
  readonly faults?: FaultSwitches;
  /** The jobs every member schedules. @default DEFAULT_SIM_JOBS; `[]` runs Raft alone. */
  readonly jobs?: readonly SimJob[];
  /** Application proposals from random members, besides the scheduler's own. @default true */
  readonly proposals?: boolean;
  /** Keep the timeline of the run (for the HTML report). @default false */
  readonly timeline?: boolean;
  /** When members compact their logs. @default drawn from the seed, far more often than production */
  readonly compaction?: CompactionOptions;
  /** Runs at once on each member (the `maxConcurrent` option). @default no limit */
  readonly maxConcurrent?: number;
  /**
   * Vary settings from production's defaults as the seed draws them (simulations/settings.ts
   * says which, and why). False runs `Cluster`'s defaults exactly (and `compaction`, if given).
   * @default true
   */
  readonly vary?: boolean;
  /** Settings of those a seed varies (simulations/settings.ts) set as given in every seed, rather than drawn. @default none */
  readonly settings?: Partial<Record<VariedSetting, number>>;
  /**
   * `upgrade`: members start on this release and a rolling upgrade moves each to the test-only
   * next one during the faults, with test notes proposed all along (simulations/upgrades.ts).
   * @default drawn from the seed, `upgrade` in UPGRADE_SHARE of seeds
   */
  readonly versions?: VersionsMode;
  /**
   * After the other checks, a rolling restart: each member in turn, the leader first, stops
   * gracefully (`Cluster.stop()`'s handover) and starts again, with nothing else going wrong;
   * checked by `handover` (simulations/handover.ts). @default false
   */
  readonly handover?: boolean;
  /**
   * `changes`: the configuration changes during the faults: members added as learners, promoted,
   * removed, replaced; a removed member back with its old data; a learner far behind
   * (simulations/membership.ts), checked by configuration-checker.ts.
   * @default drawn from the seed, `changes` in MEMBERSHIP_SHARE of seeds (drawMembershipMode)
   */
  readonly membership?: MembershipMode;
  /**
   * Fan-out in the swarm (simulations/fanout.ts): topics consumed by the members, a job whose
   * slots emit items, and emits from outside a slot, checked by checkers/fanout.ts and, after
   * healing, by the bound within which every item settles. Needs jobs (it adds its emitting job).
   * @default drawn from the seed, in FANOUT_SHARE of the seeds that run the default jobs (drawFanoutMode); none with `jobs` given
   */
  readonly fanout?: boolean;
  /**
   * runExclusive in the swarm (simulations/locks.ts): every member calls it now and then for a
   * few lock names, its tasks checked by checkers/locks.ts.
   * @default drawn from the seed, in LOCKS_SHARE of the seeds that run the default jobs (drawLocksMode); none with `jobs` given
   */
  readonly locks?: boolean;
  /**
   * Read barriers in the swarm (simulations/barriers.ts): members drawn at random ask for one
   * now and then during the faults, each answer checked by checkers/reads.ts.
   * @default drawn from the seed, in BARRIERS_SHARE of the seeds that run the default jobs (drawBarriersMode); none with `jobs` given
   */
  readonly barriers?: boolean;
  /**
   * A rolling deploy during the faults: each member in turn restarts scheduling these jobs, the
   * same names with other specs or policies, or fewer of them (simulations/deploys.ts,
   * validateDeploy), and once every member runs them each changed job must have taken its new
   * form, and no member be registered for a job dropped (checked as `deploy`).
   * `true` deploys DEPLOYED_SIM_JOBS, for the default jobs; `false`, none.
   * @default drawn from the seed, in DEPLOY_SHARE of the seeds that run the default jobs (drawDeployMode): DEPLOYED_SIM_JOBS, or in DEPLOY_DROP_SHARE of those DROPPING_SIM_JOBS (drawDeployDrop); none with `jobs` given
   */
  readonly deploy?: boolean | readonly SimJob[];
  /** The largest emit of the run's fan-out. @default MAX_SIM_EMIT */
  readonly maxEmit?: number;
}

export interface SimulationResult {
  readonly seed: number;
  readonly members: readonly NodeId[];
  readonly violations: readonly string[];
  /** The kinds of every violation found, in the order first seen (see violations.ts). */
  readonly violationKinds: readonly ViolationKind[];
  readonly simulatedMs: number;
  /** True ms at which the fault phase ended. */
  readonly healedAtMs: number;
  readonly committed: number;
  readonly acknowledged: number;
  readonly crashes: number;
  readonly delivered: number;
  readonly dropped: number;
  /** Per job: slots claimed, runs, outcomes, missed, lateness (see JobSummary). */
  readonly jobs: readonly JobSummary[];
  /** Runs started under a claim the log had already moved on (a stalled or cut-off member; fencing covers them). */
  readonly staleStarts: number;
  /** Runs started again after a crash while the previous run's outcome was in flight (at least once). */
  readonly reRuns: number;
  /** Snapshots that members installed from a leader, having fallen behind its compacted log. */
  readonly snapshotsInstalled: number;
  /** A hash of everything that happened, for the determinism check. */
  readonly traceHash: string;
  /** The fault parameters the seed drew. */
  readonly drawn: Record<string, number>;
  /** The settings every member ran with: `Cluster`'s defaults but for `varied`. */
  readonly settings: MemberSettings;
  /** The settings the seed drew away from the defaults (see simulations/settings.ts), with their values. */
  readonly varied: Partial<Record<VariedSetting, number>>;
  /** The releases members ran, and what the test-note workload saw (an upgrade's run only). */
  readonly versions: { readonly mode: VersionsMode; readonly notesRefused: number; readonly notesCommitted: number; readonly clusterVersion: number };
  /** The configuration changes the run made, and the configuration it ended with (members ever started are `members`). */
  readonly membership: MembershipCounts & { readonly voters: readonly NodeId[]; readonly learners: readonly NodeId[] };
  /** What the run's fan-out did, as the log recorded it; null without fan-out. */
  readonly fanout: FanoutSummary | null;
  /** What the run's runExclusive tasks did; null without them. */
  readonly locks: LocksSummary | null;
  /** The jobs a rolling deploy changed, those the log applied a take-over of, and those it dropped; null without a deploy. */
  readonly deploy: { readonly jobsChanged: readonly string[]; readonly jobsTakenOver: readonly string[]; readonly jobsDropped: readonly string[] } | null;
  /** Read barriers asked during the faults, and of them those answered; null without them. */
  readonly barriers: { readonly asked: number; readonly answered: number } | null;
  readonly timeline?: readonly TimelineEvent[];
}

/**
 * Runs a cluster of production members (Raft driver and scheduler runtime) on simulated time,
 * network, disks and clocks, with `Cluster`'s settings but for those the seed varies (see
 * settings.ts). One seed fixes every choice: settings varied, fault parameters, latencies, losses,
 * crashes, clock faults, stalls, run durations and proposals, and whether the members are upgraded
 * one by one to a next release meanwhile (upgrades.ts). Phase one injects faults and
 * checks safety after every event (fault-phase.ts); phase two heals everything and demands
 * liveness: a new proposal commits on every member, and every slot due runs on time with an
 * outcome (after-healing.ts). The world both share is built in world.ts, its members' hooks
 * wired to the checkers in hooks.ts, time moved in run-loop.ts, and the result made in result.ts.
 */
export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const world = new SimWorld(options);
  const loop = new RunLoop(world);
  await runFaultPhase(world, loop);
  if (!loop.crashed) await checkAfterHealing(world, loop);
  return finishRun(world);
}
