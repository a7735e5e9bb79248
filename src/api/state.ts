import type { Role } from '../raft/ready.js';
import type { SnapshotTiming } from '../runtime/compaction.js';
import type { RaftDriver } from '../runtime/driver.js';
import { CronraftError } from '../errors.js';
import { rateOf } from '../fanout/topic-rate.js';
import type { NodeId } from '../raft/types.js';
import type { DialFailure } from '../transport/dial-failure.js';
import type { TransportStats } from '../transport/transport.js';
import type { Member } from '../runtime/member.js';
import type { BoundRow } from '../runtime/member-bounds.js';
import type { SlotHistory } from './history.js';
import type { JoinCounts } from '../runtime/join-server.js';
import type { DiscoveryStats } from '../transport/discovered-peers.js';
import { FIRST_CLUSTER_VERSION, type VersionRange, type VersionSupport } from '../version/versions.js';

/** One member as this member sees it. */
export interface MemberState {
  readonly id: NodeId;
  /** Addresses the member is reached at (multiaddrs). */
  readonly addrs: readonly string[];
  readonly voter: boolean;
  /**
   * A connection is open and, between the leader and a follower (who talk every heartbeat),
   * the member was heard from within an election timeout. Always true for this member.
   */
  readonly reachable: boolean;
  /** Milliseconds since this member last heard from it; null if never, 0 for itself. */
  readonly lastContactMs: number | null;
  /** The leader's view of how far the member's log matches; null on followers. */
  readonly matchIndex: number | null;
  /**
   * The leader's view of how many committed entries the member lacks (the commit index less
   * its match index, 0 for the leader itself); null on followers. A learner is promoted once
   * this stays small (README, "Membership").
   */
  readonly lag: number | null;
  /**
   * The member's libp2p peer id as bound in the configuration (learned as it formed or joined);
   * this member's own always; null while not bound.
   */
  readonly peerId: string | null;
  /**
   * The member's clock minus the cluster's time (the median of the members' clocks), as
   * measured through heartbeats: the leader knows every member's, a follower its own; null
   * when not measured (yet).
   */
  readonly clockOffsetMs: number | null;
  /** Whether its clock is further than `maxClockSkewMs` from the cluster's time: it is given no work. */
  readonly clockSkewed: boolean;
  /**
   * Why this member's last dial to it failed, until one succeeds: `'handshake'` (its address
   * took the connection and the handshake failed: most often another cluster secret, or none, on
   * one of the two), `'connection'` (refused, unreachable or timed out); null when the last dial
   * succeeded or none failed, and for this member.
   */
  readonly dialFailure: DialFailure | null;
}

/** A snapshot of this member's view of the cluster, as returned by `cluster.state()`. */
export interface ClusterState {
  readonly id: NodeId;
  readonly status: 'new' | 'starting' | 'running' | 'stopping' | 'stopped' | 'failed';
  /** Why the member failed (the error it told as an 'error' event, e.g. CRONRAFT_REMOVED); null unless `status` is 'failed'. */
  readonly failure: { readonly code: string; readonly message: string } | null;
  /** 'follower' once the member stopped or failed, whatever it was. */
  readonly role: Role;
  readonly term: number;
  /** null once the member stopped or failed: it no longer hears one. */
  readonly leader: NodeId | null;
  readonly commitIndex: number;
  readonly appliedIndex: number;
  readonly lastIndex: number;
  /**
   * The log kept: `firstIndex` is its first entry (the ones before are compacted into the
   * snapshot at `snapshotIndex`, taken `snapshotsTaken` times here and installed from a leader
   * `snapshotsInstalled` times since this member started). `lastSnapshot`: how long taking the
   * last one here held this member's event loop, in all and at once (it is taken in steps, with
   * other work between them, and handed to storage in one more; the rest taken at once when
   * entries applying meanwhile reached two snapshot intervals), and its size; null before the
   * first.
   */
  readonly log: {
    readonly firstIndex: number;
    readonly snapshotIndex: number;
    readonly snapshotsTaken: number;
    readonly snapshotsInstalled: number;
    readonly lastSnapshot: SnapshotTiming | null;
  };
  /** The members of the configuration, voters then learners (`voter: false`). */
  readonly members: readonly MemberState[];
  /**
   * The configuration as applied here: the voters, which elect the leader and make up every
   * quorum, and the learners, replicated to and given work but never counted. The founding
   * voters until a change (`removeMember`) applies. `peerIds`: the libp2p peer id bound to each
   * member that has one (README, "Security"): its frames are accepted only from a connection
   * authenticated as it. Empty before cluster version 2; the leader then binds each member.
   */
  readonly configuration: { readonly voters: readonly NodeId[]; readonly learners: readonly NodeId[]; readonly peerIds: Readonly<Record<NodeId, string>> };
  /** libp2p peer id of this member. */
  readonly peerId: string | null;
  readonly transport: TransportStats;
  /**
   * What this member answered members asking to join (README, "Forming the cluster"), by
   * answer: `refused` counts hostile or impossible requests (a bad id, a peer id that differs
   * from the one bound), `unreadable` streams reset for a request too large, malformed or slow,
   * `removed` members removed while down told so when they asked whether they still were members.
   */
  readonly joins: Readonly<JoinCounts>;
  /**
   * What mDNS found (the `mdns` option; README, "Forming the cluster"): the members known now,
   * the announcements heard, and those dropped (no usable address, or too many members); null
   * when it is off.
   */
  readonly discovery: DiscoveryStats | null;
  /**
   * Fan-out's topics, as replicated: each with its consumers and their parallelism, its items
   * pending and in flight per member, its limits (the least its consumers ask for), its dead
   * letters, and what it has seen.
   */
  readonly topics: ReadonlyArray<{
    readonly name: string;
    readonly consumers: Readonly<Record<NodeId, number>>;
    readonly pending: number;
    readonly inFlight: Readonly<Record<NodeId, number>>;
    readonly emitted: number;
    readonly done: number;
    readonly failed: number;
    readonly dead: number;
    readonly stale: number;
    readonly redelivered: number;
    /** Items started per second, cluster-wide, at most; null: no limit. */
    readonly ratePerSecond: number | null;
    readonly maxPending: number;
    readonly deadLetters: number;
  }>;
  /**
   * The jobs the cluster knows, as replicated in the log. Each job's entry is frozen and handed
   * out again by later calls until the job changes (its Dates too: copy one before changing it).
   */
  readonly jobs: ReadonlyArray<{
    readonly name: string;
    readonly spec: string;
    readonly mode: 'one' | 'all';
    /** Members with a handler for it. */
    readonly handlers: readonly NodeId[];
    /** Members that registered a different spec under the name (a rolling deploy): not assigned it. */
    readonly conflicts: Readonly<Record<string, string>>;
    readonly nextSlot: Date | null;
    readonly lastClaim: { readonly slot: Date; readonly fencingToken: number; readonly assignees: readonly NodeId[]; readonly outcomes: SlotHistory['outcomes'] } | null;
    readonly missedSlots: number;
    /** Slots not run because another run of the job was in progress (its overlap policy), or it was paused, in all. */
    readonly skippedRuns: number;
    /**
     * Whether the job is paused (`cluster.pause()`): its slots are claimed and recorded as
     * skipped (`paused`), not run; its runs in progress when it was paused finish.
     */
    readonly paused: boolean;
    /** Runs in progress: started per the log, with no outcome yet (a run whose member died stays until its slot moves). */
    readonly running: ReadonlyArray<{ readonly slot: Date; readonly fencingToken: number; readonly member: NodeId; readonly startedAt: Date }>;
  }>;
  /** This member's view of the cluster's time. */
  readonly clock: {
    /** Whether it has learned the cluster's time (until then, slots fire on its own clock). */
    readonly synced: boolean;
    /** The cluster's time now, as this member converts it from its own clock. */
    readonly clusterTime: Date;
    /** Clock stamps from peers dropped as malformed or inconsistent. */
    readonly invalidStamps: number;
  };
  /** Messages that the protocol refused as invalid (only a faulty peer sends them). */
  readonly invalidMessages: number;
  /**
   * Messages from outside the configuration the protocol did not take: from a member removed,
   * or a vote request from outside the voters (a stranger's, or one while this member hears
   * its leader, or too far ahead of its term; README "Security").
   */
  readonly refusedFromNonMembers: number;
  /** Messages the transport refused to encode (never expected; counted rather than thrown). */
  readonly unsendableMessages: number;
  /**
   * Versions (README, "Upgrading"): what this member reads, the cluster version in force (raised
   * through the log once every member reads the next), what each member announced it reads
   * (null: nothing yet, e.g. a member of cronraft 0.1.0), and the members a raise waits for.
   */
  readonly version: VersionState;
  /** Entries every member skipped (decodeEntry): not a command under their version's rules, or of a version not active then. */
  readonly skippedEntries: { readonly malformed: number; readonly inactive: number };
  /**
   * Times this member, leading, found that a follower had lost entries it acknowledged (it
   * restarted on `storage: 'memory'`) and replicated to it again from what it still held.
   */
  readonly followerLogsLost: number;
  /**
   * What this member holds against each of its named bounds (README, "Operating a cluster",
   * Metrics): counts, and bytes as the snapshots take them against their shares of what a member
   * behind takes in; `whenFull`, what the bound does once full (member-bounds.ts): refuses what is
   * new (a job, a lock, an emit), makes work wait (a lease), forgets what is oldest (claims, dead
   * letters: full is their steady state), or can never be passed. Empty before start().
   */
  readonly bounds: readonly BoundRow[];
}

/** A job as `state().jobs` shows it. */
export type JobState = ClusterState['jobs'][number];

/** A topic as `state().topics` shows it. */
export type TopicState = ClusterState['topics'][number];

/** The versions part of `state()`. */
export interface VersionState {
  readonly supports: { readonly protocol: VersionRange; readonly stateMachine: VersionRange };
  readonly active: number;
  /** The index of the entry that made `active` the cluster version; 0 for the first. */
  readonly activatedAt: number;
  readonly members: Readonly<Record<NodeId, { readonly protocol: VersionRange; readonly stateMachine: VersionRange } | null>>;
  /** Members the next version waits for: not announced it, or not heard lately. Empty when nothing waits. */
  readonly waitingFor: readonly NodeId[];
}

/** Transport counters before the transport started. */
const NO_TRAFFIC: TransportStats = { sent: 0, received: 0, droppedQueueFull: 0, droppedMalformed: 0, droppedOversized: 0, droppedUnexpected: 0, droppedPeerIdMismatch: 0 };

/** What `state()` is built from: the member's parts, null before start(). */
export interface StateSources {
  readonly id: NodeId;
  readonly status: ClusterState['status'];
  /** The fatal error that failed the member, null unless it failed. */
  readonly fatal: unknown;
  readonly voters: readonly NodeId[];
  /** This member's addresses (the listening ones once it listens). */
  readonly ownAddrs: readonly string[];
  /** A peer's address as configured. */
  readonly addrOf: (id: NodeId) => string;
  readonly electionTimeoutMs: number;
  readonly maxClockSkewMs: number;
  /** Now on the timers' monotonic base, which contact times use. */
  readonly monoNowMs: number;
  /** Now on the cluster's time, which slot instants use. */
  readonly clusterNowMs: number;
  readonly driver: RaftDriver | null;
  readonly transport: { stats(): TransportStats; isConnected(id: NodeId): boolean; dialFailure(id: NodeId): DialFailure | null } | null;
  readonly peerId: string | null;
  readonly joins: Readonly<JoinCounts>;
  readonly discovery: { stats(): DiscoveryStats } | null;
  readonly jobs: ClusterState['jobs'];
  readonly member: Member | null;
  /** What this member reads (before start, the member does not exist yet). */
  readonly versionSupport: VersionSupport;
}

/**
 * The peer id the configuration binds to `id`, if it binds one: the configuration's `peerIds`
 * (sorted pairs of member and peer id), read as optional so that a configuration without them
 * (one of a release before the binding, or the founding one) has none.
 */
function boundPeerId(conf: object, id: NodeId): string | null {
  const pairs = (conf as { readonly peerIds?: readonly (readonly [NodeId, string])[] }).peerIds;
  return pairs?.find(([member]) => member === id)?.[1] ?? null;
}

/** `cluster.state()`: a plain copy of what the member's parts know now. */
export function clusterStateOf(s: StateSources): ClusterState {
  const { driver } = s;
  const node = driver?.node;
  const offsets = driver?.clockOffsets();
  const clockOf = (id: NodeId): Pick<MemberState, 'clockOffsetMs' | 'clockSkewed'> => {
    const offsetMs = offsets?.get(id)?.offsetMs ?? null;
    return { clockOffsetMs: offsetMs, clockSkewed: offsetMs !== null && Math.abs(offsetMs) > s.maxClockSkewMs };
  };
  const conf = s.member?.configuration.conf ?? { voters: s.voters, learners: [], peerIds: [] };
  const voterSet = new Set(conf.voters);
  const leading = node?.role === 'leader';
  const lagOf = (id: NodeId): number | null => {
    if (!leading || node === undefined) return null;
    if (id === s.id) return 0;
    const match = node.progressOf(id)?.match;
    return match === undefined ? null : Math.max(0, node.log.committed - match);
  };
  const members: MemberState[] = [...conf.voters, ...conf.learners].map((id) => {
    const voter = voterSet.has(id);
    if (id === s.id) {
      return { id, addrs: s.ownAddrs, voter, reachable: true, lastContactMs: 0, matchIndex: node?.progressOf(id)?.match ?? null, lag: lagOf(id), peerId: s.peerId, ...clockOf(id), dialFailure: null };
    }
    const heard = driver?.contact.lastHeard(id);
    // Contact ages are durations, on the timers' monotonic base (as lastHeard is).
    const lastContactMs = heard === undefined ? null : Math.max(0, s.monoNowMs - heard);
    const connected = s.transport?.isConnected(id) ?? false;
    return {
      id,
      addrs: [s.addrOf(id)],
      voter,
      // Leader and followers exchange messages every heartbeat, so between them silence for an
      // election timeout means unreachable; followers talk to each other only in elections.
      reachable: connected && (!(node?.role === 'leader' || id === node?.leader) || (lastContactMs !== null && lastContactMs < s.electionTimeoutMs)),
      lastContactMs,
      matchIndex: node?.progressOf(id)?.match ?? null,
      lag: lagOf(id),
      peerId: boundPeerId(conf, id),
      ...clockOf(id),
      dialFailure: s.transport?.dialFailure(id) ?? null,
    };
  });
  // A member stopped (or failed) leads nothing and knows no leader, whatever its node said last.
  const ended = s.status === 'stopped' || s.status === 'failed';
  return {
    id: s.id,
    status: s.status,
    failure: failureOf(s.fatal),
    role: ended ? 'follower' : (node?.role ?? 'follower'),
    term: node?.term ?? 0,
    leader: ended ? null : (node?.leader ?? null),
    commitIndex: node?.log.committed ?? 0,
    appliedIndex: node?.log.applied ?? 0,
    lastIndex: node?.log.lastIndex() ?? 0,
    log: {
      firstIndex: node?.log.firstIndex() ?? 1,
      snapshotIndex: node?.latestSnapshot.index ?? 0,
      snapshotsTaken: driver?.snapshotsTaken ?? 0,
      snapshotsInstalled: driver?.snapshotsInstalled ?? 0,
      lastSnapshot: driver?.lastSnapshot ?? null,
    },
    members,
    configuration: { voters: [...conf.voters], learners: [...conf.learners], peerIds: Object.fromEntries(conf.peerIds) },
    peerId: s.peerId,
    transport: s.transport?.stats() ?? NO_TRAFFIC,
    joins: { ...s.joins },
    discovery: s.discovery?.stats() ?? null,
    topics: topicsOf(s.member),
    jobs: s.jobs,
    clock: { synced: driver?.clockSynced ?? false, clusterTime: new Date(s.clusterNowMs), invalidStamps: driver?.invalidClockStamps ?? 0 },
    invalidMessages: (driver?.invalidMessages ?? 0) + (driver?.invalidSnapshots ?? 0) + (node?.protocolViolations ?? 0),
    unsendableMessages: driver?.unsendableMessages ?? 0,
    refusedFromNonMembers: node?.fromNonMembers ?? 0,
    followerLogsLost: node?.followerLogsLost ?? 0,
    version: versionStateOf(s),
    skippedEntries: { ...(s.member?.skippedEntries ?? { malformed: 0, inactive: 0 }) },
    bounds: s.member?.bounds() ?? [],
  };
}

function versionStateOf(s: StateSources): VersionState {
  const { protocol, stateMachine } = s.versionSupport;
  const versions = s.member?.versions;
  const members: Record<NodeId, VersionState['members'][string]> = {};
  for (const id of s.member?.configuration.members ?? s.voters) {
    const v = versions?.members.get(id);
    members[id] = v === undefined ? null : { protocol: { ...v.protocol }, stateMachine: { ...v.stateMachine } };
  }
  const decision = s.member?.versionKeeper.decision;
  return {
    supports: { protocol: { ...protocol }, stateMachine: { ...stateMachine } },
    active: versions?.active ?? FIRST_CLUSTER_VERSION,
    activatedAt: versions?.activatedAt ?? 0,
    members,
    waitingFor: decision?.kind === 'waiting' ? [...decision.waitingFor] : [],
  };
}

/** Fan-out's topics as state() shows them (see ClusterState.topics). */
function topicsOf(member: Member | null): ClusterState['topics'] {
  if (member === null) return [];
  return [...member.fanout.topics.values()].map((t) => {
    let inFlight = 0;
    for (const n of t.inFlight.values()) inFlight += n;
    return {
      name: t.name,
      consumers: Object.fromEntries([...t.consumers].map(([id, c]) => [id, c.parallelism])),
      pending: t.unsettled - inFlight,
      inFlight: Object.fromEntries(t.inFlight),
      ...t.counts,
      ratePerSecond: rateOf(t),
      maxPending: member.fanout.maxPendingOf(t.name),
      deadLetters: t.deadLetters.length,
    };
  });
}

/** A fatal error as state() shows it: its code (CRONRAFT_FATAL for one without) and message. */
function failureOf(fatal: unknown): ClusterState['failure'] {
  if (fatal === null || fatal === undefined) return null;
  if (fatal instanceof CronraftError) return { code: fatal.code, message: fatal.message };
  return { code: 'CRONRAFT_FATAL', message: fatal instanceof Error ? fatal.message : String(fatal) };
}
