import type { NodeId } from '../raft/types.js';
import { isCancelledRun, runsOf } from '../scheduler/records.js';
import type { SchedulerState } from '../scheduler/state.js';
import type { SlotBatches } from '../runtime/fanout/slot-batches.js';

/** One claimed slot as `history()` shows it. */
export interface SlotHistory {
  readonly job: string;
  readonly slot: Date;
  /** The claim's current token: a move gives a new one, and so does recording the slot missed. */
  readonly fencingToken: number;
  readonly assignees: readonly NodeId[];
  /**
   * The latest outcome per member, with the token it was recorded under (an outcome under an
   * older token is a previous attempt's). `outcome` is a run's (`succeeded`, `failed`,
   * `aborted`, `interrupted`), a slot's that was not run (`skipped`, `replaced`), or `missed`:
   * nobody ran it and nobody will, recorded by the leader, with the reason in `error`. A slot
   * that fired while its job was paused is `skipped` with the error PAUSED_REASON (`paused: ...`).
   * A run an operator cancelled (`cluster.cancel()`) is `cancelled`, with CANCELLED_REASON
   * (`cancelled: ...`) in `error`, whether it was running or had not started.
   */
  readonly outcomes: Readonly<Record<string, { readonly outcome: string; readonly atMs: number; readonly token: number; readonly error?: string }>>;
  /** Present, true, on a slot made by `cluster.trigger()`: an extra slot, run even while its job is paused. */
  readonly trigger?: true;
  /** Present once an operator cancelled the slot's runs under the current token: when (the cluster's time) and the member asked. */
  readonly cancelled?: { readonly atMs: number; readonly by: NodeId };
  /** Runs in progress under the current token (started per the log, no outcome yet), by member. */
  readonly running: Readonly<Record<string, { readonly startedAtMs: number }>>;
  /** The work items its runs emitted (`ctx.emit`), as this member applied them; absent when none (see SlotBatchTally). */
  readonly batches?: SlotBatches;
}

/**
 * Recent claims and their outcomes, the latest claimed first (the log's order of each slot's
 * first claim, not the slots' nor the tokens': a moved slot keeps its place under its new token),
 * at most `limit` (default 100), of one job or
 * all. Bounded by what the state machine keeps. Pure: `Cluster.history()` shows this member's
 * state through it, and the simulator checks every member's.
 */
export function historyOf(state: SchedulerState, options: { readonly job?: string; readonly limit?: number } = {}, batchesOf: (job: string, slotMs: number) => SlotBatches | null = () => null): SlotHistory[] {
  const limit = options.limit ?? 100;
  const claims = [...state.claims.values()].filter((c) => options.job === undefined || c.job === options.job);
  return claims
    .slice(-limit)
    .reverse()
    .map((c) => {
      const batches = batchesOf(c.job, c.slotMs);
      return {
        job: c.job,
        slot: new Date(c.slotMs),
        fencingToken: c.token,
        assignees: c.assignees,
        outcomes: Object.fromEntries(c.outcomes),
        running: Object.fromEntries(runsOf(c).map((r) => [r.member, { startedAtMs: r.startedAtMs }])),
        ...(c.trigger === true ? { trigger: true as const } : {}),
        ...(isCancelledRun(c.cancelled) && c.cancelled.token === c.token ? { cancelled: { atMs: c.cancelled.atMs, by: c.cancelled.byMember } } : {}),
        ...(batches === null ? {} : { batches }),
      };
    });
}
