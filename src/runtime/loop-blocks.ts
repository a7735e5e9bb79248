/**
 * This member's event loop held for as long as its lease or longer: meanwhile the member
 * answered nothing, so the leader may have counted it lost and moved its slots (or leased its
 * items) to other members, where they run again under higher fencing tokens, while the runs here
 * went on to their ends: a slot run on two members, each told as succeeded on its own. Cluster's
 * `blocked` event tells it, so that an app sees why (README, "Handlers and the event loop"):
 * `run` and `item`, one job's or work item's handler that held the loop so before its first
 * await (with the run's fencing token, as its `run` event and `ctx` have it); `loop`, the rest of
 * a hold, seen as the member's next tick came that late: synchronous work after an await, the
 * app's own, several handlers called one after another in one turn (the items leased together)
 * each held less, the member's own long work (a snapshot restored, a long catch-up applied), a
 * long GC pause, a stopped process.
 */
export type LoopBlocked =
  | { readonly kind: 'run'; readonly job: string; readonly slot: Date; readonly fencingToken: number; readonly ms: number; readonly leaseMs: number }
  | { readonly kind: 'item'; readonly topic: string; readonly id: number; readonly fencingToken: number; readonly ms: number; readonly leaseMs: number }
  | { readonly kind: 'loop'; readonly ms: number; readonly leaseMs: number };

type Held = { readonly kind: 'run'; readonly job: string; readonly slot: Date; readonly fencingToken: number } | { readonly kind: 'item'; readonly topic: string; readonly id: number; readonly fencingToken: number };

/** Tells of the times a member's loop held past its lease, each once. */
export class LoopBlocks {
  readonly leaseMs: number;
  readonly #tell: (blocked: LoopBlocked) => void;
  /** The holds of handlers told since the member's last tick: a late tick tells the rest of its lateness only. */
  #toldSinceTickMs = 0;

  constructor(leaseMs: number, tell: (blocked: LoopBlocked) => void) {
    this.leaseMs = leaseMs;
    this.#tell = tell;
  }

  /** A handler's synchronous start, up to its first await, held the loop for `heldMs`; `what` names its run. */
  handler(heldMs: number, what: () => Held): void {
    if (heldMs < this.leaseMs) return;
    this.#toldSinceTickMs += heldMs;
    this.#told({ ...what(), ms: heldMs, leaseMs: this.leaseMs });
  }

  /**
   * The member's tick came `lateMs` after it was due: what the handlers told since the last tick
   * held is theirs, and the rest, if as long as the lease, the loop's.
   */
  tickLate(lateMs: number): void {
    const rest = lateMs - this.#toldSinceTickMs;
    this.#toldSinceTickMs = 0;
    if (rest >= this.leaseMs) this.#told({ kind: 'loop', ms: rest, leaseMs: this.leaseMs });
  }

  #told(blocked: LoopBlocked): void {
    try {
      this.#tell(blocked);
    } catch {
      // As for the run event's listeners: the run's outcome must still be recorded.
    }
  }
}
