import type { ComponentLogger, PeerDiscovery, PeerInfo } from '@libp2p/interface';
import { start as startService, stop as stopService } from '@libp2p/interface';
import { mdns, type MulticastDNSComponents } from '@libp2p/mdns';
import { multiaddr } from '@multiformats/multiaddr';
import type { PeerAddress } from './address.js';
import { DiscoveredPeers, type DiscoveryStats } from './discovered-peers.js';

/**
 * Finding members on the local network with mDNS (`@libp2p/mdns`, issue 18; README "Forming the
 * cluster"), when the `mdns` option is on: the member answers queries for its service tag with
 * its advertised address and peer id, queries every `intervalMs`, and keeps what others
 * announce (discovered-peers.ts) for a member looking for a cluster to ask. It runs beside the
 * libp2p node, not inside it: what it finds goes nowhere but to that list (not into libp2p's
 * peer store, which nothing bounds), and what it announces is the member id, not whatever
 * addresses the node listens on.
 */

export interface LanDiscoveryOptions {
  /** The mDNS service name asked for and answered (see cluster-options.ts, serviceTagOf). */
  readonly serviceTag: string;
  /** How often to ask the network; entries expire after DISCOVERY_EXPIRY_INTERVALS of it. */
  readonly intervalMs: number;
  /** This member's advertised address (its member id), announced with `peerId`. */
  readonly self: PeerAddress;
  /** This member's libp2p peer id. */
  readonly peerId: string;
  /** The libp2p node's logger (`DEBUG=libp2p:mdns` shows what mDNS does). */
  readonly logger: ComponentLogger;
  /** Now, on a monotonic base: entries expire on it. */
  readonly now: () => number;
}

export class LanDiscovery {
  readonly #service: PeerDiscovery;
  readonly #peers: DiscoveredPeers;
  readonly #now: () => number;
  #stopped = false;

  private constructor(o: LanDiscoveryOptions) {
    this.#now = o.now;
    this.#peers = new DiscoveredPeers(o.intervalMs);
    const announced = [multiaddr(`${o.self.multiaddr}/p2p/${o.peerId}`)];
    // @libp2p/mdns asks its address manager for nothing but the addresses to announce
    // (getAddresses, in its answer to a query): this member announces its member id alone.
    const addressManager = { getAddresses: () => announced } as unknown as MulticastDNSComponents['addressManager'];
    this.#service = mdns({ serviceTag: o.serviceTag, interval: o.intervalMs })({ addressManager, logger: o.logger });
    this.#service.addEventListener('peer', (event: CustomEvent<PeerInfo>) => {
      const { id, multiaddrs } = event.detail;
      const peerId = id.toString();
      if (this.#stopped || peerId === o.peerId) return;
      this.#peers.announced(peerId, multiaddrs.map((ma) => ma.toString()), this.#now());
    });
  }

  /**
   * Opens the mDNS socket, answers queries and asks at once, then every `intervalMs`. A network
   * without multicast is no error: the member then finds nobody this way.
   */
  static async start(o: LanDiscoveryOptions): Promise<LanDiscovery> {
    const discovery = new LanDiscovery(o);
    await startService(discovery.#service);
    return discovery;
  }

  /** The members announced lately, with the peer ids they announced pinned. */
  peers(): readonly PeerAddress[] {
    return this.#peers.current(this.#now());
  }

  stats(): DiscoveryStats {
    return this.#peers.stats(this.#now());
  }

  /** Stops asking and answering, and closes the socket. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await stopService(this.#service);
  }
}
