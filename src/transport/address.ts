import { isIPv4, isIPv6 } from 'node:net';
import { peerIdFromString } from '@libp2p/peer-id';
import { InvalidArgumentError } from '../errors.js';
import type { NodeId } from '../raft/types.js';

/** Where a member listens, and, when pinned, which libp2p identity it must prove. */
export interface PeerAddress {
  /** The member's id: canonical `host:port`, an IPv6 host in brackets (`[::1]:7001`). */
  readonly id: NodeId;
  /** The host without brackets: an IPv4 or IPv6 address, or a lower-case DNS name. */
  readonly host: string;
  readonly port: number;
  /** The libp2p peer id from a trailing `/p2p/<id>`, or null when the address does not pin one. */
  readonly peerId: string | null;
  /** The address as a multiaddr without `/p2p`, e.g. `/ip4/127.0.0.1/tcp/7001`. */
  readonly multiaddr: string;
}

type HostKind = 'ip4' | 'ip6' | 'dns4' | 'dns6' | 'dns';

const EXPECTED = 'a multiaddr like /ip4/127.0.0.1/tcp/7001 or host:port, optionally ending in /p2p/<peer id>';
const MAX_PORT = 65535;
const MAX_DNS_NAME_LENGTH = 253;
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;
const DECIMAL = /^[0-9]{1,5}$/;
const BRACKETED = /^\[([^\]]+)\]:([^:]+)$/;

/**
 * Parses a member address given as a multiaddr (`/ip4|ip6|dns4|dns6|dns/<host>/tcp/<port>`) or
 * as `host:port` / `[v6]:port`, either optionally ending in `/p2p/<peer id>`. `option` names the
 * setting the value came from, for the error message. Pure: no DNS look-up, no I/O.
 */
export function parsePeerAddress(value: string, option: string): PeerAddress {
  return parse(value, option, 1);
}

/**
 * Parses an address to listen on: as parsePeerAddress, but port 0 (any free port) is allowed,
 * since a listener, unlike a peer, can be asked to pick one.
 */
export function parseListenAddress(value: string, option: string): PeerAddress {
  return parse(value, option, 0);
}

function parse(value: string, option: string, minPort: number): PeerAddress {
  const parsed = typeof value === 'string' ? (value.startsWith('/') ? parseMultiaddr(value, minPort) : parseHostPort(value, minPort)) : null;
  if (parsed === null) throw new InvalidArgumentError(option, value, EXPECTED);
  return parsed;
}

function parseMultiaddr(value: string, minPort: number): PeerAddress | null {
  // A leading slash yields an empty first part; then protocol/value pairs.
  const parts = value.split('/');
  if (parts.length !== 5 && parts.length !== 7) return null;
  const [, protocol, rawHost, tcp, rawPort, p2p, rawPeerId] = parts;
  if (protocol === undefined || rawHost === undefined || tcp !== 'tcp' || rawPort === undefined) return null;
  if (!isHostKind(protocol)) return null;
  const host = canonicalHost(protocol, rawHost);
  const port = parsePort(rawPort, minPort);
  if (host === null || port === null) return null;
  let peerId: string | null = null;
  if (parts.length === 7) {
    if (p2p !== 'p2p' || rawPeerId === undefined) return null;
    peerId = canonicalPeerId(rawPeerId);
    if (peerId === null) return null;
  }
  return build(protocol, host, port, peerId);
}

function parseHostPort(value: string, minPort: number): PeerAddress | null {
  // `host:port/p2p/<id>`: the README's short form with a pinned peer id.
  const slash = value.indexOf('/');
  if (slash === -1) return parseBareHostPort(value, minPort, null);
  const [p2p, rawPeerId, ...rest] = value.slice(slash + 1).split('/');
  if (p2p !== 'p2p' || rawPeerId === undefined || rest.length > 0) return null;
  const peerId = canonicalPeerId(rawPeerId);
  return peerId === null ? null : parseBareHostPort(value.slice(0, slash), minPort, peerId);
}

function parseBareHostPort(value: string, minPort: number, peerId: string | null): PeerAddress | null {
  const bracketed = BRACKETED.exec(value);
  if (bracketed !== null) {
    const [, rawHost, rawPort] = bracketed;
    if (rawHost === undefined || rawPort === undefined) return null;
    const host = canonicalHost('ip6', rawHost);
    const port = parsePort(rawPort, minPort);
    return host === null || port === null ? null : build('ip6', host, port, peerId);
  }
  // An unbracketed IPv6 address has several colons and is ambiguous with a port: refuse it.
  const colon = value.indexOf(':');
  if (colon <= 0 || colon !== value.lastIndexOf(':')) return null;
  const rawHost = value.slice(0, colon);
  const port = parsePort(value.slice(colon + 1), minPort);
  if (port === null) return null;
  if (isIPv4(rawHost)) return build('ip4', rawHost, port, peerId);
  const name = canonicalHost('dns4', rawHost);
  // A bare host name resolves to IPv4, as Node's own listeners default to IPv4 addresses.
  return name === null ? null : build('dns4', name, port, peerId);
}

function build(kind: HostKind, host: string, port: number, peerId: string | null): PeerAddress {
  const id = kind === 'ip6' ? `[${host}]:${port}` : `${host}:${port}`;
  return Object.freeze({ id, host, port, peerId, multiaddr: `/${kind}/${host}/tcp/${port}` });
}

function isHostKind(value: string): value is HostKind {
  return value === 'ip4' || value === 'ip6' || value === 'dns4' || value === 'dns6' || value === 'dns';
}

function canonicalHost(kind: HostKind, raw: string): string | null {
  switch (kind) {
    case 'ip4':
      // Node's check accepts only dotted quads without leading zeros, which are already canonical.
      return isIPv4(raw) ? raw : null;
    case 'ip6':
      return canonicalIPv6(raw);
    default:
      return canonicalDnsName(raw);
  }
}

function canonicalIPv6(raw: string): string | null {
  // Zone ids (`%eth0`) name a local interface and mean nothing to another member.
  if (!isIPv6(raw) || raw.includes('%')) return null;
  // The WHATWG URL parser compresses and lower-cases IPv6 addresses, so that `0:0:0:0:0:0:0:1`
  // and `::1` give the same member id.
  try {
    return new URL(`http://[${raw}]/`).hostname.slice(1, -1);
  } catch {
    return null;
  }
}

function canonicalDnsName(raw: string): string | null {
  const name = raw.toLowerCase();
  if (name.length === 0 || name.length > MAX_DNS_NAME_LENGTH) return null;
  const labels = name.split('.');
  if (!labels.every((label) => DNS_LABEL.test(label))) return null;
  // A name whose last label is numeric would be read as an IPv4 address by resolvers and URLs.
  const last = labels[labels.length - 1] ?? '';
  if (/^[0-9]+$/.test(last)) return null;
  return name;
}

function parsePort(raw: string, minPort: number): number | null {
  if (!DECIMAL.test(raw)) return null;
  const port = Number(raw);
  return port >= minPort && port <= MAX_PORT ? port : null;
}

function canonicalPeerId(raw: string): string | null {
  try {
    return peerIdFromString(raw).toString();
  } catch {
    return null;
  }
}
