/** The shapes a user of `cluster.schedule()` sees: a handler, its context, its options, and the record of a run. */
import type { NodeId } from '../../raft/types.js';
import type { AssignMode, OverlapPolicy } from '../../scheduler/command.js';
import type { Batch } from '../fanout/batches.js';
import type { EmitOptions } from '../../fanout/items.js';

/** What a handler is given for one run of a slot. */
export interface JobContext {
  readonly job: string;
  /** The slot's scheduled instant. */
  readonly slot: Date;
  /** The claim's log index: strictly increasing across the cluster. Pass it to stores that reject older tokens. */
  readonly fencingToken: number;
  readonly attempt: number;
  /**
   * Aborted when the run no longer holds its claim, with a `RunAbortedError` saying why (its
   * `code`): its timeout passed (CRONRAFT_RUN_TIMEOUT), its slot moved to another member under
   * a newer token (CRONRAFT_RUN_REASSIGNED), this member lost the leader for longer than its
   * lease (CRONRAFT_RUN_INTERRUPTED, mode 'one'), a later slot of the job replaced it (overlap
   * 'replace': CRONRAFT_RUN_REPLACED), an operator cancelled it (`cluster.cancel()`:
   * CRONRAFT_RUN_CANCELLED), or the member stops (CRONRAFT_RUN_STOPPING).
   */
  readonly signal: AbortSignal;
  /**
   * Emits work items to `topic` from this slot: each item's context names this job and slot.
   * Resolves once every item is committed and applied on this member, with their Batch, whose
   * `settled()` waits until each succeeded or went to the dead letters.
   * Only while the run goes on: once its signal aborted, it rejects with the signal's reason, and
   * once the handler returned or threw, with RunAbortedError CRONRAFT_RUN_ENDED; an emit under
   * way then proposes no more of its entries (those already proposed may still apply).
   * Before cluster version 3 it waits for it, proposing nothing meanwhile (version-waits.ts).
   * @throws InvalidArgumentError, BackpressureError, VersionNotActiveError (cluster version 3 did not come), RunAbortedError
   */
  readonly emit: <T>(topic: string, items: readonly T[], options?: EmitOptions<T>) => Promise<Batch>;
}

export type JobHandler = (ctx: JobContext) => unknown;

export interface JobOptions {
  /** `'one'`: one member runs each slot (default); `'all'`: every member with a handler does. */
  readonly mode?: AssignMode | undefined;
  /** A run is aborted (its signal fires) after this long. @default 60000 */
  readonly timeoutMs?: number | undefined;
  /** Slots missed while no claim could be made: `'latest'` (default), `'none'`, or all within a window. */
  readonly catchUp?: 'latest' | 'none' | { readonly windowMs: number; readonly maxSlots: number } | undefined;
  /** A failed or timed-out run is retried this many times, on another member when there is one. @default 0 */
  readonly retries?: number | undefined;
  /** The first retry waits this long after the failure; each next one twice as long. @default 1000 */
  readonly retryDelayMs?: number | undefined;
  /**
   * What a slot does when it fires while another run of the job is in progress (on any member
   * for mode 'one', on this member for mode 'all'): `'skip'` it (recorded as skipped), `'allow'`
   * both, `'queue'` it until the other ends (at most MAX_QUEUED_RUNS_PER_JOB wait; more are
   * skipped), or `'replace'` the other (its signal fires). Replicated with the job. @default 'skip'
   */
  readonly overlap?: OverlapPolicy | undefined;
  /**
   * When more slots are due on a member than its `maxConcurrent` allows, higher priorities start
   * first (first come first served within a priority; a waiting run gains one level per second
   * waited, so none starves). Local to each member. @default 0
   */
  readonly priority?: number | undefined;
}

/** One run of a slot on this member, as reported to `onRun` and kept in history. */
export interface RunRecord {
  readonly job: string;
  readonly slotMs: number;
  readonly fencingToken: number;
  readonly member: NodeId;
  readonly startedAtMs: number;
  readonly endedAtMs: number;
  /**
   * `replaced`: a later slot of the job replaced it (overlap 'replace'); `cancelled`: an
   * operator cancelled it (`cluster.cancel()`), never retried. The reason is in `error`.
   */
  readonly outcome: 'succeeded' | 'failed' | 'aborted' | 'interrupted' | 'replaced' | 'cancelled';
  readonly error?: string;
  /** 1 for the slot's first run; one more each time it was moved or retried (as JobContext's). */
  readonly attempt: number;
  /** Retries the job's policy still allows the slot if this run failed or timed out: 0 when it was the last try. */
  readonly retriesLeft: number;
}
