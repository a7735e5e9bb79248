import { CronraftError, NotRunningError, RemovedError } from '../errors.js';
import type { RaftNode } from '../raft/node.js';
import type { SoftState } from '../raft/ready.js';
import type { Configuration, Entry } from '../raft/types.js';
import type { LogStorage } from '../storage/log-storage.js';
import type { Clock, Timers } from '../time/clock.js';
import type { Transport } from '../transport/transport.js';
import type { CompactionOptions } from './compaction.js';
import type { RequestOptions } from './pending-requests.js';
import type { StateMachine } from './state-machine.js';
import type { Incarnation } from './own-removal.js';

/**
 * Whether a request failed because this member's driver stopped for good (it failed, the member
 * was removed, or it was stopped): asking again can only fail the same way, so a caller that
 * retries gives up. A member not started yet may still start: that is not this.
 */
export function driverStopped(error: unknown): boolean {
  return error instanceof RemovedError || (error instanceof NotRunningError && error.state === 'stopped') || (error instanceof CronraftError && error.code === 'CRONRAFT_FATAL');
}

export interface DriverOptions extends RequestOptions {
  /**
   * A follower's lease (lease.ts): an answer after a silence this long fences the renewal of the
   * follower's lease until it holds what this member, leading, logged by then (lease-echoes.ts).
   * @default `leaseMs(leaderSilenceMs)` (lease.ts): the lease of a member whose election timeout is its leader silence, as Member sets them
   */
  readonly leaseMs?: number;
  readonly node: RaftNode;
  /**
   * Which member this process is beyond its id (own-removal.ts): a removal of its id that the
   * log replays from before it joined is an earlier member's, not its own. @default its id alone
   */
  readonly incarnation?: Incarnation;
  readonly storage: LogStorage;
  readonly transport: Transport;
  readonly stateMachine: StateMachine;
  readonly clock: Clock;
  readonly timers: Timers;
  readonly tickMs: number;
  /** @default COMPACTION_DEFAULTS */
  readonly compaction?: CompactionOptions;
  /** Bytes of snapshot data per message. @default SNAPSHOT_CHUNK_BYTES */
  readonly snapshotChunkBytes?: number;
  readonly onSoftState?: (state: SoftState) => void;
  /**
   * Called with each message from a peer before it counts as contact (`lastHeard`), so that
   * a silence the message ends can still be seen (the member's lease, member.ts).
   */
  readonly beforeContact?: () => void;
  /** A tick came `lateMs` after it was due: the event loop stood still that long (loop-blocks.ts). */
  readonly onTickLate?: (lateMs: number) => void;
  readonly onApplied?: (entry: Entry) => void;
  /**
   * Called on the leader with the indexes of the entries appended to its log since the last call
   * (its own proposals and those forwarded to it), before their Ready is taken: what it proposes
   * joins the same write and the same appends (fan-out's early leases, leader-delivery.ts).
   */
  readonly onLeaderAppended?: (from: number, to: number) => void;
  /** A leader's snapshot replaced the state: entries up to `index` will not be applied one by one. */
  readonly onSnapshotInstalled?: (index: number) => void;
  /**
   * The configuration changed (a conf change applied, or a leader's snapshot installed): called
   * as its Ready is taken, before its messages are sent, so that the transport dials a member
   * added before the first append to it leaves.
   */
  readonly onConfiguration?: (conf: Configuration) => void;
  /**
   * A fatal error (storage failed), or this member's removal from the configuration (a
   * RemovedError, once the Ready that applied it is done): the member stops taking part and reports it.
   */
  readonly onFatal?: (error: unknown) => void;
}
