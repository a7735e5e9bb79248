import type { NodeId } from '../raft/types.js';
import type { ConsumerSettings, EmitOrigin } from './command.js';

/**
 * The records of fan-out's replicated state (state.ts): its items, dead letters, topics and
 * batches, as the state holds them and a snapshot writes them (state-snapshot.ts).
 */

/** Where an unsettled item is: waiting to be leased (not before `notBeforeMs`), or leased. */
export type ItemPhase =
  | { readonly kind: 'pending'; readonly notBeforeMs: number }
  | { readonly kind: 'leased'; readonly member: NodeId; readonly token: number; readonly deadlineMs: number };

/**
 * An unsettled item. Records are never changed in place: a change replaces the item's record
 * in the state, so that a snapshot may hold on to the records of one moment while the state
 * moves on (fanoutSnapshotSteps encodes them in steps).
 */
export interface ItemRecord {
  readonly id: number;
  readonly topic: string;
  readonly data: Uint8Array;
  readonly key: string | null;
  /** The index of the emit entry: the batch it belongs to. */
  readonly batch: number;
  readonly origin: EmitOrigin | null;
  /** Attempts that failed so far. */
  readonly failures: number;
  /** Leases taken back without an outcome (a consumer that died, stopped or ran past its lease). */
  readonly redeliveries: number;
  readonly lastError: string | null;
  readonly phase: ItemPhase;
}

/** An item that failed for good, kept for cluster.deadLetters and requeue. */
export interface DeadLetter {
  readonly id: number;
  readonly data: Uint8Array;
  readonly key: string | null;
  readonly failures: number;
  readonly error: string | null;
  readonly origin: EmitOrigin | null;
  readonly atMs: number;
}

/** What a topic has seen, counted as commands apply. */
export interface TopicCounts {
  emitted: number;
  done: number;
  /** Attempts that failed (retried or not). */
  failed: number;
  dead: number;
  /** Outcomes refused: under a token that was not the item's lease (late, or for an item settled). */
  stale: number;
  redelivered: number;
}

export interface TopicRecord {
  readonly name: string;
  /**
   * Its items that may be leased once due, in the order they became so: each item without a
   * key, and for each key only the oldest unsettled item of it (the head), so that items of one
   * key run one at a time, in emit order. Leased items are not in it.
   */
  readonly ready: Set<number>;
  /** Its consumers by member, in registration order. */
  readonly consumers: Map<NodeId, ConsumerSettings>;
  /** Unsettled items: pending or leased. */
  unsettled: number;
  /** Items leased per member. */
  readonly inFlight: Map<NodeId, number>;
  readonly counts: TopicCounts;
  readonly deadLetters: DeadLetter[];
}

/** An emit's items, until every one is settled. */
export interface BatchRecord {
  readonly topic: string;
  readonly total: number;
  done: number;
  dead: number;
}

/** A batch (an emit entry's items) as it settled: every item done or dead. */
export interface SettledBatch extends BatchRecord {
  /** The emit entry's index. */
  readonly index: number;
}
