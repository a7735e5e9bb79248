import { describe, expect, it } from 'vitest';
import { parsePeerAddress, type PeerAddress } from '../../src/transport/address.js';
import type { Lookup } from '../../src/transport/seed-resolver.js';
import { voterAlias } from '../../src/transport/voter-aliases.js';

const RECORDS: Record<string, Array<{ address: string; family: number }>> = {
  localhost: [
    { address: '::1', family: 6 },
    { address: '127.0.0.1', family: 4 },
  ],
  'node-a': [{ address: '10.0.0.5', family: 4 }],
  'node-a-alias': [{ address: '10.0.0.5', family: 4 }],
  'node-b': [{ address: '10.0.0.6', family: 4 }],
  // A Kubernetes headless Service: every ready pod, this member's among them.
  cronraft: [
    { address: '10.0.0.5', family: 4 },
    { address: '10.0.0.6', family: 4 },
    { address: '10.0.0.7', family: 4 },
  ],
};

const lookup: Lookup = async (name) => {
  const records = RECORDS[name];
  if (records === undefined) throw new Error(`getaddrinfo ENOTFOUND ${name}`);
  return records;
};

const of = (...addresses: string[]): PeerAddress[] => addresses.map((a) => parsePeerAddress(a, 'peers'));

describe('voterAlias', () => {
  it('finds a member listed by its address and by a name that resolves to it', async () => {
    expect(await voterAlias(of('127.0.0.1:7001', '127.0.0.1:7002', 'localhost:7001'), { lookup })).toEqual({ first: '127.0.0.1:7001', second: 'localhost:7001', address: '127.0.0.1:7001' });
    expect(await voterAlias(of('node-a:7001', 'node-b:7001', 'node-a-alias:7001'), { lookup })).toEqual({ first: 'node-a:7001', second: 'node-a-alias:7001', address: '10.0.0.5:7001' });
    // An IPv6 address written two ways is one address (parsed to its canonical form).
    expect(await voterAlias(of('[::1]:7001', '[0:0:0:0:0:0:0:1]:7001', '127.0.0.1:7001'), { lookup })).toBeNull();
    expect(await voterAlias(of('[::1]:7001', 'localhost:7001'), { lookup })).toEqual({ first: '[::1]:7001', second: 'localhost:7001', address: '[::1]:7001' });
    // An IPv4-mapped IPv6 address reaches the IPv4 one: taken for two members before, the
    // cluster formed with a voter no process answered as.
    const mapped = of('127.0.0.1:7001', '127.0.0.1:7002', '[::ffff:127.0.0.1]:7002');
    expect(await voterAlias(mapped, { lookup })).toEqual({ first: '127.0.0.1:7002', second: mapped[2]?.id, address: '127.0.0.1:7002' });
    expect(await voterAlias(of('10.1.2.3:7001', '[::ffff:a01:203]:7001'), { lookup })).toMatchObject({ address: '10.1.2.3:7001' });
    expect(await voterAlias(of('127.0.0.1:7001', '[::ffff:127.0.0.1]:7002', '[::fffe:7f00:1]:7001'), { lookup })).toBeNull();
  });

  it('takes distinct ports, names that do not resolve and names of a group as distinct members', async () => {
    expect(await voterAlias(of('127.0.0.1:7001', 'localhost:7002', '127.0.0.1:7003'), { lookup })).toBeNull();
    expect(await voterAlias(of('10.0.0.5:7001', 'not-yet-up:7001', 'node-b:7001'), { lookup })).toBeNull();
    expect(await voterAlias(of('10.0.0.5:7001', 'cronraft:7001'), { lookup })).toBeNull();
  });

  it('does not wait past its timeout for a look-up that never answers', async () => {
    // Without its timeout, this call would never settle (and the test would time out).
    const never: Lookup = () => new Promise(() => undefined);
    expect(await voterAlias(of('10.0.0.5:7001', 'silent:7001'), { lookup: never, timeoutMs: 20 })).toBeNull();
  });
});
