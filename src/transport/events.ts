import type { NodeId } from '../raft/types.js';

/** Why a message or frame was dropped; one of the TransportStats counters counts each reason. */
export type DropReason =
  /** Outbound: the peer's queue was full and its oldest message was discarded (droppedQueueFull). */
  | 'queue-full'
  /** Outbound: the message was addressed to no known peer, or the transport is stopped (droppedQueueFull). */
  | 'unreachable'
  /** Inbound: a length prefix announced more than MAX_FRAME_BYTES; the stream was closed (droppedOversized). */
  | 'oversized'
  /** Inbound: the frame failed to decode or validate (droppedMalformed). */
  | 'malformed'
  /** Inbound: the frame belongs to another cluster (droppedUnexpected). */
  | 'wrong-cluster'
  /** Inbound: the message is addressed to another member (droppedUnexpected). */
  | 'wrong-recipient'
  /** Inbound: the sender is not a member, or claims to be this member (droppedUnexpected). */
  | 'unknown-sender'
  /**
   * Inbound: the sender's address pins a peer id, or the configuration binds one to it, and the
   * connection's remote peer is another (droppedPeerIdMismatch).
   */
  | 'peer-id-mismatch'
  /** Inbound: no handler was set with onMessage yet (droppedUnexpected). */
  | 'no-handler';

/**
 * What the transport reports for logs and metrics. Failures of peers are normal events here, not
 * errors: Raft expects members to be down and the transport keeps re-dialling them.
 */
export type TransportEvent =
  /** The outbound stream to `peer` is open: messages to it are written now. */
  | { readonly type: 'connected'; readonly peer: NodeId }
  /** The outbound stream to `peer` broke; the transport re-dials with back-off. */
  | { readonly type: 'disconnected'; readonly peer: NodeId; readonly error: Error | null }
  /** A dial to `peer` failed (it is down or unreachable); `attempt` counts failures since the last success. */
  | { readonly type: 'dial-failed'; readonly peer: NodeId; readonly error: Error; readonly attempt: number }
  /** A message (outbound) or frame (inbound) was dropped. `peer` is the member concerned, when known. */
  | { readonly type: 'dropped'; readonly reason: DropReason; readonly peer: NodeId | null; readonly detail: string }
  /** The onMessage handler threw; the transport carried on with the next message. */
  | { readonly type: 'handler-error'; readonly error: unknown };
