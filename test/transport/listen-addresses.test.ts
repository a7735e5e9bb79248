import type { Libp2p } from '@libp2p/interface';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { LISTEN_ADDRESSES_FRESH_MS, ListenAddresses } from '../../src/transport/listen-addresses.js';

/** A node whose addresses are `current`, counting how often they are worked out. */
function fakeNode(current: { addrs: string[] }): { node: Libp2p; calls: () => number } {
  let calls = 0;
  const node = {
    getMultiaddrs: () => {
      calls++;
      return current.addrs.map((addr) => ({ toString: () => addr }));
    },
  } as unknown as Libp2p;
  return { node, calls: () => calls };
}

describe('ListenAddresses', () => {
  afterEach(() => {
    vi.restoreAllMocks();
  });

  it('hands out the addresses it worked out for LISTEN_ADDRESSES_FRESH_MS, then works them out again', () => {
    const now = vi.spyOn(performance, 'now').mockReturnValue(10_000);
    const current = { addrs: ['/ip4/127.0.0.1/tcp/7001/p2p/a'] };
    const { node, calls } = fakeNode(current);
    const addresses = new ListenAddresses();
    const first = addresses.of(node);
    expect(first).toEqual(['/ip4/127.0.0.1/tcp/7001/p2p/a']);
    expect(Object.isFrozen(first)).toBe(true);
    current.addrs = ['/ip4/10.0.0.2/tcp/7001/p2p/a'];
    now.mockReturnValue(10_000 + LISTEN_ADDRESSES_FRESH_MS - 1);
    expect(addresses.of(node)).toBe(first);
    expect(calls()).toBe(1);
    now.mockReturnValue(10_000 + LISTEN_ADDRESSES_FRESH_MS);
    expect(addresses.of(node)).toEqual(['/ip4/10.0.0.2/tcp/7001/p2p/a']);
    expect(calls()).toBe(2);
  });

  it("works out another node's addresses at once, not the ones kept of the last", () => {
    vi.spyOn(performance, 'now').mockReturnValue(10_000);
    const one = fakeNode({ addrs: ['/ip4/127.0.0.1/tcp/7001/p2p/a'] });
    const other = fakeNode({ addrs: ['/ip4/127.0.0.1/tcp/7002/p2p/b'] });
    const addresses = new ListenAddresses();
    addresses.of(one.node);
    expect(addresses.of(other.node)).toEqual(['/ip4/127.0.0.1/tcp/7002/p2p/b']);
    expect(other.calls()).toBe(1);
  });
});
