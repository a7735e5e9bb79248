import { isIP } from 'node:net';
import type { NodeId } from '../raft/types.js';
import { parsePeerAddress, type PeerAddress } from './address.js';

/**
 * The members found on the local network by mDNS (lan-discovery.ts), kept as addresses to ask
 * whether a cluster runs (runtime/join.ts), and nothing more: an announcement is unauthenticated
 * (anyone on the LAN can send one), so it only says whom to ask. What authenticates is the join
 * stream itself, behind the cluster secret and with the announced peer id pinned. Pure: the
 * time is given.
 */

/**
 * The most members kept at once: a looker asks each of them every round, so a LAN flooded
 * with announcements must not make it ask thousands. Those known first are kept; newcomers past
 * the bound are dropped (counted) until an entry expires.
 */
export const MAX_DISCOVERED_PEERS = 64;

/**
 * The most addresses taken from one announcement: a member announces its one advertised
 * address; the rest of a longer announcement is ignored.
 */
export const MAX_ADDRESSES_PER_ANNOUNCEMENT = 4;

/**
 * An entry not announced again for this many query intervals is forgotten: every member answers
 * every query, so a live member is heard once an interval, and a missed answer or two is not
 * taken for a member gone.
 */
export const DISCOVERY_EXPIRY_INTERVALS = 3;

/** What `state().discovery` shows of a member's mDNS. */
export interface DiscoveryStats {
  /** Members known now (announced within the expiry, at most MAX_DISCOVERED_PEERS). */
  readonly peers: number;
  /** Announcements of other members received. */
  readonly announcements: number;
  /** Announcements (or addresses in them) dropped: no usable address, or past MAX_DISCOVERED_PEERS. */
  readonly dropped: number;
}

/**
 * The member addresses an announcement names: each multiaddr that is an IP address and a TCP
 * port (`/ip4|ip6/<address>/tcp/<port>`, with or without `/p2p/<the announcing peer id>`), as a
 * member id with the announcing peer id pinned, as `/p2p/` pins a peer address. A DNS name, any
 * other peer id, or anything else is no address to ask: left out. At most
 * MAX_ADDRESSES_PER_ANNOUNCEMENT, without repeats.
 */
export function announcedAddresses(peerId: string, multiaddrs: readonly string[]): PeerAddress[] {
  const addresses: PeerAddress[] = [];
  for (const value of multiaddrs) {
    if (addresses.length >= MAX_ADDRESSES_PER_ANNOUNCEMENT) break;
    if (typeof value !== 'string') continue;
    const bare = value.endsWith(`/p2p/${peerId}`) ? value.slice(0, -`/p2p/${peerId}`.length) : value;
    let address: PeerAddress;
    try {
      address = parsePeerAddress(`${bare}/p2p/${peerId}`, 'announcement');
    } catch {
      continue;
    }
    // An announcement carries addresses: a name would send this member to look up whatever an
    // unauthenticated sender chose, and is no member id a looker advertises (see cluster-options.ts).
    if (isIP(address.host) === 0 || address.peerId !== peerId) continue;
    if (!addresses.some((a) => a.id === address.id)) addresses.push(address);
  }
  return addresses;
}

/**
 * The members announced lately, by member id, each with the peer id it announced and when it
 * was last heard. A member id announced again under another peer id (a member restarted with a
 * new key) takes the newer one.
 */
export class DiscoveredPeers {
  readonly #expireAfterMs: number;
  readonly #max: number;
  readonly #entries = new Map<NodeId, { readonly address: PeerAddress; readonly heardAtMs: number }>();
  #announcements = 0;
  #dropped = 0;

  /** `intervalMs`: the query interval, which entries outlive DISCOVERY_EXPIRY_INTERVALS times. */
  constructor(intervalMs: number, max = MAX_DISCOVERED_PEERS) {
    this.#expireAfterMs = DISCOVERY_EXPIRY_INTERVALS * intervalMs;
    this.#max = max;
  }

  /** Takes in an announcement of `peerId` at `multiaddrs`, heard at `nowMs`. */
  announced(peerId: string, multiaddrs: readonly string[], nowMs: number): void {
    this.#announcements++;
    const addresses = announcedAddresses(peerId, multiaddrs);
    if (addresses.length === 0) {
      this.#dropped++;
      return;
    }
    this.#expire(nowMs);
    for (const address of addresses) {
      if (!this.#entries.has(address.id) && this.#entries.size >= this.#max) {
        this.#dropped++;
        continue;
      }
      // Re-inserted, so that the map's order stays the order of the latest announcements.
      this.#entries.delete(address.id);
      this.#entries.set(address.id, { address, heardAtMs: nowMs });
    }
  }

  /** The members heard within the expiry at `nowMs`, least lately heard first. */
  current(nowMs: number): PeerAddress[] {
    this.#expire(nowMs);
    return [...this.#entries.values()].map((entry) => entry.address);
  }

  stats(nowMs: number): DiscoveryStats {
    this.#expire(nowMs);
    return { peers: this.#entries.size, announcements: this.#announcements, dropped: this.#dropped };
  }

  #expire(nowMs: number): void {
    for (const [id, entry] of this.#entries) if (nowMs - entry.heardAtMs >= this.#expireAfterMs) this.#entries.delete(id);
  }
}
