import type { ResolvedOptions } from './cluster-options.js';
import { InvalidArgumentError } from './errors.js';
import type { JoinServer } from './runtime/join-server.js';
import { findCluster, startingIdentity, type StartingIdentity } from './runtime/join.js';
import type { StorageIdentity } from './storage/log-storage.js';
import type { Timers } from './time/clock.js';
import type { PeerAddress } from './transport/address.js';
import { JOIN_PROTOCOL_ID, JOIN_STREAM_TIMEOUT_MS, MAX_INBOUND_JOIN_STREAMS, requestJoin, serveJoinStream, type JoinAnswer, type JoinRequest } from './transport/join-protocol.js';
import { LanDiscovery } from './transport/lan-discovery.js';
import type { Libp2pTransport } from './transport/libp2p-transport.js';
import { resolveSeeds } from './transport/seed-resolver.js';
import { voterAlias } from './transport/voter-aliases.js';
import type { Member } from './runtime/member.js';
import { RemovalProbe } from './runtime/removal-probe.js';
import type { VersionSupport } from './version/versions.js';

/**
 * The join protocol on a Cluster's libp2p transport: every member serves it (the answers are
 * JoinServer's), and a member with an empty data directory asks its peers through it before it
 * builds its node (runtime/join.ts).
 */

/** Serves join requests on `transport` (before it starts): `joins` answers them. */
export function serveJoins(transport: Libp2pTransport, joins: JoinServer): void {
  transport.serve(
    JOIN_PROTOCOL_ID,
    (stream, remotePeer) => void serveJoinStream(stream, remotePeer, (request, peer) => joins.answer(request, peer), () => joins.unreadable()),
    MAX_INBOUND_JOIN_STREAMS,
  );
}

/**
 * Who this member starts as (startingIdentity): from its storage's identity, or, with an empty
 * data directory, by asking its peers, and the members `discovery` found on the local network
 * (mDNS, when on), over the started `transport`, answering theirs meanwhile as a member that is
 * forming (`joins`).
 */
export function joinOrForm(
  o: ResolvedOptions,
  stored: StorageIdentity | null,
  clusterId: string,
  parts: {
    readonly transport: Libp2pTransport;
    readonly discovery: LanDiscovery | null;
    readonly joins: JoinServer;
    readonly timers: Timers;
    readonly reads: VersionSupport;
    readonly stopped: () => boolean;
  },
): Promise<StartingIdentity> {
  const { transport, joins, discovery } = parts;
  return startingIdentity(stored, { clusterId, voters: o.voters, looks: o.peers.size > 0 || discovery !== null }, async () => {
    // The addresses of a founding list are the voters the cluster forms with: two of them that
    // reach one member would make a voter that never answers.
    if (o.selfInPeers) {
      const alias = await voterAlias([o.self, ...o.peers.values()]);
      if (alias !== null) throw new InvalidArgumentError('peers', [alias.first, alias.second], `addresses of distinct members (both reach ${alias.address}: the voters a cluster forms with are the addresses listed, and one member listed twice counts a voter that never answers)`);
    }
    joins.looking(o.voters);
    return findCluster({
      self: o.self.id,
      seeds: [...o.peers.values()],
      resolve: async (timeoutMs) => (await resolveSeeds([...o.peers.values()], { timeoutMs })).addresses,
      voters: o.voters,
      selfInSeeds: o.selfInPeers,
      reads: parts.reads,
      timeoutMs: o.joinTimeoutMs,
      timers: parts.timers,
      askTimeoutMs: JOIN_STREAM_TIMEOUT_MS,
      stopped: parts.stopped,
      ask: askOver(transport),
      ...(discovery === null ? {} : { discovered: () => discovery.peers() }),
    });
  });
}

/**
 * Starts asking, once `member` has long known no leader, whether it was removed while the log
 * could not tell it (removal-probe.ts), over the join protocol on `transport`; stop() it with the member.
 */
export function probeRemoval(member: Member, transport: Libp2pTransport, parts: { readonly clusterId: string; readonly timers: Timers; readonly reads: VersionSupport; readonly leaderlessBeforeProbeMs: number | undefined }): RemovalProbe {
  const { driver } = member;
  const probe = new RemovalProbe({
    self: driver.node.id,
    clusterId: parts.clusterId,
    reads: parts.reads,
    timers: parts.timers,
    // A leader silent for too long is none: a member that is no voter in its own configuration
    // (a joiner removed before it applied its addition, a learner) never campaigns, and keeps the
    // name of the last leader it heard for good.
    leader: () => (driver.leaderUnreachable ? null : driver.node.leader),
    committed: () => driver.node.log.committed,
    peers: () => transport.peerAddresses(),
    ask: askOver(transport),
    askTimeoutMs: JOIN_STREAM_TIMEOUT_MS,
    onRemoved: (index) => driver.removedElsewhere(index),
    ...(parts.leaderlessBeforeProbeMs === undefined ? {} : { leaderlessBeforeProbeMs: parts.leaderlessBeforeProbeMs }),
  });
  probe.start();
  return probe;
}

/**
 * Starts finding members on the local network (mDNS) beside the started `transport`, when the
 * `mdns` option is on; null when it is off, and then nothing is opened.
 */
export async function startDiscovery(o: ResolvedOptions, transport: Libp2pTransport, timers: Timers): Promise<LanDiscovery | null> {
  const peerId = transport.peerId();
  const logger = transport.logger();
  if (o.mdns === null || peerId === null || logger === null) return null;
  return LanDiscovery.start({ serviceTag: o.mdns.serviceTag, intervalMs: o.mdns.intervalMs, self: o.self, peerId, logger, now: () => timers.now() });
}

/** Asks one member over the join protocol on `transport` (join-protocol.ts requestJoin): both the joiner's look and the removal probe ask so. */
function askOver(transport: Libp2pTransport): (address: PeerAddress, request: JoinRequest, timeoutMs: number) => Promise<JoinAnswer> {
  return (address, request, timeoutMs) => requestJoin((signal) => transport.openStream(address, JOIN_PROTOCOL_ID, signal), request, timeoutMs);
}
