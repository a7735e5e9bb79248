import { MAX_MEMBERS } from '../raft/configuration.js';
import type { NodeId } from '../raft/types.js';
import { SNAPSHOT_SHARES_VERSION } from '../version/versions.js';

/** Members whose counts of assignments the state keeps, from SNAPSHOT_SHARES_VERSION (see countAssigned): as many as a configuration holds. */
export const MAX_ASSIGNED_MEMBERS = MAX_MEMBERS;

/**
 * Counts an assignment to each of `assignees` in `assigned` (SchedulerState.assigned: the planner
 * balances by the counts). From SNAPSHOT_SHARES_VERSION the counts are kept for the members
 * assigned to last, at most MAX_ASSIGNED_MEMBERS, the one assigned to longest ago forgotten first
 * (it counts as none again): before, every member ever assigned a claim was kept for good,
 * removed ones too, in a part of the snapshot no share bounds.
 */
export function countAssigned(assigned: Map<NodeId, number>, assignees: readonly NodeId[], version: number): void {
  for (const id of assignees) {
    const count = (assigned.get(id) ?? 0) + 1;
    if (version < SNAPSHOT_SHARES_VERSION) {
      assigned.set(id, count);
      continue;
    }
    assigned.delete(id);
    assigned.set(id, count);
    if (assigned.size > MAX_ASSIGNED_MEMBERS) assigned.delete(assigned.keys().next().value as NodeId);
  }
}
