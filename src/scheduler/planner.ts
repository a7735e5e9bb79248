import type { NodeId } from '../raft/types.js';
import { instantsBetween, lastInstantBetween, lastInstantsBetween, type JobSpec } from './spec.js';
import type { JobPolicy, SchedulerCommand, SchedulerState } from './state.js';

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
}

/**
 * The leader's planner: which slots to claim now, and for whom, and which missed slots to skip
 * under the job's catch-up policy. Pure: it reads the replicated state and the inputs, and
 * returns commands to propose. The state machine's high-water mark, not the planner, guarantees
 * that a slot is claimed at most once.
 */
export function plan(state: SchedulerState, input: PlanInput): SchedulerCommand[] {
  const commands: SchedulerCommand[] = [];
  const load = new Map<NodeId, number>();
  for (const [id, m] of input.members) load.set(id, m.load);
  for (const name of [...state.jobs.keys()].sort()) {
    if (commands.length >= input.maxClaims) break;
    const job = state.jobs.get(name);
    if (job === undefined) continue;
    const eligible = [...job.handlers].filter((id) => load.has(id)).sort();
    if (eligible.length === 0) continue;
    const { skip, slots } = dueSlots(job.spec, job.anchorMs, job.highWaterMs, input, job.policy.catchUp);
    if (skip !== null) commands.push({ type: 'skip', job: name, throughMs: skip.throughMs, count: skip.count });
    for (const slotMs of slots) {
      if (commands.length >= input.maxClaims) break;
      const assignees = job.mode === 'all' ? eligible : [leastLoaded(eligible, load)];
      for (const id of assignees) load.set(id, (load.get(id) ?? 0) + 1);
      commands.push({ type: 'claim', job: name, slotMs, assignees });
    }
  }
  return commands;
}

/** Bound on missed instants counted for one skip (a longer outage counts this many). */
const MAX_PAST_ENUMERATED = 1000;

function dueSlots(
  spec: JobSpec,
  anchorMs: number,
  highWaterMs: number,
  input: PlanInput,
  catchUp: CatchUp,
): { skip: { throughMs: number; count: number } | null; slots: number[] } {
  const future = instantsBetween(spec, anchorMs, Math.max(highWaterMs, input.nowMs), input.nowMs + input.lookaheadMs, input.maxClaims);
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
  const skipped = skipThrough > highWaterMs ? instantsBetween(spec, anchorMs, highWaterMs, skipThrough, MAX_PAST_ENUMERATED).length : 0;
  return { skip: skipped > 0 ? { throughMs: skipThrough, count: skipped } : null, slots: [...kept, ...future] };
}

function leastLoaded(ids: readonly NodeId[], load: ReadonlyMap<NodeId, number>): NodeId {
  let best = ids[0] as NodeId;
  for (const id of ids) if ((load.get(id) ?? 0) < (load.get(best) ?? 0)) best = id;
  return best;
}

/** Bound on attempts of a slot whose runs the cluster keeps interrupting. */
export const MAX_INTERRUPTED_ATTEMPTS = 10;

export interface ReassignInput {
  readonly nowMs: number;
  /** Members that may be given work now. */
  readonly eligible: ReadonlySet<NodeId>;
  /** Claims older than this (by slot) are left alone: their story is over. */
  readonly horizonMs: number;
  readonly maxCommands: number;
}

/**
 * Claims (mode 'one') to move to another member: their assignee is no longer reachable and
 * has reported nothing under the current token, or their run failed and the job retries
 * (after an exponential back-off from the failure). Pure, like `plan`.
 */
export function planReassignments(state: SchedulerState, input: ReassignInput): SchedulerCommand[] {
  const out: SchedulerCommand[] = [];
  for (const claim of state.claims.values()) {
    if (out.length >= input.maxCommands) break;
    if (claim.slotMs < input.nowMs - input.horizonMs) continue;
    const job = state.jobs.get(claim.job);
    if (job === undefined || job.mode !== 'one') continue;
    const assignee = claim.assignees[0];
    if (assignee === undefined) continue;
    const outcome = claim.outcomes.get(assignee);
    const current = outcome !== undefined && outcome.token === claim.token ? outcome : undefined;
    const candidates = [...job.handlers].filter((id) => input.eligible.has(id)).sort();
    if (current === undefined) {
      if (input.eligible.has(assignee) || candidates.length === 0) continue;
      out.push({ type: 'reassign', job: claim.job, slotMs: claim.slotMs, fromToken: claim.token, assignees: [pick(candidates, state, assignee)], reason: 'assignee-lost' });
      continue;
    }
    if (current.outcome === 'succeeded') continue;
    if (current.outcome === 'interrupted') {
      // Not the job's failure: run it elsewhere, whatever its retries (bounded all the same).
      if (claim.attempt < MAX_INTERRUPTED_ATTEMPTS && candidates.length > 0) {
        out.push({ type: 'reassign', job: claim.job, slotMs: claim.slotMs, fromToken: claim.token, assignees: [pick(candidates, state, assignee)], reason: 'assignee-lost' });
      }
      continue;
    }
    const { retries, retryDelayMs: delayMs } = job.policy;
    if (claim.attempt > retries || candidates.length === 0) continue;
    if (input.nowMs < current.atMs + delayMs * 2 ** (claim.attempt - 1)) continue;
    out.push({ type: 'reassign', job: claim.job, slotMs: claim.slotMs, fromToken: claim.token, assignees: [pick(candidates, state, assignee)], reason: 'retry' });
  }
  return out;
}

/** Another member than the last one if there is one, least loaded first. */
function pick(candidates: readonly NodeId[], state: SchedulerState, avoid: NodeId): NodeId {
  const others = candidates.filter((id) => id !== avoid);
  return leastLoaded(others.length > 0 ? others : candidates, state.assigned);
}
