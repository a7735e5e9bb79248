import { NotLeaderError } from '../errors.js';
import { isMember } from '../raft/configuration.js';
import type { RaftNode } from '../raft/node.js';
import type { Message, NodeId } from '../raft/types.js';
import type { WireMessage } from '../transport/envelope.js';

/**
 * Answers a leader told of that a member keeps waiting to count (see PeerContact.leaderHeardMe),
 * a heartbeat interval apart: a few leases' worth at the default timing. Only the latest one
 * waited before, and each heartbeat replaced it with one whose commit index was further on, so
 * a member that applied steadily a heartbeat or more behind the commits heartbeats carry (a
 * burst of entries, ten thousand jobs unregistered by a member that stops) counted none, and
 * lost its lease while its leader heard it all along.
 */
export const MAX_ANSWERS_WAITING = 32;

/** What only a leader sends, to its followers: what renews a follower's lease. */
const LEADER_TRAFFIC: ReadonlySet<Message['type']> = new Set(['append', 'heartbeat', 'snapshot']);

/** What a member's other parts read of its PeerContact: the driver alone reports messages and ticks. */
export type PeerContactView = Pick<PeerContact, 'leaderContact' | 'leaderHeardMe' | 'lastHeard' | 'silence' | 'lastDisconnect' | 'leadingSince' | 'departedHeard'>;

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
  /** Ticks run so far, and the tick count when each peer was last heard from (see unreachableLeaderError). */
  #ticks = 0;
  readonly #heardAtTick = new Map<NodeId, number>();
  /** When this member last took in a message from the leader it then followed (monotonic ms). */
  #leaderContact: number | undefined;
  /** The latest of its own answers a leader it followed said it took in (monotonic ms, a heartbeat's `heardAt`), counted. */
  #leaderHeardMe: number | undefined;
  /**
   * Such answers not counted yet, oldest first, at most MAX_ANSWERS_WAITING: each counts once this
   * member applied up to the commit index its heartbeat carried.
   */
  readonly #pendingHeardMe: Array<{ readonly heardAt: number; readonly commit: number }> = [];
  /** When this member's contact began to be kept: a `heardAt` before it was another life's. */
  readonly #startedAt: number;
  /** When the connection to each member last closed (monotonic ms): members of the configuration only. */
  readonly #disconnectedAt = new Map<NodeId, number>();
  /** When this member began to lead (monotonic ms), or null while it does not. */
  #leadingSince: number | null = null;

  constructor(node: RaftNode, tickMs: number, leaderSilenceMs: number, startedAt: number) {
    this.#node = node;
    this.#startedAt = startedAt;
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
   * The protocol stepped `m`, which arrived at `monoMs`, this member having applied `applied`:
   * only what the leader it follows sends as leader is contact with it, so that a deposed leader
   * asking for votes keeps no member's lease alive; and only its heartbeats say which of this
   * member's answers it took in (leaderHeardMe).
   */
  stepped(m: WireMessage, monoMs: number, applied: number): void {
    if (this.#node.leader !== m.from || m.term !== this.#node.term || !LEADER_TRAFFIC.has(m.type)) return;
    this.#leaderContact = monoMs;
    // A stamp from this member's future, or from before it started (a life before a restart,
    // whose clock had another origin), is none of its answers.
    if (m.type !== 'heartbeat') return;
    const heardAt = m.clock?.heardAt;
    if (heardAt === undefined || heardAt > monoMs || heardAt < this.#startedAt) return;
    this.leaderHeardMe(applied);
    const pending = this.#pendingHeardMe;
    if (heardAt > (pending.at(-1)?.heardAt ?? this.#leaderHeardMe ?? Number.NEGATIVE_INFINITY)) {
      // Full, the latest waiting gives way: the older ones are those an applying member reaches first.
      if (pending.length >= MAX_ANSWERS_WAITING) pending.pop();
      pending.push({ heardAt, commit: m.commit });
    }
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
   * When this member sent the latest of its answers that a leader it followed said it took in
   * (heartbeats' `heardAt`, protocol 2), or undefined, this member having applied `applied`: the
   * leader counts this member's silence from no earlier, so the lease counts from it
   * (Member.holdsLease). A leader's messages alone say nothing of whether this member's answers
   * reach it: one whose answers come late, or never, while the leader's reach it would keep a
   * lease the leader no longer counts. An answer counts only once this member applied up to the
   * commit index of the heartbeat that told of it: after a silence, the leader tells of one only
   * once this member holds every entry up to where its log then ended (lease-echoes.ts), the
   * moves of its work among them, which it must apply before it runs anything again.
   */
  leaderHeardMe(applied: number): number | undefined {
    const pending = this.#pendingHeardMe;
    let counted = 0;
    while (counted < pending.length && applied >= (pending[counted] as { readonly commit: number }).commit) counted++;
    if (counted > 0) {
      this.#leaderHeardMe = (pending[counted - 1] as { readonly heardAt: number }).heardAt;
      pending.splice(0, counted);
    }
    return this.#leaderHeardMe;
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

  /**
   * The peers no longer in the configuration that were heard from, as members, less than
   * `withinMs` before `nowMs` (removed members whose work a leader still leaves them, see
   * MemberReach.holding). One silent for longer is forgotten: a member heard from again is
   * heard anew, so this keeps no more than the members removed lately.
   */
  departedHeard(nowMs: number, withinMs: number): NodeId[] {
    const conf = this.#node.configuration;
    const out: NodeId[] = [];
    for (const [id, at] of this.#lastHeard) {
      if (isMember(conf, id)) continue;
      if (nowMs - at < withinMs) out.push(id);
      else {
        this.#lastHeard.delete(id);
        this.#heardAtTick.delete(id);
      }
    }
    return out;
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
  unreachableLeaderError(nowMs: number): NotLeaderError | null {
    if (this.reachesLeader(nowMs)) return null;
    const leader = this.#node.leader;
    if (leader === null) return new NotLeaderError(null);
    return new NotLeaderError(leader, `The leader ${leader} has not been heard from for over ${this.#leaderSilenceMs} ms`);
  }

  /** Whether a proposal can be taken or forwarded at `nowMs`: this member leads, or knows a leader it heard from lately. */
  reachesLeader(nowMs: number): boolean {
    if (this.#node.role === 'leader') return true;
    const leader = this.#node.leader;
    // Silence counts while this member's loop ran, in ticks as Raft counts its election timeout
    // (see silence): a long synchronous start of the app, a stall, takes in nothing. The ticks
    // due in such a stall fire as one.
    return leader !== null && this.silence(leader, nowMs) <= this.#leaderSilenceMs;
  }
}
