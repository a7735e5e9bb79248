import type { Message, NodeId } from '../raft/types.js';

/**
 * How long after its latest vote or pre-vote request a sender outside the members may be
 * answered. A pre-vote is answered as it is stepped and a vote once the grant is durable (one
 * write), so the answer leaves well within it; an asker that still campaigns asks again each
 * election timeout, which renews it.
 */
export const VOTE_ANSWER_WINDOW_MS = 5_000;

/**
 * How many askers outside the members a transport keeps a way back to at once. An honest one is
 * a voter of a configuration this member has not applied yet (one member at a time, so a few at
 * most); past the bound the one that asked longest ago is forgotten.
 */
export const MAX_VOTE_ASKERS = 8;

/** Whether `m` is a vote or pre-vote request: all a sender outside the members may have delivered. */
export function isVoteRequest(m: Message): boolean {
  return m.type === 'vote' || m.type === 'prevote';
}

/** Whether `m` is the answer to one: all that goes back to such an asker. */
export function isVoteAnswer(m: Message): boolean {
  return m.type === 'vote-resp' || m.type === 'prevote-resp';
}

/**
 * The senders outside the members (the configuration's, setMembers) whose vote or pre-vote
 * requests a transport delivered, each with the way back its answer takes (`R`: the libp2p
 * transport's is the connection the request came on, so nothing is dialled for it). A voter
 * that has not applied a configuration adding the asker must still answer it, or the asker,
 * needing that vote, is never elected (etcd's transport answers any peer that asked); the
 * protocol takes such a request only from a log ahead of its own (node.ts #takesVoteRequest).
 * Bounded in number (MAX_VOTE_ASKERS) and time (VOTE_ANSWER_WINDOW_MS); pure: the caller
 * passes the time.
 */
export class VoteAskers<R> {
  readonly #askers = new Map<NodeId, { readonly route: R; readonly atMs: number }>();
  readonly #windowMs: number;
  readonly #max: number;

  constructor(windowMs = VOTE_ANSWER_WINDOW_MS, max = MAX_VOTE_ASKERS) {
    this.#windowMs = windowMs;
    this.#max = max;
  }

  /** `id` asked for a vote at `nowMs`, by `route`. */
  asked(id: NodeId, route: R, nowMs: number): void {
    // Re-inserted, so that the Map's order is the order of the latest requests.
    this.#askers.delete(id);
    this.#askers.set(id, { route, atMs: nowMs });
    for (const oldest of this.#askers.keys()) {
      if (this.#askers.size <= this.#max) break;
      this.#askers.delete(oldest);
    }
  }

  /** The way back to `id` if it asked within the window, else undefined (and it is forgotten). */
  routeTo(id: NodeId, nowMs: number): R | undefined {
    const asker = this.#askers.get(id);
    if (asker === undefined) return undefined;
    if (nowMs - asker.atMs > this.#windowMs) {
      this.#askers.delete(id);
      return undefined;
    }
    return asker.route;
  }

  /** Forgets `id`: it became a member (the transport reaches it as one) or its way back closed. */
  forget(id: NodeId): void {
    this.#askers.delete(id);
  }

  get size(): number {
    return this.#askers.size;
  }
}
