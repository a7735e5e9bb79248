import type { ConfChange } from '../src/raft/conf-change.js';
import { isMember, membersOf } from '../src/raft/configuration.js';
import type { RaftNode } from '../src/raft/node.js';
import type { Configuration, NodeId } from '../src/raft/types.js';
import type { Random } from '../src/time/random.js';
import { SeededRandom } from '../src/time/random.js';
import type { ConfigurationChecker } from './configuration-checker.js';
import type { FaultContext } from './faults.js';
import type { SimMember } from './member.js';
import { seedDraws } from './seed-share.js';

/**
 * Whether a run's configuration changes: `fixed`, its founding members throughout; `changes`,
 * members are added, promoted, removed and replaced during the other faults, a removed member
 * comes back with its old data now and then, and a learner falls far behind (injectMembershipChanges).
 */
export type MembershipMode = 'fixed' | 'changes';

/** The share of seeds that draw configuration changes. */
export const MEMBERSHIP_SHARE = 0.25;

/**
 * Draws a run's membership mode from `seed`, on a stream of its own, so that no other draw moves
 * with it: a run of `fixed` is the run it was before configuration changes existed.
 */
export function drawMembershipMode(seed: number): MembershipMode {
  return seedDraws(seed, 40_503, 19, MEMBERSHIP_SHARE) ? 'changes' : 'fixed';
}

/** The stream the configuration changes draw from (which, when, whom), apart from every other fault's. */
export function membershipRandom(seed: number): Random {
  return new SeededRandom(seed * 22_695 + 23);
}

/** The share of the fault phase over which changes are started, as fractions of it: the last one has time to commit. */
export const MEMBERSHIP_SPAN: readonly [number, number] = [0.05, 0.7];
/** How many changes (an action each: an add, a removal, a replacement...) one run draws, from and to. */
const ACTIONS: readonly [number, number] = [2, 6];
/** Members beyond the founding ones a run may have at once: each costs the whole run's replication. */
export const MAX_EXTRA_MEMBERS = 2;
/** Never fewer voters than this: with one, every crash of it stops the cluster for its whole down time. */
const MIN_VOTERS = 2;
/**
 * A learner is promoted only once the leader has replicated to it up to this many entries short
 * of its commit index, as the membership keeper promotes (design §4): a voter promoted with an
 * empty log, whose configuration is still the founding one, ignores the vote requests of voters
 * it does not know, and two such voters cannot elect either.
 */
export const PROMOTE_LAG_ENTRIES = 10;
/** Between two attempts at a change the leader refused, or with no leader (ms). */
const RETRY_MS: readonly [number, number] = [100, 400];
/** How long a removed member that came back with its old data runs before it is stopped again (ms). */
const RETURN_MS: readonly [number, number] = [500, 5000];
/** How long a learner that falls far behind stays down (ms): long enough for several snapshots to pass it. */
const FAR_BEHIND_MS: readonly [number, number] = [4000, 12_000];

/** What the membership faults need from the simulation. */
export interface MembershipSetup {
  /** The fault context; its `members` and `ids` are the simulation's own lists, which joiners are added to. */
  readonly ctx: FaultContext & { readonly members: SimMember[]; readonly ids: NodeId[] };
  readonly checker: ConfigurationChecker;
  /** A new member's SimMember (fresh disk, nothing started). */
  readonly create: (id: NodeId) => SimMember;
  /** Starts a member's process (a joiner's first start, or a restart on its data). */
  readonly start: (m: SimMember) => void;
  /** A member's process life ends (a crash or a stop): the checkers' bookkeeping. */
  readonly onStop: (m: SimMember) => void;
  /** How long a removed member that never learned of its removal runs on before it is stopped (ms). */
  readonly removedGraceMs: number;
}

/** What a run's configuration changes did, for its result. */
export interface MembershipCounts {
  readonly mode: MembershipMode;
  added: number;
  promoted: number;
  removed: number;
  returned: number;
  farBehind: number;
}

type Action = 'add' | 'promote' | 'remove-voter' | 'remove-learner' | 'replace' | 'return' | 'far-behind';

/**
 * Configuration changes during the other faults, proposed on the leader as an operator (or the
 * membership keeper) would, one at a time, each tried again until it commits or the fault phase
 * ends: a new member (fresh storage, started with the founding voters as its configuration, as
 * every member is) added as a learner; a learner promoted once caught up (PROMOTE_LAG_ENTRIES);
 * a voter or a learner removed; a
 * replacement (a member added, promoted, then a voter removed); a removed member that comes
 * back with its old data for a while (it must disrupt nothing); a learner that is down long
 * enough to fall behind the leader's compacted log (it catches up by snapshot). A member removed
 * stops as the production member does (CRONRAFT_REMOVED), or, if it never learned of its
 * removal (cut off, or down), is stopped after `removedGraceMs`: either way it is gone, and
 * neither crashes nor healing start it again.
 */
export class MembershipFaults {
  readonly counts: MembershipCounts;
  /** Members removed and stopped: only a `return` starts one again, for a while. */
  readonly #gone = new Set<NodeId>();
  /** The removed member running again with its old data, if any (one at a time). */
  #returned: SimMember | null = null;
  readonly #s: MembershipSetup;
  readonly #random: Random;
  readonly #founding: number;

  constructor(setup: MembershipSetup, mode: MembershipMode) {
    this.#s = setup;
    this.#random = setup.ctx.random;
    this.#founding = setup.ctx.members.length;
    this.counts = { mode, added: 0, promoted: 0, removed: 0, returned: 0, farBehind: 0 };
  }

  /** The members of the committed configuration: those the end of a run's checks wait for. */
  current(): SimMember[] {
    const conf = this.#s.checker.latest;
    return this.#s.ctx.members.filter((m) => isMember(conf, m.id));
  }

  /** Whether crashes and healing may start `m` again: not once it is gone. */
  mayStart(m: SimMember): boolean {
    return !this.#gone.has(m.id);
  }

  /** Starts the changes, at moments drawn over MEMBERSHIP_SPAN of the fault phase, one after the other. */
  inject(): void {
    const { scheduler, untilMs } = this.#s.ctx;
    const count = this.#random.int(...ACTIONS);
    const [from, to] = MEMBERSHIP_SPAN;
    const moments = Array.from({ length: count }, () => this.#random.int(Math.round(from * untilMs), Math.round(to * untilMs))).sort((a, b) => a - b);
    let chain: Promise<void> = Promise.resolve();
    for (const at of moments) {
      scheduler.at(at, () => {
        chain = chain.then(() => this.#act());
      });
    }
  }

  /** A member stopped as removed (CRONRAFT_REMOVED): it is stopped for good, as its process exits. */
  onRemoved(m: SimMember): void {
    this.#s.ctx.scheduler.after(0, () => this.#stop(m));
  }

  /** A change committed (as first applied anywhere) that removed `id`: it is stopped if it never learns of it. */
  onCommitted(before: Configuration, after: Configuration): void {
    for (const id of membersOf(before)) {
      if (isMember(after, id)) continue;
      const m = this.#s.ctx.members.find((x) => x.id === id);
      if (m === undefined) continue;
      this.#s.ctx.scheduler.after(this.#s.removedGraceMs, () => {
        if (!isMember(this.#s.checker.latest, id)) this.#stop(m);
      });
    }
  }

  /** At healing: a removed member that came back is stopped (nothing heals it into the cluster). */
  heal(): void {
    if (this.#returned !== null) this.#stop(this.#returned);
  }

  #stop(m: SimMember): void {
    this.#gone.add(m.id);
    if (this.#returned === m) this.#returned = null;
    if (!m.up) return;
    this.#s.onStop(m);
    this.#s.ctx.trace(`stop removed ${m.id}`);
    void m.stop();
  }

  async #act(): Promise<void> {
    const { ctx } = this.#s;
    if (ctx.scheduler.nowMs >= ctx.untilMs) return;
    const conf = this.#s.checker.latest;
    const members = membersOf(conf).length;
    const upLearners = conf.learners.filter((id) => ctx.members.some((m) => m.id === id && m.up));
    const possible: Action[] = [];
    if (members < this.#founding + MAX_EXTRA_MEMBERS) possible.push('add', 'replace');
    if (conf.learners.length > 0) possible.push('promote', 'remove-learner');
    if (conf.voters.length > MIN_VOTERS) possible.push('remove-voter');
    if (this.#returned === null && [...this.#gone].some((id) => ctx.members.some((m) => m.id === id && !m.up))) possible.push('return');
    if (upLearners.length > 0) possible.push('far-behind');
    if (possible.length === 0) return;
    const action = pick(this.#random, possible);
    ctx.trace(`membership ${action}`);
    switch (action) {
      case 'add':
        await this.#add();
        return;
      case 'promote':
        await this.#promote(pick(this.#random, conf.learners));
        return;
      case 'remove-voter':
        await this.#remove(pick(this.#random, conf.voters));
        return;
      case 'remove-learner':
        await this.#remove(pick(this.#random, conf.learners));
        return;
      case 'replace': {
        const id = await this.#add();
        if (id === null || !(await this.#promote(id))) return;
        const voters = this.#s.checker.latest.voters.filter((v) => v !== id);
        if (voters.length >= MIN_VOTERS) await this.#remove(pick(this.#random, voters));
        return;
      }
      case 'return':
        this.#return(pick(this.#random, ctx.members.filter((m) => this.#gone.has(m.id) && !m.up)));
        return;
      case 'far-behind': {
        const id = pick(this.#random, upLearners);
        this.#fallBehind(ctx.members.find((m) => m.id === id) as SimMember);
        return;
      }
    }
  }

  /** A new member, started on an empty disk, then added as a learner; its id, or null if the add did not commit in time. */
  async #add(): Promise<NodeId | null> {
    const { ctx } = this.#s;
    const id = `m${ctx.members.length + 1}`;
    const m = this.#s.create(id);
    ctx.members.push(m);
    ctx.ids.push(id);
    ctx.record({ t: ctx.scheduler.nowMs, kind: 'restart', member: id });
    this.#s.start(m);
    const added = await this.#change({ type: 'add-learner', id }, (conf) => (isMember(conf, id) ? 'done' : 'pending'));
    if (added) this.counts.added++;
    return added ? id : null;
  }

  async #promote(id: NodeId): Promise<boolean> {
    const promoted = await this.#change({ type: 'promote', id }, (conf) => (conf.voters.includes(id) ? 'done' : conf.learners.includes(id) ? 'pending' : 'void'), (leader) => {
      const match = leader.progressOf(id)?.match ?? 0;
      return match >= leader.log.committed - PROMOTE_LAG_ENTRIES;
    });
    if (promoted) this.counts.promoted++;
    return promoted;
  }

  async #remove(id: NodeId): Promise<boolean> {
    const removed = await this.#change({ type: 'remove', id }, (conf) => (!isMember(conf, id) ? 'done' : conf.voters.length === 1 ? 'void' : 'pending'));
    if (removed) this.counts.removed++;
    return removed;
  }

  /** A removed member starts again on its old data, and is stopped again a while later. */
  #return(m: SimMember): void {
    const { ctx } = this.#s;
    this.#returned = m;
    this.counts.returned++;
    ctx.trace(`return ${m.id}`);
    ctx.record({ t: ctx.scheduler.nowMs, kind: 'restart', member: m.id });
    this.#s.start(m);
    // Its start has begun this life already (the incarnation is counted as a start begins).
    const incarnation = m.incarnation;
    ctx.scheduler.after(this.#random.int(...RETURN_MS), () => {
      if (this.#returned === m && m.incarnation === incarnation) this.#stop(m);
    });
  }

  /** A learner goes down for long enough that the leader compacts past it; crashes and healing leave it be meanwhile. */
  #fallBehind(m: SimMember): void {
    const { ctx } = this.#s;
    this.counts.farBehind++;
    this.#s.onStop(m);
    m.crash();
    ctx.trace(`far behind ${m.id}`);
    ctx.record({ t: ctx.scheduler.nowMs, kind: 'crash', member: m.id });
    ctx.scheduler.after(this.#random.int(...FAR_BEHIND_MS), () => {
      if (!m.up && this.mayStart(m)) this.#s.start(m);
    });
  }

  /**
   * Proposes `change` on the leader until `goal` says the committed configuration reached it
   * (`done`: true) or can no longer reach it (`void`), or the fault phase ends (false). A
   * refusal (no leader, a change pending, a leader that has not committed in its term, the
   * cluster not at version 2 yet) or a proposal lost with its leader is tried again, and so is
   * a change the leader is not `ready` for.
   */
  async #change(change: ConfChange, goal: (conf: Configuration) => 'done' | 'pending' | 'void', ready: (leader: RaftNode) => boolean = () => true): Promise<boolean> {
    const { ctx } = this.#s;
    for (;;) {
      const state = goal(this.#s.checker.latest);
      if (state !== 'pending') return state === 'done';
      if (ctx.scheduler.nowMs >= ctx.untilMs) return false;
      const leader = ctx.members.find((m) => m.driver?.node.role === 'leader' && m.driver.fatalError === null)?.member;
      if (leader !== undefined && leader !== null && ready(leader.driver.node)) {
        try {
          await leader.proposeConfChange(change);
        } catch {
          // Refused or lost: the committed configuration says, on the next turn, whether to try again.
        }
      }
      await new Promise<void>((resolve) => ctx.scheduler.after(this.#random.int(...RETRY_MS), resolve));
    }
  }
}

function pick<T>(random: Random, xs: readonly T[]): T {
  return xs[random.int(0, xs.length - 1)] as T;
}
