import type { CompactionOptions } from './compaction.js';
import type { RaftLog } from '../raft/log.js';
import { FANOUT_DEFAULTS, type FanoutState } from '../fanout/state.js';
import { SCHEDULER_DEFAULTS, type SchedulerState } from '../scheduler/state.js';
import { MAX_SNAPSHOT_BYTES } from '../transport/constants.js';
import { CLAIM_BYTES_VERSION, SNAPSHOT_SHARES_VERSION } from '../version/versions.js';
import { MAX_VERSION_WAITS } from './version-waits.js';

/**
 * What a bound does once it is full:
 * - `refuses`: what is new is refused (a job, a handler, a lock, an emit, a topic, a proposal);
 * - `waits`: work waits until room comes (an item's lease);
 * - `forgets`: what is oldest is forgotten to make room (claims, dead letters, compacted
 *   entries): full is its steady state, not a warning;
 * - `never`: it cannot be passed, by its construction (batches, never more than items).
 */
export type WhenFull = 'refuses' | 'waits' | 'forgets' | 'never';

/** One named bound: what it holds now, its limit, and what it does once full. */
export interface BoundRow {
  readonly name: string;
  readonly value: number;
  readonly limit: number;
  readonly whenFull: WhenFull;
}

/** What MemberBounds reads of a member. */
export interface BoundSources {
  readonly scheduler: SchedulerState;
  readonly fanout: FanoutState;
  readonly log: Pick<RaftLog, 'applied' | 'stable' | 'firstIndex'>;
  readonly compaction: Required<Pick<CompactionOptions, 'everyEntries' | 'retainEntries'>>;
  readonly pendingProposals: number;
  readonly maxPendingProposals: number;
  /** Calls waiting for a cluster version (version-waits.ts). @default 0 */
  readonly versionWaits?: number;
  readonly lastSnapshotBytes: number;
  /** The cluster version in force. */
  readonly version: number;
}

/**
 * What a member holds against each of its named bounds (Member.bounds, `state().bounds`, the
 * simulator's bounds checker, and `/metrics`). Before the versions that bound claims, jobs and
 * locks in bytes, only what a snapshot takes in bounds them.
 */
export function memberBounds(s: BoundSources): BoundRow[] {
  const state = s.scheduler;
  const { log, compaction } = s;
  const shares = s.version >= SNAPSHOT_SHARES_VERSION;
  return [
    // Compaction keeps the applied and durable part of the log to at most this: what it
    // retains behind the last snapshot, a leader one more snapshot interval for live followers
    // (it never drops an entry before it is durable here), and up to two intervals applied past
    // it: a batch applied at once overshoots the interval, and a snapshot taken in steps is
    // finished at once when applying reaches that far (compaction.ts). The rest is bounded by
    // the leader's uncommitted bytes and the disk's pace.
    { name: 'applied entries kept', value: Math.max(0, Math.min(log.applied, log.stable) - log.firstIndex() + 1), limit: 3 * compaction.everyEntries + compaction.retainEntries, whenFull: 'forgets' },
    { name: 'pending proposals', value: s.pendingProposals, limit: s.maxPendingProposals, whenFull: 'refuses' },
    { name: 'calls waiting for a cluster version', value: s.versionWaits ?? 0, limit: MAX_VERSION_WAITS, whenFull: 'refuses' },
    { name: 'claims kept', value: state.claims.size, limit: SCHEDULER_DEFAULTS.maxClaimsKept, whenFull: 'forgets' },
    { name: 'bytes of kept claims', value: state.claimBytes, limit: s.version >= CLAIM_BYTES_VERSION ? SCHEDULER_DEFAULTS.maxClaimBytes : MAX_SNAPSHOT_BYTES, whenFull: 'forgets' },
    { name: 'jobs', value: state.jobs.size, limit: SCHEDULER_DEFAULTS.maxJobs, whenFull: 'refuses' },
    { name: 'bytes of jobs', value: state.jobBytes, limit: shares ? SCHEDULER_DEFAULTS.maxJobBytes : MAX_SNAPSHOT_BYTES, whenFull: 'refuses' },
    { name: 'locks', value: state.locks.size, limit: SCHEDULER_DEFAULTS.maxLocks, whenFull: 'refuses' },
    { name: 'bytes of locks', value: state.lockBytes, limit: shares ? SCHEDULER_DEFAULTS.maxLockBytes : MAX_SNAPSHOT_BYTES, whenFull: 'refuses' },
    { name: 'open claims', value: state.openClaims().size, limit: SCHEDULER_DEFAULTS.maxClaimsKept, whenFull: 'forgets' },
    ...fanoutBounds(s.fanout),
    // A snapshot larger than a follower takes in is one no member behind it ever installs.
    { name: 'bytes of the last snapshot taken', value: s.lastSnapshotBytes, limit: MAX_SNAPSHOT_BYTES, whenFull: 'refuses' },
  ];
}

/**
 * Fan-out's memory against its bounds: the most unsettled items and dead letters any topic
 * holds, the bytes of each part, the topics, and the batches (a batch is kept while one of its
 * items is unsettled, so there are never more batches than unsettled items).
 */
function fanoutBounds(fanout: FanoutState): BoundRow[] {
  let unsettled = 0;
  let deadLetters = 0;
  for (const topic of fanout.topics.values()) {
    unsettled = Math.max(unsettled, topic.unsettled);
    deadLetters = Math.max(deadLetters, topic.deadLetters.length);
  }
  return [
    { name: 'unsettled items of a topic', value: unsettled, limit: FANOUT_DEFAULTS.maxPendingPerTopic, whenFull: 'refuses' },
    { name: 'bytes of unsettled items (but the members of leases)', value: fanout.boundedUnsettledBytes, limit: FANOUT_DEFAULTS.maxUnsettledBytes, whenFull: 'refuses' },
    { name: 'bytes of the members of leases', value: fanout.leaseBytes, limit: FANOUT_DEFAULTS.maxLeaseBytes, whenFull: 'waits' },
    { name: 'bytes of topics', value: fanout.topicBytes, limit: FANOUT_DEFAULTS.maxTopicBytes, whenFull: 'refuses' },
    { name: 'bytes of dead letters', value: fanout.deadLetterBytes, limit: FANOUT_DEFAULTS.maxDeadLetterBytes, whenFull: 'forgets' },
    { name: 'dead letters of a topic', value: deadLetters, limit: FANOUT_DEFAULTS.maxDeadLettersPerTopic, whenFull: 'forgets' },
    { name: 'topics', value: fanout.topics.size, limit: FANOUT_DEFAULTS.maxTopics, whenFull: 'refuses' },
    { name: 'fan-out batches', value: fanout.batches.size, limit: fanout.items.size, whenFull: 'never' },
  ];
}
