import type { FanoutCommand } from '../../fanout/command.js';
import { planEarlyLeases } from '../../fanout/early-leases.js';
import { EmitIds } from '../../fanout/emit-ids.js';
import { planDelivery, RateBuckets } from '../../fanout/planner.js';
import { PrefetchDepths } from '../../fanout/prefetch-depths.js';
import type { FanoutState } from '../../fanout/state.js';
import type { NodeId } from '../../raft/types.js';
import type { Timers } from '../../time/clock.js';
import { Periodic } from '../../time/periodic.js';

/**
 * The leader's side of fan-out (issue 19): it runs the pure plan (fanout/planner.ts) as items
 * and outcomes apply and on a timer, and proposes what it says, `lease` per member and
 * `reclaim`, and drops the registrations of members that left the configuration (`unconsume`,
 * one at a time). A plan gives a member nothing while a lease of its own is in flight (its `busy`
 * set: one plan's lease, in several proposals when it is given more than MAX_ITEMS_PER_LEASE items),
 * nor is a reclaim proposed while one is, so that a plan never counts a member's items in flight
 * short (an early lease counts them as held instead). The items of a lease in flight are given to no other member meanwhile
 * (planner.ts, DeliveryInput.leasing). Each member's prefetch is as deep as PrefetchDepths says.
 * A member that is not the leader plans nothing, and a new leader starts its rate buckets empty
 * and every prefetch at the first depth.
 *
 * The leader also leases an emit's items as it appends the emit (`appended`), so that the lease
 * commits with it (fanout/early-leases.ts), with the ids it tells them to take (fanout/emit-ids.ts).
 */

/** How often the leader plans when nothing applied asks it to: deadlines, backoffs and rates pass with time. */
export const DELIVERY_INTERVAL_MS = 100;

/** An emit the leader appended, as `appended` is told of it. */
export interface AppendedEmit {
  readonly index: number;
  readonly topic: string;
  /** The ids it takes once applied: its items; null for a requeue (the dead letters it finds then). */
  readonly count: number | null;
  /** Whether an item of it has a key: none is leased early. */
  readonly keyed: boolean;
}

export interface LeaderDeliveryOptions {
  readonly state: FanoutState;
  readonly timers: Timers;
  readonly isLeader: () => boolean;
  /** The term this member is in: a term of leading starts afresh (`#leading`), however briefly another member led before it. */
  readonly term: () => number;
  /** The cluster's time, which the state's deadlines and backoffs are in. */
  readonly clusterNowMs: () => number;
  /** Whether a member may be given work now (live, caught up, clock in sync, not stopping). */
  readonly eligible: (member: NodeId) => boolean;
  /** Whether a member is in the configuration (the registrations of one that left are dropped). */
  readonly configured: (member: NodeId) => boolean;
  /** Whether a member's leases must be taken back now (planner.ts, DeliveryInput.lost). */
  readonly lost: (member: NodeId) => boolean;
  /** The index of the log this member's state applied up to (for the ids of emits appended, fanout/emit-ids.ts). */
  readonly appliedIndex: () => number;
  /** Proposes a command; settles once it applied here or failed. */
  readonly propose: (command: FanoutCommand) => Promise<unknown>;
  /** @default DELIVERY_INTERVAL_MS */
  readonly intervalMs?: number;
}

export class LeaderDelivery {
  readonly #o: LeaderDeliveryOptions;
  readonly #ticks: Periodic;
  /**
   * The busy members, each with its lease proposals in flight: a member given more than
   * MAX_ITEMS_PER_LEASE items at once gets them in several, and stays busy until the last applies
   * (once the first did, the next plan would count its items short, and lease to it what the
   * apply-time bound then refuses).
   */
  readonly #busy = new Map<NodeId, number>();
  /** The items of the lease proposals in flight (bounded by them: members times MAX_ITEMS_PER_LEASE). */
  readonly #leasing = new Set<number>();
  /** How many of them each member's proposals hold (an early lease counts them as held). */
  readonly #leasingItems = new Map<NodeId, number>();
  /** The ids of the emits appended in this term of leading (early leases). */
  readonly #emitIds = new EmitIds();
  /**
   * Per topic, the last emit appended in this term of leading whose items were not all leased
   * early: until it applies, no later emit of the topic is leased early, so that its items go
   * first. Those applied are dropped at each look: bounded by the emits appended and not applied.
   */
  #leftOver = new Map<string, number>();
  #rates = new RateBuckets();
  #depths = new PrefetchDepths();
  #reclaiming = false;
  #unconsuming = false;
  /** The term this member led in when last looked, 0 when it did not lead. */
  #leadingTerm = 0;
  #planSoon = false;
  /** Proposals made, for tests and state. */
  proposed = 0;

  constructor(options: LeaderDeliveryOptions) {
    this.#o = options;
    this.#ticks = new Periodic(options.timers, options.intervalMs ?? DELIVERY_INTERVAL_MS, () => this.plan(true));
  }

  start(): void {
    this.#ticks.start();
  }

  stop(): void {
    this.#ticks.stop();
  }

  /** Something applied that may change the plan (an emit, outcomes, a reclaim, a consumer): plans once this turn's applies are done. */
  soon(): void {
    if (this.#planSoon) return;
    this.#planSoon = true;
    queueMicrotask(() => {
      this.#planSoon = false;
      this.plan(false);
    });
  }

  /**
   * Entries `from` to `to` were appended to this leader's log, and `emits` are the emits among
   * them, in log order: each that leases early proposes its lease now, to join its write and
   * appends (fanout/early-leases.ts).
   */
  appended(from: number, to: number, emits: readonly AppendedEmit[]): void {
    // Told of every entry, to see gaps; asked whether it leads only when it has emits to lease.
    if (emits.length > 0 && !this.#leading()) return;
    this.#emitIds.seen(from, to);
    const o = this.#o;
    let nowMs: number | null = null;
    let eligible: ((member: NodeId) => boolean) | null = null;
    const applied = o.appliedIndex();
    for (const [topic, index] of this.#leftOver) if (index <= applied) this.#leftOver.delete(topic);
    for (const emit of emits) {
      const firstId = this.#emitIds.emitted(emit.index, emit.count, o.state.nextItemId, applied);
      if (firstId === null || emit.keyed || emit.count === null || this.#leftOver.has(emit.topic)) {
        this.#leftOver.set(emit.topic, emit.index);
        continue;
      }
      nowMs ??= o.clusterNowMs();
      eligible ??= this.#eligibleOnce();
      const leases = planEarlyLeases({
        state: o.state,
        topic: emit.topic,
        firstId,
        count: emit.count,
        nowMs,
        eligible,
        leasingOf: (member) => this.#leasingItems.get(member) ?? 0,
        leasing: this.#leasing,
        rates: this.#rates,
        prefetch: (topic, member) => this.#depths.of(topic, member),
      });
      let leased = 0;
      for (const lease of leases) {
        this.#proposeLease(lease.member, lease.ids, nowMs, emit.topic);
        leased += lease.ids.length;
      }
      if (leased < emit.count) this.#leftOver.set(emit.topic, emit.index);
    }
  }

  /** One round: the plan, and its proposals; `deadlines`: whether it looks for leases past their deadline (planner.ts, DeliveryInput.deadlines). */
  plan(deadlines = true): void {
    if (!this.#leading()) return;
    const o = this.#o;
    const nowMs = o.clusterNowMs();
    const eligible = this.#eligibleOnce();
    const depths = this.#depths;
    depths.update(o.state, this.#busy);
    const prefetch = (topic: string, member: NodeId): number => depths.of(topic, member);
    const plan = planDelivery({ state: o.state, nowMs, eligible, configured: o.configured, lost: o.lost, busy: this.#busy, leasing: this.#leasing, rates: this.#rates, deadlines, prefetch });
    this.#rates.prune((topic) => o.state.topics.has(topic));
    if (plan.reclaim.length > 0 && !this.#reclaiming) {
      this.#reclaiming = true;
      this.#propose({ type: 'reclaim', leases: plan.reclaim, atMs: nowMs }, () => {
        this.#reclaiming = false;
      });
    }
    const departed = plan.departed[0];
    if (departed !== undefined && !this.#unconsuming) {
      this.#unconsuming = true;
      this.#propose({ type: 'unconsume', topic: departed.topic, member: departed.member }, () => {
        this.#unconsuming = false;
      });
    }
    for (const lease of plan.leases) this.#proposeLease(lease.member, lease.ids, nowMs);
  }

  /**
   * Whether this member leads now. A new term of leading starts with empty buckets (no burst
   * past the rate at a change of leader), every member's prefetch at the first depth, and no
   * ids of emits known: by the term, so that a member that lost the lead and won it back between
   * two looks does not keep buckets filled while another member leased.
   */
  #leading(): boolean {
    const leading = this.#o.isLeader();
    const term = leading ? this.#o.term() : 0;
    if (term !== this.#leadingTerm) {
      this.#rates = new RateBuckets();
      this.#depths = new PrefetchDepths();
      this.#emitIds.reset();
      this.#leftOver = new Map();
      this.#leadingTerm = term;
    }
    return leading;
  }

  /** Whether a member may be given work, asked once per member for the caller's round: a plan asks for every lease it looks at. */
  #eligibleOnce(): (member: NodeId) => boolean {
    const looked = new Map<NodeId, boolean>();
    return (member) => {
      let yes = looked.get(member);
      if (yes === undefined) looked.set(member, (yes = this.#o.eligible(member)));
      return yes;
    };
  }

  /**
   * Proposes a lease of `ids` to `member`: busy, and its items given to no other, until it applies
   * or fails. An early lease names its topic: the ids it guessed may be another topic's.
   */
  #proposeLease(member: NodeId, ids: readonly number[], nowMs: number, topic?: string): void {
    this.#busy.set(member, (this.#busy.get(member) ?? 0) + 1);
    this.#leasingItems.set(member, (this.#leasingItems.get(member) ?? 0) + ids.length);
    for (const id of ids) this.#leasing.add(id);
    this.#propose(topic === undefined ? { type: 'lease', member, ids, atMs: nowMs } : { type: 'lease', member, ids, atMs: nowMs, topic }, () => {
      const left = (this.#busy.get(member) ?? 1) - 1;
      if (left > 0) this.#busy.set(member, left);
      else this.#busy.delete(member);
      const items = (this.#leasingItems.get(member) ?? ids.length) - ids.length;
      if (items > 0) this.#leasingItems.set(member, items);
      else this.#leasingItems.delete(member);
      for (const id of ids) this.#leasing.delete(id);
    });
  }

  #propose(command: FanoutCommand, done: () => void): void {
    this.proposed++;
    // Applied or failed, the next round plans from the state as it is: a failure is retried then.
    this.#o.propose(command).then(
      () => {
        done();
        this.soon();
      },
      () => done(),
    );
  }
}
