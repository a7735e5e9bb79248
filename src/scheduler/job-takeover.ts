import type { NodeId } from '../raft/types.js';
import { initialHighWaterMs } from './apply-rules.js';
import { withOverlap, type SchedulerCommand } from './command.js';
import { NO_CONFLICTS, type JobRecord } from './records.js';

/**
 * A job's record once a registration of another spec or policy took it over, when no
 * other member had a handler for it (SchedulerState.apply, from JOB_TAKEOVER_VERSION): a rolling
 * deploy that changes a job's spec unregisters the old one member by member, and the new one,
 * refused as a conflict while another member had the old, must then run; so must a member's own
 * job scheduled anew with another spec. Before, the job ran no more.
 *
 * - The spec, policy and anchor are the registration's, as a new job's. Not a mode of its own:
 *   the job's kept claims are indexed by its mode (KeptClaims.open), and a claim of one mode read
 *   as the other would be moved or settled wrongly. A registration of another mode stays a
 *   conflict (told as `job-refused`).
 * - The members whose conflict is this very form (`form`, the conflict's text) join it as
 *   handlers, since they registered it; the others keep their conflicts.
 * - The high-water mark never goes back, so that no slot of the name is claimed twice
 *   (a new spec may have instants the old one claimed), and moves a millisecond on.
 * - The counts of missed and skipped slots and a pause stay with the name, as its history does.
 *
 * Pure: `handlersOf` makes the shared set of the handlers (HandlerSets).
 */
export function takenOver(
  existing: JobRecord,
  command: Extract<SchedulerCommand, { type: 'register' }>,
  form: string,
  version: number,
  handlersOf: (members: readonly NodeId[]) => ReadonlySet<NodeId>,
): JobRecord {
  const joining = [command.member];
  const conflicts = new Map<NodeId, string>();
  for (const [member, theirs] of existing.conflicts) {
    if (member === command.member) continue;
    if (theirs === form) joining.push(member);
    else conflicts.set(member, theirs);
  }
  return {
    name: existing.name,
    spec: command.spec,
    mode: existing.mode,
    policy: withOverlap(command.policy),
    anchorMs: command.atMs,
    handlers: handlersOf(joining),
    conflicts: conflicts.size === 0 ? NO_CONFLICTS : conflicts,
    // A millisecond past, so that a claim or skip planned under the old record (its fromMs the
    // old mark) is refused as stale rather than claim an instant of the old spec, and so that the
    // mark is never the new anchor, which reads as a job never claimed (its runs in progress
    // hidden, a fixed delay counted from the anchor).
    highWaterMs: Math.max(existing.highWaterMs, initialHighWaterMs(command.spec, command.atMs, version)) + 1,
    missedSlots: existing.missedSlots,
    skippedRuns: existing.skippedRuns,
    paused: existing.paused,
  };
}
