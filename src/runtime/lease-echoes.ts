import type { NodeId } from '../raft/types.js';

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
 * 2), from which the follower's lease counts (PeerContact.leaderHeardMe). Arithmetic only: the
 * driver reports each answer and asks as each heartbeat leaves.
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
  readonly #leaseMs: number;
  readonly #answers = new Map<NodeId, Answer>();

  constructor(leaseMs: number) {
    this.#leaseMs = leaseMs;
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

  /** The followers whose answers it keeps. */
  peers(): IterableIterator<NodeId> {
    return this.#answers.keys();
  }

  /** The connection to `peer` closed, or it left the configuration: what it answered may be another life's. */
  forget(peer: NodeId): void {
    this.#answers.delete(peer);
  }
}
