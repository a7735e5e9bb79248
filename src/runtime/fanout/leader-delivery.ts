import type { FanoutCommand } from '../../fanout/command.js';
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
 * one at a time). A member is given nothing while a lease of its own is in flight (its `busy`
 * set: one plan's lease, in several proposals when it is given more than MAX_ITEMS_PER_LEASE items),
 * nor is a reclaim proposed while one is, so that a plan never counts a member's items in flight
 * short. The items of a lease in flight are given to no other member meanwhile
 * (planner.ts, DeliveryInput.leasing). Each member's prefetch is as deep as PrefetchDepths says.
 * A member that is not the leader plans nothing, and a new leader starts its rate buckets empty
 * and every prefetch at the first depth.
 */

/** How often the leader plans when nothing applied asks it to: deadlines, backoffs and rates pass with time. */
export const DELIVERY_INTERVAL_MS = 100;

export interface LeaderDeliveryOptions {
  readonly state: FanoutState;
  readonly timers: Timers;
  readonly isLeader: () => boolean;
  /** The cluster's time, which the state's deadlines and backoffs are in. */
  readonly clusterNowMs: () => number;
  /** Whether a member may be given work now (live, caught up, clock in sync, not stopping). */
  readonly eligible: (member: NodeId) => boolean;
  /** Whether a member is in the configuration (the registrations of one that left are dropped). */
  readonly configured: (member: NodeId) => boolean;
  /** Whether a member's leases must be taken back now (planner.ts, DeliveryInput.lost). */
  readonly lost: (member: NodeId) => boolean;
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
  #rates = new RateBuckets();
  #depths = new PrefetchDepths();
  #reclaiming = false;
  #unconsuming = false;
  #wasLeader = false;
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

  /** One round: the plan, and its proposals; `deadlines`: whether it looks for leases past their deadline (planner.ts, DeliveryInput.deadlines). */
  plan(deadlines = true): void {
    const o = this.#o;
    const leading = o.isLeader();
    if (leading !== this.#wasLeader) {
      // A new term of leading starts with empty buckets: no burst past the rate at a change of
      // leader; and with every member's prefetch at the first depth.
      this.#rates = new RateBuckets();
      this.#depths = new PrefetchDepths();
      this.#wasLeader = leading;
    }
    if (!leading) return;
    const nowMs = o.clusterNowMs();
    // Asked once per member a round: the plan asks for every lease it looks at.
    const looked = new Map<NodeId, boolean>();
    const eligible = (member: NodeId): boolean => {
      let yes = looked.get(member);
      if (yes === undefined) looked.set(member, (yes = o.eligible(member)));
      return yes;
    };
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
    for (const lease of plan.leases) {
      const member = lease.member;
      this.#busy.set(member, (this.#busy.get(member) ?? 0) + 1);
      for (const id of lease.ids) this.#leasing.add(id);
      this.#propose({ type: 'lease', member, ids: lease.ids, atMs: nowMs }, () => {
        const left = (this.#busy.get(member) ?? 1) - 1;
        if (left > 0) this.#busy.set(member, left);
        else this.#busy.delete(member);
        for (const id of lease.ids) this.#leasing.delete(id);
      });
    }
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
