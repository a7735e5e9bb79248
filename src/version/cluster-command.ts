import type { NodeId } from '../raft/types.js';
import { isVersion } from './versions.js';

/**
 * A command of the cluster's own state (log entries of kind `cluster`): what each member can
 * read, and the cluster version in force. cronraft 0.1.0 skips these entries (an entry kind it
 * does not know), which changes nothing it keeps.
 */
export type ClusterCommand =
  /** `member` reads these versions (it says so as it starts, and again whenever the log forgets). */
  | { readonly type: 'announce'; readonly member: NodeId; readonly protocol: readonly [number, number]; readonly stateMachine: readonly [number, number] }
  /** Raises the cluster version from `from` to `to` (one step): proposed by a leader once every member reads `to`. */
  | { readonly type: 'activate'; readonly from: number; readonly to: number };

/** Bound on a member id's length in an announcement (a member id is a short address). */
export const MAX_MEMBER_ID_LENGTH = 256;

/**
 * Whether a value read from the log is a cluster command of version 1's shape. Frozen: a later
 * version adds commands under its own envelope version (see commands.ts), never here.
 */
export function isClusterCommand(value: unknown): value is ClusterCommand {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  const c = value as Record<string, unknown>;
  switch (c.type) {
    case 'announce':
      return typeof c.member === 'string' && c.member.length > 0 && c.member.length <= MAX_MEMBER_ID_LENGTH && isRange(c.protocol) && isRange(c.stateMachine);
    case 'activate':
      return isVersion(c.from) && isVersion(c.to);
    default:
      return false;
  }
}

function isRange(value: unknown): value is readonly [number, number] {
  return Array.isArray(value) && value.length === 2 && isVersion(value[0]) && isVersion(value[1]) && value[0] <= value[1];
}
