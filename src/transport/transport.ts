import type { NodeId } from '../raft/types.js';
import type { InboundConnectionStats } from './connection-gate.js';
import type { WireMessage } from './envelope.js';

/**
 * Carries Raft messages between members, with what the drivers add to them (envelope.ts).
 * `send` never blocks and may drop: Raft tolerates loss and retransmits. Implementations: libp2p (production) and the simulator's network.
 */
export interface Transport {
  /** Starts listening and connecting. Resolves once the listener is bound. */
  start(): Promise<void>;
  stop(): Promise<void>;
  /**
   * Queues `message` for `message.to`. Drops it (and counts the drop) when the peer's queue is
   * full, or when `message.to` is none of the members but for the answer to a vote request it
   * delivered from there (see onMessage).
   */
  send(message: WireMessage): void;
  /**
   * Hands the messages queued for connected peers to the network now (those for a peer still
   * being dialled, or whose connection is full, wait as before). Messages sent in one turn
   * otherwise leave together at its end; the driver calls this once a leader's own write has
   * started, so that the followers' writes start sooner (see RaftDriver's handleReady).
   */
  flush(): void;
  /**
   * Sets the one receiver of inbound messages; only well-formed messages for this member arrive,
   * from the members (setMembers), and vote and pre-vote requests from anyone else: a voter that
   * has not applied the configuration adding the asker must still answer it. The answer (a vote
   * or pre-vote response) goes back within VOTE_ANSWER_WINDOW_MS of the request, to at most
   * MAX_VOTE_ASKERS such askers at once, the way the request came: nothing is dialled for it
   * (vote-askers.ts).
   */
  onMessage(handler: (message: WireMessage) => void): void;
  /**
   * The wire protocol in force (versions.ts `protocolOf` of the active cluster version): frames
   * of a newer protocol are written from now on, and a message that needs a newer one than
   * this is refused (send throws CodecError, which the driver counts as unsendable). 1 until set.
   */
  setProtocol(protocol: number): void;
  /**
   * The members of the configuration (this one among them or not), whose ids are their
   * addresses, each with the libp2p peer id bound to it in the configuration, if any: added ones
   * are dialled, removed ones are no longer (their queues dropped). A member's frames are
   * accepted only from a connection authenticated as its bound peer id (a peer id pinned in the
   * address the member was given wins over it).
   */
  setMembers(members: readonly MemberPeer[]): void;
  /** This member's own peer id, what its connections authenticate as; null when it has none (before start). */
  peerId(): string | null;
  /**
   * The peer id authenticated on the connection that carried the last frame accepted from
   * `member` (Noise proves the remote holds its key), or null when none has arrived: what a
   * leader binds a founding member to (trust on first use, see runtime/binding-keeper.ts).
   */
  remotePeerIdOf(member: NodeId): string | null;
  /** Which peers have a live connection now. */
  isConnected(peer: NodeId): boolean;
  /** Counters for inspection: sent, received, dropped by reason. */
  stats(): TransportStats;
}

/** A member of the configuration and the peer id bound to it (Configuration.peerIds), or null when it has none yet. */
export interface MemberPeer {
  readonly id: NodeId;
  readonly peerId: string | null;
}

export interface TransportStats {
  readonly sent: number;
  readonly received: number;
  /** Outbound messages dropped because a peer's queue was full or it was unreachable. */
  readonly droppedQueueFull: number;
  /** Inbound frames dropped because they were malformed, oversized, unexpected or from another cluster. */
  readonly droppedMalformed: number;
  readonly droppedOversized: number;
  /** Inbound frames of another cluster, for another member, from a non-member, or before a handler was set. */
  readonly droppedUnexpected: number;
  /**
   * Inbound frames whose sender is bound (or pinned) to another peer id than the one the
   * connection authenticated: a process that holds the secret but not the member's key.
   */
  readonly droppedPeerIdMismatch: number;
  /** What became of inbound connections: the libp2p transport's alone (a simulated network has none). */
  readonly inboundConnections?: InboundConnectionStats;
  /**
   * The bytes written to and read from the Raft protocol's streams (frames with their length
   * prefixes; libp2p's own framing and encryption not counted): the libp2p transport's alone.
   */
  readonly sentBytes?: number;
  readonly receivedBytes?: number;
  /** libp2p connections open now, inbound and outbound (members, and anyone asking to join): the libp2p transport's alone. */
  readonly connections?: number;
}
