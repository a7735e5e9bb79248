import { NotLeaderError } from '../errors.js';
import { isMember } from '../raft/configuration.js';
import type { RaftNode } from '../raft/node.js';
import type { Message, NodeId } from '../raft/types.js';

/** What only a leader sends, to its followers: what renews a follower's lease. */
const LEADER_TRAFFIC: ReadonlySet<Message['type']> = new Set(['append', 'heartbeat', 'snapshot']);

/** What a member's other parts read of its PeerContact: the driver alone reports messages and ticks. */
export type PeerContactView = Pick<PeerContact, 'leaderContact' | 'lastHeard' | 'silence' | 'lastDisconnect' | 'leadingSince'>;

/**
 * When this member last heard from each peer and from the leader it followed, on the timers'
 * monotonic time base: what the member's lease counts from (member.ts), and what tells a
 * follower that its leader went silent, so that a proposal is refused rather than forwarded
 * into silence. The driver reports each message as it arrives and each tick of its loop.
 */
export class PeerContact {
  readonly #node: RaftNode;
  readonly #tickMs: number;
  readonly #leaderSilenceMs: number;
  readonly #lastHeard = new Map<NodeId, number>();
  /** Ticks run so far, and the tick count when each peer was last heard from (see unreachableLeader). */
  #ticks = 0;
  readonly #heardAtTick = new Map<NodeId, number>();
  /** When this member last took in a message from the leader it then followed (monotonic ms). */
  #leaderContact: number | undefined;
  /** When the connection to each member last closed (monotonic ms): members of the configuration only. */
  readonly #disconnectedAt = new Map<NodeId, number>();
  /** When this member began to lead (monotonic ms), or null while it does not. */
  #leadingSince: number | null = null;

  constructor(node: RaftNode, tickMs: number, leaderSilenceMs: number) {
    this.#node = node;
    this.#tickMs = tickMs;
    this.#leaderSilenceMs = leaderSilenceMs;
  }

  /** The driver's loop ticked. */
  tick(): void {
    this.#ticks++;
  }

  /** A message from `peer` arrived at `monoMs`. */
  heard(peer: NodeId, monoMs: number): void {
    this.#lastHeard.set(peer, monoMs);
    this.#heardAtTick.set(peer, this.#ticks);
  }

  /**
   * The protocol stepped `m`, which arrived at `monoMs`: only what the leader it follows sends
   * as leader renews the contact the lease counts from, so that a deposed leader asking for
   * votes keeps no member's lease alive.
   */
  stepped(m: Message, monoMs: number): void {
    if (this.#node.leader === m.from && m.term === this.#node.term && LEADER_TRAFFIC.has(m.type)) this.#leaderContact = monoMs;
  }

  /** This member began (`leading`) or stopped leading at `monoMs`. */
  setLeading(leading: boolean, monoMs: number): void {
    if (!leading) this.#leadingSince = null;
    else this.#leadingSince ??= monoMs;
  }

  /** When this member began to lead, on the monotonic time base, or null while it does not lead. */
  get leadingSince(): number | null {
    return this.#leadingSince;
  }

  /** When this member last took in a message from the leader it then followed, or undefined if it never did. */
  get leaderContact(): number | undefined {
    return this.#leaderContact;
  }

  /**
   * The transport's connection to `peer` closed at `monoMs`: it may come back as another process
   * (a restart, on another release perhaps) whatever it last said. Kept for the members of the
   * configuration only.
   */
  disconnected(peer: NodeId, monoMs: number): void {
    const conf = this.#node.configuration;
    if (!isMember(conf, peer)) return;
    this.#disconnectedAt.set(peer, monoMs);
    for (const id of this.#disconnectedAt.keys()) if (!isMember(conf, id)) this.#disconnectedAt.delete(id);
  }

  /** When the connection to `peer` last closed, or undefined if it never did while this member ran. */
  lastDisconnect(peer: NodeId): number | undefined {
    return this.#disconnectedAt.get(peer);
  }

  /** When this member last heard from `peer`, or undefined. */
  lastHeard(peer: NodeId): number | undefined {
    return this.#lastHeard.get(peer);
  }

  /**
   * How long `peer` has been silent at `nowMs` as far as this member can tell, or Infinity if it
   * was never heard from: the lesser of the time since its last message and the time this
   * member's own loop ran since then (in ticks). A member whose loop stood still (a stall, a
   * loaded machine) took in nothing meanwhile, and the peer's messages may be waiting on its
   * socket: the silence it saw is its own, not the peer's.
   */
  silence(peer: NodeId, nowMs: number): number {
    const heard = this.#lastHeard.get(peer);
    if (heard === undefined) return Number.POSITIVE_INFINITY;
    const ticksSince = this.#ticks - (this.#heardAtTick.get(peer) ?? 0);
    return Math.min(nowMs - heard, ticksSince * this.#tickMs);
  }

  /** Why a proposal cannot even be forwarded at `nowMs`, or null if it can. */
  unreachableLeader(nowMs: number): NotLeaderError | null {
    const leader = this.#node.leader;
    if (this.#node.role === 'leader') return null;
    if (leader === null) return new NotLeaderError(null);
    // Silence counts while this member's loop ran, in ticks as Raft counts its election timeout
    // (see silence): a long synchronous start of the app, a stall, takes in nothing. The ticks
    // due in such a stall fire as one.
    if (this.silence(leader, nowMs) > this.#leaderSilenceMs) {
      return new NotLeaderError(leader, `The leader ${leader} has not been heard from for over ${this.#leaderSilenceMs} ms`);
    }
    return null;
  }
}
