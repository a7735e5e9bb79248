import type { ConfChange } from '../raft/conf-change.js';
import { Periodic } from '../time/periodic.js';
import type { NodeId } from '../raft/types.js';
import type { Timers } from '../time/clock.js';
import type { ClusterVersionState } from '../version/cluster-version.js';
import { MEMBERSHIP_VERSION } from '../version/versions.js';
import type { ConfigurationKeeper } from './configuration-keeper.js';
import type { RaftDriver } from './driver.js';
import { nextMembershipChange, PROMOTE_LAG_ENTRIES, type MemberView, type MembershipDecision } from './membership-decide.js';

/**
 * How often the leader looks whether a learner should be promoted or a dead member removed:
 * far below PROMOTE_STABLE_MS and `deadMemberAfterMs`, which it measures.
 */
export const MEMBERSHIP_CHECK_MS = 1_000;

export interface MembershipKeeperOptions {
  readonly self: NodeId;
  readonly driver: RaftDriver;
  readonly configuration: ConfigurationKeeper;
  readonly versions: ClusterVersionState;
  readonly timers: Timers;
  /** Whether a member is live now: connected and heard from within an election timeout. */
  readonly live: (id: NodeId) => boolean;
  /** The number of voters wanted (option `voters`, odd). */
  readonly targetVoters: number;
  /** A member silent this long is removed (option `deadMemberAfterMs`). */
  readonly deadMemberAfterMs: number;
  /** How long a learner must have been live and caught up to be promoted (MemberTiming.promoteStableMs). */
  readonly promoteStableMs: number;
  /** Proposes a change on this member (Member.proposeConfChange). */
  readonly propose: (change: ConfChange) => Promise<unknown>;
}

/**
 * The leader's membership manager (the Raft thesis' one change at a time, Consul autopilot's
 * rules): on a timer, the leader of a cluster at version 2 measures how long each learner has
 * been live and caught up and how long each member has been silent, and proposes the change
 * nextMembershipChange decides, one at a time: a failed one (a refusal, a timeout, leadership
 * lost) is decided again at the next look. Silence counts from when this member took office at
 * the earliest, so a new leader waits `deadMemberAfterMs` before it removes anyone, and from
 * when a member was first seen in the configuration in this office, so that a learner added
 * later (a joiner that has yet to say anything: its first answer comes after the snapshot) is
 * not removed at the next look as silent since the leader took office.
 */
export class MembershipKeeper {
  readonly #o: MembershipKeeperOptions;
  readonly #ticks: Periodic;
  /** Since when (monotonic ms) each learner has been live and caught up without a break. */
  readonly #caughtUpSince = new Map<NodeId, number>();
  /** Since when (monotonic ms) each member has been in the configuration, as this leader saw it in this office. */
  readonly #memberSince = new Map<NodeId, number>();
  /** The term this member leads in and since when (monotonic ms), or null while it does not. */
  #office: { readonly term: number; readonly since: number } | null = null;
  #proposing = false;
  #decision: MembershipDecision = { kind: 'none' };

  constructor(options: MembershipKeeperOptions) {
    this.#o = options;
    this.#ticks = new Periodic(options.timers, MEMBERSHIP_CHECK_MS, () => this.#look());
  }

  /** What the last look decided (`none` on a follower). */
  get decision(): MembershipDecision {
    return this.#decision;
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#ticks.stop();
  }

  #look(): void {
    const { driver, self, configuration } = this.#o;
    const node = driver.node;
    const now = this.#o.timers.now();
    if (node.role !== 'leader' || this.#o.versions.active < MEMBERSHIP_VERSION) {
      this.#office = null;
      this.#caughtUpSince.clear();
      this.#memberSince.clear();
      this.#decision = { kind: 'none' };
      return;
    }
    if (this.#office?.term !== node.term) {
      this.#office = { term: node.term, since: now };
      this.#memberSince.clear();
    }
    const commit = node.log.committed;
    const views = new Map<NodeId, MemberView>();
    for (const id of configuration.members) {
      if (id === self) continue;
      const live = this.#o.live(id);
      const match = node.progressOf(id)?.match ?? null;
      if (live && match !== null && match + PROMOTE_LAG_ENTRIES >= commit) {
        if (!this.#caughtUpSince.has(id)) this.#caughtUpSince.set(id, now);
      } else {
        this.#caughtUpSince.delete(id);
      }
      // Seen first at this look: since the office began for a member of it then, since now for one added later.
      if (!this.#memberSince.has(id)) this.#memberSince.set(id, now);
      const since = this.#memberSince.get(id) as number;
      const heard = driver.contact.lastHeard(id);
      const caughtUpAt = this.#caughtUpSince.get(id);
      views.set(id, { live, match, caughtUpForMs: caughtUpAt === undefined ? 0 : now - caughtUpAt, silentForMs: now - Math.max(heard ?? since, since) });
    }
    for (const id of this.#caughtUpSince.keys()) if (!views.has(id)) this.#caughtUpSince.delete(id);
    for (const id of this.#memberSince.keys()) if (!views.has(id)) this.#memberSince.delete(id);
    const decision = nextMembershipChange({ self, conf: configuration.conf, views, targetVoters: this.#o.targetVoters, deadMemberAfterMs: this.#o.deadMemberAfterMs, promoteStableMs: this.#o.promoteStableMs });
    this.#decision = decision;
    if (decision.kind === 'none' || this.#proposing) return;
    this.#proposing = true;
    const settled = (): void => {
      this.#proposing = false;
    };
    // A refusal (a change pending, leadership lost, a timeout) is decided again at the next look.
    this.#o.propose({ type: decision.kind, id: decision.id }).then(settled, settled);
  }
}
