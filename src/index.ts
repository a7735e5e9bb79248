/**
 * cronraft: run scheduled work once across a cluster of Node.js instances. `Cluster` is the
 * member an app embeds: its options, methods, events, state and history, and the errors it
 * throws, each with a stable code (README, "Errors").
 *
 * @module cronraft
 */
// Must load before libp2p: Node 20 lacks Promise.withResolvers, which libp2p 3 calls.
import './transport/polyfills.js';

export { Cluster } from './cluster.js';
export { CLUSTER_DEFAULTS, type ClusterOptions, type MdnsOptions } from './cluster-options.js';
export type { HttpOptions } from './http/http-options.js';
export type { ClusterEvents, MembershipEventPayload } from './cluster-events.js';
export type { ClusterState, JobState, MemberState, TopicState, VersionState } from './api/state.js';
export type { BoundRow, WhenFull } from './runtime/member-bounds.js';
// The types the state, the options and the methods above name, so that the API reference (and
// an app) can name them too.
export type { NodeId } from './raft/types.js';
export type { Role } from './raft/ready.js';
export type { TransportStats } from './transport/transport.js';
export type { InboundConnectionStats } from './transport/connection-gate.js';
export type { DialFailure } from './transport/dial-failure.js';
export type { VersionRange } from './version/versions.js';
export type { DiscoveryStats } from './transport/discovered-peers.js';
export type { JoinCounts } from './runtime/join-server.js';
export type { AssignMode, OverlapPolicy } from './scheduler/command.js';
export type { ConsumeHandler, ConsumeOptions, DeadLetterView } from './cluster-fanout.js';
export type { ItemContext } from './runtime/fanout/consumer.js';
export type { Batch, BatchSummary } from './runtime/fanout/batches.js';
export type { EmitOptions } from './fanout/items.js';
export type { SlotBatches } from './runtime/fanout/slot-batches.js';
export type { ExclusiveLock, ExclusiveOptions } from './api/run-exclusive.js';
export type { SlotHistory } from './api/history.js';
export type { CancelledRuns, CancelledSlot, JobPause, TriggeredSlot } from './runtime/scheduler/job-operations.js';
export type { SnapshotTiming } from './runtime/compaction.js';
export {
  CronraftError,
  InvalidArgumentError,
  NotLeaderError,
  ProposalDroppedError,
  OutcomeUnknownError,
  TimeoutError,
  BackpressureError,
  NotRunningError,
  ClockUnsyncedError,
  StorageError,
  CodecError,
  RunAbortedError,
  JoinFailedError,
  MembershipChangeRefusedError,
  RemovedError,
  UnknownJobError,
  VersionNotActiveError,
  VersionTooOldError,
  ListenError,
} from './errors.js';
export type { JobContext, JobHandler, JobOptions, RunRecord } from './runtime/scheduler/job-types.js';
export type { LoopBlocked } from './runtime/loop-blocks.js';
export type { SpecInput, DstPolicyInput } from './scheduler/spec.js';
export type { Clock, Timers } from './time/clock.js';
export { SeededRandom, type Random } from './time/random.js';
