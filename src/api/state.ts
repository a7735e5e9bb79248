import type { Role } from '../raft/ready.js';
import type { NodeId } from '../raft/types.js';
import type { TransportStats } from '../transport/transport.js';

/** One member as this member sees it. */
export interface MemberState {
  readonly id: NodeId;
  /** Addresses the member is reached at (multiaddrs). */
  readonly addrs: readonly string[];
  readonly voter: boolean;
  /**
   * A connection is open and, between the leader and a follower (who talk every heartbeat),
   * the member was heard from within an election timeout. Always true for this member.
   */
  readonly reachable: boolean;
  /** Milliseconds since this member last heard from it; null if never, 0 for itself. */
  readonly lastContactMs: number | null;
  /** The leader's view of how far the member's log matches; null on followers. */
  readonly matchIndex: number | null;
}

/** A snapshot of this member's view of the cluster, as returned by `cluster.state()`. */
export interface ClusterState {
  readonly id: NodeId;
  readonly status: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';
  readonly role: Role;
  readonly term: number;
  readonly leader: NodeId | null;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly lastIndex: number;
  readonly members: readonly MemberState[];
  /** libp2p peer id of this member. */
  readonly peerId: string | null;
  readonly transport: TransportStats;
  /** The jobs the cluster knows, as replicated in the log. */
  readonly jobs: ReadonlyArray<{
    readonly name: string;
    readonly spec: string;
    readonly mode: 'one' | 'all';
    /** Members with a handler for it. */
    readonly handlers: readonly NodeId[];
    /** Members that registered a different spec under the name (a rolling deploy): not assigned it. */
    readonly conflicts: Readonly<Record<string, string>>;
    readonly nextSlot: Date | null;
    readonly lastClaim: { readonly slot: Date; readonly fencingToken: number; readonly assignees: readonly NodeId[]; readonly outcomes: Readonly<Record<string, unknown>> } | null;
    readonly missedSlots: number;
  }>;
  /** Messages that the protocol refused as invalid (only a faulty peer sends them). */
  readonly invalidMessages: number;
  /** Messages the transport refused to encode (never expected; counted rather than thrown). */
  readonly unsendableMessages: number;
}
