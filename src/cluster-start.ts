import { randomBytes } from 'node:crypto';
import type { EventEmitter } from 'node:events';
import type { PrivateKey } from '@libp2p/interface';
import type { ClusterState, MemberState } from './api/state.js';
import { unansweredLockHooks, type UnansweredLocks } from './api/unanswered-locks.js';
import { EntryRecords } from './bytes/entry-records.js';
import { cancelledEventOf, jobRefusedEventOf, missedEventOf, slotsDroppedEventOf, tellApp, type ClusterEvents } from './cluster-events.js';
import { registerConsumer, type ConsumeHandler } from './cluster-fanout.js';
import { joinOrForm, probeRemoval, serveJoins, startDiscovery } from './cluster-join.js';
import type { ResolvedOptions } from './cluster-options.js';
import { MemberWatch, WATCH_INTERVAL_MS } from './cluster-watch.js';
import type { ConsumerSettings } from './fanout/command.js';
import type { ClusterHttp } from './http/cluster-http.js';
import { boundPeerId } from './raft/configuration.js';
import { RaftNode } from './raft/node.js';
import type { SoftState } from './raft/ready.js';
import type { JoinServer } from './runtime/join-server.js';
import { Member } from './runtime/member.js';
import { heartbeatIntervalMs } from './runtime/member-settings.js';
import type { RemovalProbe } from './runtime/removal-probe.js';
import type { JobHandler, JobOptions } from './runtime/scheduler/job-types.js';
import { timingOf } from './runtime/test-timing.js';
import type { JobSpec } from './scheduler/spec.js';
import { NotRunningError } from './errors.js';
import { openDataDir } from './storage/data-dir.js';
import { LevelLogStorage } from './storage/level-log-storage.js';
import type { LogStorage } from './storage/log-storage.js';
import { MemoryLogStorage } from './storage/memory-log-storage.js';
import type { Clock, Timers } from './time/clock.js';
import type { Random } from './time/random.js';
import { loadPsk } from './transport/cluster-secret.js';
import type { LanDiscovery } from './transport/lan-discovery.js';
import { parsePeerAddress } from './transport/address.js';
import { Libp2pTransport } from './transport/libp2p-transport.js';
import { checkStoredVersion, storedWireVersion } from './version/stored-version.js';
import { setMemberOf, versionSupportOf } from './version/test-seams.js';

/**
 * What a running member is made of, filled in as each part opens, so that a start that fails
 * half-way closes what it opened (Cluster's close) and nothing more.
 */
export interface MemberParts {
  storage: LogStorage | null;
  transport: Libp2pTransport | null;
  /** mDNS, when the `mdns` option is on (cluster-join.ts, startDiscovery). */
  discovery: LanDiscovery | null;
  peerId: string | null;
  member: Member | null;
  removalProbe: RemovalProbe | null;
  /** The events member-unreachable and clock-skewed (cluster-watch.ts), while running. */
  watch: MemberWatch | null;
}

/** A job scheduled on the Cluster, registered with the member as it starts. */
export interface ScheduledJob {
  readonly spec: JobSpec;
  readonly handler: JobHandler;
  readonly options: JobOptions;
}

/** What starting a member needs from its Cluster. */
export interface StartContext {
  /** The Cluster: its events are emitted on it, and tests' seams are keyed by it. */
  readonly cluster: EventEmitter<ClusterEvents> & { state(): ClusterState };
  /** state()'s members alone, which the member watch reads (cluster-watch.ts), without the jobs' entries. */
  readonly members: () => readonly MemberState[];
  readonly options: ResolvedOptions;
  readonly clusterId: string;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly random: Random;
  readonly joins: JoinServer;
  readonly http: ClusterHttp | null;
  readonly jobs: ReadonlyMap<string, ScheduledJob>;
  readonly consumers: ReadonlyMap<string, { readonly handler: ConsumeHandler; readonly settings: ConsumerSettings }>;
  /**
   * Called once `jobs` and `consumers` are handed to the member: from then on a schedule() or
   * consume() registers at once. Not when the status turns 'running', some turns later: a lone
   * member elects itself in between, and a job scheduled from its 'leader' listener was kept by
   * the Cluster alone, and never ran.
   */
  readonly handedOver: () => void;
  /** Whether the Cluster is still starting (a stop during the join ends it). */
  readonly starting: () => boolean;
  /** Whether the Cluster is neither starting nor running (a consumer's registration gives up). */
  readonly ended: () => boolean;
  readonly onSoftState: (s: SoftState) => void;
  /** A scheduler command applied here: state()'s views of the jobs are built soon (api/job-views-warmer.ts). */
  readonly onJobsChanged: () => void;
  /** runExclusive's lock proposals that went unanswered: one that commits is let go at once. */
  readonly unansweredLocks: UnansweredLocks;
  readonly onFatal: (error: unknown) => void;
}

/**
 * Opens storage, starts the transport, joins or forms the cluster, builds the Raft node and the
 * member, and registers the Cluster's jobs and consumers: the wiring of `Cluster.start()`.
 * Each part is put in `parts` as soon as it is open.
 */
export async function startMember(ctx: StartContext, parts: MemberParts): Promise<void> {
  const o = ctx.options;
  const cluster = ctx.cluster;
  // A stop() during the start ends it at the next step, so that nothing opens after the stop
  // closed what was open (cluster-lifecycle.ts).
  const stillStarting = (): void => {
    if (!ctx.starting()) throw new NotRunningError('stopping');
  };
  // A secretFile that cannot be used fails the start before anything is opened.
  const psk = await loadPsk(o.secret);
  stillStarting();
  // Served from the start, so that probes see a member that is still joining as live and not ready.
  await ctx.http?.start();
  stillStarting();
  const metrics = ctx.http?.metrics;
  // A leader's entries are encoded once, for its own write and the appends to its followers.
  const entryRecords = new EntryRecords();
  let privateKey: PrivateKey | undefined;
  let storage: LogStorage;
  if (o.storage === 'level') {
    const dataDir = await openDataDir(o.dataDir);
    stillStarting();
    privateKey = dataDir.privateKey;
    storage = new LevelLogStorage(dataDir.storePath, { sync: o.sync, entryRecords, onSyncedWrite: metrics && ((ms) => metrics.synced(ms)) });
  } else {
    storage = new MemoryLogStorage();
  }
  parts.storage = storage;
  const stored = await storage.open();
  stillStarting();
  // A downgrade past an activation fails here, naming the versions (README, "Upgrading").
  checkStoredVersion(stored, versionSupportOf(cluster), o.storage === 'level' ? o.dataDir : 'memory');
  const transport = new Libp2pTransport({
    self: o.self.id,
    clusterId: ctx.clusterId,
    listen: o.listen,
    peers: o.peers,
    privateKey,
    entryRecords,
    psk: psk ?? undefined,
    // A closed connection to the leader is the fastest sign that it died.
    onEvent: (event) => {
      if (event.type === 'disconnected') parts.member?.driver.peerDisconnected(event.peer);
    },
  });
  parts.transport = transport;
  serveJoins(transport, ctx.joins);
  await transport.start();
  stillStarting();
  parts.peerId = transport.peerId();
  parts.discovery = await startDiscovery(o, transport, ctx.timers);
  stillStarting();
  // An empty member asks its peers whether a cluster runs before it builds its node (README, "Forming the cluster").
  const identity = await joinOrForm(o, stored.identity, ctx.clusterId, {
    transport,
    discovery: parts.discovery,
    joins: ctx.joins,
    timers: ctx.timers,
    reads: versionSupportOf(cluster),
    stopped: () => !ctx.starting(),
  });
  stillStarting();
  transport.setClusterId(identity.clusterId);
  // Refuses a directory that belongs to another cluster or member, before anything is written.
  await storage.setIdentity({ clusterId: identity.clusterId, nodeId: o.self.id, ...(identity.joined ? { foundingVoters: identity.foundingVoters } : {}) });
  stillStarting();
  const node = new RaftNode(
    { id: o.self.id, voters: identity.foundingVoters, ...o.member.raft },
    { hardState: stored.hardState, snapshot: stored.snapshot, entries: stored.entries },
    ctx.random,
  );
  const timing = timingOf(cluster, o.member.timing);
  const tell = <K extends keyof ClusterEvents>(event: K, ...payload: ClusterEvents[K]): void => tellApp(cluster, event, ...payload);
  // runExclusive's lock proposals that went unanswered: let go as they commit, or come in a snapshot.
  const lockHooks = unansweredLockHooks(o.self.id, ctx.unansweredLocks, () => parts.member ?? undefined, (run) => void ctx.timers.setTimeout(run, heartbeatIntervalMs(o.member.timing)));
  const peerId = transport.peerId();
  const member = new Member({
    self: o.self.id,
    node,
    // A removal of its address that the log replays from before this member joined is not its own.
    ...(peerId === null ? {} : { incarnation: { peerId, joined: identity.joined } }),
    storedVersion: storedWireVersion(stored),
    storage,
    transport,
    clock: ctx.clock,
    timers: ctx.timers,
    timing,
    bootId: randomBytes(4).toString('hex'),
    compaction: o.member.compaction,
    snapshotChunkBytes: o.member.snapshotChunkBytes,
    wantsUserEntries: () => cluster.listenerCount('applied') > 0,
    onUserEntry: (entry, data) => tell('applied', { index: entry.index, term: entry.term, data }),
    onSoftState: ctx.onSoftState,
    onFatal: ctx.onFatal,
    versions: versionSupportOf(cluster),
    onClusterApplied: (index, command, result) => {
      if (command.type === 'activate' && result === 'applied') tell('version-activated', { from: command.from, to: command.to, index });
    },
    onBlocked: (blocked) => tell('blocked', blocked),
    onRun: (run) => {
      tell('run', run);
      if ((run.outcome === 'failed' || run.outcome === 'aborted') && run.retriesLeft === 0) tell('failed', run);
    },
    onSchedulerApplied: (index, command, result) => {
      ctx.onJobsChanged();
      lockHooks.applied(index, command, result);
      const missed = missedEventOf(index, command, result);
      if (missed !== null) tell('missed', missed);
      const dropped = slotsDroppedEventOf(index, command, result);
      if (dropped !== null) tell('slots-dropped', dropped);
      const cancelled = cancelledEventOf(index, command, result);
      if (cancelled !== null) tell('cancelled', cancelled);
      const refused = jobRefusedEventOf(o.self.id, index, command, result);
      if (refused !== null) tell('job-refused', refused);
    },
    // A lock whose proposal went unanswered may come in the leader's snapshot, not as a command applied.
    onSnapshotInstalled: lockHooks.installed,
    onFanoutEvent: (event) => {
      if (event.type === 'item-failed') tell('item-failed', { topic: event.topic, id: event.id, attempt: event.attempt, error: event.error, dead: event.dead, index: event.index });
      else if (event.type === 'consume-refused') tell('consume-refused', { topic: event.topic, reason: event.reason, index: event.index });
      else tell('batch-settled', { batch: event.batch, summary: event.summary });
    },
    onProposalApplied: metrics && ((ms) => metrics.proposalApplied(ms)),
    onMembershipEvent: ({ type, id, index }) => tell(type, { id, index }),
  });
  parts.member = member;
  setMemberOf(cluster, member);
  member.start();
  // A joiner takes in the leader's frames before it has replayed the log up to its own addition,
  // and the bindings with it: the member that added it (the leader) is pinned to the key its
  // answer came from, or anyone holding the secret could speak as it until then.
  if (identity.members.length > 0) {
    const conf = member.configuration.conf;
    const known = member.configuration.members;
    const by = identity.acceptedBy;
    if (by !== undefined && by.peerId !== null) transport.bindUntilConfigured(by.id, by.peerId);
    transport.setMembers([...known.map((id) => ({ id, peerId: boundPeerId(conf, id) })), ...identity.members.filter((id) => !known.includes(id)).map((id) => ({ id, peerId: null }))]);
  }
  // A member restarted after a crash holds entries past the commit index it stored (a change of
  // the commit index alone is written with the next entry), bindings among them: until they
  // apply, a key that holds the secret could speak for the members they bind.
  const applied = member.configuration.conf;
  for (const [id, peerId] of member.driver.node.latestConfiguration.peerIds) if (boundPeerId(applied, id) === null) transport.bindUntilConfigured(id, peerId);
  ctx.joins.serve(member, identity.clusterId, identity.foundingVoters, (id, peerId, signal) => transport.reaches(parsePeerAddress(id, 'joiner'), peerId, signal));
  parts.watch = new MemberWatch(
    ctx.timers,
    ctx.members,
    {
      unreachable: (e) => tell('member-unreachable', e),
      clockSkewed: (e) => tell('clock-skewed', e),
    },
    WATCH_INTERVAL_MS,
    o.member.timing.maxClockSkewMs,
  );
  parts.watch.start();
  parts.removalProbe = probeRemoval(member, transport, { clusterId: identity.clusterId, timers: ctx.timers, reads: versionSupportOf(cluster), leaderlessBeforeProbeMs: timing.leaderlessBeforeProbeMs });
  for (const [name, job] of ctx.jobs) member.scheduler.schedule(name, job.spec, job.handler, job.options);
  for (const [topic, c] of ctx.consumers) void registerConsumer(member.fanoutRuntime, topic, c.handler, c.settings, ctx.timers, ctx.ended);
  ctx.handedOver();
}
