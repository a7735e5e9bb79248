import type { NodeId } from '../raft/types.js';

/**
 * The commands of fan-out (issue 19): a claimed slot, or any member, emits work items to a
 * topic; the leader leases them to the members that consume it; each consumer records its
 * outcomes. Every command goes through the log, and FanoutState (state.ts) applies them alike
 * on every member; the runtime's fan-out (src/runtime/fanout/) proposes them.
 */

/** The largest item, encoded: a work item names work, it does not carry a file. */
export const MAX_ITEM_BYTES = 64 * 1024;

/** Items one emit command holds; an emit of more is split into several commands by the runtime. */
export const MAX_ITEMS_PER_EMIT = 1024;

/** Items one lease command hands to one member. */
export const MAX_ITEMS_PER_LEASE = 1024;

/** Outcomes one done command carries, and leases one reclaim command takes back. */
export const MAX_OUTCOMES_PER_COMMAND = 1024;

/**
 * The most unsettled items a topic may hold, whatever its consumers ask for: an emit past it
 * is refused whole (BackpressureError). A consumer's `maxPending` lowers it.
 */
export const MAX_PENDING_PER_TOPIC = 100_000;

/** The longest topic name and key. */
export const MAX_TOPIC_LENGTH = 200;
export const MAX_KEY_LENGTH = 200;

/** The longest error message kept with a failed attempt or a dead letter. */
export const MAX_ERROR_LENGTH = 500;

/** How a member consumes a topic (cluster.consume's options, as registered in the log). */
export interface ConsumerSettings {
  /** Items this member runs at once. */
  readonly parallelism: number;
  /** Failed attempts retried before an item goes to the dead letters (0: none). */
  readonly retries: number;
  /** How long one attempt may run: its lease ends past it, and the item is leased again. */
  readonly timeoutMs: number;
  /** The wait before the first retry, doubled at each further one up to MAX_BACKOFF_MS. */
  readonly backoffMs: number;
  /** Items of the topic started per second, cluster-wide (the least its consumers ask for); null: no limit. */
  readonly ratePerSecond: number | null;
  /** Unsettled items the topic may hold (the least its consumers ask for, at most MAX_PENDING_PER_TOPIC); null: that bound. */
  readonly maxPending: number | null;
}

/** One item of an emit: its bytes, and the key that orders it among others (null: no order). */
export interface EmittedItem {
  readonly data: Uint8Array;
  readonly key: string | null;
}

/** Where an emit came from: the slot of a job whose handler emitted, or null for cluster.emit. */
export interface EmitOrigin {
  readonly job: string;
  readonly slotMs: number;
}

/** One outcome of a leased item, under the token of the lease it ran under. */
export interface ItemOutcome {
  readonly id: number;
  readonly token: number;
  /** null: it succeeded; else why it failed. */
  readonly error: string | null;
}

export type FanoutCommand =
  | { readonly type: 'consume'; readonly topic: string; readonly member: NodeId; readonly settings: ConsumerSettings }
  | { readonly type: 'unconsume'; readonly topic: string; readonly member: NodeId }
  | { readonly type: 'emit'; readonly topic: string; readonly items: readonly EmittedItem[]; readonly origin: EmitOrigin | null; readonly atMs: number }
  /**
   * `topic`, when given: the topic of the items it leases, and an item of another is skipped. An
   * early lease (early-leases.ts) names ids it guessed, and a wrong guess must not lease another
   * topic's items past that topic's rate.
   */
  | { readonly type: 'lease'; readonly member: NodeId; readonly ids: readonly number[]; readonly atMs: number; readonly topic?: string }
  | { readonly type: 'done'; readonly member: NodeId; readonly outcomes: readonly ItemOutcome[]; readonly atMs: number }
  | { readonly type: 'reclaim'; readonly leases: readonly { readonly id: number; readonly token: number }[]; readonly atMs: number }
  | { readonly type: 'requeue'; readonly topic: string; readonly ids: readonly number[]; readonly atMs: number }
  /** Dead letters of `topic` dropped for good (an operator looked at them): a topic left with nothing is forgotten. */
  | { readonly type: 'drop'; readonly topic: string; readonly ids: readonly number[]; readonly atMs: number };
