// Must load before libp2p: Node 20 lacks Promise.withResolvers, which libp2p 3 calls.
import './transport/polyfills.js';

export { Cluster } from './cluster.js';
export { CLUSTER_DEFAULTS, type ClusterOptions } from './cluster-options.js';
export type { HttpOptions } from './http/http-options.js';
export type { ClusterEvents } from './cluster-events.js';
export type { ClusterState, MemberState } from './api/state.js';
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
} from './errors.js';
export type { JobContext, JobHandler, JobOptions, RunRecord } from './runtime/scheduler/job-types.js';
export type { SpecInput, DstPolicyInput } from './scheduler/spec.js';
export type { Clock, Timers } from './time/clock.js';
export { SeededRandom, type Random } from './time/random.js';
