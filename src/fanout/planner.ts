import type { NodeId } from '../raft/types.js';
import { MAX_ITEMS_PER_LEASE, MAX_OUTCOMES_PER_COMMAND } from './command.js';
import { textBytes } from './footprint.js';
import { leasedUpTo, PREFETCH_PER_PARALLELISM } from './prefetch.js';
import type { FanoutState, TopicRecord } from './state.js';
import { rateOf } from './topic-rate.js';

/**
 * The leader's delivery of work items (issue 19), pure: from the replicated state, which
 * members may take work now and the time, the leases to propose and the leases to take back.
 * What it returns goes through the log (`lease`, `reclaim`); FanoutState.apply checks each item
 * again there, so a plan made from a state a few entries old is safe.
 */

/**
 * Items looked at per topic and round past the ones leased: items waiting out a backoff stay in
 * the ready set, and a round must not walk all of a long one to find the few that are due.
 */
export const MAX_SCAN_PER_ROUND = 4096;

/** The most a topic's rate limit lets start at once after a quiet spell: one second's worth. */
export const RATE_BURST_SECONDS = 1;

export interface DeliveryInput {
  readonly state: FanoutState;
  /** The cluster's time. */
  readonly nowMs: number;
  /** Whether a member may be given work now: live, caught up, clock in sync, not stopping. */
  readonly eligible: (member: NodeId) => boolean;
  /** Whether a member is in the configuration: the registrations of one that left are dropped. */
  readonly configured: (member: NodeId) => boolean;
  /**
   * Whether a member's leases must be taken back now: it is gone (its connection dropped, or out
   * of the configuration) or silent past its lease, after which it aborts its own runs. A member
   * merely not eligible (silent for a while, skewed, being sent a snapshot) gets no new work but
   * keeps what it runs: taking that back would run it twice.
   */
  readonly lost: (member: NodeId) => boolean;
  /**
   * Members with a lease proposed and not yet applied: given nothing more until it applies, so
   * that their items in flight are never counted short.
   */
  readonly busy: Pick<ReadonlySet<NodeId>, 'has'>;
  /**
   * Items in those lease proposals: still ready in the state until their lease applies, and
   * passed over, so that no other member's lease names them only to have them skipped.
   */
  readonly leasing?: ReadonlySet<number>;
  /** The topics' rate limits, the leader's own (see RateBuckets). */
  readonly rates: RateBuckets;
  /**
   * Whether to look for leases past their deadline this round (default true). A deadline is a
   * timeout and a grace away, so the leader's timed rounds find them in time; the rounds it runs
   * as each command applies look only for the leases of members lost, and walk the leases only
   * when one of their members is.
   */
  readonly deadlines?: boolean;
  /**
   * How deep the leader fills a member's prefetch on a topic, per unit of its parallelism
   * (prefetch.ts; the leader's own, prefetch-depths.ts): PREFETCH_PER_PARALLELISM when not given.
   */
  readonly prefetch?: (topic: string, member: NodeId) => number;
}

export interface DeliveryPlan {
  readonly leases: ReadonlyArray<{ readonly member: NodeId; readonly ids: readonly number[] }>;
  readonly reclaim: ReadonlyArray<{ readonly id: number; readonly token: number }>;
  /** Registrations of members no longer in the configuration, to drop (`unconsume`). */
  readonly departed: ReadonlyArray<{ readonly topic: string; readonly member: NodeId }>;
}

/** The plan for one round (see the module's comment). */
export function planDelivery(input: DeliveryInput): DeliveryPlan {
  return { leases: planLeases(input), reclaim: planReclaim(input), departed: planDeparted(input) };
}

/**
 * Leases that must end: their member is lost (see DeliveryInput.lost), or they ran past the
 * deadline. A live member that stopped consuming the topic keeps its leases: it is handing
 * over, and finishes or gives back what it holds.
 */
function planReclaim({ state, nowMs, lost, deadlines = true }: DeliveryInput): Array<{ id: number; token: number }> {
  // Asked once per member a round, and only of members that hold leases.
  const lostNow = new Map<NodeId, boolean>();
  for (const topic of state.topics.values()) for (const member of topic.inFlight.keys()) if (!lostNow.has(member)) lostNow.set(member, lost(member));
  if (!deadlines && ![...lostNow.values()].includes(true)) return [];
  const reclaim: Array<{ id: number; token: number }> = [];
  for (const id of state.leased) {
    if (reclaim.length >= MAX_OUTCOMES_PER_COMMAND) break;
    const item = state.items.get(id);
    const phase = item?.phase;
    if (item === undefined || phase?.kind !== 'leased') continue;
    if ((lostNow.get(phase.member) ?? lost(phase.member)) || (deadlines && nowMs > phase.deadlineMs)) reclaim.push({ id: item.id, token: phase.token });
  }
  return reclaim;
}

/** Each topic's consumers outside the configuration (removed, or left while down). */
function planDeparted({ state, configured }: DeliveryInput): Array<{ topic: string; member: NodeId }> {
  const departed: Array<{ topic: string; member: NodeId }> = [];
  for (const topic of state.topics.values()) for (const member of topic.consumers.keys()) if (!configured(member)) departed.push({ topic: topic.name, member });
  return departed;
}

/**
 * Each topic's due items, in the order they became ready, to its eligible consumers, each given
 * at most its free capacity (parallelism and prefetch less what it holds), within the topic's
 * rate, in runs of up to its parallelism: the one with the most free room (among equals, one the
 * item's id picks) takes as many as it runs at once, then the one with the most room then. A few
 * items then go to one member, which starts them all at once, in one lease and one command of
 * outcomes, rather than one item to each member, each with a lease and outcomes of its own;
 * successive emits are spread over the members as their room changes (see mostFree).
 */
function planLeases(input: DeliveryInput): Array<{ member: NodeId; ids: number[] }> {
  const byMember = new Map<NodeId, number[]>();
  // Bytes of the leases' share left for this round's leases (wantedWithin).
  let room = input.state.leaseRoom;
  for (const topic of input.state.topics.values()) {
    if (topic.ready.size === 0) continue;
    const free = freeCapacity(topic, input.eligible, (member) => (input.busy.has(member) ? null : 0), input.prefetch);
    const { wanted, longest } = wantedWithin(free, room);
    if (wanted === 0) continue;
    const allowed = input.rates.take(topic.name, rateOf(topic), input.nowMs, wanted);
    const runs = new Runs(topic, free, byMember);
    let scanned = 0;
    for (const id of topic.ready) {
      if (runs.given >= allowed || scanned >= allowed + MAX_SCAN_PER_ROUND) break;
      // Not counted as scanned: bounded by the lease proposals in flight, not by the ready set.
      if (input.leasing?.has(id) === true) continue;
      scanned++;
      const item = input.state.items.get(id);
      if (item === undefined || item.phase.kind !== 'pending' || item.phase.notBeforeMs > input.nowMs) continue;
      if (!runs.give(id)) break;
    }
    // Tokens taken but not used go back: the next round may use them.
    input.rates.giveBack(topic.name, allowed - runs.given);
    room -= runs.given * longest;
  }
  return leasesOf(byMember);
}

/**
 * The items `free` (free room per member) wants, within `room` bytes of the leases' share
 * (FanoutState.leaseRoom), each counted at the longest name of a member with room
 * (`longest`): the state leaves an item pending past that share, so none is planned past it.
 */
export function wantedWithin(free: ReadonlyMap<NodeId, number>, room: number): { wanted: number; longest: number } {
  let wanted = 0;
  let longest = 1;
  for (const [member, n] of free) {
    wanted += n;
    if (n > 0) longest = Math.max(longest, textBytes(member));
  }
  return { wanted: Math.min(wanted, Math.floor(room / longest)), longest };
}

/** Each member's ids, in leases of at most MAX_ITEMS_PER_LEASE. */
export function leasesOf(byMember: ReadonlyMap<NodeId, number[]>): Array<{ member: NodeId; ids: number[] }> {
  const leases: Array<{ member: NodeId; ids: number[] }> = [];
  for (const [member, ids] of byMember) for (let i = 0; i < ids.length; i += MAX_ITEMS_PER_LEASE) leases.push({ member, ids: ids.slice(i, i + MAX_ITEMS_PER_LEASE) });
  return leases;
}

/**
 * Items of one topic handed out in runs (see planLeases): the member with the most free room
 * (mostFree) takes a run of up to its parallelism, then the one with the most room then.
 */
export class Runs {
  readonly #topic: TopicRecord;
  readonly #free: Map<NodeId, number>;
  readonly #byMember: Map<NodeId, number[]>;
  /** The ids of the member taking the current run, and how many more the run may take. */
  #ids: number[] = [];
  #left = 0;
  /** Items given so far. */
  given = 0;

  /** `free`: each member's room, taken from as runs start; `byMember`: where the ids given go. */
  constructor(topic: TopicRecord, free: Map<NodeId, number>, byMember: Map<NodeId, number[]>) {
    this.#topic = topic;
    this.#free = free;
    this.#byMember = byMember;
  }

  /** Gives `id` to the member of the current run, or of a new one; false when no member has room. */
  give(id: number): boolean {
    if (this.#left === 0) {
      const member = mostFree(this.#free, id);
      if (member === null) return false;
      const room = this.#free.get(member) as number;
      this.#left = Math.min(room, this.#topic.consumers.get(member)?.parallelism ?? room);
      this.#free.set(member, room - this.#left);
      this.#ids = this.#byMember.get(member) ?? [];
      this.#byMember.set(member, this.#ids);
    }
    this.#ids.push(id);
    this.#left--;
    this.given++;
    return true;
  }
}

/**
 * Each eligible consumer with room (its parallelism and the prefetch the leader gives it,
 * prefetch.ts, less what it holds and what `held` adds), and how much, lowest id first. `held`
 * gives null for a member to pass over: the plan passes over one with a lease in flight, where
 * an early lease counts that lease's items as held (early-leases.ts).
 */
export function freeCapacity(topic: TopicRecord, eligible: (member: NodeId) => boolean, held: (member: NodeId) => number | null, prefetch?: (topic: string, member: NodeId) => number): Map<NodeId, number> {
  const free = new Map<NodeId, number>();
  for (const member of [...topic.consumers.keys()].sort()) {
    const more = held(member);
    if (more === null || !eligible(member)) continue;
    const settings = topic.consumers.get(member);
    const depth = prefetch?.(topic.name, member) ?? PREFETCH_PER_PARALLELISM;
    const room = settings === undefined ? 0 : leasedUpTo(topic, settings, depth) - (topic.inFlight.get(member) ?? 0) - more;
    if (room > 0) free.set(member, room);
  }
  return free;
}

/**
 * The member with the most room; null when none has any. Among equals, the first from a place
 * in `free` (in id order) that the item `id`, hashed, picks: when every member has as much room
 * (their items all done), the runs of successive rounds are spread over the members rather than
 * all given to the lowest id.
 */
function mostFree(free: ReadonlyMap<NodeId, number>, id: number): NodeId | null {
  let best: NodeId | null = null;
  let room = 0;
  let bestRank = 0;
  const start = Math.imul(id, 0x9e3779b1) >>> 0;
  let i = 0;
  for (const [member, n] of free) {
    const rank = (i++ - (start % free.size) + free.size) % free.size;
    if (n > room || (n === room && n > 0 && rank < bestRank)) {
      best = member;
      room = n;
      bestRank = rank;
    }
  }
  return best;
}


/**
 * The leader's token buckets, one per topic with a rate: a bucket fills at the rate, up to
 * RATE_BURST_SECONDS of it, and each item leased takes one. A new leader starts with empty
 * buckets, so that a change of leader never lets a burst past the rate. Bounded by the topics
 * (FanoutState's maxTopics); a topic gone is forgotten at the next `prune`.
 */
export class RateBuckets {
  readonly #buckets = new Map<string, { tokens: number; atMs: number }>();

  /** How many of `wanted` items `topic` may start now (all of them without a rate), taken from its bucket. */
  take(topic: string, ratePerSecond: number | null, nowMs: number, wanted: number): number {
    if (ratePerSecond === null) {
      this.#buckets.delete(topic);
      return wanted;
    }
    const bucket = this.#buckets.get(topic) ?? { tokens: 0, atMs: nowMs };
    bucket.tokens = Math.min(ratePerSecond * RATE_BURST_SECONDS, bucket.tokens + (Math.max(0, nowMs - bucket.atMs) * ratePerSecond) / 1000);
    bucket.atMs = nowMs;
    const n = Math.min(wanted, Math.floor(bucket.tokens));
    bucket.tokens -= n;
    this.#buckets.set(topic, bucket);
    return n;
  }

  /** Returns tokens taken and not used. */
  giveBack(topic: string, n: number): void {
    const bucket = this.#buckets.get(topic);
    if (bucket !== undefined && n > 0) bucket.tokens += n;
  }

  /** Forgets the buckets of topics no longer known. */
  prune(known: (topic: string) => boolean): void {
    for (const topic of this.#buckets.keys()) if (!known(topic)) this.#buckets.delete(topic);
  }
}
