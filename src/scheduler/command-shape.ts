import type { AssignMode, JobPolicy, OperationCommand, SchedulerCommand } from './command.js';
import type { JobSpec } from './spec.js';

/**
 * Whether a value read from the log is a scheduler command of a shape `SchedulerState.apply`
 * takes: every field it reads present, of its type, and the values the state keeps of the
 * kinds its snapshot holds (finite times, whole non-negative counts, known enums). Fields it
 * does not read are allowed (a newer member may add some). A command that fails is skipped
 * alike on every member; without this check, a bad value would enter the state and make
 * every later snapshot of it unreadable.
 */
export function isSchedulerCommand(value: unknown): value is SchedulerCommand {
  if (!isRecord(value)) return false;
  const c = value;
  switch (c.type) {
    case 'register':
      return str(c.job) && isJobSpec(c.spec) && isAssignMode(c.mode) && isJobPolicy(c.policy) && str(c.member) && time(c.atMs);
    case 'unregister':
      return str(c.job) && str(c.member);
    case 'claim':
      // Not `atMs` (the time of a late claim, from cluster version 3): a member of cronraft 0.1.0
      // reads past it and applies the claim, so every member must; SchedulerState keeps it only
      // if it is a time.
      return str(c.job) && time(c.slotMs) && strs(c.assignees) && (c.fromMs === undefined || time(c.fromMs));
    case 'reassign':
      // Not `atMs` either (the time of the move, from cluster version 3), as for a claim.
      return str(c.job) && time(c.slotMs) && count(c.fromToken) && strs(c.assignees) && (c.reason === 'assignee-lost' || c.reason === 'retry');
    case 'expire':
      // The reasons of cluster version 1 only: a member of cronraft 0.1.0 reads this form too.
      return str(c.job) && time(c.slotMs) && count(c.fromToken) && c.reason === 'expired' && time(c.atMs);
    case 'started':
      return str(c.job) && time(c.slotMs) && count(c.token) && str(c.member) && time(c.atMs);
    case 'cancel':
      return str(c.job) && time(c.slotMs) && count(c.token) && time(c.bySlotMs) && time(c.atMs);
    case 'outcome':
      return str(c.job) && time(c.slotMs) && count(c.token) && str(c.member) && str(c.outcome) && time(c.atMs) && (c.error === undefined || str(c.error));
    case 'lock':
      return str(c.name) && str(c.member) && time(c.atMs) && time(c.untilMs);
    case 'unlock':
      return str(c.name) && count(c.token) && time(c.untilMs);
    case 'skip':
      return str(c.job) && time(c.throughMs) && time(c.fromMs) && count(c.count);
    default:
      // A 'forfeit' is a command of cluster version 2: see isVersionTwoSchedulerCommand.
      return false;
  }
}

/**
 * Whether a value read from an entry of cluster version 2 (`[kind, command, 2]`) is a scheduler
 * command of the kinds only that form carries: 'forfeit'. Members of cronraft 0.1.0 never read
 * one (the cluster runs version 2 only once every member reads it).
 */
export function isVersionTwoSchedulerCommand(value: unknown): value is Extract<SchedulerCommand, { type: 'forfeit' }> {
  if (!isRecord(value)) return false;
  const c = value;
  return c.type === 'forfeit' && str(c.job) && time(c.slotMs) && count(c.token) && str(c.member) && time(c.atMs);
}

/**
 * Whether a value read from an entry of cluster version 3 (`[kind, command, 3]`, OPERATIONS_VERSION)
 * is a scheduler command of the kinds only that form carries: an operator's 'pause', 'resume',
 * 'trigger' or 'cancel-runs'. Members of earlier releases never read one.
 */
export function isOperationCommand(value: unknown): value is OperationCommand {
  if (!isRecord(value)) return false;
  const c = value;
  switch (c.type) {
    case 'pause':
    case 'resume':
      return str(c.job) && time(c.atMs);
    case 'trigger':
      return str(c.job) && time(c.slotMs) && time(c.fromMs) && strs(c.assignees);
    case 'cancel-runs':
      return str(c.job) && (c.slotMs === undefined || time(c.slotMs)) && str(c.member) && time(c.atMs);
    default:
      return false;
  }
}

/** Whether a value read from the log is a job's spec as a register command holds it. */
export function isJobSpec(value: unknown): value is JobSpec {
  if (!isRecord(value)) return false;
  switch (value.kind) {
    case 'cron':
      return str(value.expression) && str(value.tz) && (value.dst === undefined || (isRecord(value.dst) && (value.dst.gap === 'shift' || value.dst.gap === 'skip') && (value.dst.overlap === 'once' || value.dst.overlap === 'twice')));
    case 'every':
      return time(value.everyMs) && value.everyMs > 0;
    case 'at':
      return time(value.atMs);
    case 'delay':
      return time(value.delayMs) && value.delayMs > 0 && time(value.initialDelayMs) && value.initialDelayMs >= 0;
    default:
      return false;
  }
}

/** Whether a value read from the log is a job's policy as a register command holds it. */
export function isJobPolicy(value: unknown): value is JobPolicy {
  if (!isRecord(value) || !count(value.retries) || !time(value.retryDelayMs) || value.retryDelayMs < 0 || !isRecord(value.catchUp)) return false;
  const { catchUp, overlap } = value;
  const catchUpOk = catchUp.policy === 'latest' || catchUp.policy === 'none' || (catchUp.policy === 'all' && time(catchUp.windowMs) && catchUp.windowMs >= 0 && count(catchUp.maxSlots));
  return catchUpOk && (overlap === undefined || overlap === 'skip' || overlap === 'allow' || overlap === 'queue' || overlap === 'replace');
}

/** Whether a value read from the log is a job's mode. */
export function isAssignMode(value: unknown): value is AssignMode {
  return value === 'one' || value === 'all';
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function str(value: unknown): value is string {
  return typeof value === 'string';
}

function strs(value: unknown): boolean {
  return Array.isArray(value) && value.every(str);
}

/** A time or duration: any finite number (the cluster's time need not be whole milliseconds). */
function time(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

/** A token or tally: a whole number a JavaScript number holds exactly. */
function count(value: unknown): value is number {
  return typeof value === 'number' && Number.isSafeInteger(value) && value >= 0;
}
