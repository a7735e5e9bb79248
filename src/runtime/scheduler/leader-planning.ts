import type { NodeId } from '../../raft/types.js';
import { planDepartures } from '../../scheduler/departures.js';
import { plan, planReassignments } from '../../scheduler/planner.js';
import { claimKey, type ApplyResult } from '../../scheduler/records.js';
import type { SchedulerCommand } from '../../scheduler/command.js';
import type { RuntimeContext } from './runtime-context.js';
import { chunks, MAX_COMMANDS_PER_BATCH } from '../command-batch.js';

/**
 * The leader's side of the scheduler on one member: on every plan interval while it leads, it
 * runs the pure planner over the replicated state and proposes what is due (claims, skips, and
 * the moves of claims: reassignments and expiries), each once until it is applied or fails.
 */
export class LeaderPlanning {
  readonly #ctx: RuntimeContext;
  /** Milliseconds until no slot instant is near (0: none is), at most the limit (see quiet-window.ts). */
  readonly #msUntilQuiet: (limitMs: number) => number;
  /** Commands proposed and not yet applied or failed, so one plan does not repeat the last one's. */
  readonly #inflight = new Set<string>();
  /**
   * When this member last became leader, on its monotonic timers (a duration is measured: the
   * cluster's time may step back, by much after a bad leader's estimate, and a grace counted on
   * it would not end until it came back), or null while it follows.
   */
  #leaderSinceMs: number | null = null;
  /** The configuration's members as the last plan read them (see #departures). */
  #configured: ReadonlySet<NodeId> = new Set();
  /**
   * Whether a member outside the configuration may have work left to settle (planDepartures):
   * set as this member begins to lead, as the configuration changes, as the state is restored,
   * as a claim or registration naming such a member applies, and as a cancel ends such a
   * member's run; cleared once a plan finds nothing to settle. Spares every other plan a pass
   * over the claims.
   */
  #departuresDue = true;
  /**
   * When this leader last saw each member hold its claims, by the cluster's time of its plans
   * (planReassignments' and plan's `heldAtMs`): a long run's horizon counts from when its member
   * was lost, not only from its start, and a fixed-delay job waits for such a run's end. Begun
   * with when it last heard from each member as it followed (#sawAsFollower). Entries older than
   * the horizon, which change nothing, are dropped, so it holds the members seen within it;
   * emptied as this member follows.
   */
  readonly #heldAtMs = new Map<NodeId, number>();

  constructor(ctx: RuntimeContext, msUntilQuiet: (limitMs: number) => number) {
    this.#ctx = ctx;
    this.#msUntilQuiet = msUntilQuiet;
  }

  /**
   * Plans if this member leads (else only notes that it follows); returns how soon to plan
   * again with the whole look-ahead, or null.
   */
  planIfLeading(): number | null {
    const o = this.#ctx.options;
    if (!o.isLeader()) {
      this.#leaderSinceMs = null;
      this.#departuresDue = true;
      this.#heldAtMs.clear();
      return null;
    }
    if (this.#leaderSinceMs === null) {
      this.#leaderSinceMs = o.timers.now();
      this.#sawAsFollower();
    }
    return this.#plan();
  }

  /** A scheduler command was applied (to the state, with `result`): a plan's command no longer waits for its answer. */
  applied(command: SchedulerCommand, result: ApplyResult): void {
    if (command.type === 'claim' || command.type === 'skip' || command.type === 'reassign' || command.type === 'expire' || command.type === 'forfeit' || command.type === 'unregister') this.#inflight.delete(inflightKey(command));
    // A claim planned, or a registration proposed, before its member left: work to settle. (A
    // registration's member is looked up without a list made for it: every member applies three
    // a job.)
    if (command.type === 'register' && !this.#configured.has(command.member)) this.#departuresDue = true;
    if ((command.type === 'claim' || command.type === 'trigger' || command.type === 'reassign') && command.assignees.some((id) => !this.#configured.has(id))) this.#departuresDue = true;
    // A run of a member that left, replaced by a later slot or cancelled by an operator: its
    // slot never moves now, and only a forfeit gives its share an outcome. A plan may have found
    // nothing to settle just before, while the slot was still planReassignments' to move.
    if (result.ok && (command.type === 'cancel' || command.type === 'cancel-runs')) {
      const claims = command.type === 'cancel' ? (result.claim === undefined ? [] : [result.claim]) : (result.cancelled ?? []);
      if (claims.some((claim) => claim.assignees.some((id) => !this.#configured.has(id)))) this.#departuresDue = true;
    }
  }

  /** The state was replaced by a snapshot's: the next plan starts from it. */
  restored(): void {
    this.#inflight.clear();
    this.#departuresDue = true;
  }

  /** Notes the members holding their claims now, at `nowMs`, and forgets those last seen before `sinceMs`. */
  #sawHolding(holding: Iterable<NodeId>, sinceMs: number, nowMs: number): void {
    for (const id of holding) this.#heldAtMs.set(id, nowMs);
    for (const [id, atMs] of this.#heldAtMs) if (atMs < sinceMs) this.#heldAtMs.delete(id);
  }

  /**
   * As this member begins to lead: what it knows, as a follower, of when each member last held its
   * claims, which is when it last heard from it. Without it, a long run of the leader it followed
   * (whose runs no other member watched), lost together with that leader, was counted from its
   * start and recorded missed, where a run lost under this leader is moved.
   */
  #sawAsFollower(): void {
    const o = this.#ctx.options;
    const nowMs = o.clock.now();
    for (const [id, agoMs] of o.heardAgoMs?.() ?? []) {
      if (agoMs <= o.reassignHorizonMs) this.#heldAtMs.set(id, nowMs - agoMs);
    }
  }

  /**
   * What members outside the configuration left to settle, once any may have some (see
   * #departuresDue); a member among `holding` is waited for (planDepartures), planned again until it is lost.
   */
  #departures(holding: ReadonlySet<NodeId> | undefined): SchedulerCommand[] {
    const o = this.#ctx.options;
    const members = o.configuredMembers?.() ?? null;
    // Below cluster version 2 nobody leaves the configuration, and a forfeit is not readable.
    if (members === null) return [];
    if (members.length !== this.#configured.size || members.some((id) => !this.#configured.has(id))) {
      this.#configured = new Set(members);
      this.#departuresDue = true;
    }
    if (!this.#departuresDue) return [];
    const commands = planDepartures(this.#ctx.state, { configured: this.#configured, holding, nowMs: o.clock.now(), maxCommands: o.maxClaimsPerPlan });
    const waiting = holding !== undefined && [...holding].some((id) => !this.#configured.has(id));
    if (commands.length === 0 && !waiting) this.#departuresDue = false;
    return commands;
  }

  /** Proposes what the planner says is due; returns how soon to plan again with the whole look-ahead, or null. */
  #plan(): number | null {
    const o = this.#ctx.options;
    const state = this.#ctx.state;
    const members = new Map<NodeId, { load: number }>();
    const eligible = o.eligibleMembers();
    for (const id of eligible) members.set(id, { load: state.assigned.get(id) ?? 0 });
    const settled = this.#leaderSinceMs !== null && o.timers.now() - this.#leaderSinceMs >= o.reassignGraceMs;
    const nowMs = o.clock.now();
    const holding = o.holdingMembers === undefined ? undefined : new Set(o.holdingMembers());
    const heard = o.heardSinceLeading;
    this.#sawHolding(heard === undefined ? (holding ?? eligible) : [...(holding ?? eligible)].filter(heard), nowMs - o.reassignHorizonMs, nowMs);
    const moves = !settled ? [] : planReassignments(state, {
      nowMs,
      eligible: new Set(eligible),
      holding,
      horizonMs: o.reassignHorizonMs,
      maxCommands: o.maxClaimsPerPlan,
      heldAtMs: this.#heldAtMs,
      version: o.clusterVersion?.(),
    });
    // While a slot instant is near, the slots at the far end of the look-ahead wait until it
    // passed (see quiet-window.ts): the planner looks one plan interval less far ahead (half as
    // far at most), and plans again once the instant passed. Moves, skips and claims due sooner go now.
    const quietInMs = this.#msUntilQuiet(o.planIntervalMs);
    const commands = [...this.#departures(holding), ...moves, ...plan(state, {
      nowMs: o.clock.now(),
      lookaheadMs: quietInMs >= 1 ? Math.max(o.lookaheadMs / 2, o.lookaheadMs - o.planIntervalMs) : o.lookaheadMs,
      members,
      maxClaims: o.maxClaimsPerPlan,
      horizonMs: o.reassignHorizonMs,
      version: o.clusterVersion?.(),
      heldAtMs: this.#heldAtMs,
      holding,
    })];
    this.#propose(commands);
    return quietInMs >= 1 ? quietInMs : null;
  }

  /**
   * Proposes each command not already waiting for its answer. The unregistrations of a member
   * that left go in batches of one member's (once the cluster reads them), as its own would: one
   * entry each wrote ten thousand entries for a member of ten thousand jobs removed while it ran.
   */
  #propose(commands: readonly SchedulerCommand[]): void {
    const o = this.#ctx.options;
    const unregistering = new Map<NodeId, Array<Extract<SchedulerCommand, { type: 'unregister' }>>>();
    const one = (command: SchedulerCommand): void => {
      const key = inflightKey(command);
      this.#inflight.add(key);
      o.propose(command).catch(() => this.#inflight.delete(key));
    };
    for (const command of commands) {
      if (this.#inflight.has(inflightKey(command))) continue;
      if (command.type !== 'unregister' || o.proposeBatch === undefined) one(command);
      else {
        const list = unregistering.get(command.member);
        if (list === undefined) unregistering.set(command.member, [command]);
        else list.push(command);
      }
    }
    for (const batch of [...unregistering.values()].flatMap((list) => chunks(list, MAX_COMMANDS_PER_BATCH))) {
      const proposed = batch.length > 1 ? (o.proposeBatch?.(batch) ?? null) : null;
      if (proposed === null) {
        for (const command of batch) one(command);
        continue;
      }
      const keys = batch.map(inflightKey);
      for (const key of keys) this.#inflight.add(key);
      proposed.catch(() => {
        for (const key of keys) this.#inflight.delete(key);
      });
    }
  }
}

function inflightKey(command: SchedulerCommand): string {
  if (command.type === 'claim') return `claim ${claimKey(command.job, command.slotMs)}`;
  if (command.type === 'skip') return `skip ${claimKey(command.job, command.throughMs)}`;
  if (command.type === 'reassign') return `reassign ${claimKey(command.job, command.slotMs)} ${command.fromToken}`;
  if (command.type === 'expire') return `expire ${claimKey(command.job, command.slotMs)} ${command.fromToken}`;
  if (command.type === 'forfeit') return `forfeit ${claimKey(command.job, command.slotMs)} ${command.token} ${command.member}`;
  if (command.type === 'unregister') return `unregister ${command.job} ${command.member}`;
  return command.type;
}
