/**
 * A handler whose synchronous part, up to its first await, held this member's event loop for
 * as long as the member's lease or longer. Meanwhile the member answered nothing, so the leader
 * may have counted it lost and moved the slot (or leased the item) to another member, where it
 * runs again under a higher fencing token, while the run here went on to its end: a slot run on
 * two members, each told as succeeded on its own. Cluster's `blocked` event tells it, so that an
 * app sees why (README, "Handlers and the event loop").
 */
export type BlockedHandler =
  | { readonly kind: 'run'; readonly job: string; readonly slot: Date; readonly ms: number; readonly leaseMs: number }
  | { readonly kind: 'item'; readonly topic: string; readonly id: number; readonly ms: number; readonly leaseMs: number };

/** Where a member tells of its blocked handlers, and the lease they are held against. */
export interface BlockedHandlers {
  readonly leaseMs: number;
  readonly tell: (blocked: BlockedHandler) => void;
}

/**
 * Tells `watch` of a handler that held the loop for `heldMs` when that is its lease or more;
 * `what` names the handler's run. A listener's error is the app's, and ends no run.
 */
export function tellIfBlocked(watch: BlockedHandlers | undefined, heldMs: number, what: () => { readonly kind: 'run'; readonly job: string; readonly slot: Date } | { readonly kind: 'item'; readonly topic: string; readonly id: number }): void {
  if (watch === undefined || heldMs < watch.leaseMs) return;
  try {
    watch.tell({ ...what(), ms: heldMs, leaseMs: watch.leaseMs });
  } catch {
    // As for the run event's listeners: the run's outcome must still be recorded.
  }
}
