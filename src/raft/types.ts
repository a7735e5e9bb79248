import type { ConfChange } from './conf-change.js';
import type { ConfChangeRefusal } from './membership.js';

/**
 * The data the Raft protocol exchanges and persists. Plain objects only, so that the codec,
 * the storage and the simulator can handle them without knowing the protocol.
 */

/** A member's id. cronraft uses the member's advertised address, e.g. `127.0.0.1:7001`. */
export type NodeId = string;

export const EntryType = {
  /** An application command: handed to the state machine's `apply`. */
  Normal: 0,
  /** Appended by a new leader so that it can commit entries of earlier terms (Raft paper, 5.4.2). */
  Noop: 1,
  /**
   * A change of the configuration (conf-change.ts encodes its data), proposed only by a leader
   * (`RaftNode.proposeConfChange`) and taking effect where it is applied, once committed.
   */
  ConfChange: 2,
} as const;
export type EntryType = (typeof EntryType)[keyof typeof EntryType];

export interface Entry {
  readonly index: number;
  readonly term: number;
  readonly type: EntryType;
  /** Opaque application bytes; empty for a no-op. */
  readonly data: Uint8Array;
  /**
   * The id of the proposal that created the entry, `<member>#<sequence>`, so that the member
   * that proposed it (perhaps through a forward) can resolve the caller's promise when it
   * applies. Empty for no-ops.
   */
  readonly pid: string;
}

/** What must survive a restart besides the log: the Raft paper's persistent state, plus the commit point. */
export interface HardState {
  readonly term: number;
  readonly vote: NodeId | null;
  readonly commit: number;
}

export const emptyHardState: HardState = Object.freeze({ term: 0, vote: null, commit: 0 });

/**
 * Who is in the cluster: the voters, which elect leaders and make up every quorum, and the
 * learners, which are replicated to and never counted nor asked for a vote. Both lists are
 * sorted and a member is in at most one (configuration.ts checks it).
 */
export interface Configuration {
  readonly voters: readonly NodeId[];
  readonly learners: readonly NodeId[];
  /**
   * The libp2p peer id bound to each member that has one: `[member, peer id]`, sorted by member,
   * each a member, no peer id bound twice. Members' transports accept a member's frames only
   * from a connection authenticated as its bound peer id (issue 18). A member is bound when it
   * joins (its add-learner change) or, for a founding member, by a `bind` change the leader
   * proposes (trust on first use); a member without one is accepted as before until bound. The
   * protocol only carries these: it never looks at them.
   */
  readonly peerIds: readonly PeerIdBinding[];
}

/** A member and the libp2p peer id bound to it (see Configuration.peerIds). */
export type PeerIdBinding = readonly [NodeId, string];

/** Where the log starts after compaction: entries up to `index` are folded into a snapshot. */
export interface SnapshotMeta {
  readonly index: number;
  readonly term: number;
  /**
   * The configuration as of `index`: every conf change up to it applied. Absent from a snapshot
   * of a release before configuration changes (storage and the codec do not carry it yet): the
   * configuration is then the founding one, `RaftConfig.voters`, which no change can have
   * altered while no member could propose one.
   */
  readonly conf?: Configuration;
}

/**
 * The applied state machine as of `index` (every entry up to it applied), with that entry's
 * term: what replaces the log up to `index` once it is compacted, and what a leader sends a
 * follower that lags behind its retained log. `data` is the state machine's own encoding; an
 * empty `data` at index 0 is the empty state.
 */
export interface Snapshot extends SnapshotMeta {
  readonly data: Uint8Array;
}

/** A proposal carried from a follower to the leader. */
export interface ProposalData {
  readonly pid: string;
  readonly data: Uint8Array;
}

/**
 * Every message has `from`, `to` and the sender's `term`. Messages are a closed union: the
 * codec rejects any other shape, so the protocol never sees a malformed message.
 */
export type Message =
  | PreVoteMessage
  | PreVoteResponse
  | VoteMessage
  | VoteResponse
  | AppendMessage
  | AppendResponse
  | HeartbeatMessage
  | HeartbeatResponse
  | TimeoutNowMessage
  | ProposeMessage
  | ProposeResponse
  | ReadIndexMessage
  | ReadIndexResponse
  | SnapshotMessage
  | ConfProposeMessage
  | ConfProposeResponse;

interface Base {
  readonly from: NodeId;
  readonly to: NodeId;
  readonly term: number;
}

/** Asks whether the sender could win an election at `term` (= its term + 1) without disrupting anyone. */
export interface PreVoteMessage extends Base {
  readonly type: 'prevote';
  readonly lastIndex: number;
  readonly lastTerm: number;
}
export interface PreVoteResponse extends Base {
  readonly type: 'prevote-resp';
  readonly reject: boolean;
}
export interface VoteMessage extends Base {
  readonly type: 'vote';
  readonly lastIndex: number;
  readonly lastTerm: number;
  /** Set when the election follows a leadership transfer: voters ignore their leader lease. */
  readonly transfer: boolean;
}
export interface VoteResponse extends Base {
  readonly type: 'vote-resp';
  readonly reject: boolean;
}
export interface AppendMessage extends Base {
  readonly type: 'append';
  readonly prevIndex: number;
  readonly prevTerm: number;
  readonly entries: readonly Entry[];
  readonly commit: number;
}
/**
 * The `index` of a rejection that answers a heartbeat rather than an append: the follower's
 * log ends (at `hintIndex`) before the commit index the heartbeat carried. A leader never
 * sends a follower a commit index beyond what the follower acknowledged in its term, and a
 * durable log keeps what it acknowledged, so the follower lost its state (a member restarted
 * on `storage: 'memory'`). An append is never rejected at 0: every log matches at index 0.
 */
export const REJECT_LOST_LOG = 0;

export interface AppendResponse extends Base {
  readonly type: 'append-resp';
  /**
   * On success: the index of the last entry now known to match. On rejection: the `prevIndex`
   * that was rejected, or REJECT_LOST_LOG.
   */
  readonly index: number;
  readonly reject: boolean;
  /** On rejection: the follower's guess of the last index that may match, with its term (fast back-off). */
  readonly hintIndex: number;
  readonly hintTerm: number;
}
export interface HeartbeatMessage extends Base {
  readonly type: 'heartbeat';
  readonly commit: number;
  /** A read-index round, echoed in the response; 0 when none is pending. */
  readonly readCtx: number;
}
export interface HeartbeatResponse extends Base {
  readonly type: 'heartbeat-resp';
  readonly readCtx: number;
}

/** Tells the target of a leadership transfer to campaign at once. */
export interface TimeoutNowMessage extends Base {
  readonly type: 'timeout-now';
}
/** A follower forwards its callers' proposals to the leader. */
export interface ProposeMessage extends Base {
  readonly type: 'propose';
  readonly proposals: readonly ProposalData[];
}
/** The leader tells the forwarder where its proposals went, or that it is not the leader. */
export interface ProposeResponse extends Base {
  readonly type: 'propose-resp';
  /** Index of the first appended proposal; 0 when rejected. Later proposals follow in order. */
  readonly index: number;
  readonly pids: readonly string[];
  readonly reject: boolean;
  readonly leader: NodeId | null;
}
/** A follower asks the leader for a linearizable read index. */
export interface ReadIndexMessage extends Base {
  readonly type: 'read-index';
  readonly ctx: number;
}
export interface ReadIndexResponse extends Base {
  readonly type: 'read-index-resp';
  readonly ctx: number;
  /** The commit index a read may be served at once applied; 0 when rejected. */
  readonly index: number;
  readonly reject: boolean;
}

/**
 * A leader's latest snapshot, for a follower whose next entry the leader no longer holds. The
 * follower answers with an `append-resp` at the snapshot's index once it is durable.
 */
export interface SnapshotMessage extends Base {
  readonly type: 'snapshot';
  readonly snapshot: Snapshot;
}

/**
 * A member forwards a change of the configuration to the leader, which proposes it as its own
 * (`RaftNode.proposeConfChange`) and answers where it went or why not. Protocol 2 only.
 */
export interface ConfProposeMessage extends Base {
  readonly type: 'conf-propose';
  readonly pid: string;
  readonly change: ConfChange;
}
export interface ConfProposeResponse extends Base {
  readonly type: 'conf-propose-resp';
  readonly pid: string;
  /** The index of the change appended; 0 when refused. */
  readonly index: number;
  /** Why it was refused; null when appended. */
  readonly reason: ConfChangeRefusal | null;
  /** The leader, if the answering member knows one. */
  readonly leader: NodeId | null;
}

export type MessageType = Message['type'];

export const messageTypes: readonly MessageType[] = [
  'prevote',
  'prevote-resp',
  'vote',
  'vote-resp',
  'append',
  'append-resp',
  'heartbeat',
  'heartbeat-resp',
  'timeout-now',
  'propose',
  'propose-resp',
  'read-index',
  'read-index-resp',
  'snapshot',
  'conf-propose',
  'conf-propose-resp',
];
