import type { NodeId } from '../raft/types.js';
import { nextInstantAfter } from './next-instant.js';
import { leastLoaded, nextDelaySlot } from './planner.js';
import { claimKey, type JobRecord } from './records.js';
import type { OperationCommand } from './command.js';
import type { SchedulerState } from './state.js';

/**
 * What a trigger of the job may propose now: its command, or `wait` while the job's next
 * scheduled slot is due and not claimed yet (the leader's next plan claims it; asked again
 * after, the trigger takes a slot past it), or while a claim is kept at this very instant.
 */
export type TriggerPlan = { readonly command: Extract<OperationCommand, { type: 'trigger' }> } | 'wait';

/**
 * The `trigger` to propose for `job` at the cluster's time `nowMs`. Pure, like the planner.
 *
 * Its slot is `nowMs`, which can never collide with a scheduled slot of the job: the planner
 * claims only after the job's high-water mark, and a triggered slot past the mark moves the
 * mark there (see SchedulerState.apply), which is safe only if no scheduled instant lies in
 * (mark, nowMs]: one does when it is due and the leader has not claimed it yet, and the caller
 * then waits for it. A slot at or before the mark (the leader claims ahead, so a job whose
 * slots come often has its mark in the future) needs only a key no claim holds.
 *
 * Its assignees follow the job's mode, as the planner's do: in mode 'all', every member with a
 * handler that may be given work (`eligible`; all the handlers if none may, or if that is not
 * known: null, on a member that does not lead); in mode 'one', the least loaded of those by the
 * claims ever assigned (a lost assignee's claim is moved, as any is).
 */
export function planTrigger(state: SchedulerState, job: JobRecord, nowMs: number, eligible: ReadonlySet<NodeId> | null): TriggerPlan {
  const mark = job.highWaterMs;
  if (state.claims.has(claimKey(job.name, nowMs))) return 'wait';
  if (nowMs > mark) {
    // As the leader plans it at nowMs (a time stamped far ahead is not believed: stamps.ts), with no horizon.
    const next = job.spec.kind === 'delay' ? nextDelaySlot(state, job, undefined, { nowMs, horizonMs: Number.POSITIVE_INFINITY }) : nextInstantAfter(job.spec, job.anchorMs, mark);
    if (next !== null && next <= nowMs) return 'wait';
  }
  const handlers = [...job.handlers].sort();
  const reachable = eligible === null ? handlers : handlers.filter((id) => eligible.has(id));
  const pool = reachable.length > 0 ? reachable : handlers;
  const assignees = job.mode === 'all' ? pool : pool.length === 0 ? [] : [leastLoaded(pool, state.assigned)];
  return { command: { type: 'trigger', job: job.name, slotMs: nowMs, fromMs: mark, assignees } };
}
