import type { NodeId } from '../raft/types.js';
import type { SchedulerCommand } from './command.js';
import type { SchedulerState } from './state.js';

export interface DeparturesInput {
  /** The members of the configuration, voters and learners: any other member has left the cluster. */
  readonly configured: ReadonlySet<NodeId>;
  /**
   * Members the leader counts as holding their claims (MemberReach.holding): one outside the
   * configuration in it may not know it was removed, and starts its claims while its lease lasts,
   * so it stays a handler of its jobs until it is out of it (lost). @default none
   */
  readonly holding?: ReadonlySet<NodeId> | undefined;
  readonly nowMs: number;
  readonly maxCommands: number;
}

/**
 * What the leader proposes for members no longer in the configuration (removed, or gone with
 * `leave`), so that work follows the members: each share of a mode 'all' slot such a member was
 * given and reported nothing for is recorded as missed (`forfeit`, reason 'member-removed'),
 * and so is its run of a mode 'one' slot that a later slot replaced (overlap 'replace': the
 * member would have reported it `replaced`, and the slot never moves); and the member no longer
 * counts as a handler of any job (`unregister`), so that no later slot is planned for it and a
 * fixed-delay job does not wait for it; but only once the leader no longer counts it as holding
 * its claims (`holding`): unregistered, its claims not started would count as given back
 * (planReassignments' `released`) and move at once, while a member that has not learned of its
 * removal starts them at their instants. Its other mode 'one' claims need nothing here: it is not
 * eligible, so planReassignments moves them once it no longer holds them (or, past the horizon,
 * records them missed). Pure,
 * like `plan`: the commands apply only while still due (a forfeit under the claim's token, to a
 * share with no outcome), so a plan made on a state that moved since changes nothing twice.
 *
 * Reads every kept claim: the leader calls it only while a member outside the configuration may
 * have work left (see LeaderPlanning), not on every plan.
 */
export function planDepartures(state: SchedulerState, input: DeparturesInput): SchedulerCommand[] {
  const out: SchedulerCommand[] = [];
  for (const claim of state.claims.values()) {
    if (out.length >= input.maxCommands) return out;
    // A mode 'one' slot moves (planReassignments), unless a later slot replaced its run.
    if (state.jobs.get(claim.job)?.mode !== 'all' && claim.cancelled?.token !== claim.token) continue;
    for (const member of claim.assignees) {
      if (input.configured.has(member) || claim.outcomes.get(member)?.token === claim.token) continue;
      out.push({ type: 'forfeit', job: claim.job, slotMs: claim.slotMs, token: claim.token, member, atMs: input.nowMs });
    }
  }
  for (const job of state.jobs.values()) {
    for (const member of job.handlers) {
      if (out.length >= input.maxCommands) return out;
      if (!input.configured.has(member) && input.holding?.has(member) !== true) out.push({ type: 'unregister', job: job.name, member });
    }
  }
  return out;
}
