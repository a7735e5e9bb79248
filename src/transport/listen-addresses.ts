import type { Libp2p } from '@libp2p/interface';

/** How long ListenAddresses hands out the addresses it last worked out (see there). */
export const LISTEN_ADDRESSES_FRESH_MS = 1000;

/**
 * A node's listen addresses, the multiaddrs it is bound to with `/p2p/<peer id>`, kept for
 * LISTEN_ADDRESSES_FRESH_MS: libp2p works them out anew on each call (a wildcard listener's from
 * the host's interfaces), and `state()`, which every scrape of /metrics and /v1/state reads,
 * shows them; they change only with the host's interfaces, and libp2p itself tells of a change
 * about as late.
 */
export class ListenAddresses {
  /** The addresses as last worked out, of which node, and when. */
  #kept: { readonly node: Libp2p; readonly atMs: number; readonly addrs: readonly string[] } | null = null;

  /** `node`'s addresses: those kept, if they are its own and fresh, else worked out anew. */
  of(node: Libp2p): readonly string[] {
    const now = performance.now();
    const kept = this.#kept;
    if (kept !== null && kept.node === node && now - kept.atMs < LISTEN_ADDRESSES_FRESH_MS) return kept.addrs;
    const addrs = Object.freeze(node.getMultiaddrs().map((ma) => ma.toString()));
    this.#kept = { node, atMs: now, addrs };
    return addrs;
  }
}
