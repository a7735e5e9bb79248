import { driverStopped } from '../driver-options.js';
import type { NodeId } from '../../raft/types.js';
import type { Clock, Timers } from '../../time/clock.js';
import { StampClock } from '../../time/stamp-clock.js';
import { SchedulerState } from '../../scheduler/state.js';
import type { OperationCommand, SchedulerCommand } from '../../scheduler/command.js';
import type { RunRecord } from './job-types.js';
import type { Batch } from '../fanout/batches.js';
import type { LoopBlocks } from '../loop-blocks.js';

export interface SchedulerRuntimeOptions {
  readonly self: NodeId;
  readonly clock: Clock;
  /**
   * The cluster's time for the stamps of an operator's commands this member proposes (a
   * trigger's slot, a cancel's time): `clock`, never back by less than MAX_STAMP_HOLD_MS (see
   * stamp-clock.ts). Slots fire by `clock`. @default a StampClock of `clock`
   */
  readonly stampClock?: Clock;
  readonly timers: Timers;
  /** Replicates a command; resolves once it is applied here. */
  readonly propose: (command: SchedulerCommand) => Promise<unknown>;
  /**
   * Whether `propose` would be refused now for want of a reachable leader (NotLeaderError):
   * `proposeUntil` then waits for its next try without proposing. @default never
   */
  readonly leaderUnreachable?: () => boolean;
  /** Emits work items from a slot (fan-out, issue 19): a job context's `emit`. @default refused */
  /** Emits a slot's items; `stopped` says why no more of its entries may be proposed (the run that emits aborted or ended), or null. */
  readonly emitItems?: (topic: string, items: readonly unknown[], key: ((item: unknown, index: number) => string | null) | undefined, origin: { readonly job: string; readonly slotMs: number }, stopped: () => Error | null) => Promise<Batch>;
  /**
   * Replicates registrations in one entry (at most MAX_COMMANDS_PER_BATCH), resolving once it is
   * applied here; null, proposing nothing, while the cluster does not read batches yet (its
   * version is below BATCH_VERSION): the caller then proposes them one by one. @default none
   */
  readonly proposeBatch?: (commands: ReadonlyArray<Extract<SchedulerCommand, { type: 'register' | 'unregister' }>>) => Promise<unknown> | null;
  /**
   * An operator's commands (pause, resume, trigger: cluster version 3). `require` resolves once
   * that version is in force, or rejects with VersionNotActiveError (see version-waits.ts); `propose` replicates one,
   * resolving once it is applied here with its index and what applying it returned.
   * @default none: the operations are refused
   */
  readonly operations?: {
    readonly require: (feature: string) => Promise<void>;
    readonly propose: (command: OperationCommand) => Promise<{ readonly index: number; readonly result: unknown }>;
  };
  /** Resolves once this member has applied everything committed before the call (a read barrier). */
  readonly barrier: () => Promise<unknown>;
  readonly isLeader: () => boolean;
  /**
   * Whether `clock` (the cluster's time) can be trusted yet: until this member has learned the
   * cluster's time, a slot's timer that fires waits and looks again (its own clock may be a
   * minute off). @default always
   */
  readonly clockReady?: () => boolean;
  /**
   * Whether this member still knows a live leader (it leads, or heard from the leader within
   * an election timeout). A member that lost it aborts its runs: its claims may be moved.
   */
  readonly holdsLease: () => boolean;
  /**
   * Whether this member is connected to `member` now. Another member's run that the log shows
   * in progress counts for overlap only while it is: a member whose connection closed (killed
   * mid-run) will never report that run's end, and its slot is moved anyway. @default always
   */
  readonly peerConnected?: (member: NodeId) => boolean;
  /**
   * The configuration's members (voters and learners), or null while the cluster runs a version
   * before FORFEIT_VERSION (nobody leaves the configuration then): the leader settles the work
   * of any other member (see scheduler/departures.ts). @default always null
   */
  readonly configuredMembers?: () => readonly NodeId[] | null;
  /** The cluster version in force, by which the leader plans what every member applies alike. @default FIRST_CLUSTER_VERSION */
  readonly clusterVersion?: () => number;
  /** Members that may be given work now (reachable), this one included when it leads. */
  readonly eligibleMembers: () => readonly NodeId[];
  /**
   * Members whose claims the leader leaves with them (not lost, nor being sent a snapshot; a
   * skewed clock keeps them too: MemberReach.holding); the leader moves the claims of any other.
   * @default eligibleMembers
   */
  readonly holdingMembers?: () => readonly NodeId[];
  /** Whether the leader heard from a member since it began to lead: of holdingMembers, those it saw hold their claims (MemberReach.heardSinceLeading). @default every one */
  readonly heardSinceLeading?: (id: NodeId) => boolean;
  /**
   * How long ago this member last heard from each member it has heard from (MemberReach.heardAgo):
   * a new leader counts each as seen holding its claims then, the one it followed included,
   * whose own runs no other member watched. @default none heard
   */
  readonly heardAgoMs?: () => ReadonlyMap<NodeId, number>;
  /** How often the leader plans. */
  readonly planIntervalMs: number;
  /** Claims are made this far ahead of their instant. */
  readonly lookaheadMs: number;
  /** Bound on commands proposed by one plan. */
  readonly maxClaimsPerPlan: number;
  /** Claims whose slot is older than this are never moved again. */
  readonly reassignHorizonMs: number;
  /**
   * A new leader moves no claim until it has led this long: until then, it cannot tell a lost
   * assignee from one it has not heard from yet.
   */
  readonly reassignGraceMs: number;
  /**
   * Runs at once on this member, whatever their jobs; more wait, by priority.
   * @default SCHEDULER_RUNTIME_DEFAULTS.maxConcurrent (no limit)
   */
  readonly maxConcurrent?: number;
  /**
   * Called as a run's handler starts (after its checks), before `onRun` reports its end;
   * `waited`: its overlap policy made it wait for another run of its job (the simulator's checker
   * of 'skip' asks).
   */
  readonly onRunStart?: (run: Pick<RunRecord, 'job' | 'slotMs' | 'fencingToken' | 'member' | 'startedAtMs'> & { readonly waited: boolean }) => void;
  readonly onRun?: (run: RunRecord) => void;
  /** Where a handler that held the event loop for the member's lease or longer is told of (loop-blocks.ts). */
  readonly loopBlocks?: LoopBlocks | undefined;
}

/**
 * How long RuntimeContext.proposeUntil tries, at most: a member that reaches no leader for a day
 * gives up recording what its runs did then (one loop per such record, each a try every
 * PROPOSE_UNTIL_MAX_WAIT_MS, is all it keeps meanwhile).
 */
export const PROPOSE_UNTIL_GIVE_UP_MS = 24 * 3_600_000;

/** The longest wait between two tries of proposeUntil, reached once the reassignment horizon passed. */
export const PROPOSE_UNTIL_MAX_WAIT_MS = 10_000;

export const SCHEDULER_RUNTIME_DEFAULTS = {
  /** No limit: every due slot starts at its instant. */
  maxConcurrent: Number.POSITIVE_INFINITY,
} as const;

/**
 * What the parts of the scheduler's runtime on one member share (the leader's planning, the
 * registrations, the assignee's runs): its options, the replicated state, whether it stops or
 * drains, the work a graceful stop waits for, and proposing a command until it is applied.
 * SchedulerRuntime holds it and hands it to each part.
 */
export class RuntimeContext {
  readonly state = new SchedulerState();
  readonly options: SchedulerRuntimeOptions;
  /** options.stampClock, or one of options.clock. */
  readonly stampClock: Clock;
  /** Runs started and their outcomes not yet recorded: a graceful stop waits for them. */
  readonly inFlightRuns = new Set<Promise<void>>();
  #stopped = false;
  /** Set by drain(): nothing new is armed. */
  #draining = false;

  constructor(options: SchedulerRuntimeOptions) {
    this.options = options;
    this.stampClock = options.stampClock ?? new StampClock(options.clock);
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  get draining(): boolean {
    return this.#draining;
  }

  stop(): void {
    this.#stopped = true;
  }

  drain(): void {
    this.#draining = true;
  }

  /** Keeps a run or an outcome report in the set a graceful stop waits for; never rejects. */
  track(work: Promise<void>): void {
    const tracked = work.catch(() => undefined).finally(() => this.inFlightRuns.delete(tracked));
    this.inFlightRuns.add(tracked);
  }

  /**
   * Proposes `command` until it is applied, `settled()` holds (nothing left to do: the claim
   * moved on, or was forgotten), the member stops (or its driver did: a failure, its removal), or
   * PROPOSE_UNTIL_GIVE_UP_MS pass. Between tries it waits a plan interval, and once the
   * reassignment horizon passed twice as long each time, up to PROPOSE_UNTIL_MAX_WAIT_MS; a try
   * due while the driver knows no reachable leader is not made (`leaderUnreachable`). The
   * times are the member's monotonic timers': a step of the cluster's time must not end the tries
   * early, nor draw them out. A member cut off past the horizon still records what its runs did
   * once it reaches a leader again: giving up then left a run that succeeded shown in progress in
   * every member's history for good (found by the simulator once it drew short horizons). Safe
   * only for commands that may be applied twice.
   */
  async proposeUntil(command: SchedulerCommand, settled: () => boolean): Promise<void> {
    const o = this.options;
    const startedAtMs = o.timers.now();
    let waitMs = o.planIntervalMs;
    while (!this.#stopped && o.timers.now() - startedAtMs < PROPOSE_UNTIL_GIVE_UP_MS && !settled()) {
      // A member cut off from the leader holds a loop for each record of its runs: a try that
      // would be refused at once is not made, rather than encoded and refused every interval.
      if (o.leaderUnreachable?.() !== true) {
        try {
          await o.propose(command);
          return;
        } catch (error) {
          if (driverStopped(error)) return;
        }
      }
      await new Promise<void>((resolve) => o.timers.setTimeout(resolve, waitMs));
      if (o.timers.now() - startedAtMs >= o.reassignHorizonMs) waitMs = Math.min(waitMs * 2, PROPOSE_UNTIL_MAX_WAIT_MS);
    }
  }
}
