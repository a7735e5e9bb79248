import type { Entry, HardState, Message, NodeId, Snapshot } from './types.js';

export type Role = 'follower' | 'precandidate' | 'candidate' | 'leader';

/** What is volatile but observable: who leads, and in which role this member is. */
export interface SoftState {
  readonly role: Role;
  readonly leader: NodeId | null;
  readonly term: number;
}

/** A linearizable read is ready once the state machine has applied `index` (0: refused, no leader). */
export interface ReadState {
  readonly ctx: number;
  readonly index: number;
}

/** Where a forwarded proposal went: its index and term, or a refusal naming the leader if known. */
export type ForwardResult =
  | { readonly pid: string; readonly accepted: true; readonly index: number; readonly term: number }
  | { readonly pid: string; readonly accepted: false; readonly leader: NodeId | null };

/**
 * The effects the protocol asks for, in the order the driver must perform them
 * (etcd's Ready contract):
 * 1. persist `snapshot`, `hardState` and `entries` (one atomic, synced write);
 * 2. then send `messages`: a vote or an append acknowledgement must never leave before the
 *    state it promises is durable;
 * 3. then restore the state machine from `snapshot`, if any, and apply `committed`, in order;
 * 4. then call `advance(ready)`.
 */
export interface Ready {
  readonly softState: SoftState | null;
  readonly hardState: HardState | null;
  /** A leader's snapshot this member installs: it replaces the log and the state machine. */
  readonly snapshot: Snapshot | null;
  readonly entries: readonly Entry[];
  readonly messages: readonly Message[];
  readonly committed: readonly Entry[];
  readonly readStates: readonly ReadState[];
  readonly forwardResults: readonly ForwardResult[];
}
