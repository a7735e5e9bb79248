import { describe, expect, it } from 'vitest';
import { MDNS_SERVICE, resolveOptions, type ClusterOptions } from '../../src/cluster-options.js';
import { InvalidArgumentError } from '../../src/errors.js';
import { announcedAddresses, DiscoveredPeers, DISCOVERY_EXPIRY_INTERVALS, MAX_ADDRESSES_PER_ANNOUNCEMENT, MAX_DISCOVERED_PEERS } from '../../src/transport/discovered-peers.js';

const P1 = '12D3KooWNpEjHiwXBKhVJvQy5aGA5n6TgqSEAHMAbkjYZj9nVKPL';
const P2 = '12D3KooWJWoaqZhDaoEFshF7Rh1bpY9ohihFhzcW6d69Lr2NASuq';

describe('announced addresses (what a discovered member is asked at)', () => {
  it('maps IP addresses with a TCP port to member ids, the announcing peer id pinned', () => {
    const addresses = announcedAddresses(P1, ['/ip4/10.0.0.2/tcp/7001', `/ip6/::1/tcp/7002/p2p/${P1}`]);
    expect(addresses).toEqual([
      { id: '10.0.0.2:7001', host: '10.0.0.2', port: 7001, peerId: P1, multiaddr: '/ip4/10.0.0.2/tcp/7001' },
      { id: '[::1]:7002', host: '::1', port: 7002, peerId: P1, multiaddr: '/ip6/::1/tcp/7002' },
    ]);
  });

  it('leaves out names, other peer ids, other transports, port 0 and garbage, and repeats', () => {
    const addresses = announcedAddresses(P1, [
      '/dns4/evil.example/tcp/7001',
      '/dns/localhost/tcp/7001',
      `/ip4/10.0.0.3/tcp/7001/p2p/${P2}`,
      '/ip4/10.0.0.4/udp/7001',
      '/ip4/10.0.0.5/tcp/0',
      'not a multiaddr',
      42 as unknown as string,
      '/ip4/10.0.0.6/tcp/7001',
      `/ip4/10.0.0.6/tcp/7001/p2p/${P1}`,
    ]);
    expect(addresses.map((a) => a.id)).toEqual(['10.0.0.6:7001']);
  });

  it(`takes at most ${MAX_ADDRESSES_PER_ANNOUNCEMENT} addresses from one announcement`, () => {
    const many = Array.from({ length: 10 }, (_, i) => `/ip4/10.0.0.${i + 1}/tcp/7001`);
    expect(announcedAddresses(P1, many)).toHaveLength(MAX_ADDRESSES_PER_ANNOUNCEMENT);
  });
});

describe('the members discovered (bounded, expiring)', () => {
  const intervalMs = 1000;
  const expiryMs = DISCOVERY_EXPIRY_INTERVALS * intervalMs;

  it('forgets a member not announced again within the expiry, and keeps one that is', () => {
    const peers = new DiscoveredPeers(intervalMs);
    peers.announced(P1, ['/ip4/10.0.0.1/tcp/7001'], 0);
    peers.announced(P2, ['/ip4/10.0.0.2/tcp/7001'], 0);
    peers.announced(P2, ['/ip4/10.0.0.2/tcp/7001'], expiryMs - 1);
    expect(peers.current(expiryMs - 1).map((a) => a.id)).toEqual(['10.0.0.1:7001', '10.0.0.2:7001']);
    expect(peers.current(expiryMs).map((a) => a.id)).toEqual(['10.0.0.2:7001']);
    expect(peers.current(2 * expiryMs)).toEqual([]);
    expect(peers.stats(2 * expiryMs)).toEqual({ peers: 0, announcements: 3, dropped: 0 });
  });

  it('takes the newer peer id of a member id announced again (a member restarted with a new key)', () => {
    const peers = new DiscoveredPeers(intervalMs);
    peers.announced(P1, ['/ip4/10.0.0.1/tcp/7001'], 0);
    peers.announced(P2, ['/ip4/10.0.0.1/tcp/7001'], 10);
    expect(peers.current(10)).toEqual([expect.objectContaining({ id: '10.0.0.1:7001', peerId: P2 })]);
  });

  it(`keeps at most ${MAX_DISCOVERED_PEERS} members, those known first, dropping newcomers (counted) until one expires`, () => {
    const peers = new DiscoveredPeers(intervalMs);
    for (let i = 0; i < MAX_DISCOVERED_PEERS + 5; i++) peers.announced(P1, [`/ip4/10.0.${Math.floor(i / 250)}.${(i % 250) + 1}/tcp/7001`], i);
    const now = MAX_DISCOVERED_PEERS + 5;
    expect(peers.current(now)).toHaveLength(MAX_DISCOVERED_PEERS);
    const ids = peers.current(now).map((a) => a.id);
    expect(ids).toContain(`10.0.0.${MAX_DISCOVERED_PEERS}:7001`);
    expect(ids).not.toContain(`10.0.0.${MAX_DISCOVERED_PEERS + 1}:7001`);
    expect(peers.stats(now)).toMatchObject({ peers: MAX_DISCOVERED_PEERS, dropped: 5 });
    // A known member announced again is refreshed, never dropped, even at the bound.
    peers.announced(P1, ['/ip4/10.0.0.1/tcp/7001'], now);
    expect(peers.stats(now).dropped).toBe(5);
    // Once the first ones expire, a newcomer gets in.
    peers.announced(P2, ['/ip4/10.0.9.9/tcp/7001'], expiryMs + 1);
    expect(peers.current(expiryMs + 1).map((a) => a.id)).toContain('10.0.9.9:7001');
  });

  it('counts an announcement with no usable address as dropped, and keeps nothing of it', () => {
    const peers = new DiscoveredPeers(intervalMs);
    peers.announced(P1, ['/dns4/evil.example/tcp/7001'], 0);
    expect(peers.stats(0)).toEqual({ peers: 0, announcements: 1, dropped: 1 });
  });
});

describe('the mdns option', () => {
  const on = (options: ClusterOptions): ReturnType<typeof resolveOptions>['mdns'] => resolveOptions([], { listen: '127.0.0.1:7001', ...options }).mdns;

  it('is off unless asked', () => {
    expect(on({})).toBeNull();
    expect(on({ mdns: false })).toBeNull();
  });

  it('takes true, or a name under the cronraft service and an interval', () => {
    expect(on({ mdns: true })).toEqual({ serviceTag: MDNS_SERVICE, intervalMs: 10_000 });
    expect(on({ mdns: { name: 'payments-2', intervalMs: 2000 } })).toEqual({ serviceTag: `payments-2.${MDNS_SERVICE}`, intervalMs: 2000 });
  });

  const cases: Array<[string, () => unknown, string]> = [
    ['a string', () => on({ mdns: 'yes' as unknown as boolean }), 'mdns'],
    ['a name that is no DNS label', () => on({ mdns: { name: 'Payments.Prod' } }), 'mdns.name'],
    ['an interval below a second', () => on({ mdns: { intervalMs: 10 } }), 'mdns.intervalMs'],
    ['port 0', () => resolveOptions([], { listen: '127.0.0.1:0', mdns: true }), 'listen'],
    ['a name to advertise', () => resolveOptions([], { listen: '127.0.0.1:7001', advertise: 'node-1.local:7001', mdns: true }), 'advertise'],
    ['0.0.0.0 without advertise', () => resolveOptions([], { listen: '0.0.0.0:7001', insecure: true, mdns: true }), 'listen'],
  ];
  it.each(cases)('refuses %s, naming the option', (_name, make, option) => {
    expect(make).toThrow(InvalidArgumentError);
    expect(make).toThrow(expect.objectContaining({ code: 'CRONRAFT_INVALID_ARGUMENT', option }));
  });
});
