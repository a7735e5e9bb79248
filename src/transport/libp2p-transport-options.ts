import type { PrivateKey } from '@libp2p/interface';
import { multiaddr } from '@multiformats/multiaddr';
import type { EntryRecords } from '../bytes/entry-records.js';
import { InvalidArgumentError } from '../errors.js';
import type { NodeId } from '../raft/types.js';
import type { PeerAddress } from './address.js';
import type { VisitorLimits } from './connection-gate.js';
import {
  DEFAULT_DIAL_TIMEOUT_MS,
  DEFAULT_MAX_INBOUND_BUFFERED_BYTES,
  DEFAULT_MAX_QUEUED_BYTES,
  DEFAULT_MAX_QUEUED_MESSAGES,
  DEFAULT_RECONNECT_MAX_MS,
  DEFAULT_RECONNECT_MIN_MS,
  MAX_CLUSTER_ID_LENGTH,
  MAX_ID_LENGTH,
} from './constants.js';
import type { TransportEvent } from './events.js';
import type { LinkSettings } from './peer-link.js';

/** What a Libp2pTransport is given (libp2p-transport.ts), and their checks. */

export interface Libp2pTransportOptions {
  /** This member's id; inbound messages must be addressed to it. */
  readonly self: NodeId;
  /** Frames carry it; frames of another cluster are dropped. */
  readonly clusterId: string;
  /** The multiaddr to listen on, e.g. `/ip4/127.0.0.1/tcp/7001`; port 0 picks a free port (see listenAddresses()). */
  readonly listen: string;
  /** The other members by id. An entry for `self` is ignored. Replace later with setPeers(). */
  readonly peers: ReadonlyMap<NodeId, PeerAddress>;
  /** The libp2p identity (see loadOrCreatePrivateKey); a fresh ephemeral key when omitted. */
  readonly privateKey?: PrivateKey;
  /** Bound of each peer's outbound queue, in messages; the oldest are dropped beyond it. */
  readonly maxQueuedMessages?: number;
  /** Bound of each peer's outbound queue, in encoded bytes. */
  readonly maxQueuedBytes?: number;
  readonly reconnectMinMs?: number;
  readonly reconnectMaxMs?: number;
  readonly dialTimeoutMs?: number;
  /** Bound of the bytes of incomplete inbound frames held across all streams; a stream that exceeds it is reset. */
  readonly maxInboundBufferedBytes?: number;
  /** Receives connection changes and drops, for logs. Must not throw (if it does, the error is ignored). */
  readonly onEvent?: (event: TransportEvent) => void;
  /** The member's encoder of entry records, shared with its storage (see EntryRecords); one of its own when omitted. */
  readonly entryRecords?: EntryRecords;
  /**
   * The private network key (see pskFromSecret in cluster-secret.ts): every connection is
   * protected with it before Noise, so only nodes holding it connect. None when omitted.
   */
  readonly psk?: Uint8Array;
  /** The blocks of 64 bytes one direction of a connection carries under `psk` at most (private-network.ts); tests make it small. @default MAX_BLOCKS_PER_DIRECTION */
  readonly pskMaxBlocks?: number;
  /**
   * How many connections of peer ids no member holds are let in at once (to ask to join), and
   * for how long each. @default MAX_VISITOR_CONNECTIONS, VISITOR_CONNECTION_MS
   */
  readonly visitors?: VisitorLimits;
}

/** The options a transport checks, with their defaults filled in; the others it takes as given. */
export interface CheckedOptions {
  readonly self: NodeId;
  readonly clusterId: string;
  readonly listen: string;
  readonly settings: LinkSettings;
  readonly maxInboundBufferedBytes: number;
}

/** `options` checked, each bad one refused with InvalidArgumentError naming it. */
export function checkedOptions(options: Libp2pTransportOptions): CheckedOptions {
  // In the order they are listed, so that of several bad options the first is the one named.
  const self = checkString(options.self, 'self', MAX_ID_LENGTH);
  const clusterId = checkClusterId(options.clusterId);
  const listen = checkMultiaddr(options.listen, 'listen');
  const reconnectMinMs = checkInteger(options.reconnectMinMs ?? DEFAULT_RECONNECT_MIN_MS, 'reconnectMinMs', 1);
  return {
    self,
    clusterId,
    listen,
    settings: {
      maxQueuedMessages: checkInteger(options.maxQueuedMessages ?? DEFAULT_MAX_QUEUED_MESSAGES, 'maxQueuedMessages', 1),
      maxQueuedBytes: checkInteger(options.maxQueuedBytes ?? DEFAULT_MAX_QUEUED_BYTES, 'maxQueuedBytes', 1),
      reconnectMinMs,
      reconnectMaxMs: checkInteger(options.reconnectMaxMs ?? DEFAULT_RECONNECT_MAX_MS, 'reconnectMaxMs', reconnectMinMs),
      dialTimeoutMs: checkInteger(options.dialTimeoutMs ?? DEFAULT_DIAL_TIMEOUT_MS, 'dialTimeoutMs', 1),
    },
    maxInboundBufferedBytes: checkInteger(options.maxInboundBufferedBytes ?? DEFAULT_MAX_INBOUND_BUFFERED_BYTES, 'maxInboundBufferedBytes', 1),
  };
}

/** A cluster id, as given at construction or set later (setClusterId). */
export function checkClusterId(clusterId: string): string {
  return checkString(clusterId, 'clusterId', MAX_CLUSTER_ID_LENGTH);
}

function checkString(value: string, option: string, maxLength: number): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > maxLength) {
    throw new InvalidArgumentError(option, value, `a non-empty string of at most ${maxLength} characters`);
  }
  return value;
}

function checkInteger(value: number, option: string, min: number): number {
  if (!Number.isSafeInteger(value) || value < min) throw new InvalidArgumentError(option, value, `an integer >= ${min}`);
  return value;
}

function checkMultiaddr(value: string, option: string): string {
  try {
    return multiaddr(value).toString();
  } catch {
    throw new InvalidArgumentError(option, value, 'a multiaddr like /ip4/127.0.0.1/tcp/7001');
  }
}
