import { decodeConfChange } from '../raft/conf-change.js';
import { EntryType, type Entry, type NodeId } from '../raft/types.js';

/**
 * Marks the proposal id of a member's own removal when it leaves (`cluster.stop({ leave: true })`),
 * so that every member tells a leave from a removal as it applies the entry. The proposer
 * chooses it: it labels the event, and decides nothing else.
 */
export const LEAVE_PID_SUFFIX = '~leave';

/** A change of the configuration as a Cluster reports it (see ClusterEvents). */
export interface MembershipEvent {
  readonly type: 'member-joined' | 'member-promoted' | 'member-left' | 'member-removed';
  readonly id: NodeId;
  /** The index of the entry that made the change. */
  readonly index: number;
}

/** The event an applied entry makes, if it is a change of the configuration's members (a binding of a peer id is not). */
export function membershipEventOf(entry: Entry): MembershipEvent | null {
  if (entry.type !== EntryType.ConfChange) return null;
  const change = decodeConfChange(entry.data);
  if (change === null || change.type === 'bind') return null;
  const { id } = change;
  const index = entry.index;
  if (change.type === 'add-learner') return { type: 'member-joined', id, index };
  if (change.type === 'promote') return { type: 'member-promoted', id, index };
  return { type: entry.pid.endsWith(LEAVE_PID_SUFFIX) ? 'member-left' : 'member-removed', id, index };
}
