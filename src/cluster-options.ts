import { createHash } from 'node:crypto';
import { isIP } from 'node:net';
import { join } from 'node:path';
import { InvalidArgumentError } from './errors.js';
import { httpSettings, type HttpOptions, type HttpSettings } from './http/http-options.js';
import { nonNegativeInt, onlyKnownKeys, positiveInt } from './option-checks.js';
import { MEMBER_DEFAULTS, memberSettings, type MemberOptions, type MemberSettings } from './runtime/member-settings.js';
import { MAX_MEMBERS } from './raft/configuration.js';
import type { NodeId } from './raft/types.js';
import type { Clock, Timers } from './time/clock.js';
import type { Random } from './time/random.js';
import { parseListenAddress, parsePeerAddress, type PeerAddress } from './transport/address.js';
import { checkSecret, isLoopbackHost, type SecretSource } from './transport/cluster-secret.js';

/** Options of `new Cluster(peers, options)`. Every one has a default; see CLUSTER_DEFAULTS. */
export interface ClusterOptions extends MemberOptions {
  /**
   * Where this member listens: a multiaddr (`/ip4/127.0.0.1/tcp/7001`) or `host:port`.
   * @default '/ip4/127.0.0.1/tcp/0' (a free loopback port; a cluster with other members needs a fixed port, since they name it)
   */
  readonly listen?: string | undefined;
  /**
   * The address the other members know this one by, which is also its member id. Set it when
   * listening on `0.0.0.0`. @default the `listen` address
   */
  readonly advertise?: string | undefined;
  /**
   * Directory for the Raft log (level) and the libp2p key.
   * @default `.cronraft/<host>-<port>` under the working directory
   */
  readonly dataDir?: string | undefined;
  /** `'level'` (durable) or `'memory'` (lost on exit: tests and demos only). @default 'level' */
  readonly storage?: 'level' | 'memory' | undefined;
  /**
   * How long a member with an empty data directory asks its peers (and the members `mdns`
   * found) whether a cluster runs before it forms one (when its own address is among its peers,
   * or it has no peers and `mdns` is on) or `start()` rejects with JoinFailedError (README,
   * "Forming the cluster"). @default 5000
   */
  readonly joinTimeoutMs?: number | undefined;
  /** How long `stop()` waits for a leader to hand over leadership. @default 1000 */
  readonly stopTimeoutMs?: number | undefined;
  /** Sync every write to disk (turn off only for tests). @default true */
  readonly sync?: boolean | undefined;
  /**
   * The cluster secret, the same on every member (`npx cronraft secret` prints a new one): every
   * connection is protected with a key derived from it, so a process without it never reaches
   * the protocol. At least 16 characters. Required when listening on a non-loopback address,
   * unless `insecure` is set. See the README, "Security".
   */
  readonly secret?: string | undefined;
  /** A file holding the cluster secret, read at start; only its owner may read it (mode 0600 or 0400). Not with `secret`. */
  readonly secretFile?: string | undefined;
  /** Listen on a non-loopback address without a secret, open to anyone who can reach it. @default false */
  readonly insecure?: boolean | undefined;
  /**
   * Find members on the local network with mDNS (`true`, or settings): this member announces
   * its address and peer id, and, with an empty data directory, asks the members it finds too,
   * besides its peers; with no peers, it looks for `joinTimeoutMs` before it forms a cluster
   * alone (README, "Forming the cluster"). Needs a fixed port and an IP address to advertise.
   * Never on unless asked. @default false
   */
  readonly mdns?: boolean | MdnsOptions | undefined;
  /**
   * Serve the member's state, health, Prometheus metrics and actions over HTTP (README,
   * "Operating a cluster"): `{ listen: '127.0.0.1:9464', token? }`. Actions need the token; a
   * non-loopback `listen` needs one. @default off
   */
  readonly http?: HttpOptions | undefined;
  /** Injected wall clock, e.g. a skewed one in tests. @default Date.now */
  readonly clock?: Clock | undefined;
  /** Injected timers, e.g. virtual ones in a simulation. @default Node's timers */
  readonly timers?: Timers | undefined;
  /** Injected randomness (election timeouts); seed it to replay a run. @default a random seed */
  readonly random?: Random | undefined;
}

/** Settings of `mdns`. */
export interface MdnsOptions {
  /**
   * A name for the cluster, so that two clusters on one network ask only their own members (the
   * secret keeps them apart anyway): the mDNS service becomes `<name>._cronraft._udp.local`.
   * Lower-case letters, digits and inner hyphens, at most 63. @default none (`_cronraft._udp.local`)
   */
  readonly name?: string | undefined;
  /** How often to ask the network for members, in ms: at least MIN_MDNS_INTERVAL_MS. @default 10000 */
  readonly intervalMs?: number | undefined;
}

/** The mDNS service every cronraft member answers for, unless its `mdns.name` names another under it. */
export const MDNS_SERVICE = '_cronraft._udp.local';

/** The shortest mDNS query interval: every member answers every query, so a shorter one floods the network. */
export const MIN_MDNS_INTERVAL_MS = 1000;

/** A DNS label: an `mdns.name` is one. */
const DNS_LABEL = /^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$/;

export const CLUSTER_DEFAULTS = {
  listen: '/ip4/127.0.0.1/tcp/0',
  storage: 'level',
  /** The member's timing and limits: see MEMBER_DEFAULTS (the simulator runs the same). */
  ...MEMBER_DEFAULTS,
  stopTimeoutMs: 1000,
  /** How long an empty member looks for a running cluster through its peers: long enough for peers started at the same time to come up. */
  joinTimeoutMs: 5000,
  /** Largest proposal accepted: with the batch bound, every message stays under the 4 MiB frame bound. */
  maxProposalBytes: 1024 * 1024,
  sync: true,
  dataRoot: '.cronraft',
  /** How often mDNS asks the network (`@libp2p/mdns`'s own default): queries are multicast to every host on it. */
  mdnsIntervalMs: 10_000,
} as const;

/** The options after validation, with defaults applied and addresses parsed. */
export interface ResolvedOptions {
  readonly self: PeerAddress;
  readonly listen: string;
  readonly peers: ReadonlyMap<NodeId, PeerAddress>;
  /** Every voting member, this one included, sorted: the cluster's first configuration. */
  readonly voters: readonly NodeId[];
  readonly dataDir: string;
  readonly storage: 'level' | 'memory';
  /** The member's timing and limits (see memberSettings): what the simulator runs too. */
  readonly member: MemberSettings;
  readonly stopTimeoutMs: number;
  readonly joinTimeoutMs: number;
  /** Whether the peer list named this member too: a founding member's list (see runtime/join.ts, findCluster). */
  readonly selfInPeers: boolean;
  readonly sync: boolean;
  /** Where the cluster secret comes from, or null when the member runs without one. */
  readonly secret: SecretSource | null;
  /** mDNS settings, or null when it is off (the default). */
  readonly mdns: { readonly serviceTag: string; readonly intervalMs: number } | null;
  /** The HTTP server's settings, or null when it is off (the default). */
  readonly http: HttpSettings | null;
}

/**
 * The cluster id every frame carries: a hash of the first configuration, the sorted voters, so
 * that members given the same set agree on it, and members given another drop each other's
 * frames (see the README, "Forming the cluster").
 */
export function clusterIdOf(voters: readonly NodeId[]): string {
  return createHash('sha256').update(voters.join('\n')).digest('hex').slice(0, 32);
}

/**
 * Every key ClusterOptions has: any other is refused (onlyKnownKeys), as schedule() refuses one
 * (a misspelt `stopTimeotMs` kept its default, unsaid). The type below fails to compile when an
 * option is added to ClusterOptions and not here.
 */
export const CLUSTER_OPTION_KEYS = [
  'listen',
  'advertise',
  'dataDir',
  'storage',
  'joinTimeoutMs',
  'stopTimeoutMs',
  'sync',
  'secret',
  'secretFile',
  'insecure',
  'mdns',
  'http',
  'clock',
  'timers',
  'random',
  'tickMs',
  'heartbeatMs',
  'electionTimeoutMs',
  'requestTimeoutMs',
  'maxPendingProposals',
  'maxClockSkewMs',
  'maxConcurrent',
  'snapshotEveryEntries',
  'snapshotRetainEntries',
  'voters',
  'deadMemberAfterMs',
] as const satisfies readonly (keyof ClusterOptions)[];
type UnlistedClusterOption = Exclude<keyof ClusterOptions, (typeof CLUSTER_OPTION_KEYS)[number]>;
const everyClusterOptionListed: [UnlistedClusterOption] extends [never] ? true : UnlistedClusterOption = true;
void everyClusterOptionListed;

/** Validates everything up front, so that a bad option fails at `new Cluster()`, naming itself. */
export function resolveOptions(peersInput: readonly string[], options: ClusterOptions): ResolvedOptions {
  if (!Array.isArray(peersInput)) throw new InvalidArgumentError('peers', peersInput, 'an array of addresses');
  if (typeof options !== 'object' || options === null) throw new InvalidArgumentError('options', options, 'an object');
  onlyKnownKeys(options, CLUSTER_OPTION_KEYS, '');
  const listenInput = options.listen ?? CLUSTER_DEFAULTS.listen;
  const listen = parseListenAddress(listenInput, 'listen');
  const self = options.advertise === undefined ? listen : parsePeerAddress(options.advertise, 'advertise');
  const peers = new Map<NodeId, PeerAddress>();
  let selfInPeers = false;
  peersInput.forEach((value, i) => {
    const peer = parsePeerAddress(value, `peers[${i}]`);
    // A peer list may name this member too: the same list can then be given to every member.
    if (peer.id !== self.id) peers.set(peer.id, peer);
    else selfInPeers = true;
  });
  // A cluster formed from more would hold more voters than a configuration may (too-many-members).
  if (peers.size + 1 > MAX_MEMBERS) throw new InvalidArgumentError('peers', `${peers.size} other members`, `at most ${MAX_MEMBERS - 1} other members (a configuration holds ${MAX_MEMBERS})`);
  if (peers.size > 0 && self.port === 0) {
    throw new InvalidArgumentError(options.advertise === undefined ? 'listen' : 'advertise', options.advertise ?? listenInput, 'a fixed port when the cluster has other members (they need to know it)');
  }
  if (peers.size > 0 && (self.host === '0.0.0.0' || self.host === '::')) {
    throw new InvalidArgumentError('advertise', options.advertise ?? listenInput, 'an address the other members can reach (set advertise when listening on 0.0.0.0)');
  }
  // Seams for tests and simulations: one of another shape failed start() with a TypeError.
  injected(options.clock, 'clock', ['now']);
  injected(options.timers, 'timers', ['now', 'setTimeout', 'clearTimeout']);
  injected(options.random, 'random', ['int']);
  const member = memberSettings(options);
  const storage = options.storage ?? CLUSTER_DEFAULTS.storage;
  if (storage !== 'level' && storage !== 'memory') throw new InvalidArgumentError('storage', storage, "'level' or 'memory'");
  const dataDir = options.dataDir ?? join(CLUSTER_DEFAULTS.dataRoot, `${self.host.replace(/[^a-zA-Z0-9.-]/g, '_')}-${self.port}`);
  if (typeof dataDir !== 'string' || dataDir.length === 0) throw new InvalidArgumentError('dataDir', dataDir, 'a directory path');
  if (options.sync !== undefined && typeof options.sync !== 'boolean') throw new InvalidArgumentError('sync', options.sync, 'a boolean');
  const secret = secretSource(options, listen);
  const mdns = mdnsSettings(options, self, listenInput);
  return {
    self,
    listen: listen.multiaddr,
    peers,
    voters: [self.id, ...peers.keys()].sort(),
    dataDir,
    storage,
    member,
    stopTimeoutMs: nonNegativeInt(options.stopTimeoutMs ?? CLUSTER_DEFAULTS.stopTimeoutMs, 'stopTimeoutMs'),
    joinTimeoutMs: nonNegativeInt(options.joinTimeoutMs ?? CLUSTER_DEFAULTS.joinTimeoutMs, 'joinTimeoutMs'),
    selfInPeers,
    sync: options.sync ?? CLUSTER_DEFAULTS.sync,
    secret,
    mdns,
    http: httpSettings(options.http),
  };
}

/**
 * The `mdns` option checked. A member announces its member id, which others then dial and
 * which becomes a voter's id if it forms the cluster: so it must be an IP address (an
 * announcement carries addresses, not names, see transport/discovered-peers.ts) that others can
 * reach, on a fixed port.
 */
function mdnsSettings(options: ClusterOptions, self: PeerAddress, listenInput: string): ResolvedOptions['mdns'] {
  const value = options.mdns;
  if (value === undefined || value === false) return null;
  if (value !== true && (typeof value !== 'object' || value === null)) throw new InvalidArgumentError('mdns', value, 'a boolean or { name?, intervalMs? }');
  const settings: MdnsOptions = value === true ? {} : value;
  if (settings.name !== undefined && (typeof settings.name !== 'string' || !DNS_LABEL.test(settings.name))) {
    throw new InvalidArgumentError('mdns.name', settings.name, 'lower-case letters, digits and inner hyphens, at most 63');
  }
  const intervalMs = positiveInt(settings.intervalMs ?? CLUSTER_DEFAULTS.mdnsIntervalMs, 'mdns.intervalMs');
  if (intervalMs < MIN_MDNS_INTERVAL_MS) throw new InvalidArgumentError('mdns.intervalMs', intervalMs, `at least ${MIN_MDNS_INTERVAL_MS} ms`);
  const option = options.advertise === undefined ? 'listen' : 'advertise';
  const given = options.advertise ?? listenInput;
  if (self.port === 0) throw new InvalidArgumentError(option, given, 'a fixed port when mdns is on (it is announced)');
  if (isIP(self.host) === 0 || self.host === '0.0.0.0' || self.host === '::') {
    throw new InvalidArgumentError(option, given, 'an IP address the other members can reach when mdns is on (it is announced; set advertise when listening on 0.0.0.0)');
  }
  return { serviceTag: settings.name === undefined ? MDNS_SERVICE : `${settings.name}.${MDNS_SERVICE}`, intervalMs };
}

/**
 * The secret option checked, and the rule that a member reachable from other machines has one:
 * listening beyond loopback without a secret would let anyone who can reach the port speak for a
 * member (README, "Security"), so it takes `insecure: true` to say so.
 */
function secretSource(options: ClusterOptions, listen: PeerAddress): SecretSource | null {
  if (options.insecure !== undefined && typeof options.insecure !== 'boolean') throw new InvalidArgumentError('insecure', options.insecure, 'a boolean');
  if (options.secret !== undefined && options.secretFile !== undefined) {
    throw new InvalidArgumentError('secretFile', options.secretFile, 'not given with secret (give one of them)');
  }
  if (options.secret !== undefined) return { value: checkSecret(options.secret, 'secret') };
  if (options.secretFile !== undefined) {
    if (typeof options.secretFile !== 'string' || options.secretFile.length === 0) throw new InvalidArgumentError('secretFile', options.secretFile, 'a file path');
    return { file: options.secretFile };
  }
  if (!isLoopbackHost(listen.host) && options.insecure !== true) {
    throw new InvalidArgumentError('secret', undefined, `a cluster secret (secret or secretFile) when listening on ${listen.host}, which other machines can reach; or insecure: true to run without one`);
  }
  return null;
}

/** An injected seam (clock, timers, randomness), when given: an object with these methods. */
function injected(value: unknown, option: string, methods: readonly string[]): void {
  if (value === undefined) return;
  if (typeof value !== 'object' || value === null || methods.some((m) => typeof (value as Record<string, unknown>)[m] !== 'function')) {
    throw new InvalidArgumentError(option, value, `an object with the methods ${methods.join(', ')}`);
  }
}
