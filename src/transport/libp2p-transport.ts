// Must stay the first import: libp2p needs Promise.withResolvers, which Node 20 lacks.
import './polyfills.js';
import { tunedNoise } from './tuned-noise.js';
import { relaxWindowUpdates } from './yamux-window.js';
import { yamux } from '@chainsafe/libp2p-yamux';
import type { ComponentLogger, Connection, Libp2p, PrivateKey, Stream, StreamMessageEvent } from '@libp2p/interface';
import { tcp } from '@libp2p/tcp';
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr';
import { createLibp2p } from 'libp2p';
import { EntryRecords } from '../bytes/entry-records.js';
import { CodecError, ListenError, NotRunningError } from '../errors.js';
import type { Message, NodeId } from '../raft/types.js';
import type { PeerAddress } from './address.js';
import type { OpenedStream } from './join-protocol.js';
import { MemberAddresses } from './member-addresses.js';
import { decodeFrame, encodeFrame } from './codec.js';
import type { Frame } from './codec.js';
import {
  CONNECTION_CLOSE_TIMEOUT_MS,
  INBOUND_CONNECTIONS_PER_SECOND_PER_HOST,
  INBOUND_UPGRADE_TIMEOUT_MS,
  MAX_CONNECTIONS,
  MAX_INCOMING_PENDING_CONNECTIONS,
  MAX_PARALLEL_DIALS,
  MAX_FRAME_BYTES,
  MAX_INBOUND_STREAMS_PER_CONNECTION,
  PROTOCOL_ID,
  STOP_TIMEOUT_MS,
} from './constants.js';
import { ConnectionGate } from './connection-gate.js';
import type { DropReason, TransportEvent } from './events.js';
import { FrameReader, OversizedFrameError } from './framing.js';
import { PeerLink } from './peer-link.js';
import type { LinkContext, LinkSettings } from './peer-link.js';
import type { MemberPeer, Transport, TransportStats } from './transport.js';
import { AskerAnswers } from './asker-answer.js';
import { ListenAddresses } from './listen-addresses.js';
import { isVoteRequest } from './vote-askers.js';
import type { DialFailure } from './dial-failure.js';
import { checkClusterId, checkedOptions, type Libp2pTransportOptions } from './libp2p-transport-options.js';
import { firstBytesProtector } from './first-bytes.js';
import { checkedStreams } from './stream-first-bytes.js';
import { privateNetwork } from './private-network.js';

export type { Libp2pTransportOptions } from './libp2p-transport-options.js';

type RunState = 'new' | 'starting' | 'running' | 'stopping' | 'stopped';

/**
 * The production Transport: one libp2p node (TCP, Noise, Yamux) per member, speaking PROTOCOL_ID.
 * Each peer gets a PeerLink (one long-lived outbound stream with its own bounded queue); inbound
 * streams opened by peers are only read. Frames are length-prefixed CBOR (see codec.ts).
 */
export class Libp2pTransport implements Transport {
  readonly #self: NodeId;
  #clusterId: string;
  readonly #records: EntryRecords;
  readonly #listen: string;
  readonly #privateKey: PrivateKey | undefined;
  readonly #psk: Uint8Array | undefined;
  readonly #pskMaxBlocks: number | undefined;
  readonly #settings: LinkSettings;
  readonly #onEvent: ((event: TransportEvent) => void) | undefined;
  readonly #counters = { sent: 0, received: 0, sentBytes: 0, receivedBytes: 0, droppedQueueFull: 0, droppedMalformed: 0, droppedOversized: 0, droppedUnexpected: 0, droppedPeerIdMismatch: 0 };
  readonly #linkContext: LinkContext;
  readonly #maxInboundBufferedBytes: number;
  readonly #inbound = new Set<Stream>();
  /** Bytes of incomplete frames held by all inbound streams' readers. */
  #inboundBuffered = 0;
  /** Where setMembers dials each member, and the peer id it must prove (member-addresses.ts). */
  readonly #addresses: MemberAddresses;
  /**
   * The peers dialled and heard from: each one's address with the peer id it must prove, its
   * pinned one or else the one the configuration binds to it (see setMembers).
   */
  #peers: ReadonlyMap<NodeId, PeerAddress> = new Map();
  /** The peers' peer ids when every peer has one (pinned or bound), else null (see ConnectionGate). */
  #known: ReadonlySet<string> | null = null;
  readonly #gate: ConnectionGate;
  /** The remote peer id of the connection that carried the last frame accepted from each peer (remotePeerIdOf). */
  #lastRemotePeer = new Map<NodeId, string>();
  #links = new Map<NodeId, PeerLink>();
  /** Senders outside the peers whose vote requests were delivered, answered over the request's connection. */
  readonly #askers: AskerAnswers;
  /** The wire protocol in force (see setProtocol). */
  #protocol = 1;
  #handler: ((message: Message) => void) | null = null;
  /** Further protocols this node serves (the join protocol), registered as it starts. */
  readonly #services = new Map<string, { handler: (stream: Stream, remotePeer: string) => void; maxInboundStreams: number }>();
  #node: Libp2p | null = null;
  /** listenAddresses() as last worked out (listen-addresses.ts). */
  readonly #listenAddresses = new ListenAddresses();
  #state: RunState = 'new';
  #starting: Promise<void> | null = null;
  #stopping: Promise<void> | null = null;

  constructor(options: Libp2pTransportOptions) {
    const checked = checkedOptions(options);
    this.#self = checked.self;
    this.#clusterId = checked.clusterId;
    this.#listen = checked.listen;
    this.#privateKey = options.privateKey;
    this.#psk = options.psk;
    this.#pskMaxBlocks = options.pskMaxBlocks;
    this.#gate = new ConnectionGate(() => this.#known, options.visitors);
    this.#records = options.entryRecords ?? new EntryRecords();
    this.#settings = checked.settings;
    this.#maxInboundBufferedBytes = checked.maxInboundBufferedBytes;
    this.#onEvent = options.onEvent;
    this.#linkContext = {
      dial: (address, signal) => this.#dial(address, signal),
      counters: this.#counters,
      emit: (event) => this.#emit(event),
      settings: this.#settings,
    };
    this.#askers = new AskerAnswers(this.#linkContext, (message) => this.#encode(message));
    this.#addresses = new MemberAddresses(options.peers);
    this.#setPeers(options.peers);
  }

  async start(): Promise<void> {
    if (this.#state === 'new') {
      this.#state = 'starting';
      this.#starting = this.#start();
    }
    if (this.#state === 'starting' || this.#state === 'running') return this.#starting ?? undefined;
    throw new NotRunningError(this.#state);
  }

  async #start(): Promise<void> {
    let node: Libp2p | null = null;
    try {
      node = await createLibp2p({
        start: false,
        privateKey: this.#privateKey,
        addresses: { listen: [this.#listen] },
        // noDelay is @libp2p/tcp's default; stated here because latency depends on it.
        transports: [tcp({ dialOpts: { noDelay: true }, listenOpts: { noDelay: true } })],
        // Without a secret, a protector all the same: it checks an inbound connection's first bytes (first-bytes.ts).
        connectionProtector: this.#psk === undefined ? firstBytesProtector() : privateNetwork(this.#psk, this.#pskMaxBlocks),
        connectionEncrypters: [tunedNoise()],
        // Each stream a peer opens names one of the protocols served, or is aborted unread (stream-first-bytes.ts).
        streamMuxers: [checkedStreams(yamux(), () => node?.getProtocols() ?? [])],
        connectionGater: this.#gate.gater(),
        connectionManager: {
          dialTimeout: this.#settings.dialTimeoutMs,
          connectionCloseTimeout: CONNECTION_CLOSE_TIMEOUT_MS,
          inboundConnectionThreshold: INBOUND_CONNECTIONS_PER_SECOND_PER_HOST,
          inboundUpgradeTimeout: INBOUND_UPGRADE_TIMEOUT_MS,
          maxIncomingPendingConnections: MAX_INCOMING_PENDING_CONNECTIONS,
          maxConnections: MAX_CONNECTIONS,
          maxParallelDials: MAX_PARALLEL_DIALS,
        },
      });
      await node.handle(PROTOCOL_ID, (stream, connection) => this.#onInboundStream(stream, connection), {
        maxInboundStreams: MAX_INBOUND_STREAMS_PER_CONNECTION,
      });
      for (const [protocol, service] of this.#services) {
        await node.handle(protocol, (stream, connection) => service.handler(stream, connection.remotePeer.toString()), { maxInboundStreams: service.maxInboundStreams });
      }
      await node.start();
    } catch (error) {
      if (node !== null) await stopNode(node);
      this.#state = 'stopped';
      throw new ListenError(this.#listen, { cause: error });
    }
    this.#node = node;
    // stop() may have been called meanwhile; it waits for this promise and then stops the node.
    if (this.#state !== 'starting') return;
    this.#state = 'running';
    for (const link of this.#links.values()) link.start();
  }

  async stop(): Promise<void> {
    if (this.#state === 'new') {
      this.#state = 'stopped';
      for (const link of this.#links.values()) link.close();
      return;
    }
    if (this.#state === 'stopped' || this.#state === 'stopping') return this.#stopping ?? undefined;
    this.#state = 'stopping';
    this.#stopping = this.#stop();
    return this.#stopping;
  }

  async #stop(): Promise<void> {
    // What was queued before the stop goes out first (a link writes at the end of the turn, and
    // closing it drops its queue): a member's last answers, as its peers would otherwise have
    // had them.
    for (const link of this.#links.values()) {
      link.flushNow();
      link.close();
    }
    await this.#starting?.catch(() => undefined);
    for (const stream of this.#inbound) stream.abort(new Error('cronraft transport stopped'));
    this.#inbound.clear();
    const node = this.#node;
    this.#node = null;
    if (node !== null) await stopNode(node);
    this.#state = 'stopped';
  }

  send(message: Message): void {
    const link = this.#links.get(message.to);
    // An answer to a vote request from outside the peers goes back over the request's connection.
    if (link === undefined && this.#state === 'running' && this.#askers.answer(message)) return;
    if (link === undefined || this.#state === 'stopping' || this.#state === 'stopped') {
      this.#counters.droppedQueueFull++;
      this.#emit({ type: 'dropped', reason: 'unreachable', peer: message.to, detail: link === undefined ? 'not a known peer' : 'the transport is stopped' });
      return;
    }
    // Throws CodecError for a message that breaks the wire format's bounds: that is a bug in the
    // caller (e.g. an append batch over MAX_FRAME_BYTES), not a network condition.
    link.enqueue(this.#encode(message));
  }

  /** `message` as a frame of this cluster at the wire protocol in force, without its length prefix. */
  #encode(message: Message): Uint8Array {
    return encodeFrame({ clusterId: this.#clusterId, message }, this.#records, this.#protocol);
  }

  flush(): void {
    for (const link of this.#links.values()) link.flushNow();
  }

  onMessage(handler: (message: Message) => void): void {
    this.#handler = handler;
  }

  isConnected(peer: NodeId): boolean {
    return this.#links.get(peer)?.connected ?? false;
  }

  /** Why the last dial to `peer` failed, or null once one succeeded, or none failed (dial-failure.ts). */
  dialFailure(peer: NodeId): DialFailure | null {
    return this.#links.get(peer)?.dialFailure ?? null;
  }

  stats(): TransportStats {
    const c = this.#counters;
    return {
      sent: c.sent,
      received: c.received,
      droppedQueueFull: c.droppedQueueFull,
      droppedMalformed: c.droppedMalformed,
      droppedOversized: c.droppedOversized,
      droppedUnexpected: c.droppedUnexpected,
      droppedPeerIdMismatch: c.droppedPeerIdMismatch,
      inboundConnections: this.#gate.stats(),
      sentBytes: c.sentBytes,
      receivedBytes: c.receivedBytes,
      connections: this.#node?.getConnections().length ?? 0,
    };
  }

  /**
   * The multiaddrs the node is bound to, with `/p2p/<peer id>`; empty before start(). Kept for
   * LISTEN_ADDRESSES_FRESH_MS (listen-addresses.ts): every scrape of `state()` shows them.
   */
  listenAddresses(): readonly string[] {
    const node = this.#node;
    return node === null ? [] : this.#listenAddresses.of(node);
  }

  /** This node's libp2p peer id; null before start(). */
  peerId(): string | null {
    return this.#node?.peerId.toString() ?? null;
  }

  /** The peers this transport dials, each with the peer id it must prove (pinned or bound), if any. */
  peerAddresses(): readonly PeerAddress[] {
    return [...this.#peers.values()];
  }

  /** The node's logger, for a service beside it (lan-discovery.ts); null before start(). */
  logger(): ComponentLogger | null {
    return this.#node?.logger ?? null;
  }

  remotePeerIdOf(member: NodeId): string | null {
    return this.#lastRemotePeer.get(member) ?? null;
  }

  /**
   * Sets the cluster id frames carry and must carry: a member that joins learns it from a seed
   * after its transport started (runtime/join.ts), before its member sends or takes a frame.
   */
  setClusterId(clusterId: string): void {
    this.#clusterId = checkClusterId(clusterId);
  }

  /**
   * Serves another protocol on this node (the join protocol): `handler` gets each inbound
   * stream with the connection's authenticated remote peer id. Only before start().
   */
  serve(protocol: string, handler: (stream: Stream, remotePeer: string) => void, maxInboundStreams: number): void {
    if (this.#state !== 'new') throw new NotRunningError(this.#state);
    this.#services.set(protocol, { handler, maxInboundStreams });
  }

  /** Opens a stream of another protocol (the join protocol) to `address`, through the same connections. */
  async openStream(address: PeerAddress, protocol: string, signal: AbortSignal): Promise<OpenedStream> {
    const connection = await this.#running().dial(dialTarget(address), { signal });
    return { stream: await connection.newStream(protocol, { signal }), remotePeer: connection.remotePeer.toString() };
  }

  /**
   * Resolves once a connection of its own to `address` completes its handshake with `peerId`,
   * then closes it: a leader's check that a joiner's id is an address the members reach as the
   * key it asked with (join-server.ts). Rejects when the address cannot be dialled or another
   * key answers there. A connection already open to `peerId` (the joiner's own) proves nothing
   * of its address, so one is dialled anew.
   */
  async reaches(address: PeerAddress, peerId: string, signal: AbortSignal): Promise<void> {
    const connection = await this.#running().dial(dialTarget(address, peerId), { signal, force: true });
    connection.abort(new Error('the joiner was reached at its id'));
  }

  /**
   * Binds `peerId` to member `id` until the configuration binds one (setMembers), unless the
   * user pinned one: a member that has not replayed the bindings yet takes frames as `id` only
   * from that key meanwhile. A joiner binds so the member whose answer added it (the join stream
   * proved its key); a member restarted after a crash, the bindings its log holds past the
   * commit index it stored.
   */
  bindUntilConfigured(id: NodeId, peerId: string): void {
    if (id === this.#self) return;
    this.#addresses.holdUntilBound(id, peerId);
    const current = this.#peers.get(id);
    if (current !== undefined && current.peerId === null) this.#setPeers(new Map([...this.#peers, [id, { ...current, peerId }]]));
  }

  setProtocol(protocol: number): void {
    this.#protocol = protocol;
  }

  /**
   * Follows the configuration: a member is dialled at the address it was given (the options'
   * `peers`, with its pinned peer id if any), or else at its id, which is its address. It must
   * prove its pinned peer id, or else the one the configuration binds to it: its frames from any
   * other are dropped (peer-id-mismatch), and a dial reaches only that key. A pinned id wins
   * over a bound one: the user's word against the log's. An id that is no address is left out
   * (counted as unreachable when a message is sent to it).
   */
  setMembers(members: readonly MemberPeer[]): void {
    this.#setPeers(this.#addresses.of(this.#self, members, (id) => this.#emit({ type: 'dropped', reason: 'unreachable', peer: id, detail: 'a member id that is not an address' })));
  }

  /**
   * Replaces the member list with the peers as given, pinned peer ids and all. Links to removed
   * peers are closed and their queued messages dropped; a peer whose address changed is
   * re-dialled at the new address with its queue kept; new peers are dialled at once when
   * running.
   */
  setPeers(peers: ReadonlyMap<NodeId, PeerAddress>): void {
    this.#addresses.setGiven(peers);
    this.#setPeers(peers);
  }

  #setPeers(peers: ReadonlyMap<NodeId, PeerAddress>): void {
    const next = new Map<NodeId, PeerLink>();
    for (const [id, address] of peers) {
      if (id === this.#self) continue;
      const existing = this.#links.get(id);
      if (existing !== undefined && sameAddress(existing.address, address)) {
        next.set(id, existing);
        continue;
      }
      if (existing !== undefined && existing.address.peerId === null && address.peerId !== null && sameAddress(existing.address, { ...address, peerId: null })) {
        // Bound where it was not: the link keeps its stream and dials that key from now on.
        existing.bind(address.peerId);
        next.set(id, existing);
        continue;
      }
      // A member that moved keeps its queued messages: they are still for that member.
      const link = new PeerLink(address, this.#linkContext, existing?.detachQueue());
      next.set(id, link);
      if (this.#state === 'running') link.start();
    }
    for (const [id, link] of this.#links) {
      if (next.get(id) !== link) link.close();
    }
    this.#links = next;
    this.#peers = new Map(peers);
    for (const id of this.#lastRemotePeer.keys()) if (!this.#peers.has(id)) this.#lastRemotePeer.delete(id);
    const others = [...this.#peers.values()].filter((peer) => peer.id !== this.#self);
    this.#known = others.length > 0 && others.every((peer) => peer.peerId !== null) ? new Set(others.map((peer) => peer.peerId ?? '')) : null;
  }

  /** The libp2p node, while the transport runs. */
  #running(): Libp2p {
    const node = this.#node;
    if (node === null || this.#state !== 'running') throw new NotRunningError(this.#state);
    return node;
  }

  async #dial(address: PeerAddress, signal: AbortSignal): Promise<Stream> {
    const node = this.#node;
    if (node === null) throw new NotRunningError(this.#state);
    return dialStream(node, address, PROTOCOL_ID, signal);
  }

  #onInboundStream(stream: Stream, connection: Connection): void {
    if (this.#state !== 'running') {
      stream.abort(new Error('cronraft transport not running'));
      return;
    }
    relaxWindowUpdates(stream);
    const remotePeer = connection.remotePeer.toString();
    const reader = new FrameReader(MAX_FRAME_BYTES);
    const onFrame = (frame: Uint8Array): void => this.#onFrame(frame, remotePeer, connection);
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.#inboundBuffered -= reader.buffered;
      this.#inbound.delete(stream);
    };
    const onData = (event: StreamMessageEvent): void => {
      this.#counters.receivedBytes += event.data.byteLength;
      const before = reader.buffered;
      let failure: Error | null = null;
      try {
        if (event.data instanceof Uint8Array) {
          reader.push(event.data, onFrame);
        } else {
          // A Uint8ArrayList: feed its chunks without concatenating them.
          for (const chunk of event.data) reader.push(chunk, onFrame);
        }
      } catch (error) {
        failure = error instanceof Error ? error : new Error(String(error));
      }
      this.#inboundBuffered += reader.buffered - before;
      if (failure === null && this.#inboundBuffered > this.#maxInboundBufferedBytes) {
        failure = new OversizedFrameError(null, `incomplete inbound frames exceed ${this.#maxInboundBufferedBytes} bytes`);
      }
      if (failure === null) return;
      stream.removeEventListener('message', onData);
      release();
      if (failure instanceof OversizedFrameError) {
        this.#counters.droppedOversized++;
        this.#drop('oversized', null, `${failure.message}, from ${remotePeer}; stream reset`);
      } else {
        this.#counters.droppedMalformed++;
        this.#drop('malformed', null, `unreadable stream from ${remotePeer}: ${failure.message}; stream reset`);
      }
      // Reset rather than buffer: an honest peer re-dials and starts a fresh stream.
      stream.abort(failure);
    };
    this.#inbound.add(stream);
    stream.addEventListener('message', onData);
    stream.addEventListener('close', release, { once: true });
  }

  #onFrame(bytes: Uint8Array, remotePeer: string, connection: Connection): void {
    if (this.#state !== 'running') return;
    let frame: Frame;
    try {
      frame = decodeFrame(bytes);
    } catch (error) {
      this.#counters.droppedMalformed++;
      this.#drop('malformed', null, `from ${remotePeer}: ${error instanceof CodecError ? error.message : String(error)}`);
      return;
    }
    const { clusterId, message } = frame;
    const reason = this.#rejection(clusterId, message, remotePeer);
    if (reason !== null) {
      if (reason === 'peer-id-mismatch') this.#counters.droppedPeerIdMismatch++;
      else this.#counters.droppedUnexpected++;
      this.#drop(reason, message.from, `${message.type} from ${message.from} (peer ${remotePeer}) to ${message.to} in cluster ${JSON.stringify(clusterId)}`);
      return;
    }
    if (this.#peers.has(message.from)) {
      // The sender is up: our own link to it need not wait out a back-off (see PeerLink.heardFrom).
      this.#links.get(message.from)?.heardFrom();
      this.#lastRemotePeer.set(message.from, remotePeer);
    } else {
      // A vote request from outside the peers (#rejection lets nothing else through): its
      // answer goes back over this connection.
      this.#askers.asked(message.from, connection);
    }
    const handler = this.#handler;
    if (handler === null) {
      this.#counters.droppedUnexpected++;
      this.#drop('no-handler', message.from, `${message.type} from ${message.from} arrived before onMessage()`);
      return;
    }
    this.#counters.received++;
    try {
      handler(message);
    } catch (error) {
      this.#emit({ type: 'handler-error', error });
    }
  }

  /** Why a well-formed message must not be delivered, or null when it may. */
  #rejection(clusterId: string, message: Message, remotePeer: string): DropReason | null {
    if (clusterId !== this.#clusterId) return 'wrong-cluster';
    if (message.to !== this.#self) return 'wrong-recipient';
    if (message.from === this.#self) return 'unknown-sender';
    const sender = this.#peers.get(message.from);
    // A vote request from outside the peers is delivered: the protocol takes it only from a
    // log ahead of this member's, a voter of a configuration it has not applied (vote-askers.ts).
    if (sender === undefined) return isVoteRequest(message) ? null : 'unknown-sender';
    if (sender.peerId !== null && sender.peerId !== remotePeer) return 'peer-id-mismatch';
    return null;
  }

  #drop(reason: DropReason, peer: NodeId | null, detail: string): void {
    this.#emit({ type: 'dropped', reason, peer, detail });
  }

  #emit(event: TransportEvent): void {
    if (this.#onEvent === undefined) return;
    try {
      this.#onEvent(event);
    } catch {
      // A logging callback must not break the transport.
    }
  }
}

/** Stops a libp2p node, waiting at most STOP_TIMEOUT_MS: stop() must resolve promptly even if a peer hangs. */
async function stopNode(node: Libp2p): Promise<void> {
  // libp2p closes connections gracefully, waiting up to 500 ms for each peer to acknowledge.
  // Raft needs no graceful goodbye, and peers re-dial anyway, so abort them for a prompt stop.
  for (const connection of node.getConnections()) connection.abort(new Error('cronraft transport stopped'));
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<void>((resolve) => {
    timer = setTimeout(resolve, STOP_TIMEOUT_MS);
  });
  try {
    const stopped = Promise.resolve()
      .then(() => node.stop())
      .catch(() => undefined);
    await Promise.race([stopped, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

/** Opens a stream of `protocol` to `address`; with a pinned peer id the Noise handshake proves the remote holds that key. */
function dialStream(node: Libp2p, address: PeerAddress, protocol: string, signal: AbortSignal): Promise<Stream> {
  return node.dialProtocol(dialTarget(address), protocol, { signal });
}

/** Where to dial `address`, pinned to `peerId` (its own pinned one unless given): the Noise handshake then proves the remote holds that key. */
function dialTarget(address: PeerAddress, peerId = address.peerId): Multiaddr {
  return multiaddr(peerId === null ? address.multiaddr : `${address.multiaddr}/p2p/${peerId}`);
}

function sameAddress(a: PeerAddress, b: PeerAddress): boolean {
  return a.multiaddr === b.multiaddr && a.peerId === b.peerId && a.id === b.id;
}
