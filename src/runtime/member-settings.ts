import { InvalidArgumentError } from '../errors.js';
import { nonNegativeInt, positiveInt } from '../option-checks.js';
import { keepInLogArena } from '../bytes/byte-arena.js';
import { RAFT_DEFAULTS, type RaftConfig } from '../raft/config.js';
import { DEFAULT_MAX_CLOCK_SKEW_MS } from './clock-sync.js';
import { COMPACTION_DEFAULTS, type CompactionOptions } from './compaction.js';
import type { MemberTiming } from './member.js';
import { SNAPSHOT_CHUNK_BYTES } from './snapshot-chunks.js';

/**
 * The defaults of a member's timing and limits: the one source of them, for `Cluster` (whose
 * CLUSTER_DEFAULTS include them) and for the simulator, which runs exactly these unless its
 * seed draws a variation on purpose.
 */
export const MEMBER_DEFAULTS = {
  tickMs: 10,
  heartbeatMs: 50,
  electionTimeoutMs: 250,
  requestTimeoutMs: 5000,
  maxPendingProposals: 10_000,
  /** Proposals handed to Raft in one batch: one disk write and one append carry them. */
  maxProposalBatch: 1024,
  /** Bytes of proposals in one batch (at least one goes): a forwarded batch must fit in a frame. */
  maxProposalBatchBytes: 1024 * 1024,
  /** Linearizable reads waiting on one member. */
  maxPendingReads: 4096,
  /** How often the leader plans claims of due slots. */
  planIntervalMs: 100,
  /** Claims are made this far ahead (at least an election timeout), so assignees fire on their own timers. */
  lookaheadMs: 1000,
  /** Claims proposed by one plan. */
  maxClaimsPerPlan: 256,
  /** Claims whose slot is older than this are never moved to another member again. */
  reassignHorizonMs: 10 * 60_000,
  maxClockSkewMs: DEFAULT_MAX_CLOCK_SKEW_MS,
  snapshotEveryEntries: COMPACTION_DEFAULTS.everyEntries,
  snapshotRetainEntries: COMPACTION_DEFAULTS.retainEntries,
  /** Voters wanted: the leader promotes caught-up learners up to this many (membership-decide.ts). */
  voters: 5,
  /** A member unreachable this long is removed by the leader, a voter only if that is safe (membership-decide.ts). */
  deadMemberAfterMs: 5 * 60_000,
} as const;

/** The options of `Cluster` that shape a member's timing and limits (ClusterOptions has them all). */
export interface MemberOptions {
  /** Resolution of the protocol's clock. @default 10 */
  readonly tickMs?: number | undefined;
  /** How often a leader tells followers it is alive. @default 50 */
  readonly heartbeatMs?: number | undefined;
  /**
   * A follower that hears no leader for a random time between this and twice this starts an
   * election; a leader that hears no majority for this long steps down. @default 250
   */
  readonly electionTimeoutMs?: number | undefined;
  /** How long `propose()` and `barrier()` may wait. @default 5000 */
  readonly requestTimeoutMs?: number | undefined;
  /** Bound on proposals waiting to commit on this member. @default 10000 */
  readonly maxPendingProposals?: number | undefined;
  /**
   * A member whose clock is further than this from the cluster's time (the median of the
   * members' clocks, measured through heartbeats) is reported in `state()` and given no work.
   * @default 1000
   */
  readonly maxClockSkewMs?: number | undefined;
  /**
   * Job runs at once on this member. When more slots are due, higher `priority` jobs start
   * first, first come first served within a priority, and waiting raises a run's priority so
   * that none starves. @default no limit
   */
  readonly maxConcurrent?: number | undefined;
  /**
   * Entries applied between snapshots: a member then snapshots its state and drops its log
   * behind it. A restart replays at most this many entries; a member that falls further behind
   * than the log kept gets the snapshot. @default 10000
   */
  readonly snapshotEveryEntries?: number | undefined;
  /** Entries kept behind a snapshot, so that a follower a little behind gets entries, not the whole state. @default 1000 */
  readonly snapshotRetainEntries?: number | undefined;
  /**
   * The number of voters wanted, odd: the leader promotes learners that have caught up and
   * stayed live for a while until there are this many voters; more instances stay learners
   * (they still run work). @default 5
   */
  readonly voters?: number | undefined;
  /**
   * A member the leader has not heard from for this long is removed from the configuration: a
   * learner always, a voter only if the voters left keep a majority of live ones (and a learner
   * takes its place, or three voters are left). At least electionTimeoutMs. @default 300000
   */
  readonly deadMemberAfterMs?: number | undefined;
}

/** Everything a member runs with beyond its identity and its parts (storage, transport, clocks). */
export interface MemberSettings {
  /** The protocol's settings but `id` and `voters`. */
  readonly raft: Omit<RaftConfig, 'id' | 'voters'>;
  readonly timing: MemberTiming;
  readonly compaction: CompactionOptions;
  /** Bytes of snapshot data per message. */
  readonly snapshotChunkBytes: number;
}

/** How often a leader sends heartbeats, in ms: its heartbeat ticks at the member's tick. */
export function heartbeatIntervalMs(timing: Pick<MemberTiming, 'tickMs' | 'heartbeatTicks'>): number {
  return timing.tickMs * timing.heartbeatTicks;
}

/**
 * A member's settings from `Cluster`'s options, defaults applied (MEMBER_DEFAULTS), each
 * option checked: a bad one throws InvalidArgumentError naming it. Milliseconds become the
 * protocol's ticks here.
 */
export function memberSettings(options: MemberOptions = {}): MemberSettings {
  const d = MEMBER_DEFAULTS;
  const tickMs = positiveInt(options.tickMs ?? d.tickMs, 'tickMs');
  const heartbeatMs = positiveInt(options.heartbeatMs ?? d.heartbeatMs, 'heartbeatMs');
  const electionTimeoutMs = positiveInt(options.electionTimeoutMs ?? d.electionTimeoutMs, 'electionTimeoutMs');
  if (heartbeatMs < tickMs) throw new InvalidArgumentError('heartbeatMs', heartbeatMs, `at least tickMs (${tickMs})`);
  if (heartbeatMs >= electionTimeoutMs) {
    throw new InvalidArgumentError('heartbeatMs', heartbeatMs, `less than electionTimeoutMs (${electionTimeoutMs})`);
  }
  const heartbeatTicks = Math.max(1, Math.round(heartbeatMs / tickMs));
  const electionTicks = Math.max(2, Math.round(electionTimeoutMs / tickMs));
  // In whole ticks the two may meet ({ tickMs: 100, heartbeatMs: 150, electionTimeoutMs: 200 }
  // are two ticks each), which the protocol refuses: refused here, before start() opens anything.
  if (heartbeatTicks >= electionTicks) {
    throw new InvalidArgumentError('heartbeatMs', heartbeatMs, `less than electionTimeoutMs (${electionTimeoutMs}) by at least a tick (tickMs ${tickMs}) once each is rounded to ticks`);
  }
  const voters = positiveInt(options.voters ?? d.voters, 'voters');
  if (voters % 2 === 0) throw new InvalidArgumentError('voters', voters, 'an odd number (an even count tolerates no more failures than the odd one below it)');
  const deadMemberAfterMs = positiveInt(options.deadMemberAfterMs ?? d.deadMemberAfterMs, 'deadMemberAfterMs');
  if (deadMemberAfterMs < electionTimeoutMs) throw new InvalidArgumentError('deadMemberAfterMs', deadMemberAfterMs, `at least electionTimeoutMs (${electionTimeoutMs})`);
  const compaction: CompactionOptions = {
    everyEntries: positiveInt(options.snapshotEveryEntries ?? d.snapshotEveryEntries, 'snapshotEveryEntries'),
    retainEntries: nonNegativeInt(options.snapshotRetainEntries ?? d.snapshotRetainEntries, 'snapshotRetainEntries'),
  };
  return {
    raft: { electionTicks, heartbeatTicks, ...raftSettingsFor(compaction) },
    timing: {
      tickMs,
      heartbeatTicks,
      electionTimeoutMs,
      requestTimeoutMs: positiveInt(options.requestTimeoutMs ?? d.requestTimeoutMs, 'requestTimeoutMs'),
      maxPendingProposals: positiveInt(options.maxPendingProposals ?? d.maxPendingProposals, 'maxPendingProposals'),
      maxProposalBatch: d.maxProposalBatch,
      maxProposalBatchBytes: d.maxProposalBatchBytes,
      maxPendingReads: d.maxPendingReads,
      planIntervalMs: d.planIntervalMs,
      lookaheadMs: d.lookaheadMs,
      maxClaimsPerPlan: d.maxClaimsPerPlan,
      reassignHorizonMs: d.reassignHorizonMs,
      maxClockSkewMs: positiveInt(options.maxClockSkewMs ?? d.maxClockSkewMs, 'maxClockSkewMs'),
      voters,
      deadMemberAfterMs,
      maxConcurrent: options.maxConcurrent === undefined || options.maxConcurrent === Number.POSITIVE_INFINITY ? Number.POSITIVE_INFINITY : positiveInt(options.maxConcurrent, 'maxConcurrent'),
    },
    compaction,
    snapshotChunkBytes: SNAPSHOT_CHUNK_BYTES,
  };
}

/**
 * The Raft settings a member runs with beyond its timing, the same in `Cluster` and in the
 * simulator. No more entries applied in one Ready than one compaction interval, so that a member
 * catching up on many entries at once compacts as it goes, and its log, in memory and on disk,
 * stays within its bound (member-bounds.ts: three intervals and what it retains). And the data of entries
 * appended here kept in the arena for log data (see ByteArena), so that no kept entry holds a
 * slab of Node's pool of small buffers.
 */
export function raftSettingsFor(compaction: CompactionOptions): Pick<RaftConfig, 'maxApplyBatch' | 'keepData'> {
  return { maxApplyBatch: Math.max(1, Math.min(RAFT_DEFAULTS.maxApplyBatch, compaction.everyEntries)), keepData: keepInLogArena };
}
