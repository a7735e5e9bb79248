import type { NodeId } from '../raft/types.js';
import { expirable } from './apply-rules.js';
import { hasInstantWithin, nextInstantAfter } from './next-instant.js';
import { countInstantsBetween, instantsBetween, lastInstantBetween, lastInstantsBetween, type JobSpec } from './spec.js';
import { claimKey, isSettling, MAX_INTERRUPTED_ATTEMPTS, runsOf, type ClaimRecord, type JobRecord } from './records.js';
import type { JobPolicy, SchedulerCommand } from './command.js';
import type { SchedulerState } from './state.js';
import { believable, believedHorizonFromMs, believedReportMs } from './stamps.js';
import { FIRST_CLUSTER_VERSION, PAST_HORIZON_VERSION } from '../version/versions.js';

/** What to do with slots whose instant passed while no claim could be made (no quorum). */
export type CatchUp = JobPolicy['catchUp'];

export interface PlanInput {
  /** The cluster's time now. */
  readonly nowMs: number;
  /** Claims are made this far ahead, so the assignee fires on its own timer at the instant. */
  readonly lookaheadMs: number;
  /** Members that may be assigned work now (reachable, clock within bounds), with their load. */
  readonly members: ReadonlyMap<NodeId, { readonly load: number }>;
  /** Bound on claims proposed in one plan. */
  readonly maxClaims: number;
  /**
   * A claim whose slot is older than this is never moved or run again (the reassignment
   * horizon): a fixed-delay job waiting for its end goes on as if it ended now.
   */
  readonly horizonMs?: number;
  /** The cluster version in force, by which the horizon is counted (see planReassignments). @default FIRST_CLUSTER_VERSION */
  readonly version?: number;
  /** When the leader last saw each member hold its claims (see planReassignments): a fixed-delay job's long run goes on while its member is seen. @default none */
  readonly heldAtMs?: ReadonlyMap<NodeId, number>;
  /** Members whose claims stay theirs (see planReassignments): a fixed-delay job's slot left to its member past the horizon is not over. @default the keys of `members` */
  readonly holding?: ReadonlySet<NodeId> | undefined;
}

/**
 * The leader's planner: which slots to claim now, and for whom, and which missed slots to skip
 * under the job's catch-up policy. Pure: it reads the replicated state and the inputs, and
 * returns commands to propose. The state machine's high-water mark, not the planner, guarantees
 * that a slot is claimed at most once.
 *
 * A fixed-delay job has at most one slot due at a time: the next one is claimed only once the
 * previous one's final outcome is in the log (catch-up does not apply: a slot whose instant
 * passed is claimed as it is, and runs at once). A 'queue' job's slots go to the member of its
 * latest unfinished run while that member may take work, so that one member's local queue keeps
 * them in order.
 */
export function plan(state: SchedulerState, input: PlanInput): SchedulerCommand[] {
  const commands: SchedulerCommand[] = [];
  const load = new Map<NodeId, number>();
  for (const [id, m] of input.members) load.set(id, m.load);
  const horizon = input.horizonMs === undefined ? undefined : { nowMs: input.nowMs, horizonMs: input.horizonMs, version: input.version, heldAtMs: input.heldAtMs, holding: input.holding };
  // The jobs are planned in name order, but most have nothing due on a given plan: they are
  // passed over first (hasInstantWithin: arithmetic, or a cron job's remembered answer), and
  // only the others are sorted, so that a plan of many idle jobs allocates and sorts nothing.
  const due: JobRecord[] = [];
  const byMs = input.nowMs + input.lookaheadMs;
  for (const job of state.jobs.values()) {
    if (job.spec.kind !== 'delay') {
      if (hasInstantWithin(job.spec, job.anchorMs, job.highWaterMs, byMs)) due.push(job);
      continue;
    }
    const next = nextDelaySlot(state, job, input.members, horizon);
    if (next !== null && next <= byMs) due.push(job);
  }
  due.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  for (const job of due) {
    if (commands.length >= input.maxClaims) break;
    const name = job.name;
    const eligible = [...job.handlers].filter((id) => load.has(id)).sort();
    if (eligible.length === 0) continue;
    let slots: number[];
    // The job's commands form a chain, each applying only if the mark is still where the one
    // before it left it: the skip from the current mark, each claim from the previous one.
    let mark = job.highWaterMs;
    if (job.spec.kind === 'delay') {
      const next = nextDelaySlot(state, job, input.members, horizon);
      slots = next !== null && next <= input.nowMs + input.lookaheadMs ? [next] : [];
    } else {
      const due = dueSlots(job.spec, job.anchorMs, job.highWaterMs, input, job.policy.catchUp);
      if (due.skip !== null) {
        commands.push({ type: 'skip', job: name, throughMs: due.skip.throughMs, fromMs: mark, count: due.skip.count });
        mark = due.skip.throughMs;
      }
      slots = due.slots;
    }
    let sticky = job.mode === 'one' && job.policy.overlap === 'queue' ? unfinishedAssignee(state, job, load) : null;
    for (const slotMs of slots) {
      if (commands.length >= input.maxClaims) break;
      const assignees = job.mode === 'all' ? eligible : [sticky ?? leastLoaded(eligible, load)];
      if (job.mode === 'one' && job.policy.overlap === 'queue') sticky = assignees[0] as NodeId;
      for (const id of assignees) load.set(id, (load.get(id) ?? 0) + 1);
      // A slot claimed after its instant (caught up) says when: its horizon counts from then.
      commands.push({ type: 'claim', job: name, slotMs, assignees, fromMs: mark, ...(slotMs < input.nowMs ? { atMs: input.nowMs } : {}) });
      mark = slotMs;
    }
  }
  return commands;
}

/** The assignee of the job's latest claim if that run has not ended and the member may take work. */
function unfinishedAssignee(state: SchedulerState, job: JobRecord, members: ReadonlyMap<NodeId, unknown>): NodeId | null {
  const latest = state.claims.get(claimKey(job.name, job.highWaterMs));
  const assignee = latest?.assignees[0];
  if (latest === undefined || assignee === undefined || !members.has(assignee) || !job.handlers.has(assignee)) return null;
  const ended = latest.outcomes.get(assignee)?.token === latest.token || latest.cancelled?.token === latest.token;
  return ended ? null : assignee;
}

/**
 * When the claim's story is over, per the log: the time of its final outcome (or of its
 * replacement), or null while a run is pending, in progress, or to be retried or moved. A
 * failed run with retries left is not final; neither is an interrupted one, which is moved. In
 * mode 'all', every assignee must have reported, except those no longer in `members` (when
 * given) or no longer with a handler, which never will. With the leader's `nowMs`, a time
 * stamped further ahead of it than believable counts as the latest believable one before it
 * (stamps.ts). Pure.
 */
export function claimEndedAt(state: SchedulerState, claim: ClaimRecord, members?: ReadonlyMap<NodeId, unknown>, nowMs?: number): number | null {
  const job = state.jobs.get(claim.job);
  if (claim.cancelled?.token === claim.token) return believable(claim.cancelled.atMs, nowMs) ? claim.cancelled.atMs : believedHorizonFromMs(claim, nowMs);
  if (job?.mode === 'all') {
    let last: number | null = null;
    for (const id of claim.assignees) {
      const o = claim.outcomes.get(id);
      if (o !== undefined && o.token === claim.token) last = Math.max(last ?? Number.NEGATIVE_INFINITY, believedReportMs(claim, id, o.atMs, nowMs));
      else if ((members === undefined || members.has(id)) && job.handlers.has(id)) return null;
    }
    // Nobody who ran it is left to report: the slot's instant stands for its end.
    return last ?? claim.slotMs;
  }
  const assignee = claim.assignees[0];
  const o = assignee === undefined ? undefined : claim.outcomes.get(assignee);
  if (o === undefined || o.token !== claim.token) return null;
  switch (o.outcome) {
    case 'failed':
    case 'aborted':
      return job !== undefined && claim.retried < job.policy.retries ? null : believedReportMs(claim, assignee as NodeId, o.atMs, nowMs);
    case 'interrupted':
      return claim.attempt < MAX_INTERRUPTED_ATTEMPTS ? null : believedReportMs(claim, assignee as NodeId, o.atMs, nowMs);
    default:
      return believedReportMs(claim, assignee as NodeId, o.atMs, nowMs);
  }
}

/**
 * A fixed-delay job's next slot, or null while its previous run has not ended or for another
 * kind of spec. The first slot falls `initialDelayMs` after the registration; each next one
 * `delayMs` after the previous one's end; never at or before the high-water mark. Pure.
 */
export function nextDelaySlot(
  state: SchedulerState,
  job: JobRecord,
  members?: ReadonlyMap<NodeId, unknown>,
  horizon?: {
    readonly nowMs: number;
    readonly horizonMs: number;
    readonly version?: number | undefined;
    readonly heldAtMs?: ReadonlyMap<NodeId, number> | undefined;
    readonly holding?: ReadonlySet<NodeId> | undefined;
  },
): number | null {
  if (job.spec.kind !== 'delay') return null;
  const previous = state.claims.get(claimKey(job.name, job.highWaterMs));
  let next: number;
  if (previous !== undefined) {
    let endedAtMs = claimEndedAt(state, previous, members, horizon?.nowMs);
    // Past the horizon nothing moves or retries the claim any more: its story is over now,
    // unless the leader leaves it to its member, which runs it or reports it (planReassignments).
    const assignee = previous.assignees[0];
    const heldAtMs = assignee === undefined ? undefined : horizon?.heldAtMs?.get(assignee);
    if (endedAtMs === null && horizon !== undefined && horizonOf(previous, job, horizon.version, heldAtMs, horizon.nowMs) < horizon.nowMs - horizon.horizonMs) {
      const holding = horizon.holding ?? new Set(members?.keys() ?? []);
      if (job.mode === 'one' && leftToAssignee(job, previous, holding, horizon.version)) return null;
      endedAtMs = horizon.nowMs;
    }
    if (endedAtMs === null) return null;
    next = endedAtMs + job.spec.delayMs;
  } else if (job.highWaterMs === job.anchorMs) {
    // Nothing claimed yet.
    next = job.anchorMs + job.spec.initialDelayMs;
  } else {
    // The previous claim is no longer kept: its instant is the latest bound known of its end.
    next = job.highWaterMs + job.spec.delayMs;
  }
  // A claim at or before the high-water mark would be refused (an initial delay of 0, or an
  // end reported by a clock behind the slot's).
  return Math.max(next, job.highWaterMs + 1);
}

/**
 * Bound on the missed instants of a cron spec counted for one skip (a longer outage counts this
 * many): they are walked one by one, on the leader's loop. An interval's are counted whole.
 */
const MAX_PAST_ENUMERATED = 1000;

function dueSlots(
  spec: JobSpec,
  anchorMs: number,
  highWaterMs: number,
  input: PlanInput,
  catchUp: CatchUp,
): { skip: { throughMs: number; count: number } | null; slots: number[] } {
  // The next instant after the high-water mark, remembered since plan() asked it.
  const next = nextInstantAfter(spec, anchorMs, highWaterMs);
  if (next === null || next > input.nowMs + input.lookaheadMs) return { skip: null, slots: [] };
  const future = instantsBetween(spec, anchorMs, Math.max(highWaterMs, input.nowMs), input.nowMs + input.lookaheadMs, input.maxClaims);
  if (next > input.nowMs) return { skip: null, slots: future };
  const latestPast = lastInstantBetween(spec, anchorMs, highWaterMs, input.nowMs);
  if (latestPast === null) return { skip: null, slots: future };
  let kept: number[] = [];
  if (catchUp.policy === 'latest') kept = [latestPast];
  else if (catchUp.policy === 'all') {
    const from = Math.max(highWaterMs, input.nowMs - catchUp.windowMs - 1);
    kept = lastInstantsBetween(spec, anchorMs, from, input.nowMs, catchUp.maxSlots);
  }
  // Everything before the first kept slot (or up to now, if none is kept) is skipped as missed.
  const skipThrough = kept.length > 0 ? (kept[0] as number) - 1 : latestPast;
  const skipped = skipThrough > highWaterMs ? countInstantsBetween(spec, anchorMs, highWaterMs, skipThrough, MAX_PAST_ENUMERATED) : 0;
  return { skip: skipped > 0 ? { throughMs: skipThrough, count: skipped } : null, slots: [...kept, ...future] };
}

/** The member of `ids` with the least load, the first of them on a tie. */
export function leastLoaded(ids: readonly NodeId[], load: ReadonlyMap<NodeId, number>): NodeId {
  let best = ids[0] as NodeId;
  for (const id of ids) if ((load.get(id) ?? 0) < (load.get(best) ?? 0)) best = id;
  return best;
}

export { MAX_INTERRUPTED_ATTEMPTS };

export interface ReassignInput {
  readonly nowMs: number;
  /** Members that may be given work now. */
  readonly eligible: ReadonlySet<NodeId>;
  /**
   * Members whose claims stay theirs (reachable); the claims of any other move. A member may
   * keep its claims without being eligible for new ones (a clock not yet measured). @default eligible
   */
  readonly holding?: ReadonlySet<NodeId> | undefined;
  /** Claims older than this (counted from horizonStartMs) are never moved: those left with no outcome and no run are recorded as missed. */
  readonly horizonMs: number;
  readonly maxCommands: number;
  /** When the leader last saw each member hold its claims (the cluster's time of a plan that found it in `holding`): see horizonStartMs. @default none */
  readonly heldAtMs?: ReadonlyMap<NodeId, number>;
  /**
   * The cluster version in force: from PAST_HORIZON_VERSION, a claim past the horizon whose
   * run was interrupted is recorded missed too, and one of a reachable assignee is left to it
   * (it runs it, or reports it interrupted). @default FIRST_CLUSTER_VERSION
   */
  readonly version?: number;
}

/**
 * Claims (mode 'one') to move to another member: their assignee is no longer reachable, or
 * released the claim (it unregistered the job and started no run under the token: see
 * `released`), and has reported nothing under the current token, or their run failed and the job retries
 * (after an exponential back-off from the failure). A claim past the horizon is never moved:
 * if nothing was reported under its token, or its run was interrupted (from
 * PAST_HORIZON_VERSION), and no member that may take work runs it, it is recorded as
 * missed (`expire`), so that no claimed slot is left without a final outcome; from that version
 * not while its assignee is reachable and has not given it back (a run queued behind a long one
 * waits there; the assignee reports a claim it will not run). Pure,
 * like `plan`.
 */
export function planReassignments(state: SchedulerState, input: ReassignInput): SchedulerCommand[] {
  const out: SchedulerCommand[] = [];
  const holding = input.holding ?? input.eligible;
  // Only claims whose story may not be over; most have succeeded and are not looked at.
  for (const claim of state.openClaims()) {
    if (out.length >= input.maxCommands) break;
    const job = state.jobs.get(claim.job);
    if (job === undefined || job.mode !== 'one') continue;
    const assignee = claim.assignees[0];
    if (assignee === undefined) continue;
    const outcome = claim.outcomes.get(assignee);
    const current = outcome !== undefined && outcome.token === claim.token ? outcome : undefined;
    // A replaced run's slot is over, wherever its member is.
    if (claim.cancelled?.token === claim.token) continue;
    if (horizonOf(claim, job, input.version, input.heldAtMs?.get(assignee), input.nowMs) < input.nowMs - input.horizonMs) {
      if (leftToAssignee(job, claim, holding, input.version)) continue;
      // Recorded missed only as the state will apply it (expirable): nothing reported under the
      // token, or a run interrupted before the last attempt, whose interruption is final.
      if (expirable(claim, input.version ?? FIRST_CLUSTER_VERSION) && !runsOf(claim).some((run) => holding.has(run.member))) {
        out.push({ type: 'expire', job: claim.job, slotMs: claim.slotMs, fromToken: claim.token, reason: 'expired', atMs: input.nowMs });
      }
      continue;
    }
    // Most claims are settled or in good hands: decided before any allocation, since every
    // claim within the horizon is looked at on every plan.
    if (current === undefined ? holding.has(assignee) && !released(job, claim, assignee) : isSettling(current.outcome)) continue;
    const candidates = [...job.handlers].filter((id) => input.eligible.has(id)).sort();
    if (current === undefined) {
      if (candidates.length === 0) continue;
      out.push({ type: 'reassign', job: claim.job, slotMs: claim.slotMs, fromToken: claim.token, assignees: [pick(candidates, state, assignee)], reason: 'assignee-lost', atMs: input.nowMs });
      continue;
    }
    // (Skipped and replaced slots, left out above, were meant not to run: no retry.)
    if (current.outcome === 'interrupted') {
      // Not the job's failure: run it elsewhere, whatever its retries (bounded all the same).
      if (claim.attempt < MAX_INTERRUPTED_ATTEMPTS && candidates.length > 0) {
        out.push({ type: 'reassign', job: claim.job, slotMs: claim.slotMs, fromToken: claim.token, assignees: [pick(candidates, state, assignee)], reason: 'assignee-lost', atMs: input.nowMs });
      }
      continue;
    }
    const { retries, retryDelayMs: delayMs } = job.policy;
    if (claim.retried >= retries || candidates.length === 0) continue;
    if (input.nowMs < believedReportMs(claim, assignee, current.atMs, input.nowMs) + delayMs * 2 ** claim.retried) continue;
    out.push({ type: 'reassign', job: claim.job, slotMs: claim.slotMs, fromToken: claim.token, assignees: [pick(candidates, state, assignee)], reason: 'retry', atMs: input.nowMs });
  }
  return out;
}

/**
 * Where the leader counts a claim's reassignment horizon from: horizonFromMs (its instant, or
 * when it was made or last moved), or later, its current run's start and outcome, and for a
 * failure with retries left, when its retry is due; for a run in progress, when the leader last
 * saw its member hold its claims (`assigneeHeldAtMs`). So a run longer than the horizon that is
 * lost, fails or is interrupted is moved or retried as a short one is, and a back-off longer than
 * the horizon still retries, where counting from the instant alone took each for history. With the
 * leader's `nowMs`, a time stamped further ahead of it than believable is left out (stamps.ts). Pure.
 */
export function horizonStartMs(claim: ClaimRecord, job: JobRecord, assigneeHeldAtMs?: number, nowMs?: number): number {
  let fromMs = believedHorizonFromMs(claim, nowMs);
  const assignee = claim.assignees[0];
  if (assignee === undefined) return fromMs;
  const start = claim.starts.get(assignee);
  const started = start !== undefined && start.token === claim.token;
  if (started && believable(start.atMs, nowMs)) fromMs = Math.max(fromMs, start.atMs);
  const current = claim.outcomes.get(assignee);
  if (current === undefined || current.token !== claim.token) return started && assigneeHeldAtMs !== undefined ? Math.max(fromMs, assigneeHeldAtMs) : fromMs;
  const endedAtMs = believedReportMs(claim, assignee, current.atMs, nowMs);
  fromMs = Math.max(fromMs, endedAtMs);
  const failed = current.outcome === 'failed' || current.outcome === 'aborted';
  return failed && claim.retried < job.policy.retries ? Math.max(fromMs, endedAtMs + job.policy.retryDelayMs * 2 ** claim.retried) : fromMs;
}

/**
 * Where the leader counts a claim's horizon from under cluster version `version`: before
 * PAST_HORIZON_VERSION from its instant, or its late claim, alone, as members of earlier releases
 * arm by (a run moved later is not armed there: moving it would only make it missed).
 */
function horizonOf(claim: ClaimRecord, job: JobRecord, version: number | undefined, assigneeHeldAtMs: number | undefined, nowMs: number): number {
  return (version ?? FIRST_CLUSTER_VERSION) >= PAST_HORIZON_VERSION ? horizonStartMs(claim, job, assigneeHeldAtMs, nowMs) : believedHorizonFromMs(claim, nowMs);
}

/**
 * From PAST_HORIZON_VERSION, whether the leader leaves a claim (mode 'one') past the horizon to
 * its assignee: it reported nothing under the claim's token, is reachable (`holding`) and has
 * not given the claim back. It reports what it will not run (interrupted), and runs what it
 * queued (a run queued behind a long one). Pure.
 */
function leftToAssignee(job: JobRecord, claim: ClaimRecord, holding: ReadonlySet<NodeId>, version: number | undefined): boolean {
  const assignee = claim.assignees[0];
  if ((version ?? FIRST_CLUSTER_VERSION) < PAST_HORIZON_VERSION || assignee === undefined) return false;
  return claim.outcomes.get(assignee)?.token !== claim.token && holding.has(assignee) && !released(job, claim, assignee);
}

/**
 * Whether the assignee gave the claim back: it no longer handles the job (it unregistered it,
 * as a member does as it stops gracefully) and has not started a run under the claim's token,
 * so nobody runs the slot unless it moves. A run it started goes on (and reports its outcome,
 * or is moved once the member is lost), so that a slot is never started twice.
 */
function released(job: JobRecord, claim: ClaimRecord, assignee: NodeId): boolean {
  return !job.handlers.has(assignee) && claim.starts.get(assignee)?.token !== claim.token;
}

/** Another member than the last one if there is one, least loaded first. */
function pick(candidates: readonly NodeId[], state: SchedulerState, avoid: NodeId): NodeId {
  const others = candidates.filter((id) => id !== avoid);
  return leastLoaded(others.length > 0 ? others : candidates, state.assigned);
}
