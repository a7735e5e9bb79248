export { parseSpec, instantsBetween, lastInstantBetween, lastInstantsBetween, specKey, type JobSpec, type SpecInput } from './spec.js';
export { SchedulerState, claimKey, SCHEDULER_DEFAULTS, type SchedulerCommand, type JobRecord, type ClaimRecord, type ApplyResult, type AssignMode } from './state.js';
export { plan, type CatchUp, type PlanInput } from './planner.js';
