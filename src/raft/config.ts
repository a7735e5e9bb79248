import type { NodeId } from './types.js';

/** The protocol's settings, in logical ticks and counts. The runtime maps milliseconds onto ticks. */
export interface RaftConfig {
  readonly id: NodeId;
  /** The voting members, this one included. Every member must be given the same set. */
  readonly voters: readonly NodeId[];
  /** A follower that hears nothing from a leader for a random time in [electionTicks, 2 * electionTicks) campaigns. */
  readonly electionTicks: number;
  /** A leader sends heartbeats every `heartbeatTicks`; must be less than `electionTicks`. */
  readonly heartbeatTicks: number;
  /** Bound on append messages in flight to one follower. */
  readonly maxInflightMsgs?: number;
  /** Bound on bytes of entry data in flight to one follower. */
  readonly maxInflightBytes?: number;
  /** Bound on bytes of entry data in one append message (at least one entry is always sent). */
  readonly maxBytesPerAppend?: number;
  /** Bound on entries in one append message. */
  readonly maxEntriesPerAppend?: number;
  /**
   * Bound on one entry's data: a leader refuses a proposal past it (returns it unappended).
   * An append carries at least one entry whole, so an entry past what one message of the
   * transport holds could never reach a follower, and nothing after it would commit.
   */
  readonly maxEntryBytes?: number;
  /** Bound on bytes of entry data appended but not yet committed; proposals beyond it are refused. */
  readonly maxUncommittedBytes?: number;
  /** Bound on committed entries handed out for applying in one Ready. */
  readonly maxApplyBatch?: number;
  /** Bound on linearizable reads waiting at the leader. */
  readonly maxPendingReads?: number;
  /**
   * Where the log keeps the data of a proposal this member appends as leader, which it holds
   * until compaction: the runtime copies it into an arena (see ByteArena). Called only for
   * proposals appended here, never for ones refused or forwarded. The data as given by default.
   */
  readonly keepData?: (data: Uint8Array) => Uint8Array;
}

export const RAFT_DEFAULTS = {
  maxInflightMsgs: 256,
  maxInflightBytes: 16 * 1024 * 1024,
  maxBytesPerAppend: 1024 * 1024,
  maxEntriesPerAppend: 4096,
  /** Half the transport's largest frame (MAX_FRAME_BYTES, 4 MiB): an append of one entry and its envelope always fits. */
  maxEntryBytes: 2 * 1024 * 1024,
  maxUncommittedBytes: 64 * 1024 * 1024,
  maxApplyBatch: 4096,
  maxPendingReads: 4096,
} as const;
