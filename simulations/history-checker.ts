import { historyOf } from '../src/api/history.js';
import type { NodeId } from '../src/raft/types.js';
import type { SchedulerState } from '../src/scheduler/state.js';
import { SIM_EPOCH_MS } from './scheduler.js';
import type { ViolationKind } from './violations.js';

/**
 * The kind of violation this checker reports: a member's `history()` shows a claimed slot,
 * older than the bound, with no outcome under its token and no run of it in progress.
 */
export const HISTORY_OUTCOME = 'history-outcome' satisfies ViolationKind;

/** Bound on the violations reported per member: one shows the bug, the rest would crowd out others. */
const MAX_REPORTED_PER_MEMBER = 3;

/**
 * What a user finds in `history()`, on every member that is up at the end of a run: every
 * claimed slot whose instant is at or before `settledT` (true ms; after the faults healed and
 * every slot had time to run and be recorded) shows, from each of its assignees, an outcome
 * under its current token (a run's, `skipped`, `replaced` or `missed`), unless its run there is
 * still `underway` as the simulator saw it (running, or in a queue its member is working
 * through: the outcome check's excuse). Read
 * through `historyOf`, as `Cluster.history()` reads it, from each member's own state (built by
 * applying the log, restored from a snapshot, or installed from a leader's), not from the log
 * as the scheduler checker follows it: a member that shows less than the log holds is caught
 * here, and so is a run shown in progress long after it ended. Not the slots of the jobs in
 * `dropped` (a deploy dropped them): one claimed for a member that was then removed from the
 * configuration keeps no outcome until the reassignment horizon, past which the leader records
 * it missed (`expired`), since no member is left to move it to (a removed member's mode 'one'
 * claims are moved, never forfeited), and the watch after healing ends before the horizon
 * unless the seed draws a short one (seeds 14, 20 and 22 of the drop plant's options, with a
 * horizon of 15 s, record each such slot missed).
 */
export function checkHistories(
  members: ReadonlyArray<{ readonly id: NodeId; readonly state: SchedulerState }>,
  settledT: number,
  underway: (job: string, slotMs: number, member: NodeId) => boolean,
  report: (what: string) => void,
  dropped: ReadonlySet<string> = new Set(),
): void {
  for (const { id, state } of members) {
    let reported = 0;
    // A slot's instant as history() shows it is a Date, in whole milliseconds; the simulator's
    // clocks are finer, and the checkers know a slot by its exact instant, which its token gives.
    const exactSlotMs = new Map<number, number>();
    for (const claim of state.claims.values()) exactSlotMs.set(claim.token, claim.slotMs);
    for (const slot of historyOf(state, { limit: Number.POSITIVE_INFINITY })) {
      const slotT = slot.slot.getTime() - SIM_EPOCH_MS;
      if (slotT > settledT || dropped.has(slot.job)) continue;
      for (const assignee of slot.assignees) {
        if (slot.outcomes[assignee]?.token === slot.fencingToken) continue;
        if (underway(slot.job, exactSlotMs.get(slot.fencingToken) ?? slot.slot.getTime(), assignee)) continue;
        const shownRunning = slot.running[assignee] !== undefined;
        const shown = slot.outcomes[assignee];
        const earlier = shown === undefined ? 'no earlier outcome' : `${shown.outcome} under the earlier token ${shown.token}`;
        const what = shownRunning ? 'a run in progress that is not running' : 'no outcome and no run in progress';
        if (reported++ < MAX_REPORTED_PER_MEMBER) {
          report(`${id}'s history() shows ${slot.job}@${slotT.toFixed(1)} (true ms) claimed for ${assignee} under token ${slot.fencingToken} with ${what} (${earlier})`);
        }
      }
    }
  }
}
