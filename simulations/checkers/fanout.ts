import type { FanoutCommand } from '../../src/fanout/command.js';
import { RATE_BURST_SECONDS } from '../../src/fanout/planner.js';
import { maxLeased } from '../../src/fanout/prefetch.js';
import type { FanoutApplyResult, FanoutState, ItemPhase } from '../../src/fanout/state.js';
import type { NodeId } from '../../src/raft/types.js';
import type { ItemEvent, SimFanout } from '../fanout.js';
import { settingsOf } from '../fanout.js';
import type { Report } from '../violations.js';

/** The window a topic's rate is counted over (ms): its rate and burst are per second. */
const RATE_WINDOW_MS = 1000;

/** An attempt of an item in progress on a member, as its handler saw it start. */
interface Attempt {
  readonly member: NodeId;
  readonly incarnation: number;
  readonly topic: string;
  readonly id: number;
  readonly token: number;
}

/** A member's fan-out state as the checker reads it: its applied state, null while it is down. */
export type FanoutStateOf = (member: NodeId) => FanoutState | null;

/**
 * Fan-out's promises (issue 19), from the log as each member applies it and from what the
 * consumers' handlers see:
 * - `fanout-lost`: every item of an emit applied settles done or dead, or is still unsettled in
 *   each member's state; it never vanishes (`checkLost`).
 * - `fanout-double-success`: a success is recorded at most once per item, on every member (the
 *   same entry, replayed, is the same record).
 * - `fanout-token`: an attempt starts only under its item's current lease to its member, in
 *   that member's applied state, with a token greater than any it ran the item under before;
 *   and it ends once its member applied a state in which that lease is no longer current.
 * - `fanout-parallelism`: no member runs more items of a topic at once than its parallelism, nor
 *   holds more of them leased than its parallelism and prefetch (src/fanout/prefetch.ts).
 * - `fanout-rate`: a topic's leases, in any second of a leader's term (by the cluster time the
 *   leader leased at), hold at most its rate plus its burst (planner.ts, RateBuckets).
 * - `fanout-agreement`: every member caught up holds the same counts per topic (`checkAgreement`).
 * The bound within which every item settles once faults heal (`fanout-settle`) is after-healing.ts's.
 */
export class FanoutChecker {
  readonly #report: Report;
  readonly #stateOf: FanoutStateOf;
  /** Per topic, its parallelism and rate, as every consumer of it registers them. */
  readonly #settings: ReadonlyMap<string, { readonly parallelism: number; readonly ratePerSecond: number | null }>;
  /** Every item emitted, by id, with its topic. */
  readonly #emitted = new Map<number, string>();
  /** The index of the `done` that recorded each success. */
  readonly #succeededAt = new Map<number, number>();
  readonly #dead = new Set<number>();
  /** The attempts in progress, by `member incarnation id`. */
  readonly #attempts = new Map<string, Attempt>();
  /** Attempts in progress per `member incarnation topic`. */
  readonly #running = new Map<string, number>();
  /** The latest token each member ran each item under, by `member id`. */
  readonly #lastToken = new Map<string, number>();
  /** The last index of a fan-out command any member applied: a member that applied it holds the latest fan-out state. */
  #lastIndex = 0;
  /** The last lease entry counted towards a rate (the first member to apply an index counts it). */
  #lastLeaseIndex = 0;
  #leaseTerm = 0;
  /** The cluster time of the term's latest lease counted. */
  #leaseAtMs = -Infinity;
  /** The current term's leases per topic with a rate, within the last window: cluster time leased at, and items. */
  readonly #leases = new Map<string, Array<{ readonly atMs: number; readonly count: number }>>();

  constructor(report: Report, fanout: SimFanout, stateOf: FanoutStateOf) {
    this.#report = report;
    this.#stateOf = stateOf;
    this.#settings = new Map(fanout.topics.map((t) => [t.name, settingsOf(t)]));
  }

  /** Items emitted so far (every emit applied). */
  get emitted(): number {
    return this.#emitted.size;
  }

  get succeeded(): number {
    return this.#succeededAt.size;
  }

  get dead(): number {
    return this.#dead.size;
  }

  /** `member` applied a fan-out command at `index` of `term`, with its result. */
  onApplied(t: number, member: NodeId, index: number, term: number, command: FanoutCommand, result: FanoutApplyResult): void {
    this.#lastIndex = Math.max(this.#lastIndex, index);
    if (!result.ok) return;
    if (command.type === 'emit' || command.type === 'requeue') {
      const first = result.firstId;
      if (first !== undefined) for (let id = first; id < first + (result.count ?? 0); id++) this.#emitted.set(id, command.topic);
    } else if (command.type === 'done') {
      for (const id of result.succeeded ?? []) {
        const at = this.#succeededAt.get(id);
        if (at === undefined) this.#succeededAt.set(id, index);
        else if (at !== index) this.#report(t, 'fanout-double-success', `${member} recorded item ${id}'s success at index ${index}, recorded already at ${at}`);
      }
      for (const id of result.dead ?? []) this.#dead.add(id);
    } else if (command.type === 'lease' && index > this.#lastLeaseIndex) {
      this.#lastLeaseIndex = index;
      this.#countLease(t, term, command, result.leased ?? []);
      this.#checkLeased(t, member, command.member);
    }
  }

  /** In `applier`'s state, just after a lease to `member` applied: `member` holds no more of any topic leased than its parallelism and prefetch. */
  #checkLeased(t: number, applier: NodeId, member: NodeId): void {
    const state = this.#stateOf(applier);
    if (state === null) return;
    const held = new Map<string, number>();
    for (const id of state.leased) {
      const item = state.items.get(id);
      if (item?.phase.kind === 'leased' && item.phase.member === member) held.set(item.topic, (held.get(item.topic) ?? 0) + 1);
    }
    for (const [name, n] of held) {
      const topic = state.topics.get(name);
      const settings = topic?.consumers.get(member);
      if (topic === undefined || settings === undefined) continue;
      const most = maxLeased(topic, settings);
      if (n > most) this.#report(t, 'fanout-parallelism', `${member} holds ${n} items of ${name} leased, over its parallelism and prefetch of ${most}`);
    }
  }

  /** A handler of `topic` on `member` (its life `incarnation`) started or ended an attempt. */
  onItem(t: number, member: NodeId, incarnation: number, topic: string, event: ItemEvent): void {
    const { id, fencingToken: token } = event.ctx;
    const key = `${member} ${incarnation} ${id}`;
    const runningKey = `${member} ${incarnation} ${topic}`;
    if (event.type === 'end') {
      if (!this.#attempts.delete(key)) return;
      this.#running.set(runningKey, (this.#running.get(runningKey) ?? 1) - 1);
      return;
    }
    // An attempt aborted before its handler was called never ran.
    if (event.ctx.signal.aborted) return;
    const phase = this.#stateOf(member)?.items.get(id)?.phase;
    if (phase?.kind !== 'leased' || phase.member !== member || phase.token !== token) this.#report(t, 'fanout-token', `${member} started item ${id} under token ${token}, but the item is ${describe(phase)}`);
    const last = this.#lastToken.get(`${member} ${id}`);
    if (last !== undefined && token <= last) this.#report(t, 'fanout-token', `${member} started item ${id} under token ${token}, after running it under ${last}`);
    this.#lastToken.set(`${member} ${id}`, token);
    this.#attempts.set(key, { member, incarnation, topic, id, token });
    const running = (this.#running.get(runningKey) ?? 0) + 1;
    this.#running.set(runningKey, running);
    const parallelism = this.#settings.get(topic)?.parallelism ?? Number.POSITIVE_INFINITY;
    if (running > parallelism) this.#report(t, 'fanout-parallelism', `${member} runs ${running} items of ${topic} at once, over its parallelism of ${parallelism}`);
  }

  /** `member`'s life `incarnation` ended: its attempts with it (its stop aborted them). */
  onStop(member: NodeId, incarnation: number): void {
    for (const [key, a] of this.#attempts) {
      if (a.member !== member || a.incarnation !== incarnation) continue;
      this.#attempts.delete(key);
      this.#running.delete(`${member} ${incarnation} ${a.topic}`);
    }
  }

  /** After every event: each attempt in progress still holds its item's current lease on its member. */
  afterEvent(t: number): void {
    for (const [key, a] of this.#attempts) {
      const phase = this.#stateOf(a.member)?.items.get(a.id)?.phase;
      if (phase?.kind === 'leased' && phase.member === a.member && phase.token === a.token) continue;
      this.#report(t, 'fanout-token', `${a.member} still runs item ${a.id} under token ${a.token}, a lease its applied state no longer holds: the item is ${describe(phase)}`);
      // Reported once: it is no longer followed.
      this.#attempts.delete(key);
      const runningKey = `${a.member} ${a.incarnation} ${a.topic}`;
      this.#running.set(runningKey, (this.#running.get(runningKey) ?? 1) - 1);
    }
  }

  /** Every item emitted is settled (done or dead) or unsettled in each state of `members`. */
  checkLost(t: number, members: readonly NodeId[]): void {
    for (const member of members) {
      const state = this.#stateOf(member);
      if (state === null) continue;
      let lost = 0;
      let example = 0;
      for (const id of this.#emitted.keys()) {
        if (state.items.has(id) || this.#succeededAt.has(id) || this.#dead.has(id)) continue;
        lost++;
        example ||= id;
      }
      if (lost > 0) this.#report(t, 'fanout-lost', `${member} lost ${lost} items emitted (neither done, dead nor unsettled there), item ${example} the first`);
    }
  }

  /**
   * The members of `members` that applied the last fan-out command (they may differ in the
   * entries after it, of other kinds) hold the same fan-out state: counts per topic, items
   * unsettled, dead letters, consumers, the next item id.
   */
  checkAgreement(t: number, members: ReadonlyArray<{ readonly id: NodeId; readonly applied: number }>): void {
    let reference: { readonly id: NodeId; readonly summary: string } | null = null;
    for (const { id, applied } of members) {
      const state = this.#stateOf(id);
      if (state === null || applied < this.#lastIndex) continue;
      const summary = summaryOf(state);
      if (reference === null) reference = { id, summary };
      else if (reference.summary !== summary) this.#report(t, 'fanout-agreement', `past index ${this.#lastIndex}, ${reference.id} holds ${reference.summary} and ${id} ${summary}`);
    }
  }

  /** A lease of the current term counts towards its topic's rate: within any window, at most rate + burst. */
  #countLease(t: number, term: number, command: Extract<FanoutCommand, { type: 'lease' }>, leased: readonly number[]): void {
    // A new term, or the leader's time put right (stepped back past MAX_STAMP_HOLD_MS, which its
    // stamps do not follow under): its rate buckets count from the time as it is now, and a
    // window across the step would count leases a second or more apart as one second's.
    if (term !== this.#leaseTerm || command.atMs < this.#leaseAtMs) {
      this.#leaseTerm = term;
      this.#leases.clear();
    }
    this.#leaseAtMs = command.atMs;
    const perTopic = new Map<string, number>();
    for (const id of leased) {
      const topic = this.#emitted.get(id);
      if (topic !== undefined) perTopic.set(topic, (perTopic.get(topic) ?? 0) + 1);
    }
    for (const [topic, count] of perTopic) {
      const rate = this.#settings.get(topic)?.ratePerSecond ?? null;
      if (rate === null) continue;
      const leases = (this.#leases.get(topic) ?? []).filter((l) => l.atMs > command.atMs - RATE_WINDOW_MS);
      leases.push({ atMs: command.atMs, count });
      this.#leases.set(topic, leases);
      const limit = rate + rate * RATE_BURST_SECONDS;
      // The fullest window holding this lease starts at one of the leases before it.
      for (const from of leases) {
        let n = 0;
        for (const l of leases) if (l.atMs >= from.atMs && l.atMs < from.atMs + RATE_WINDOW_MS) n += l.count;
        if (n > limit) {
          this.#report(t, 'fanout-rate', `term ${term} leased ${n} items of ${topic} within ${RATE_WINDOW_MS} ms of cluster time from ${from.atMs}, over its rate of ${rate} plus its burst`);
          this.#leases.set(topic, []);
          return;
        }
      }
    }
  }
}

/** Where an item is in a member's state, for a report. */
function describe(phase: ItemPhase | undefined): string {
  if (phase === undefined) return 'not unsettled there';
  return phase.kind === 'pending' ? 'pending there' : `leased there to ${phase.member} under ${phase.token}`;
}

/** A member's fan-out state, as members caught up alike must hold it. */
function summaryOf(state: FanoutState): string {
  const topics = [...state.topics.values()].map((topic) => {
    const c = topic.counts;
    return `${topic.name}: emitted ${c.emitted} done ${c.done} failed ${c.failed} dead ${c.dead} stale ${c.stale} redelivered ${c.redelivered} unsettled ${topic.unsettled} dead letters ${topic.deadLetters.length} consumers ${[...topic.consumers.keys()].join(',')}`;
  });
  return `{next item ${state.nextItemId}; ${topics.join('; ')}}`;
}
