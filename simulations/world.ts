import { createHash, type Hash } from 'node:crypto';
import type { Entry, NodeId } from '../src/raft/types.js';
import type { MemberSettings } from '../src/runtime/member-settings.js';
import { SeededRandom } from '../src/time/random.js';
import { testNextVersion } from '../src/version/test-next-version.js';
import type { VersionSupport } from '../src/version/versions.js';
import { encodeCommand } from '../src/runtime/commands.js';
import { SafetyChecker } from './checker.js';
import { RunCheckers } from './checkers/index.js';
import { ConfigurationChecker } from './configuration-checker.js';
import { InvalidArgumentError, ProposalDroppedError } from '../src/errors.js';
import { MAX_PENDING_PER_TOPIC } from '../src/fanout/command.js';
import { onlyKnownKeys } from '../src/option-checks.js';
import { MAX_MEMBERS } from '../src/raft/configuration.js';
import type { FaultSwitches } from './faults.js';
import { memberHooks } from './hooks.js';
import { DEFAULT_SIM_JOBS, validateJobs, type SimJob } from './jobs.js';
import { FanoutChecker } from './checkers/fanout.js';
import { drawFanout, drawFanoutMode, emitJob, fanoutRandom, type SimFanout } from './fanout.js';
import { drawLocks, drawLocksMode, locksRandom, type SimLocks } from './locks.js';
import { drawBarriersMode } from './barriers.js';
import { changedJobs, DEPLOYED_SIM_JOBS, drawDeployDrop, drawDeployMode, droppedJobs, DROPPING_SIM_JOBS, validateDeploy } from './deploys.js';
import { ReadChecker } from './checkers/reads.js';
import { SimMember, type MemberHooks, type SimMemberConfig } from './member.js';
import { drawMembershipMode, type MembershipFaults, type MembershipMode } from './membership.js';
import { SimNetwork, type NetworkFaults } from './network.js';
import { RefusalChecker } from './refusal-checker.js';
import { SchedulerChecker } from './scheduler-checker.js';
import { SimScheduler } from './scheduler.js';
import { drawSettings, type VariedSetting } from './settings.js';
import type { SimulationOptions } from './simulate.js';
import { MAX_TIMELINE_EVENTS, type TimelineEvent } from './timeline.js';
import { drawVersionsMode, type VersionsMode } from './upgrades.js';
import { VersionChecker } from './version-checker.js';
import type { Report } from './violations.js';

/** The longest mean time between crashes a run may draw (10-minute runs draw up to it). */
const MAX_CRASH_EVERY_MS = 150_000;

/** The fault parameters a seed draws (the result's `drawn`). */
export type DrawnFaults = {
  readonly lossPermille: number;
  readonly duplicatePermille: number;
  readonly latencyMaxUs: number;
  readonly fsyncMaxUs: number;
  readonly partitionEveryMs: number;
  readonly crashEveryMs: number;
  readonly proposeEveryMs: number;
  readonly clockEveryMs: number;
  readonly pauseEveryMs: number;
  readonly diskStallPermille: number;
};

/**
 * One simulated run's world: what the seed drew, the simulated time, network and members, the
 * checkers, and the run's trace and timeline, which its phases (simulate.ts runs them in turn)
 * share. It is built in the order simulate() has always drawn from the seed: a draw moved is
 * another run, and the same seed must replay the same run.
 */
export class SimWorld {
  readonly seed: number;
  readonly options: SimulationOptions;
  readonly random: SeededRandom;
  readonly switches: Required<FaultSwitches>;
  /** Simulated time with faults (the safety phase). */
  readonly durationMs: number;
  readonly livenessBoundMs: number;
  readonly jobs: readonly SimJob[];
  /** The jobs of the run's rolling deploy (deploys.ts), those of them it changes, and the names of the jobs it drops; null: none. */
  readonly deploy: { readonly jobs: readonly SimJob[]; readonly changed: readonly SimJob[]; readonly dropped: readonly string[] } | null;
  /** The run's fan-out (fanout.ts), drawn from a stream of its own; null: none. */
  readonly fanout: SimFanout | null;
  /** The run's calls of runExclusive (locks.ts), drawn from a stream of their own; null: none. */
  readonly locks: SimLocks | null;
  /** The checker of the run's read barriers (barriers.ts), when it asks for them; null: none. */
  readonly readChecks: ReadChecker | null;
  /** Fan-out's checkers, with fan-out. */
  readonly fanoutChecks: FanoutChecker | null;
  /** The stream fan-out's emits from outside a slot draw from (after its plan). */
  readonly fanoutRandom: SeededRandom;
  /** Whether fan-out still emits: until the faults heal. */
  fanoutEmitting = true;
  readonly drawn: DrawnFaults;
  readonly settings: MemberSettings;
  readonly varied: Partial<Record<VariedSetting, number>>;
  /** The network's faults in the fault phase; healing keeps its latencies. */
  readonly faults: NetworkFaults;
  readonly scheduler: SimScheduler;
  readonly network: SimNetwork;
  readonly safety: SafetyChecker;
  /** A hash of everything that happened, for the determinism check. */
  readonly trace: Hash;
  readonly timeline: TimelineEvent[] = [];
  readonly slots: SchedulerChecker;
  readonly versionsMode: VersionsMode;
  /** The release a rolling upgrade moves members to. */
  readonly nextRelease: VersionSupport;
  readonly versionChecks: VersionChecker;
  readonly refusals: RefusalChecker;
  /** Every member ever started, the founding ones first; joiners are added as the run adds them (membership.ts). */
  readonly ids: NodeId[];
  readonly members: SimMember[];
  readonly byId: Map<NodeId, SimMember>;
  /** Every member, a joiner too, is given the founding voters as its configuration. */
  readonly config: SimMemberConfig;
  readonly membershipMode: MembershipMode;
  readonly configurations: ConfigurationChecker;
  /** The run changes its configuration: the configuration checker's checks after each event and message have something to find. */
  readonly changes: boolean;
  readonly runChecks: RunCheckers;
  /** The term each member leads in, while it leads. */
  readonly leading = new Map<NodeId, number>();
  readonly hooks: MemberHooks;
  /** Starts of members under way, awaited by the run loop after each event. */
  readonly restarts: Array<Promise<void>> = [];
  /** Set when the run changes its configuration. */
  membership: MembershipFaults | null = null;
  /** Set in the liveness phase to watch for its marker entry. */
  alsoOnApplied: ((id: NodeId, entry: Entry) => void) | null = null;
  /** True ms at which the fault phase ended, once it has. */
  healedAtT: number | null = null;
  crashes = 0;
  snapshotsInstalled = 0;
  acknowledged = 0;

  constructor(options: SimulationOptions) {
    validateRun(options);
    const seed = options.seed;
    this.seed = seed;
    this.options = options;
    const random = new SeededRandom(seed);
    this.random = random;
    const switches = { partitions: true, loss: true, crashes: true, clocks: true, pauses: true, disks: true, ...options.faults };
    this.switches = switches;
    const durationMs = options.durationMs ?? 60_000;
    this.durationMs = durationMs;
    this.livenessBoundMs = options.livenessBoundMs ?? 10_000;
    const userJobs = options.jobs ?? DEFAULT_SIM_JOBS;
    validateJobs(userJobs);
    // Fan-out draws from streams of its own (its topics, emits, handlers), so that it leaves every other draw where it was.
    const memberIds = Array.from({ length: options.members ?? 5 }, (_, i) => `m${i + 1}`);
    const fanoutDraws = fanoutRandom(seed);
    // A run of the user's own jobs has fan-out only when asked: its jobs are the ones it names.
    const withFanout = userJobs.length > 0 && (options.fanout ?? (options.jobs === undefined && drawFanoutMode(seed)));
    const fanout = withFanout ? drawFanout(fanoutDraws, memberIds, options.maxEmit) : null;
    this.fanout = fanout;
    this.fanoutRandom = fanoutDraws;
    const jobs = fanout === null ? userJobs : [...userJobs, emitJob(fanoutDraws)];
    // As fan-out: drawn from a stream of its own, in a share of the runs of the default jobs.
    const withLocks = options.locks ?? (options.jobs === undefined && drawLocksMode(seed));
    this.locks = withLocks ? drawLocks(locksRandom(seed)) : null;
    this.jobs = jobs;
    this.deploy = deployOf(options, userJobs, jobs, seed);
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
    this.drawn = drawn;
    // Production's settings, but for those the seed varies on purpose (see settings.ts).
    const { settings, varied } = drawSettings(seed, options.vary ?? true, options.compaction, options.maxConcurrent, options.settings);
    this.settings = settings;
    this.varied = varied;
    this.faults = { lossRate: drawn.lossPermille / 1000, duplicateRate: drawn.duplicatePermille / 1000, latencyMinMs: 0.05, latencyMaxMs: drawn.latencyMaxUs / 1000 };
    this.scheduler = new SimScheduler();
    this.network = new SimNetwork(this.scheduler, random, this.faults);
    this.safety = new SafetyChecker();
    // As fan-out and locks: drawn from a stream of its own, in a share of the runs of the default jobs.
    const withBarriers = options.barriers ?? (options.jobs === undefined && drawBarriersMode(seed));
    this.readChecks = withBarriers ? new ReadChecker(this.report, () => this.safety.committedCount) : null;
    this.trace = createHash('sha256');
    this.slots = new SchedulerChecker(this.report);
    this.versionsMode = options.versions ?? drawVersionsMode(seed);
    this.nextRelease = testNextVersion();
    this.versionChecks = new VersionChecker(this.report, this.nextRelease.stateMachine.max);
    this.refusals = new RefusalChecker(this.report);
    this.ids = memberIds;
    this.members = this.ids.map((id, i) => new SimMember(id, seed * 31 + i, this.scheduler));
    this.byId = new Map(this.members.map((m) => [m.id, m]));
    this.config = { voters: [...this.ids], jobs, settings, fanout: fanout === null ? null : { plan: fanout, emitting: () => this.fanoutEmitting }, locks: this.locks };
    this.fanoutChecks = fanout === null ? null : new FanoutChecker(this.report, fanout, (id) => this.byId.get(id)?.member?.fanout ?? null);
    this.membershipMode = options.membership ?? drawMembershipMode(seed);
    this.configurations = new ConfigurationChecker(this.report, this.ids, (term) => this.safety.leaderOf(term), (before, after) => this.membership?.onCommitted(before, after));
    this.changes = this.membershipMode === 'changes';
    this.runChecks = new RunCheckers({ report: this.report, slots: this.slots, members: this.members, current: () => this.current().map((m) => m.id), timing: settings.timing, jobs, lastCut: (id) => this.network.lastCut(id), sentAt: (m) => this.network.sentAt(m) });
    this.hooks = memberHooks(this);
  }

  /** Keeps an event for the timeline, if the run keeps one, up to its bound. */
  readonly record = (event: TimelineEvent): void => {
    if (this.options.timeline === true && this.timeline.length < MAX_TIMELINE_EVENTS) this.timeline.push(event);
  };

  /** A violation, for the result and the timeline. */
  readonly report: Report = (t, kind, what) => {
    this.safety.report(t, kind, what);
    this.record({ t, kind: 'violation', message: `[${kind}] ${what}` });
  };

  /** The members of the committed configuration: the members whose progress the end of a run waits for. */
  current(): SimMember[] {
    return this.membership?.current() ?? this.members;
  }

  memberOf(id: NodeId): SimMember {
    return this.byId.get(id) as SimMember;
  }

  /** An application proposal, from a member up drawn at random; its acknowledgement is checked. */
  propose(text: string): void {
    const up = (): SimMember[] => this.members.filter((m) => m.up);
    const driver = up().length > 0 ? this.#pick(up()).driver : null;
    if (driver === null) return;
    const data = proposalBytes(text);
    this.safety.onProposed(data);
    driver.propose(data).then(
      ({ index }) => {
        this.acknowledged++;
        this.trace.update(`${this.scheduler.nowMs} ack ${text} ${index}\n`);
        this.safety.onAck(this.scheduler.nowMs, index, text, data);
      },
      (error: unknown) => {
        if (error instanceof ProposalDroppedError) this.safety.onDropped(this.scheduler.nowMs, text, data);
      },
    );
  }

  /** Starts a member's process (a joiner's first start, or a restart on its data); the run loop awaits it. */
  readonly start = (m: SimMember): void => {
    this.restarts.push(m.start(this.network, this.config, this.hooks));
  };

  /** Starts a member again after a crash or a stop, unless it was removed: a member removed is gone. */
  readonly restart = (m: SimMember): void => {
    if (this.membership !== null && !this.membership.mayStart(m)) return;
    this.record({ t: this.scheduler.nowMs, kind: 'restart', member: m.id });
    this.start(m);
  };

  /** A member's process life ends (a crash, or a stop): the checkers' bookkeeping. */
  readonly onStop = (m: SimMember): void => {
    this.leading.delete(m.id);
    this.slots.onCrash(m.id);
    this.fanoutChecks?.onStop(m.id, m.incarnation);
    this.runChecks.onStop(this.scheduler.nowMs, m.id);
  };

  readonly onCrash = (m: SimMember): void => {
    this.crashes++;
    this.onStop(m);
  };

  #pick<T>(xs: readonly T[]): T {
    return xs[this.random.int(0, xs.length - 1)] as T;
  }
}

/**
 * An application proposal's entry: a user command, as `Cluster.propose` writes it. (Raw bytes
 * would be skipped as malformed by every member, each skip at the cost of a decode error and
 * its stack, and would hide a malformed entry an honest member wrote: refusal-checker.ts.)
 */
export function proposalBytes(text: string): Uint8Array {
  return encodeCommand({ kind: 'user', data: new TextEncoder().encode(text) });
}

/**
 * The run's options checked (InvalidArgumentError): only those simulate() knows, and of the
 * fault switches; no members made every liveness check pass vacuously, a NaN duration never
 * ended, and a seed past 32 bits replays a smaller one's faults (the generator is seeded with
 * 32 bits).
 */
function validateRun(options: SimulationOptions): void {
  // A misspelled option, or a fault named as the CLI names it (partition, not partitions), ran
  // the defaults silently; a stranger's run with every fault "off" had them all on.
  onlyKnownKeys(options, Object.keys(SIMULATION_OPTION_KEYS), '');
  if (options.faults !== undefined) onlyKnownKeys(options.faults, Object.keys(FAULT_SWITCH_KEYS), 'faults');
  const maxEmit = options.maxEmit;
  if (maxEmit !== undefined && (!Number.isSafeInteger(maxEmit) || maxEmit < 1 || maxEmit > MAX_SIM_EMIT_BOUND)) throw new InvalidArgumentError('maxEmit', maxEmit, `an integer from 1 to ${MAX_SIM_EMIT_BOUND}`);
  if (!Number.isSafeInteger(options.seed) || options.seed < 0 || options.seed > MAX_SIM_SEED) throw new InvalidArgumentError('seed', options.seed, `an integer from 0 to ${MAX_SIM_SEED}`);
  const members = options.members;
  if (members !== undefined && (!Number.isSafeInteger(members) || members < 1 || members > MAX_MEMBERS)) throw new InvalidArgumentError('members', members, `an integer from 1 to ${MAX_MEMBERS}`);
  const durationMs = options.durationMs;
  if (durationMs !== undefined && (!Number.isSafeInteger(durationMs) || durationMs < 1)) throw new InvalidArgumentError('durationMs', durationMs, 'a positive integer of milliseconds');
}

/** The options of simulate(), each named once (the type makes the list whole). */
const SIMULATION_OPTION_KEYS: Record<keyof SimulationOptions, true> = {
  seed: true,
  members: true,
  durationMs: true,
  livenessBoundMs: true,
  faults: true,
  jobs: true,
  proposals: true,
  timeline: true,
  compaction: true,
  maxConcurrent: true,
  vary: true,
  settings: true,
  versions: true,
  handover: true,
  membership: true,
  fanout: true,
  locks: true,
  barriers: true,
  deploy: true,
  maxEmit: true,
};

const FAULT_SWITCH_KEYS: Record<keyof FaultSwitches, true> = { partitions: true, loss: true, crashes: true, clocks: true, pauses: true, disks: true };

/**
 * The largest `maxEmit`: a topic's maxPending is drawn up to four times it (fanout.ts), and no
 * consumer may ask for more than MAX_PENDING_PER_TOPIC (a larger one failed the run's consume,
 * or not, by the seed).
 */
export const MAX_SIM_EMIT_BOUND = Math.floor(MAX_PENDING_PER_TOPIC / 4);

/**
 * The largest seed of a run: the generator is seeded with 32 bits, so a larger seed would replay
 * a smaller one's faults (and past 2^53 a sweep's next seed would be the same seed again).
 */
export const MAX_SIM_SEED = 2 ** 32 - 1;

/**
 * The run's rolling deploy: the jobs given, DEPLOYED_SIM_JOBS for `true`, or drawn (the default
 * jobs only): DEPLOYED_SIM_JOBS, or in DEPLOY_DROP_SHARE of the draws DROPPING_SIM_JOBS; with
 * fan-out's emitting job (which no deploy changes) kept last.
 */
function deployOf(options: SimulationOptions, userJobs: readonly SimJob[], jobs: readonly SimJob[], seed: number): SimWorld['deploy'] {
  const asked = options.deploy ?? (options.jobs === undefined && drawDeployMode(seed));
  if (asked === false) return null;
  if (asked === true && options.jobs !== undefined) throw new TypeError('deploy: `true` deploys DEPLOYED_SIM_JOBS, which change the default jobs; give the jobs to deploy for jobs of your own');
  const drawn = options.deploy === undefined;
  const deployed = asked === true ? (drawn && drawDeployDrop(seed) ? DROPPING_SIM_JOBS : DEPLOYED_SIM_JOBS) : asked;
  validateDeploy(userJobs, deployed);
  const all = [...deployed, ...jobs.slice(userJobs.length)];
  return { jobs: all, changed: changedJobs(userJobs, deployed), dropped: droppedJobs(userJobs, deployed) };
}
