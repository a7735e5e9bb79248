import type { NodeId } from '../raft/types.js';
import { freeCapacity, leasesOf, Runs, wantedWithin, type RateBuckets } from './planner.js';
import type { FanoutState, TopicRecord } from './state.js';
import { rateOf } from './topic-rate.js';

/**
 * The leases a leader proposes for an emit's items as it appends the emit (issue 19), pure.
 * Leased only once the emit applied, an item waited for two rounds through the log before it
 * started: the emit's, then its lease's. Leased as the emit is appended, with the ids the items
 * will take (emit-ids.ts), the lease joins the emit's write and its appends, and commits with
 * it. A lease applies only to items pending, due and ready, on a topic its member consumes with
 * room, and an early lease only to items of its emit's topic, which it names (FanoutState), so a
 * lease planned on a wrong guess of the ids, or of the room, leases what it may within that
 * topic's rate and leaves the rest to the plan that follows the emit's apply.
 *
 * The emit's items go to eligible consumers by free room in runs of up to a member's
 * parallelism, within the topic's rate, as planDelivery hands out items. Room counts the items
 * of the member's lease proposals in flight as held: unlike planDelivery, this does not pass
 * over a member with a lease in flight, or the next emit would wait for it. Nothing is leased
 * early while items of the topic wait in its ready set (to be leased, or out a retry's backoff),
 * nor while an earlier emit of it, not yet applied, was not all leased early (LeaderDelivery
 * keeps those): they go first, at the plan after the emit applies; nor are keyed items, whose
 * lines only the apply knows.
 */

/** Items of a topic looked at for one waiting to be leased: past it, some are taken to wait. */
export const MAX_WAITING_SCAN = 256;

export interface EarlyLeaseInput {
  readonly state: FanoutState;
  readonly topic: string;
  /** The ids the emit's items will take, in order. */
  readonly firstId: number;
  readonly count: number;
  /** The cluster's time. */
  readonly nowMs: number;
  /** Whether a member may be given work now (planner.ts, DeliveryInput.eligible). */
  readonly eligible: (member: NodeId) => boolean;
  /** Items in a member's lease proposals in flight, of any topic: held, for its room. */
  readonly leasingOf: (member: NodeId) => number;
  /** The items in lease proposals in flight (planner.ts, DeliveryInput.leasing). */
  readonly leasing: ReadonlySet<number>;
  /** The topics' rate limits, the leader's own (see RateBuckets). */
  readonly rates: RateBuckets;
  /** How deep the leader fills a member's prefetch of a topic, per unit of its parallelism (prefetch-depths.ts). */
  readonly prefetch: (topic: string, member: NodeId) => number;
}

/** The leases for an emit's items about to be appended (see the module's comment); none when it must wait for its apply. */
export function planEarlyLeases(input: EarlyLeaseInput): Array<{ member: NodeId; ids: number[] }> {
  const topic = input.state.topics.get(input.topic);
  if (topic === undefined || input.count === 0 || waiting(topic, input.leasing)) return [];
  const free = freeCapacity(topic, input.eligible, input.leasingOf, input.prefetch);
  const { wanted } = wantedWithin(free, input.state.leaseRoom);
  if (wanted === 0) return [];
  const allowed = input.rates.take(topic.name, rateOf(topic), input.nowMs, Math.min(wanted, input.count));
  const byMember = new Map<NodeId, number[]>();
  const runs = new Runs(topic, free, byMember);
  for (let id = input.firstId; runs.given < allowed && runs.give(id); id++);
  input.rates.giveBack(topic.name, allowed - runs.given);
  return leasesOf(byMember);
}

/** Whether an item of `topic` waits to be leased (one not in a lease proposal in flight), or might: past MAX_WAITING_SCAN, some are taken to. */
function waiting(topic: TopicRecord, leasing: ReadonlySet<number>): boolean {
  let scanned = 0;
  for (const id of topic.ready) {
    if (!leasing.has(id)) return true;
    if (++scanned >= MAX_WAITING_SCAN) return true;
  }
  return false;
}
