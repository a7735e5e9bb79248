import { isMember } from '../raft/configuration.js';
import type { RaftNode } from '../raft/node.js';
import type { Configuration, NodeId } from '../raft/types.js';
import type { WireMessage } from '../transport/envelope.js';

/** A follower's latest answer this leader took in, in its term. */
interface Answer {
  /** The follower's own monotonic clock when it sent the answer (its t3): what its lease counts from. */
  readonly sentAt: number;
  /** This leader's monotonic clock when it took the answer in. */
  readonly takenAt: number;
  /**
   * The log index the follower must hold, and this leader have committed, before its lease
   * renews again, or null: set when an answer ends a silence as long as the lease.
   */
  fence: number | null;
}

/**
 * What a leader tells each follower of the answers it took in (a heartbeat's `heardAt`, protocol
 * 2), from which the follower's lease counts (PeerContact.leaderHeardMe). The driver shows it
 * each message the protocol stepped (stepped()) and asks it as each heartbeat leaves
 * (heardAtFor()); it reads the rest (role, term, log, progress) from the node.
 *
 * A follower silent for as long as its lease lost it, and this leader may have moved its work
 * meanwhile (MemberReach.lost). Heard again, it renews its lease only once it holds the moves:
 * the answer that ends the silence fences the log where it ends, and no `heardAt` goes to the
 * follower until it holds that index and this leader has committed it. The heartbeat that then
 * carries `heardAt` carries that commit index too, and the follower counts the renewal only once
 * it applied up to it (PeerContact). A leader's first answer from a follower in its term ends a
 * silence too: a deposed leader may have moved its work.
 */
export class LeaseEchoes {
  readonly #node: RaftNode;
  readonly #leaseMs: number;
  readonly #answers = new Map<NodeId, Answer>();

  constructor(node: RaftNode, leaseMs: number) {
    this.#node = node;
    this.#leaseMs = leaseMs;
  }

  /**
   * The protocol stepped `m`, taken in at `takenAt` (this member's monotonic clock): a member's
   * answer to this leader's heartbeat in its term, stamped, is an answer taken in.
   */
  stepped(m: WireMessage, takenAt: number): void {
    if (m.type !== 'heartbeat-resp' || m.clock === undefined) return;
    const node = this.#node;
    if (node.role !== 'leader' || m.term !== node.term || !isMember(node.configuration, m.from)) return;
    this.answered(m.from, m.clock.sentAt, takenAt, node.log.lastIndex());
  }

  /** The `heardAt` for `m` as it leaves: a heartbeat's, as the follower's progress and this leader's commit allow; else undefined. */
  heardAtFor(m: WireMessage): number | undefined {
    if (m.type !== 'heartbeat') return undefined;
    return this.heardAt(m.to, this.#node.progressOf(m.to)?.match ?? 0, this.#node.log.committed);
  }

  /** The configuration is now `conf`: the answers of members no longer in it are forgotten. */
  configured(conf: Configuration): void {
    for (const id of this.#answers.keys()) if (!isMember(conf, id)) this.#answers.delete(id);
  }

  /** `peer` answered, sent at `sentAt` on its clock, taken in at `takenAt` on ours, with this leader's log ending at `lastIndex`. */
  answered(peer: NodeId, sentAt: number, takenAt: number, lastIndex: number): void {
    const prev = this.#answers.get(peer);
    const lapsed = prev === undefined || takenAt - prev.takenAt >= this.#leaseMs;
    this.#answers.set(peer, { sentAt, takenAt, fence: lapsed ? lastIndex : prev.fence });
  }

  /** The `heardAt` for a heartbeat to `peer`, whose log matches this leader's up to `match`, this leader's commit index `commit`; or undefined. */
  heardAt(peer: NodeId, match: number, commit: number): number | undefined {
    const answer = this.#answers.get(peer);
    if (answer === undefined) return undefined;
    if (answer.fence !== null) {
      if (match < answer.fence || commit < answer.fence) return undefined;
      answer.fence = null;
    }
    return answer.sentAt;
  }

  /** This member began or stopped leading: answers of another term say nothing now. */
  reset(): void {
    this.#answers.clear();
  }

  /** The connection to `peer` closed, or it left the configuration: what it answered may be another life's. */
  forget(peer: NodeId): void {
    this.#answers.delete(peer);
  }
}
