import { createHash } from 'node:crypto';
import type { Entry, NodeId } from '../src/raft/types.js';
import type { WireMessage } from '../src/transport/envelope.js';
import type { CompactionOptions } from '../src/runtime/compaction.js';
import type { MemberSettings } from '../src/runtime/member-settings.js';
import { MISSED, MISSED_REASONS } from '../src/scheduler/command.js';
import type { ApplyResult } from '../src/scheduler/records.js';
import { SeededRandom } from '../src/time/random.js';
import { testNextVersion } from '../src/version/test-next-version.js';
import { SafetyChecker } from './checker.js';
import { RunCheckers } from './checkers/index.js';
import { RefusalChecker } from './refusal-checker.js';
import { injectAckPowerCuts, injectClockFaults, injectCrashes, injectPartitions, injectPauses, injectUpgrades, MAX_ACK_POWER_CUTS, MAX_DISK_STALL_MS, type FaultSwitches } from './faults.js';
import { DEFAULT_SIM_JOBS, describeSpec, outcomeGraceMs, validateJobs, type SimJob } from './jobs.js';
import { SimMember, type MemberHooks, type SimMemberConfig } from './member.js';
import { SimNetwork, type NetworkFaults } from './network.js';
import { checkHistories } from './history-checker.js';
import { SchedulerChecker } from './scheduler-checker.js';
import { drawSettings, type VariedSetting } from './settings.js';
import { drainMicrotasks, SIM_EPOCH_MS, SimScheduler } from './scheduler.js';
import { summarizeJobs, type JobSummary } from './summary.js';
import { drawVersionsMode, notesRandom, startNotes, upgradeRandom, type VersionsMode } from './upgrades.js';
import { VERSION_LIVENESS_BOUND_MS, VersionChecker } from './version-checker.js';
import { ConfigurationChecker } from './configuration-checker.js';
import { drawMembershipMode, MembershipFaults, membershipRandom, type MembershipCounts, type MembershipMode } from './membership.js';
import { checkHandover, checkReleased, HANDOVER_DOWN_MS, HANDOVER_SETTLE_MS, HANDOVER_STOP_TIMEOUT_MS, type GracefulRestart } from './handover.js';
export type { JobSummary } from './summary.js';
import { MAX_TIMELINE_EVENTS, type TimelineEvent } from './timeline.js';
import type { Report, ViolationKind } from './violations.js';

export type { FaultSwitches } from './faults.js';
export type { SimJob } from './jobs.js';
export type { ViolationKind } from './violations.js';
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
  readonly timeline?: readonly TimelineEvent[];
}

/** Bound on simulated events in one run, so that a livelock cannot run forever. */
const MAX_EVENTS = 20_000_000;
/** The longest mean time between crashes a run may draw (10-minute runs draw up to it). */
const MAX_CRASH_EVERY_MS = 150_000;
/** The bounds checker runs after this many events (it reads sizes, so it need not run after each). */
const BOUNDS_CHECK_EVERY = 100;
/** Bound on events run at one instant before letting their asynchronous work run. */
const MAX_EVENTS_PER_INSTANT = 64;
/** After healing, the scheduler gets this long to settle before every slot must run on time. */
const SCHEDULER_SETTLE_MS = 10_000;
/** Then slots are watched for this long; a slot due in it must start within LATENESS_BOUND_MS. */
const SCHEDULER_WATCH_MS = 15_000;
const LATENESS_BOUND_MS = 50;
/** Bound on the time members get, after the outcome grace, to apply what was committed before their history() is read. */
const HISTORY_CATCH_UP_MS = 1000;

const decoder = new TextDecoder();

/** Outcomes a slot may get with no run of it (the report shows them; a run's end has its own event). */
const NOT_RUN_OUTCOMES: ReadonlySet<string> = new Set(['skipped', 'replaced', 'interrupted']);

/**
 * Runs a cluster of production members (Raft driver and scheduler runtime) on simulated time,
 * network, disks and clocks, with `Cluster`'s settings but for those the seed varies (see
 * settings.ts). One seed fixes every choice: settings varied, fault parameters, latencies, losses,
 * crashes, clock faults, stalls, run durations and proposals, and whether the members are upgraded
 * one by one to a next release meanwhile (upgrades.ts). Phase one injects faults and
 * checks safety after every event; phase two heals everything and demands liveness: a new
 * proposal commits on every member, and every slot due runs on time with an outcome.
 */
export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const seed = options.seed;
  const random = new SeededRandom(seed);
  const switches = { partitions: true, loss: true, crashes: true, clocks: true, pauses: true, disks: true, ...options.faults };
  const memberCount = options.members ?? 5;
  const durationMs = options.durationMs ?? 60_000;
  const livenessBoundMs = options.livenessBoundMs ?? 10_000;
  const jobs = options.jobs ?? DEFAULT_SIM_JOBS;
  validateJobs(jobs);
  const drawn = {
    lossPermille: switches.loss ? random.int(0, 300) : 0,
    duplicatePermille: switches.loss ? random.int(0, 50) : 0,
    latencyMaxUs: random.int(200, 20_000),
    fsyncMaxUs: random.int(100, 10_000),
    partitionEveryMs: random.int(100, 3000),
    // Longer runs draw from a wider range, so that some stay busy for minutes between crashes
    // (each restart replays the whole log: with crashes every few seconds, replay is the run).
    crashEveryMs: random.int(500, Math.min(MAX_CRASH_EVERY_MS, Math.max(10_000, Math.round(durationMs / 4)))),
    proposeEveryMs: random.int(1, 50),
    clockEveryMs: random.int(500, 10_000),
    pauseEveryMs: random.int(500, 10_000),
    diskStallPermille: switches.disks ? random.int(0, 50) : 0,
  };
  // Production's settings, but for those the seed varies on purpose (see settings.ts).
  const { settings, varied } = drawSettings(seed, options.vary ?? true, options.compaction, options.maxConcurrent);
  const compaction = settings.compaction;
  const faults: NetworkFaults = { lossRate: drawn.lossPermille / 1000, duplicateRate: drawn.duplicatePermille / 1000, latencyMinMs: 0.05, latencyMaxMs: drawn.latencyMaxUs / 1000 };
  const scheduler = new SimScheduler();
  const network = new SimNetwork(scheduler, random, faults);
  const safety = new SafetyChecker();
  const trace = createHash('sha256');
  const timeline: TimelineEvent[] = [];
  const record = (event: TimelineEvent): void => {
    if (options.timeline === true && timeline.length < MAX_TIMELINE_EVENTS) timeline.push(event);
  };
  const report: Report = (t, kind, what) => {
    safety.report(t, kind, what);
    record({ t, kind: 'violation', message: `[${kind}] ${what}` });
  };
  const slots = new SchedulerChecker(report);
  const versionsMode = options.versions ?? drawVersionsMode(seed);
  const nextRelease = testNextVersion();
  const versionChecks = new VersionChecker(report, nextRelease.stateMachine.max);
  const refusals = new RefusalChecker(report);
  /** Every member ever started, the founding ones first; joiners are added as the run adds them (membership.ts). */
  const ids: NodeId[] = Array.from({ length: memberCount }, (_, i) => `m${i + 1}`);
  const members = ids.map((id, i) => new SimMember(id, seed * 31 + i, scheduler));
  // Every member, a joiner too, is given the founding voters as its configuration.
  const config: SimMemberConfig = { voters: [...ids], jobs, settings };
  const membershipMode = options.membership ?? drawMembershipMode(seed);
  /** Set when the run changes its configuration. */
  let membership: MembershipFaults | null = null;
  const configurations = new ConfigurationChecker(report, ids, (term) => safety.leaderOf(term), (before, after) => membership?.onCommitted(before, after));
  // Its checks after each event and message have nothing to find in a run that changes nothing.
  const changes = membershipMode === 'changes';
  /** The members of the committed configuration: the members whose progress the end of a run waits for. */
  const current = (): SimMember[] => membership?.current() ?? members;
  const runChecks = new RunCheckers({ report, slots, members, current: () => current().map((m) => m.id), timing: settings.timing, jobs });
  /** Set in the liveness phase to watch for its marker entry. */
  let alsoOnApplied: ((id: NodeId, entry: Entry) => void) | null = null;
  const leading = new Map<NodeId, number>();
  const hooks: MemberHooks = {
    onStart: (id, snapshotIndex) => {
      safety.onStart(id, snapshotIndex);
      slots.onMemberStart(scheduler.nowMs, id);
    },
    onSnapshotInstalled: (id, index) => {
      trace.update(`${scheduler.nowMs} ${id} installs ${index}\n`);
      snapshotsInstalled++;
      // Applying starts again after the snapshot, as after a restart from one.
      safety.onStart(id, index);
    },
    onApplied: (id, entry) => {
      trace.update(`${scheduler.nowMs} ${id} apply ${entry.index}@${entry.term}\n`);
      safety.onApplied(scheduler.nowMs, id, entry);
      configurations.onApplied(scheduler.nowMs, entry);
      versionChecks.onApplied(scheduler.nowMs, memberOf(id), entry);
      alsoOnApplied?.(id, entry);
    },
    onSoftState: (id, node, s) => {
      if (s.role === 'leader' && leading.get(id) !== node.term) {
        leading.set(id, node.term);
        trace.update(`${scheduler.nowMs} ${id} leads ${node.term}\n`);
        safety.onLeader(scheduler.nowMs, id, node.term, node.log);
        record({ t: scheduler.nowMs, kind: 'leader', member: id, term: node.term });
      } else if (s.role !== 'leader' && leading.has(id)) {
        leading.delete(id);
        record({ t: scheduler.nowMs, kind: 'follower', member: id, term: node.term });
      }
    },
    onSchedulerApplied: (id, index, command, result) => {
      const t = scheduler.nowMs;
      const applied = result as Parameters<SchedulerChecker['onApplied']>[3];
      const first = slots.onApplied(t, index, command, applied);
      runChecks.onApplied(t, id, index, command, applied, first);
      if (!first || !applied.ok) return;
      if (command.type === 'claim' || command.type === 'reassign') {
        record({ t, kind: 'claim', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: index, assignees: command.assignees });
      } else if (command.type === 'skip') {
        record({ t, kind: 'missed', job: command.job, throughT: command.throughMs - SIM_EPOCH_MS, count: command.count });
      } else if (command.type === 'outcome' && NOT_RUN_OUTCOMES.has(command.outcome)) {
        record({ t, kind: 'outcome', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: command.token, member: command.member, outcome: command.outcome, ...(command.error === undefined ? {} : { reason: command.error }) });
      } else if (command.type === 'forfeit') {
        record({ t, kind: 'outcome', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: command.token, member: command.member, outcome: MISSED, reason: MISSED_REASONS['member-removed'] });
      } else if (command.type === 'expire') {
        const applied = result as ApplyResult;
        const assignee = (applied.ok ? applied.claim?.assignees[0] : undefined) ?? '';
        record({ t, kind: 'outcome', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: index, member: assignee, outcome: MISSED, reason: MISSED_REASONS[command.reason] });
      }
    },
    onRunStart: (id, incarnation, run) => {
      trace.update(`${scheduler.nowMs} ${id} runs ${run.job}@${run.slotMs} ${run.fencingToken}\n`);
      slots.onRunStart(scheduler.nowMs, id, incarnation, run);
      runChecks.onRunStart(scheduler.nowMs, id, incarnation, run);
    },
    onRun: (id, incarnation, run) => {
      slots.onRunEnd(id, incarnation, run);
      runChecks.onRunEnd(scheduler.nowMs, id, incarnation, run);
      const endT = scheduler.nowMs;
      const startT = endT - (run.endedAtMs - run.startedAtMs);
      record({ t: endT, kind: 'run', job: run.job, slotT: run.slotMs - SIM_EPOCH_MS, token: run.fencingToken, member: id, startT, endT, outcome: run.outcome });
    },
    ...(changes ? { onReceiving: (id: NodeId, m: WireMessage) => configurations.onReceiving(memberOf(id), m) } : {}),
    onReceived: (id, m, termBefore) => {
      runChecks.onReceived(scheduler.nowMs, id, m);
      if (changes) configurations.onReceived(scheduler.nowMs, memberOf(id), m, termBefore);
    },
    ...(changes ? { onSend: (id: NodeId, m: WireMessage) => configurations.onSend(scheduler.nowMs, memberOf(id), m) } : {}),
    onHandler: (id, incarnation, event) => runChecks.onHandler(scheduler.nowMs, id, incarnation, event),
    onFatal: (id, error) => {
      // A member removed stops as removed: the end the removal meant, not a failure.
      if (configurations.isExpectedRemoval(scheduler.nowMs, id, error)) membership?.onRemoved(memberOf(id));
      else if (!versionChecks.onFatal(scheduler.nowMs, id, error)) refusals.onFatal(scheduler.nowMs, id, error);
    },
  };
  let crashes = 0;
  let snapshotsInstalled = 0;
  let acknowledged = 0;
  let proposals = 0;
  const pick = <T>(xs: readonly T[]): T => xs[random.int(0, xs.length - 1)] as T;
  const up = (): SimMember[] => members.filter((m) => m.up);
  const byId = new Map(members.map((m) => [m.id, m]));
  const memberOf = (id: NodeId): SimMember => byId.get(id) as SimMember;

  for (const m of members) await m.start(network, config, hooks);

  const propose = (text: string): void => {
    const driver = up().length > 0 ? pick(up()).driver : null;
    if (driver === null) return;
    driver.propose(new TextEncoder().encode(text)).then(
      ({ index }) => {
        acknowledged++;
        trace.update(`${scheduler.nowMs} ack ${text} ${index}\n`);
        safety.onAck(scheduler.nowMs, index, text);
      },
      () => undefined,
    );
  };

  // The workload: application proposals from random members for the whole run.
  if (options.proposals !== false) {
    const workload = (): void => {
      propose(`p${++proposals}`);
      scheduler.after(random.int(1, drawn.proposeEveryMs), workload);
    };
    scheduler.after(random.int(1, drawn.proposeEveryMs), workload);
  }

  const restarts: Array<Promise<void>> = [];
  const start = (m: SimMember): void => {
    restarts.push(m.start(network, config, hooks));
  };
  const restart = (m: SimMember): void => {
    // A member removed is gone: a crash's restart or healing does not bring it back.
    if (membership !== null && !membership.mayStart(m)) return;
    record({ t: scheduler.nowMs, kind: 'restart', member: m.id });
    start(m);
  };
  const faultContext = { scheduler, network, random, members, ids, untilMs: durationMs, record, trace: (line: string) => trace.update(`${scheduler.nowMs} ${line}\n`) };
  /** A member's process life ends (a crash, or a stop). */
  const onStop = (m: SimMember): void => {
    leading.delete(m.id);
    slots.onCrash(m.id);
    runChecks.onStop(scheduler.nowMs, m.id);
  };
  const onCrash = (m: SimMember): void => {
    crashes++;
    onStop(m);
  };
  if (switches.partitions) injectPartitions(faultContext, drawn.partitionEveryMs);
  if (switches.crashes) {
    injectCrashes(faultContext, drawn.crashEveryMs, restart, onCrash);
    // From a stream of their own, so that they leave every other fault where it was.
    const cuts = new SeededRandom(seed * 7919 + 17);
    injectAckPowerCuts({ ...faultContext, random: cuts }, cuts.int(1, MAX_ACK_POWER_CUTS), restart, onCrash);
  }
  if (switches.clocks) injectClockFaults(faultContext, drawn.clockEveryMs);
  if (switches.pauses) injectPauses(faultContext, drawn.pauseEveryMs);
  if (versionsMode === 'upgrade') {
    // From streams of their own, so that they leave every other fault where it was.
    injectUpgrades({ ...faultContext, random: upgradeRandom(seed) }, nextRelease, restart, onCrash);
    startNotes(scheduler, members, nextRelease.stateMachine.max, notesRandom(seed), versionChecks);
  }
  if (changes) {
    // From a stream of its own, so that it leaves every other fault where it was.
    membership = new MembershipFaults(
      {
        ctx: { ...faultContext, members, ids, random: membershipRandom(seed) },
        checker: configurations,
        create: (id) => {
          const m = new SimMember(id, seed * 31 + members.length, scheduler);
          // A new instance runs the newest release in play: in a rolling upgrade, the next one.
          if (versionsMode === 'upgrade') m.versions = nextRelease;
          byId.set(id, m);
          runChecks.addMember(m);
          return m;
        },
        start,
        onStop,
        removedGraceMs: 2 * settings.timing.electionTimeoutMs,
      },
      membershipMode,
    );
    membership.inject();
  }

  // What a member believes durable must be on its disk, with the same term: its stable index
  // (a leader counts its own copy of an entry towards a majority only up to it, and a follower
  // acknowledges only up to it).
  const checkDurability = (m: SimMember): void => {
    const node = m.driver?.node;
    if (node === undefined) return;
    const stable = node.log.stable;
    // An index at or before a snapshot (in memory or on disk) is covered by it: the entry is gone.
    const covered = Math.max(node.log.firstIndex() - 1, m.disk.durableBounds().snapshotIndex);
    if (stable > covered && m.disk.durableTerm(stable) !== node.log.term(stable)) {
      report(scheduler.nowMs, 'durability', `${m.id} believes index ${stable} (term ${node.log.term(stable)}) durable, but its disk holds term ${m.disk.durableTerm(stable) ?? 'nothing'} there`);
    }
    if (node.role !== 'leader') return;
    const match = node.progressOf(m.id)?.match ?? 0;
    if (match > covered && m.disk.durableTerm(match) !== node.log.term(match)) {
      report(scheduler.nowMs, 'durability', `leader ${m.id} counts index ${match} as its own, but its disk does not hold it`);
    }
  };

  // Nothing a member keeps in memory outgrows its named bound, and its disk keeps no more of
  // the log than compaction allows once its writes are done: the applied part within two
  // compaction intervals (and what is retained), plus what is not applied yet. (While writes
  // are in flight, a member catching up has compacted in memory what its disk still holds.)
  const checkBounds = (m: SimMember): void => {
    for (const b of m.member?.bounds() ?? []) {
      if (b.value > b.limit) report(scheduler.nowMs, 'bounds', `${m.id} holds ${b.value} ${b.name}, over its bound of ${b.limit}`);
    }
    const driver = m.driver;
    if (driver === null || driver.writesInFlight > 0) return;
    const node = driver.node;
    const disk = m.disk.durableBounds();
    const diskLimit = 2 * compaction.everyEntries + compaction.retainEntries + Math.max(0, node.log.lastIndex() - node.log.applied);
    if (disk.lastIndex - disk.snapshotIndex > diskLimit) {
      const where = `disk ${disk.snapshotIndex + 1}..${disk.lastIndex}; in memory ${node.role}, snapshot ${node.latestSnapshot.index}, first ${node.log.firstIndex()}, applied ${node.log.applied}, stable ${node.log.stable}, last ${node.log.lastIndex()}`;
      report(scheduler.nowMs, 'bounds', `${m.id}'s disk holds ${disk.lastIndex - disk.snapshotIndex} entries, over its bound of ${diskLimit} (${where})`);
    }
  };

  /** True ms at which the fault phase ended, once it has. */
  let healedAtT: number | null = null;
  /** Set when an event threw: the run stops there, with the exception as its violation. */
  let crashed = false;
  let events = 0;
  /** Disks stall only in the fault phase. */
  let diskStallPermille = drawn.diskStallPermille;
  const fsyncMs = (): number => (random.int(0, 999) < diskStallPermille ? random.int(1, MAX_DISK_STALL_MS) : random.int(50, drawn.fsyncMaxUs) / 1000);
  const syncBatch = (pending: number): number => random.int(1, pending);
  const run = async (untilMs: number, stop: () => boolean = () => false): Promise<void> => {
    for (;;) {
      try {
        if (!scheduler.step(untilMs)) return;
        // Events due at the same instant (members' ticks line up) run back to back, and what
        // they set off asynchronously runs after them, still at that instant: time does not move.
        for (let batch = 1; batch < MAX_EVENTS_PER_INSTANT && scheduler.nextAt() === scheduler.nowMs; batch++) scheduler.step(untilMs);
      } catch (error) {
        // The protocol's own assertions (e.g. "no term for index") are violations too.
        report(scheduler.nowMs, 'exception', `${error instanceof Error ? error.message : String(error)}`);
        crashed = true;
        return;
      }
      await drainMicrotasks();
      if (restarts.length > 0) await Promise.all(restarts.splice(0));
      for (const m of members) {
        const driver = m.driver;
        if (driver === null) continue;
        m.scheduleSync(fsyncMs, syncBatch);
        checkDurability(m);
        refusals.check(scheduler.nowMs, m.id, driver);
      }
      if (changes) configurations.afterEvent(scheduler.nowMs, members);
      runChecks.afterEvent(scheduler.nowMs);
      if (++events % BOUNDS_CHECK_EVERY === 0) for (const m of members) checkBounds(m);
      if (events > MAX_EVENTS) throw new Error(`seed ${seed}: more than ${MAX_EVENTS} events`);
      if (stop()) return;
    }
  };

  await run(durationMs);
  if (crashed) return finish();

  // Liveness: heal the network, set clocks right, end stalls, restart the dead, stop losing
  // messages. A new entry must then commit and be applied on every member within the bound.
  network.healAll();
  record({ t: scheduler.nowMs, kind: 'partition', blocked: [] });
  network.faults = { ...faults, lossRate: 0, duplicateRate: 0 };
  diskStallPermille = 0;
  membership?.heal();
  for (const m of members) {
    m.clock.reset();
    m.pausedUntil = 0;
    if (!m.up) restart(m);
  }
  await Promise.all(restarts.splice(0));
  const healedAt = scheduler.nowMs;
  healedAtT = healedAt;
  runChecks.calmFrom(healedAt + SCHEDULER_SETTLE_MS);
  record({ t: healedAt, kind: 'healed' });
  const marker = `liveness-${seed}`;
  let appliedEverywhere = false;
  const appliedBy = new Set<NodeId>();
  /** Where the marker was first applied: a member whose state reaches it holds it. */
  let markerIndex = 0;
  alsoOnApplied = (id, entry): void => {
    if (decoder.decode(entry.data) !== marker) return;
    appliedBy.add(id);
    if (markerIndex === 0) markerIndex = entry.index;
  };
  // A member may have the marker from a leader's snapshot (compaction), never applying it one
  // by one: its applied index then passed the marker's.
  const hasMarker = (m: SimMember): boolean => appliedBy.has(m.id) || (markerIndex > 0 && (m.driver?.node.log.applied ?? 0) >= markerIndex);
  const retry = (): void => {
    if (appliedBy.size > 0) return;
    propose(marker);
    scheduler.after(500, retry);
  };
  retry();
  await run(healedAt + livenessBoundMs, () => {
    appliedEverywhere = current().every(hasMarker);
    return appliedEverywhere;
  });
  if (crashed) return finish();
  if (!appliedEverywhere) {
    // Where each member that did not apply it stands, so the report says where to look.
    const behind = current()
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
    report(scheduler.nowMs, 'raft-liveness', `after healing at ${healedAt} ms, no new entry was applied on every member within ${livenessBoundMs} ms (${current().filter(hasMarker).length}/${current().length}; marker at ${markerIndex || 'none yet'}; ${leaderAt}; ${behind.join('; ')})`);
  }
  if (versionsMode === 'upgrade') {
    // Every member runs the next release by now (the upgrades end within the fault phase, and
    // healing restarted those down): its version must rise, and a note under it commit.
    await run(healedAt + VERSION_LIVENESS_BOUND_MS, () => versionChecks.reached(current()));
    if (crashed) return finish();
    versionChecks.checkLiveness(scheduler.nowMs, current(), healedAt);
  }
  if (jobs.length > 0) {
    const watchEnd = healedAt + SCHEDULER_SETTLE_MS + SCHEDULER_WATCH_MS;
    await run(watchEnd + outcomeGraceMs(jobs));
    if (crashed) return finish();
    const window = { fromT: healedAt + SCHEDULER_SETTLE_MS, toT: watchEnd, latenessMs: LATENESS_BOUND_MS, settledT: watchEnd };
    const t = scheduler.nowMs;
    slots.finish(t, { ...window, excused: (job, slotMs) => runChecks.excused(job, slotMs, undefined, LATENESS_BOUND_MS), underway: (job, slotMs, member) => runChecks.underway(t, job, slotMs, member) });
    runChecks.finish(scheduler.nowMs, window);
    // Each member's history() is read once it applied what any member had committed by now: a
    // follower learns of a commit point with the leader's next message, and shows an outcome
    // then. One that has not caught up by the bound is read as it is (and shows what it lacks).
    const committed = Math.max(0, ...members.map((m) => m.driver?.node.log.committed ?? 0));
    await run(scheduler.nowMs + HISTORY_CATCH_UP_MS, () => members.every((m) => m.driver === null || m.driver.node.log.applied >= committed));
    if (crashed) return finish();
    const states = members.flatMap((m) => (m.member === null ? [] : [{ id: m.id, state: m.member.scheduler.state }]));
    checkHistories(states, watchEnd, (job, slotMs, member) => runChecks.underway(scheduler.nowMs, job, slotMs, member), (what) => report(scheduler.nowMs, 'history-outcome', what));
    if (options.handover === true) {
      await rollingRestart();
      if (crashed) return finish();
    }
  }
  return finish();

  /** Each member in turn, the leader first, stopped gracefully and started again (see SimulationOptions.handover). */
  async function rollingRestart(): Promise<void> {
    const fromT = scheduler.nowMs;
    const done: GracefulRestart[] = [];
    const leaderFirst = [...members].sort((a, b) => Number(b.driver?.node.role === 'leader') - Number(a.driver?.node.role === 'leader'));
    for (const m of leaderFirst) {
      const before = m.member;
      if (before === null) continue;
      const stopT = scheduler.nowMs;
      let down = false;
      void m.stopGracefully(HANDOVER_STOP_TIMEOUT_MS).then(() => (down = true));
      // Every wait of a graceful stop is bounded: by the runs' time, then a few election timeouts.
      await run(stopT + HANDOVER_STOP_TIMEOUT_MS + 10 * settings.timing.electionTimeoutMs, () => down);
      if (crashed) return;
      if (!down) {
        report(scheduler.nowMs, 'handover', `${m.id}'s graceful stop did not end within its bounds`);
        return;
      }
      leading.delete(m.id);
      slots.onCrash(m.id);
      runChecks.onStop(scheduler.nowMs, m.id);
      const downT = scheduler.nowMs;
      // What the cluster had applied by the time it went, as the member furthest along (the
      // stopped one included) applied it: no claim of it waits on it, unrun. (A leader just
      // elected may not have applied yet what the last one committed.)
      const seen = [before, ...members.map((x) => x.member)].filter((x) => x !== null);
      const witness = seen.reduce((a, b) => (b.driver.node.log.applied > a.driver.node.log.applied ? b : a), before);
      checkReleased(downT, report, witness.scheduler.state, m.id);
      await run(downT + HANDOVER_DOWN_MS);
      restart(m);
      await Promise.all(restarts.splice(0));
      done.push({ member: m.id, stopT, downT, upT: scheduler.nowMs });
      await run(scheduler.nowMs + HANDOVER_SETTLE_MS);
      if (crashed) return;
    }
    const toT = scheduler.nowMs;
    await run(toT + outcomeGraceMs(jobs));
    if (crashed) return;
    checkHandover(scheduler.nowMs, report, slots, jobs, { fromT, toT }, done);
  }

  function finish(): SimulationResult {
    safety.checkAcknowledged(scheduler.nowMs);
    for (const m of members) {
      if (m.up) runChecks.onStop(scheduler.nowMs, m.id);
      m.member?.stop();
    }
    return {
      seed,
      members: [...ids],
      snapshotsInstalled,
      violations: safety.violations,
      violationKinds: safety.kinds,
      simulatedMs: scheduler.nowMs,
      healedAtMs: healedAtT ?? scheduler.nowMs,
      committed: safety.committedCount,
      acknowledged,
      crashes,
      delivered: network.delivered,
      dropped: network.dropped,
      jobs: summarizeJobs(jobs.map((j) => ({ name: j.name, spec: describeSpec(j) })), slots, scheduler.nowMs),
      staleStarts: slots.staleStarts,
      reRuns: slots.reRuns,
      traceHash: trace.digest('hex').slice(0, 16),
      drawn,
      settings,
      varied,
      versions: { mode: versionsMode, notesRefused: versionChecks.refusedNotes, notesCommitted: versionChecks.committedNotes, clusterVersion: Math.max(0, ...members.map((m) => m.member?.versions.active ?? 0)) },
      membership: { ...(membership?.counts ?? { mode: membershipMode, added: 0, promoted: 0, removed: 0, returned: 0, farBehind: 0 }), voters: configurations.latest.voters, learners: configurations.latest.learners },
      ...(options.timeline === true ? { timeline } : {}),
    };
  }

}

