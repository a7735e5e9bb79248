import { createHash } from 'node:crypto';
import type { NodeId } from '../src/raft/types.js';
import type { WireMessage } from '../src/transport/envelope.js';
import type { Random } from '../src/time/random.js';
import type { MemberPeer, Transport, TransportStats } from '../src/transport/transport.js';
import { atProtocol } from '../src/transport/codec.js';
import { isVoteAnswer, isVoteRequest, VoteAskers } from '../src/transport/vote-askers.js';
import type { SimScheduler } from './scheduler.js';

/** What the network does to messages; all drawn from the seed. */
export interface NetworkFaults {
  /** Per-message loss, 0..1. */
  lossRate: number;
  /** Per-message duplication, 0..1. */
  duplicateRate: number;
  latencyMinMs: number;
  latencyMaxMs: number;
}

/**
 * The simulated network: each message is delivered after a random latency (so messages
 * reorder), may be lost or duplicated, and is dropped if its link is blocked when it is sent
 * or when it arrives. Links are one-way, so partitions can be asymmetric.
 */
export class SimNetwork {
  readonly #scheduler: SimScheduler;
  readonly #random: Random;
  /** The transport each member has now: a crash detaches it, a restart attaches a new one. */
  readonly #endpoints = new Map<NodeId, SimTransport>();
  /**
   * Members whose host lost power: their peers' connections to them look open until they come
   * back (TCP notices a dead host only on a timeout), but nothing reaches them.
   */
  readonly #hostsLost = new Set<NodeId>();
  readonly #blocked = new Set<string>();
  /** Per member, since when one of its links is blocked (one way or both), while one is. */
  readonly #cutSince = new Map<NodeId, number>();
  /** Per member, when the last block of one of its links healed. */
  readonly #cutHealedAt = new Map<NodeId, number>();
  /**
   * Links that lose every message while their connection stays open: a partition as a real one
   * begins, before TCP notices anything (no peer sees the connection close).
   */
  readonly #muted = new Set<string>();
  /** Links muted until a true time of their own (`muteFor`), whatever partitions come and go. */
  readonly #mutedUntil = new Map<string, number>();
  /** Links that are clogged: extra delay (ms) on every message sent over them. */
  readonly #clogged = new Map<string, number>();
  /** When each message in flight was sent (true time): what the lease checker counts a member's answers from. */
  readonly #sentAt = new WeakMap<WireMessage, number>();
  faults: NetworkFaults;
  /** Sees every message as it is sent, before the network does anything to it (faults that react to messages). */
  onSend: ((m: WireMessage) => void) | null = null;
  delivered = 0;
  dropped = 0;

  constructor(scheduler: SimScheduler, random: Random, faults: NetworkFaults) {
    this.#scheduler = scheduler;
    this.#random = random;
    this.faults = faults;
  }

  /** The simulated time, for what a transport keeps for a while (vote-askers.ts). */
  get nowMs(): number {
    return this.#scheduler.nowMs;
  }

  /** A transport for `id`; re-attaching (after a restart) replaces the old one. */
  attach(id: NodeId): SimTransport {
    const transport = new SimTransport(id, this);
    this.#endpoints.set(id, transport);
    this.#hostsLost.delete(id);
    return transport;
  }

  /**
   * `transport`'s process is gone (crashed or stopped): its messages are dropped, and its peers
   * see its connections close. A stale transport (its member restarted since) changes nothing.
   */
  detach(id: NodeId, transport: SimTransport): void {
    if (this.#endpoints.get(id) !== transport) return;
    this.#endpoints.delete(id);
    this.#hostsLost.delete(id);
    // Its peers' connections to it close: each learns it as production's transport reports a
    // closed connection (its `disconnected` event).
    for (const peer of this.#endpoints.values()) peer.peerGone(id);
  }

  /** `transport`'s host lost power: it receives nothing, yet its peers still look connected to it. */
  hostLost(id: NodeId, transport: SimTransport): void {
    if (this.#endpoints.get(id) === transport) this.#hostsLost.add(id);
  }

  /** Whether `id` has a live process to connect to: a peer's connection to a crashed one closes, as TCP's does. */
  isAttached(id: NodeId): boolean {
    return this.#endpoints.has(id);
  }

  /**
   * Cuts the link from `from` to `to`: a closed connection (SimTransport.isConnected), which
   * `from`'s transport reports as production's reports `disconnected` the moment its stream to
   * the peer closes. Its member then forgets what the peer's answers said (a leader fences the
   * peer's lease behind the moves it makes now, lease-echoes.ts). Before, a leader here found the
   * peer unconnected and moved its claims without being told, so its heartbeats went on renewing
   * the peer's lease once the link healed, and the peer, missing the move, ran the slot beside
   * the new holder (seed 2008 of five members, six minutes).
   */
  block(from: NodeId, to: NodeId): void {
    const link = `${from}>${to}`;
    if (this.#blocked.has(link)) return;
    this.#blocked.add(link);
    for (const id of [from, to]) if (!this.#cutSince.has(id)) this.#cutSince.set(id, this.#scheduler.nowMs);
    this.#endpoints.get(from)?.peerGone(to);
  }

  /**
   * The latest true time at which a link to or from `id` was blocked (a blocked link is a closed
   * connection, SimTransport.isConnected): now while one is, undefined if none ever was.
   */
  lastCut(id: NodeId): number | undefined {
    return this.#cutSince.has(id) ? this.#scheduler.nowMs : this.#cutHealedAt.get(id);
  }

  isBlocked(from: NodeId, to: NodeId): boolean {
    return this.#blocked.has(`${from}>${to}`);
  }

  /** Loses every message from `from` to `to`, its connection open all the same, until healed. */
  mute(from: NodeId, to: NodeId): void {
    this.#muted.add(`${from}>${to}`);
  }

  isMuted(from: NodeId, to: NodeId): boolean {
    return this.#muted.has(`${from}>${to}`);
  }

  /** Loses every message from `from` to `to` for `ms`, its connection open, until then or healAll (not healPartitions). */
  muteFor(from: NodeId, to: NodeId, ms: number): void {
    this.#mutedUntil.set(`${from}>${to}`, this.#scheduler.nowMs + ms);
  }

  #mutedNow(link: string): boolean {
    const until = this.#mutedUntil.get(link);
    if (until === undefined) return false;
    if (until > this.#scheduler.nowMs) return true;
    this.#mutedUntil.delete(link);
    return false;
  }

  /** Delays every message from `from` to `to` by `extraMs` more (a congested or flapping link). */
  clog(from: NodeId, to: NodeId, extraMs: number): void {
    this.#clogged.set(`${from}>${to}`, extraMs);
  }

  #clogOf(from: NodeId, to: NodeId): number {
    return this.#clogged.get(`${from}>${to}`) ?? 0;
  }

  /** Ends every partition and clog; links muted for a time of their own stay so (muteFor). */
  healPartitions(): void {
    for (const id of this.#cutSince.keys()) this.#cutHealedAt.set(id, this.#scheduler.nowMs);
    this.#cutSince.clear();
    this.#blocked.clear();
    this.#muted.clear();
    this.#clogged.clear();
  }

  /** Ends every fault of the links. */
  healAll(): void {
    this.healPartitions();
    this.#mutedUntil.clear();
  }

  /** The true time `m` was sent, while it is kept (until nothing holds it). */
  sentAt(m: WireMessage): number | undefined {
    return this.#sentAt.get(m);
  }

  send(m: WireMessage): void {
    this.#sentAt.set(m, this.#scheduler.nowMs);
    this.onSend?.(m);
    if (this.isBlocked(m.from, m.to) || this.#lostQuietly(m) || this.#chance(this.faults.lossRate)) {
      this.dropped++;
      return;
    }
    const copies = this.#chance(this.faults.duplicateRate) ? 2 : 1;
    for (let i = 0; i < copies; i++) {
      const latencyUs = this.#random.int(Math.round(this.faults.latencyMinMs * 1000), Math.round(this.faults.latencyMaxMs * 1000));
      this.#scheduler.after(latencyUs / 1000 + this.#clogOf(m.from, m.to), () => this.#deliver(m));
    }
  }

  /** Whether a muted link loses `m` (its connection open all the same). */
  #lostQuietly(m: WireMessage): boolean {
    if (this.#muted.size === 0 && this.#mutedUntil.size === 0) return false;
    const link = `${m.from}>${m.to}`;
    return this.#muted.has(link) || this.#mutedNow(link);
  }

  #deliver(m: WireMessage): void {
    const endpoint = this.#endpoints.get(m.to);
    if (endpoint === undefined || this.#hostsLost.has(m.to) || this.isBlocked(m.from, m.to)) {
      this.dropped++;
      return;
    }
    this.delivered++;
    endpoint.deliver(m);
  }

  #chance(rate: number): boolean {
    return rate > 0 && this.#random.int(0, 999_999) < rate * 1_000_000;
  }
}

/**
 * The peer id a simulated member's connections authenticate as: a function of its id, so that
 * it is the same across restarts (as a key kept in the data directory is) and in every run of a
 * seed. Letters and digits, as a libp2p peer id's string form is.
 */
export function simPeerIdOf(id: NodeId): string {
  let peerId = simPeerIds.get(id);
  if (peerId === undefined) {
    peerId = `Sim${createHash('sha256').update(id).digest('hex').slice(0, 32)}`;
    // Every message delivered asks; a hash each time was a few percent of a sweep's time.
    if (simPeerIds.size >= MAX_SIM_PEER_IDS) simPeerIds.clear();
    simPeerIds.set(id, peerId);
  }
  return peerId;
}

/** Peer ids kept computed (see simPeerIdOf): far more than the members of any run. */
const MAX_SIM_PEER_IDS = 1024;
const simPeerIds = new Map<NodeId, string>();

export class SimTransport implements Transport {
  readonly #id: NodeId;
  readonly #network: SimNetwork;
  #handler: ((m: WireMessage) => void) | null = null;
  /** Told when a peer's process is gone and the connection to it closed, as `Cluster` hears libp2p's `disconnected`. */
  onPeerGone: ((peer: NodeId) => void) | null = null;
  #stopped = false;
  #sent = 0;
  #received = 0;
  /** Messages that arrived before a handler was set, dropped as production's transport drops them. */
  #droppedUnexpected = 0;
  /** The wire protocol in force: what a message would lose or be refused for in a frame (codec.ts's atProtocol). */
  #protocol = 1;
  /** The members this one sends to (setMembers); null until set: the founding voters, everyone it is given a message for. */
  #members: ReadonlySet<NodeId> | null = null;
  /** Messages to a member no longer in the configuration, dropped as production's transport drops them (unreachable). */
  droppedNotMember = 0;
  /** The peer ids the configuration binds (setMembers): a message from a member bound to another than its sender's is dropped. */
  #bound = new Map<NodeId, string>();
  /** Members a message was delivered from, whose peer id remotePeerIdOf reports. */
  readonly #heardFrom = new Set<NodeId>();
  #droppedPeerIdMismatch = 0;
  /** Senders outside the members whose vote requests were delivered, answered as production's transport answers them (vote-askers.ts). */
  readonly #askers = new VoteAskers<true>();

  constructor(id: NodeId, network: SimNetwork) {
    this.#id = id;
    this.#network = network;
  }

  async start(): Promise<void> {}

  async stop(): Promise<void> {
    this.#stopped = true;
    this.#network.detach(this.#id, this);
  }

  /** Its host lost power: it sends nothing more, and its peers' connections to it look open until it restarts. */
  loseHost(): void {
    this.#stopped = true;
    this.#network.hostLost(this.#id, this);
  }

  send(m: WireMessage): void {
    if (this.#stopped) return;
    // Refused (thrown) as production's encoder refuses it: the driver counts it as unsendable.
    const sent = atProtocol(m, this.#protocol);
    if (this.#members !== null && !this.#members.has(m.to) && !(isVoteAnswer(m) && this.#askers.routeTo(m.to, this.#network.nowMs) !== undefined)) {
      this.droppedNotMember++;
      return;
    }
    this.#sent++;
    this.#network.send(sent);
  }

  setProtocol(protocol: number): void {
    this.#protocol = protocol;
  }

  setMembers(members: readonly MemberPeer[]): void {
    this.#members = new Set(members.map((m) => m.id));
    this.#bound = new Map(members.flatMap((m) => (m.peerId === null ? [] : [[m.id, m.peerId] as const])));
  }

  peerId(): string {
    return simPeerIdOf(this.#id);
  }

  remotePeerIdOf(member: NodeId): string | null {
    return this.#heardFrom.has(member) ? simPeerIdOf(member) : null;
  }

  /** `peer`'s process is gone: the connection to it closed. */
  peerGone(peer: NodeId): void {
    if (!this.#stopped && peer !== this.#id) this.onPeerGone?.(peer);
  }

  /** A message the network carried to this member. */
  deliver(m: WireMessage): void {
    if (this.#handler === null) {
      this.#droppedUnexpected++;
      return;
    }
    // The simulated network carries each message from the member it names, whose connection
    // authenticates as its simulated peer id: only a binding of another one (a bug) drops it.
    const bound = this.#bound.get(m.from);
    if (bound !== undefined && bound !== simPeerIdOf(m.from)) {
      this.#droppedPeerIdMismatch++;
      return;
    }
    // Production's transport delivers nothing else from outside the members; the protocol
    // ignores the rest from there alike, so the simulator hands it over all the same.
    if (this.#members !== null && !this.#members.has(m.from) && isVoteRequest(m)) this.#askers.asked(m.from, true, this.#network.nowMs);
    this.#heardFrom.add(m.from);
    this.#received++;
    this.#handler(m);
  }

  /** The simulated network takes each message as it is sent: nothing waits for a flush. */
  flush(): void {}

  onMessage(handler: (m: WireMessage) => void): void {
    this.#handler = handler;
  }

  /** A link cut one way counts as no connection; so does a peer whose process is gone. */
  isConnected(peer: NodeId): boolean {
    return !this.#stopped && !this.#network.isBlocked(this.#id, peer) && this.#network.isAttached(peer);
  }

  stats(): TransportStats {
    return { sent: this.#sent, received: this.#received, droppedQueueFull: 0, droppedMalformed: 0, droppedOversized: 0, droppedUnexpected: this.#droppedUnexpected, droppedPeerIdMismatch: this.#droppedPeerIdMismatch };
  }
}
