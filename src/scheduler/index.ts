export { parseSpec, instantsBetween, lastInstantBetween, lastInstantsBetween, specKey, type JobSpec, type SpecInput } from './spec.js';
export { SchedulerState, claimKey, runsOf, SCHEDULER_DEFAULTS, DEFAULT_OVERLAP, type SchedulerCommand, type JobRecord, type ClaimRecord, type ApplyResult, type AssignMode, type OverlapPolicy, type RunOutcome, type RunInProgress } from './state.js';
export { plan, planReassignments, claimEndedAt, nextDelaySlot, type CatchUp, type PlanInput } from './planner.js';
export { decideOverlap, runsInProgress, LATE_RUN_MS, MAX_QUEUED_RUNS_PER_JOB, type OverlapDecision } from './overlap.js';
export { RunQueue, effectivePriority, PRIORITY_AGING_MS, MAX_WAITING_RUNS } from './run-queue.js';
