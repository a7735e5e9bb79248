import type { NodeId } from '../raft/types.js';
import { Periodic } from '../time/periodic.js';
import type { Timers } from '../time/clock.js';
import type { ClusterCommand } from '../version/cluster-command.js';
import type { ClusterVersionState } from '../version/cluster-version.js';
import { nextActivation, type VersionDecision } from '../version/decide.js';
import { encodeCommand } from './commands.js';
import type { RaftDriver } from './driver.js';

/**
 * How often a member looks whether the log should hear of its versions, and a leader whether
 * the cluster version can rise. A raise waits for two looks in a row that agree, so it comes
 * one to two of these after the last member announced.
 */
export const VERSION_CHECK_MS = 500;

/**
 * How long a member's connection must have stayed up, once it closed, before the leader counts
 * it live for a raise. A member that went down may come back at once on the release before,
 * reconnected within an election timeout, while the log still holds what its last life
 * announced; it announces its own at its first look or two (VERSION_CHECK_MS apart), which this
 * leaves time to commit, so that no raise counts the announcement of a life that is over.
 */
export const VERSION_STEADY_MS = 3 * VERSION_CHECK_MS;

/**
 * How often a member announces again what it reads while the cluster version is below it,
 * though the state it applied shows its announcement: a member that restored a snapshot of
 * format 1 (a leader of cronraft 0.1.0's, member-snapshot.ts) forgot what every member announced
 * before it, and, leading, would wait for them for good once the 0.1.0 members were upgraded;
 * the others' own states still show theirs.
 */
export const VERSION_REANNOUNCE_MS = 30_000;

export interface VersionKeeperOptions {
  readonly self: NodeId;
  /** The members whose versions count now (the configuration's voters and learners). */
  readonly members: () => readonly NodeId[];
  readonly versions: ClusterVersionState;
  readonly driver: RaftDriver;
  readonly timers: Timers;
  /** Whether a member is live now (see ActivationInput.live). */
  readonly live: (id: NodeId) => boolean;
}

/**
 * Keeps the cluster's version state current, on every member: it announces what this member
 * reads whenever the applied state says otherwise (at its first start, after an upgrade, or
 * after a snapshot of format 1 forgot it), and again every VERSION_REANNOUNCE_MS while the
 * cluster version is below what it reads, and, on the leader, raises the cluster version
 * once every member reads the next one (nextActivation). One proposal of each kind in flight
 * at a time; a failed one is tried again at the next look.
 */
export class VersionKeeper {
  readonly #o: VersionKeeperOptions;
  readonly #ticks: Periodic;
  #announcing = false;
  /** When (the timers' clock) this member last proposed its announcement. */
  #announcedAt = Number.NEGATIVE_INFINITY;
  #activating = false;
  /** The raise the previous look would have made: a raise needs two looks in a row that agree. */
  #proposedBefore: number | null = null;
  #decision: VersionDecision = { kind: 'current' };

  constructor(options: VersionKeeperOptions) {
    this.#o = options;
    this.#ticks = new Periodic(options.timers, VERSION_CHECK_MS, () => this.#look());
  }

  /** What the leader last decided (on a follower, what it would): `state().version.waitingFor`. */
  get decision(): VersionDecision {
    return this.#decision;
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#ticks.stop();
  }

  #look(): void {
    const { versions, driver, self } = this.#o;
    const node = driver.node;
    if (node.leader === null) return;
    const support = versions.support;
    const mine = versions.members.get(self);
    const announced = mine !== undefined && mine.protocol.min === support.protocol.min && mine.protocol.max === support.protocol.max && mine.stateMachine.min === support.stateMachine.min && mine.stateMachine.max === support.stateMachine.max;
    const now = this.#o.timers.now();
    const again = versions.active < support.stateMachine.max && now - this.#announcedAt >= VERSION_REANNOUNCE_MS;
    if ((!announced || again) && !this.#announcing) {
      this.#announcing = true;
      this.#announcedAt = now;
      const command: ClusterCommand = { type: 'announce', member: self, protocol: [support.protocol.min, support.protocol.max], stateMachine: [support.stateMachine.min, support.stateMachine.max] };
      this.#propose(command, () => (this.#announcing = false));
    }
    this.#decision = nextActivation({ active: versions.active, voters: this.#o.members(), announced: versions.members, live: (id) => id === self || this.#o.live(id) });
    const raise = this.#decision.kind === 'activate' && node.role === 'leader' ? this.#decision.to : null;
    const agreed = raise !== null && raise === this.#proposedBefore;
    this.#proposedBefore = raise;
    if (!agreed || this.#activating || this.#decision.kind !== 'activate') return;
    this.#activating = true;
    this.#propose({ type: 'activate', from: this.#decision.from, to: this.#decision.to }, () => (this.#activating = false));
  }

  #propose(command: ClusterCommand, settled: () => void): void {
    // A refusal (no leader, a timeout, the member stopping) is tried again at the next look.
    this.#o.driver.propose(encodeCommand({ kind: 'cluster', command })).then(settled, settled);
  }
}
