import type { NodeId } from '../raft/types.js';
import { parsePeerAddress, type PeerAddress } from './address.js';
import type { MemberPeer } from './transport.js';

/**
 * Where a transport dials each member and which peer id the member must prove, pure: the
 * address it was given (the options' `peers`, or `setPeers`), or else its id, which is its
 * address; and the peer id pinned in that address, else the one the configuration binds to it,
 * else one held until the configuration binds one (`holdUntilBound`). A pinned id wins over a
 * bound one: the user's word against the log's.
 */
export class MemberAddresses {
  #given: ReadonlyMap<NodeId, PeerAddress>;
  /** Peer ids held for members until the configuration binds theirs: a few, members only. */
  readonly #held = new Map<NodeId, string>();

  constructor(given: ReadonlyMap<NodeId, PeerAddress>) {
    this.#given = new Map(given);
  }

  /** The peers as the member was given them, pinned peer ids and all. */
  setGiven(peers: ReadonlyMap<NodeId, PeerAddress>): void {
    this.#given = new Map(peers);
  }

  /** Holds `peerId` for member `id` until the configuration binds one to it. */
  holdUntilBound(id: NodeId, peerId: string): void {
    this.#held.set(id, peerId);
  }

  /**
   * The addresses of `members`, `self` left out; an id that is no address is left out too, and
   * handed to `unreachable`. A member the configuration binds holds no peer id any more.
   */
  of(self: NodeId, members: readonly MemberPeer[], unreachable: (id: NodeId) => void): Map<NodeId, PeerAddress> {
    const next = new Map<NodeId, PeerAddress>();
    for (const { id, peerId } of members) {
      if (id === self) continue;
      let address = this.#given.get(id);
      if (address === undefined) {
        try {
          address = parsePeerAddress(id, 'member id');
        } catch {
          unreachable(id);
          continue;
        }
      }
      if (peerId !== null) this.#held.delete(id);
      const bound = peerId ?? this.#held.get(id) ?? null;
      next.set(id, address.peerId === null && bound !== null ? { ...address, peerId: bound } : address);
    }
    return next;
  }
}
