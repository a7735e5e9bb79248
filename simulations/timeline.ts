import type { NodeId } from '../src/raft/types.js';
import type { JobSummary } from './summary.js';

/**
 * What a simulation records for people to look at (the HTML report) and for the scheduler's
 * checkers. Times `t`, `startT`, `endT` and `slotT` are simulated milliseconds since the run
 * began (true time, not any member's clock). The list is bounded by MAX_TIMELINE_EVENTS.
 */
export type TimelineEvent =
  | { readonly t: number; readonly kind: 'leader'; readonly member: NodeId; readonly term: number }
  /** The member stopped leading (stepped down, crashed, or was deposed). */
  | { readonly t: number; readonly kind: 'follower'; readonly member: NodeId; readonly term: number }
  | { readonly t: number; readonly kind: 'crash'; readonly member: NodeId }
  | { readonly t: number; readonly kind: 'restart'; readonly member: NodeId }
  /**
   * The links now blocked, one-way `[from, to]`; an empty list means the network healed. `quiet`:
   * they lose every message with their connections open (SimNetwork.mute), rather than closed.
   */
  | { readonly t: number; readonly kind: 'partition'; readonly blocked: ReadonlyArray<readonly [NodeId, NodeId]>; readonly quiet?: true }
  /** Everything `member` sends is lost until `untilT`, its connections open, while it hears the others. */
  | { readonly t: number; readonly kind: 'answers-lost'; readonly member: NodeId; readonly untilT: number }
  /** A member's clock now reads `offsetMs` ahead of true time (negative: behind). */
  | { readonly t: number; readonly kind: 'clock'; readonly member: NodeId; readonly offsetMs: number; readonly note: string }
  /** A stop-the-world stall of a member's process until `untilT`. */
  | { readonly t: number; readonly kind: 'pause'; readonly member: NodeId; readonly untilT: number }
  | { readonly t: number; readonly kind: 'claim'; readonly job: string; readonly slotT: number; readonly token: number; readonly assignees: readonly NodeId[] }
  | {
      readonly t: number;
      readonly kind: 'run';
      readonly job: string;
      readonly slotT: number;
      readonly token: number;
      readonly member: NodeId;
      readonly startT: number;
      readonly endT: number;
      readonly outcome: 'succeeded' | 'failed' | 'aborted' | 'interrupted' | 'replaced' | 'cancelled';
    }
  /**
   * An outcome the log recorded for a slot that is not a run's end: `skipped` or `replaced`
   * (its overlap policy), `cancelled` (an operator's cancel) or `interrupted` before a handler started, or `missed` (the leader's
   * `expire`), with its reason. A run's own outcome comes with its `run` event.
   */
  | { readonly t: number; readonly kind: 'outcome'; readonly job: string; readonly slotT: number; readonly token: number; readonly member: NodeId; readonly outcome: string; readonly reason?: string }
  /** Slots up to `throughT` dropped by the job's catch-up policy. */
  | { readonly t: number; readonly kind: 'missed'; readonly job: string; readonly throughT: number; readonly count: number }
  /** The fault phase ended: everything healed, crashed members restarted. */
  | { readonly t: number; readonly kind: 'healed' }
  | { readonly t: number; readonly kind: 'violation'; readonly message: string };

/** Bound on timeline events kept per run; later ones are counted, not kept. */
export const MAX_TIMELINE_EVENTS = 200_000;

/** What the report renders: a run's settings, its timeline and its verdict. */
export interface ReportInput {
  readonly seed: number;
  readonly members: readonly NodeId[];
  readonly durationMs: number;
  /** When the fault phase ended (true ms since start). */
  readonly healedAtT: number;
  /**
   * The run's jobs (lanes are drawn in this order) and what became of their slots: the table
   * shows these, which the scheduler checker counted over the whole run, not a recount of the
   * timeline, which is bounded.
   */
  readonly jobs: readonly JobSummary[];
  readonly timeline: readonly TimelineEvent[];
  readonly violations: readonly string[];
  /** The command that replays this run. */
  readonly reproduce: string;
}
