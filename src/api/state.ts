import type { Role } from '../raft/ready.js';
import type { SnapshotTiming } from '../runtime/driver.js';
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
  /**
   * The member's clock minus the cluster's time (the median of the members' clocks), as
   * measured through heartbeats: the leader knows every member's, a follower its own; null
   * when not measured (yet).
   */
  readonly clockOffsetMs: number | null;
  /** Whether its clock is further than `maxClockSkewMs` from the cluster's time: it is given no work. */
  readonly clockSkewed: boolean;
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
  /**
   * The log kept: `firstIndex` is its first entry (the ones before are compacted into the
   * snapshot at `snapshotIndex`, taken `snapshotsTaken` times here and installed from a leader
   * `snapshotsInstalled` times since this member started). `lastSnapshot`: how long taking the
   * last one here held this member's event loop, in all and at once (it is taken in steps, with
   * other work between them); null before the first.
   */
  readonly log: {
    readonly firstIndex: number;
    readonly snapshotIndex: number;
    readonly snapshotsTaken: number;
    readonly snapshotsInstalled: number;
    readonly lastSnapshot: SnapshotTiming | null;
  };
  readonly members: readonly MemberState[];
  /** libp2p peer id of this member. */
  readonly peerId: string | null;
  readonly transport: TransportStats;
  /**
   * The jobs the cluster knows, as replicated in the log. Each job's entry is frozen and handed
   * out again by later calls until the job changes (its Dates too: copy one before changing it).
   */
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
    /** Slots not run because another run of the job was in progress (its overlap policy), in all. */
    readonly skippedRuns: number;
    /** Runs in progress: started per the log, with no outcome yet (a run whose member died stays until its slot moves). */
    readonly running: ReadonlyArray<{ readonly slot: Date; readonly fencingToken: number; readonly member: NodeId; readonly startedAt: Date }>;
  }>;
  /** This member's view of the cluster's time. */
  readonly clock: {
    /** Whether it has learned the cluster's time (until then, slots fire on its own clock). */
    readonly synced: boolean;
    /** The cluster's time now, as this member converts it from its own clock. */
    readonly clusterTime: Date;
    /** Clock stamps from peers dropped as malformed or inconsistent. */
    readonly invalidStamps: number;
  };
  /** Messages that the protocol refused as invalid (only a faulty peer sends them). */
  readonly invalidMessages: number;
  /** Messages the transport refused to encode (never expected; counted rather than thrown). */
  readonly unsendableMessages: number;
  /**
   * Times this member, leading, found that a follower had lost entries it acknowledged (it
   * restarted on `storage: 'memory'`) and replicated to it again from what it still held.
   */
  readonly followerLogsLost: number;
}
