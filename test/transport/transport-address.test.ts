import { generateKeyPair } from '@libp2p/crypto/keys';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import { parseListenAddress, parsePeerAddress } from '../../src/transport/address.js';

let peerId: string;

beforeAll(async () => {
  peerId = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
});

describe('parsePeerAddress', () => {
  it('parses an ip4 multiaddr', () => {
    expect(parsePeerAddress('/ip4/127.0.0.1/tcp/7001', 'peers')).toEqual({
      id: '127.0.0.1:7001',
      host: '127.0.0.1',
      port: 7001,
      peerId: null,
      multiaddr: '/ip4/127.0.0.1/tcp/7001',
    });
  });

  it('parses an ip6 multiaddr and brackets the host in the id', () => {
    expect(parsePeerAddress('/ip6/::1/tcp/7001', 'peers')).toEqual({
      id: '[::1]:7001',
      host: '::1',
      port: 7001,
      peerId: null,
      multiaddr: '/ip6/::1/tcp/7001',
    });
  });

  it('canonicalises IPv6 spellings so that one member has one id', () => {
    const a = parsePeerAddress('/ip6/0:0:0:0:0:0:0:1/tcp/7001', 'peers');
    const b = parsePeerAddress('[0::1]:7001', 'peers');
    const c = parsePeerAddress('/ip6/2001:DB8::1/tcp/1', 'peers');
    expect(a.id).toBe('[::1]:7001');
    expect(b.id).toBe('[::1]:7001');
    expect(a.multiaddr).toBe('/ip6/::1/tcp/7001');
    expect(c.id).toBe('[2001:db8::1]:1');
  });

  it('parses dns multiaddrs and lower-cases the name', () => {
    expect(parsePeerAddress('/dns4/Node-1.Example.com/tcp/80', 'peers')).toEqual({
      id: 'node-1.example.com:80',
      host: 'node-1.example.com',
      port: 80,
      peerId: null,
      multiaddr: '/dns4/node-1.example.com/tcp/80',
    });
    expect(parsePeerAddress('/dns6/host/tcp/1', 'peers').multiaddr).toBe('/dns6/host/tcp/1');
    expect(parsePeerAddress('/dns/host/tcp/1', 'peers').id).toBe('host:1');
  });

  it('takes the peer id from a trailing /p2p and leaves it out of the multiaddr', () => {
    const address = parsePeerAddress(`/ip4/10.0.0.2/tcp/7002/p2p/${peerId}`, 'peers');
    expect(address).toEqual({ id: '10.0.0.2:7002', host: '10.0.0.2', port: 7002, peerId, multiaddr: '/ip4/10.0.0.2/tcp/7002' });
    expect(parsePeerAddress(`/ip6/::1/tcp/1/p2p/${peerId}`, 'peers').peerId).toBe(peerId);
    expect(parsePeerAddress(`/dns4/a.b/tcp/1/p2p/${peerId}`, 'peers').peerId).toBe(peerId);
  });

  // The README's "Options" lists these forms, each "optionally with /p2p/<peer id>".
  it.each([
    ['/ip4/10.0.0.2/tcp/7001', '10.0.0.2:7001'],
    ['/dns4/host/tcp/7001', 'host:7001'],
    ['10.0.0.2:7001', '10.0.0.2:7001'],
    ['[::1]:7001', '[::1]:7001'],
    ['host:7001', 'host:7001'],
  ])('takes every documented form %s with and without a pinned /p2p/<id>', (form, id) => {
    const bare = parsePeerAddress(form, 'peers');
    const pinned = parsePeerAddress(`${form}/p2p/${peerId}`, 'peers');
    expect(bare.id).toBe(id);
    expect(bare.peerId).toBeNull();
    expect(pinned).toEqual({ ...bare, peerId });
  });

  it('refuses a short form whose suffix is not one /p2p/<peer id>', () => {
    for (const suffix of ['/p2p', '/p2p/not-a-peer-id', '/ws', `/p2p/${peerId}/x`, `/ipfs/${peerId}`, '/']) {
      expect(() => parsePeerAddress(`10.0.0.2:7001${suffix}`, 'peers[0]')).toThrow(InvalidArgumentError);
    }
  });

  it('parses host:port forms', () => {
    expect(parsePeerAddress('127.0.0.1:7001', 'peers')).toEqual({
      id: '127.0.0.1:7001',
      host: '127.0.0.1',
      port: 7001,
      peerId: null,
      multiaddr: '/ip4/127.0.0.1/tcp/7001',
    });
    expect(parsePeerAddress('[::1]:7001', 'peers')).toEqual({
      id: '[::1]:7001',
      host: '::1',
      port: 7001,
      peerId: null,
      multiaddr: '/ip6/::1/tcp/7001',
    });
    expect(parsePeerAddress('LocalHost:65535', 'peers')).toEqual({
      id: 'localhost:65535',
      host: 'localhost',
      port: 65535,
      peerId: null,
      multiaddr: '/dns4/localhost/tcp/65535',
    });
  });

  it('gives the same id to both spellings of an address', () => {
    expect(parsePeerAddress('/ip4/192.168.1.9/tcp/80', 'x').id).toBe(parsePeerAddress('192.168.1.9:80', 'x').id);
    expect(parsePeerAddress('/ip6/fe80::1/tcp/80', 'x').id).toBe(parsePeerAddress('[fe80::1]:80', 'x').id);
  });

  it.each([
    '',
    '127.0.0.1',
    '127.0.0.1:',
    ':7001',
    '127.0.0.1:0',
    '127.0.0.1:65536',
    '127.0.0.1:70a',
    '127.0.0.1:-1',
    '127.0.0.1:7001 ',
    ' 127.0.0.1:7001',
    '::1:7001',
    '[::1]7001',
    '[::1]:',
    '[127.0.0.1]:7001',
    '[fe80::1%eth0]:7001',
    '256.0.0.1:7001',
    '01.2.3.4:7001',
    '1.2.3:7001',
    'host_name:7001',
    '-bad.example:7001',
    'bad-.example:7001',
    'a..b:7001',
    'example.com.:7001',
    'http://127.0.0.1:7001',
    '/ip4/127.0.0.1',
    '/ip4/127.0.0.1/tcp',
    '/ip4/127.0.0.1/tcp/',
    '/ip4/127.0.0.1/tcp/7001/',
    '/ip4/127.0.0.1/udp/7001',
    '/ip4/127.0.0.1/tcp/0',
    '/ip4/::1/tcp/7001',
    '/ip6/127.0.0.1/tcp/7001',
    '/ip6/fe80::1%eth0/tcp/7001',
    '/ip4/256.1.1.1/tcp/7001',
    '/dns4/1.2.3.4/tcp/7001',
    '/dns4/bad_name/tcp/7001',
    '/unix/tmp/sock',
    '/ip4/127.0.0.1/tcp/7001/p2p',
    '/ip4/127.0.0.1/tcp/7001/p2p/not-a-peer-id',
    '/ip4/127.0.0.1/tcp/7001/ws',
    '/ip4/127.0.0.1/tcp/7001/ipfs/x',
    '//127.0.0.1/tcp/7001',
  ])('rejects %j with InvalidArgumentError', (value) => {
    let caught: unknown;
    try {
      parsePeerAddress(value, 'peers[0]');
    } catch (error) {
      caught = error;
    }
    expect(caught).toBeInstanceOf(InvalidArgumentError);
    const error = caught as InvalidArgumentError;
    expect(error.code).toBe('CRONRAFT_INVALID_ARGUMENT');
    expect(error.option).toBe('peers[0]');
    expect(error.message).toContain('a multiaddr like /ip4/127.0.0.1/tcp/7001 or host:port');
    expect(error.message).toContain(JSON.stringify(value));
  });

  it('rejects a dns name longer than 253 characters', () => {
    const name = `${'a'.repeat(63)}.`.repeat(4) + 'com';
    expect(() => parsePeerAddress(`${name}:1`, 'x')).toThrow(InvalidArgumentError);
  });

  it('round-trips: parsing the multiaddr of a parsed address gives the same address', () => {
    const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((parts) => parts.join('.'));
    const host = fc.oneof(ipv4, fc.ipV6().map((h) => `[${h}]`), fc.domain());
    const port = fc.integer({ min: 1, max: 65535 });
    fc.assert(
      fc.property(host, port, (h, p) => {
        const address = parsePeerAddress(`${h}:${p}`, 'x');
        expect(parsePeerAddress(address.multiaddr, 'x')).toEqual(address);
        expect(parsePeerAddress(address.id, 'x')).toEqual(address);
      }),
    );
  });

  it('throws only InvalidArgumentError on arbitrary strings', () => {
    fc.assert(
      fc.property(fc.string(), (value) => {
        try {
          parsePeerAddress(value, 'x');
        } catch (error) {
          expect(error).toBeInstanceOf(InvalidArgumentError);
        }
      }),
    );
  });
});

describe('parseListenAddress', () => {
  it('accepts port 0, which asks the system for a free port', () => {
    expect(parseListenAddress('/ip4/127.0.0.1/tcp/0', 'listen')).toEqual({
      id: '127.0.0.1:0',
      host: '127.0.0.1',
      port: 0,
      peerId: null,
      multiaddr: '/ip4/127.0.0.1/tcp/0',
    });
    expect(parseListenAddress('0.0.0.0:0', 'listen').multiaddr).toBe('/ip4/0.0.0.0/tcp/0');
    expect(parseListenAddress('[::]:0', 'listen').id).toBe('[::]:0');
  });

  it('parses other addresses as parsePeerAddress does', () => {
    expect(parseListenAddress('/ip4/0.0.0.0/tcp/7001', 'listen')).toEqual(parsePeerAddress('/ip4/0.0.0.0/tcp/7001', 'listen'));
    expect(parseListenAddress('localhost:7001', 'listen')).toEqual(parsePeerAddress('localhost:7001', 'listen'));
  });

  it.each(['', '127.0.0.1:65536', '127.0.0.1:-0', '/ip4/127.0.0.1/udp/0', ':0'])('rejects %j', (value) => {
    expect(() => parseListenAddress(value, 'listen')).toThrow(InvalidArgumentError);
  });
});
