import { describe, expect, it } from 'vitest';
import { parsePeerAddress, type PeerAddress } from '../../src/transport/address.js';
import { MAX_SEED_ADDRESSES, resolveSeeds, type Lookup } from '../../src/transport/seed-resolver.js';

const seed = (value: string): PeerAddress => parsePeerAddress(value, 'seed');
const PINNED = '12D3KooWD3eckifWpRn9wQpMG9R9hX3sD158z7EqHWmweQAJU5SA';

function fakeDns(records: Record<string, string[]>): { lookup: Lookup; asked: string[] } {
  const asked: string[] = [];
  const lookup: Lookup = async (name) => {
    asked.push(name);
    const addresses = records[name];
    if (addresses === undefined) throw new Error(`getaddrinfo ENOTFOUND ${name}`);
    return addresses.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
  };
  return { lookup, asked };
}

describe('resolveSeeds', () => {
  it('expands a name to each of its addresses on the same port, keeps IP seeds, and drops repeats', async () => {
    const dns = fakeDns({ 'cronraft.default.svc': ['10.0.0.2', '10.0.0.3', 'fd00::4'] });
    const resolved = await resolveSeeds([seed('10.0.0.3:7001'), seed('cronraft.default.svc:7001'), seed('10.0.0.9:7002')], { lookup: dns.lookup });
    expect(resolved.addresses.map((a) => a.id)).toEqual(['10.0.0.3:7001', '10.0.0.2:7001', '[fd00::4]:7001', '10.0.0.9:7002']);
    expect(resolved.unresolved).toEqual([]);
    expect(dns.asked).toEqual(['cronraft.default.svc']);
  });

  it('looks a name up again on every call, so a retry sees members that came up meanwhile', async () => {
    const records: Record<string, string[]> = { 'svc.local': ['10.0.0.2'] };
    const dns = fakeDns(records);
    expect((await resolveSeeds([seed('svc.local:7001')], { lookup: dns.lookup })).addresses.map((a) => a.id)).toEqual(['10.0.0.2:7001']);
    records['svc.local'] = ['10.0.0.2', '10.0.0.5'];
    expect((await resolveSeeds([seed('svc.local:7001')], { lookup: dns.lookup })).addresses.map((a) => a.id)).toEqual(['10.0.0.2:7001', '10.0.0.5:7001']);
  });

  it('keeps a name that does not resolve, by name, saying why', async () => {
    const dns = fakeDns({});
    const resolved = await resolveSeeds([seed('gone.example:7001')], { lookup: dns.lookup });
    expect(resolved.addresses.map((a) => a.id)).toEqual(['gone.example:7001']);
    expect(resolved.unresolved).toEqual([{ seed: 'gone.example:7001', reason: 'getaddrinfo ENOTFOUND gone.example' }]);
  });

  it('gives up on a look-up that does not answer in time', async () => {
    const never: Lookup = () => new Promise(() => undefined);
    const resolved = await resolveSeeds([seed('slow.example:7001')], { lookup: never, timeoutMs: 5 });
    expect(resolved.addresses.map((a) => a.id)).toEqual(['slow.example:7001']);
    expect(resolved.unresolved[0]?.reason).toBe('no answer within 5 ms');
  });

  it('never expands a seed that pins a peer id: the id belongs to one member', async () => {
    const dns = fakeDns({ 'm1.example': ['10.0.0.2', '10.0.0.3'] });
    const resolved = await resolveSeeds([seed(`m1.example:7001/p2p/${PINNED}`)], { lookup: dns.lookup });
    expect(resolved.addresses.map((a) => a.id)).toEqual(['m1.example:7001']);
    expect(dns.asked).toEqual([]);
  });

  it('ignores answers that are not IP addresses, and keeps at most MAX_SEED_ADDRESSES', async () => {
    const many = Array.from({ length: MAX_SEED_ADDRESSES + 50 }, (_, i) => `10.1.${Math.floor(i / 250)}.${(i % 250) + 1}`);
    const hostile: Lookup = async () => [{ address: 'evil.example', family: 4 }, { address: '10.9.9.9/8', family: 4 }, ...many.map((address) => ({ address, family: 4 }))];
    const resolved = await resolveSeeds([seed('svc.local:7001'), seed('10.2.0.1:7001')], { lookup: hostile });
    expect(resolved.addresses).toHaveLength(MAX_SEED_ADDRESSES);
    expect(resolved.addresses.every((a) => /^10\.1\./.test(a.host))).toBe(true);
  });
});
