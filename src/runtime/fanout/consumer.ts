import { RunAbortedError, thrownMessage } from '../../errors.js';
import { MAX_ERROR_LENGTH, MAX_OUTCOMES_PER_COMMAND, type ConsumerSettings, type FanoutCommand, type ItemOutcome } from '../../fanout/command.js';
import type { FanoutApplyResult, FanoutState, ItemRecord } from '../../fanout/state.js';
import { waitUntil, within } from '../scheduler/handover.js';
import { Periodic } from '../../time/periodic.js';
import type { NodeId } from '../../raft/types.js';
import type { TimerHandle, Timers } from '../../time/clock.js';
import { driverStopped } from '../driver-options.js';
import { LEASE_CHECK_MS } from '../lease.js';
import type { LoopBlocks } from '../loop-blocks.js';

/**
 * A member's side of fan-out (issue 19): the topics it consumes, the items leased to it, run
 * under their lease's token, at most its parallelism of a topic at once (the rest, leased ahead
 * as a prefetch, wait in lease order: fanout/prefetch.ts), and their outcomes, proposed in batches. An item runs only while
 * its lease is the current one: a lease taken back (reclaim) or a lost lease of the member
 * (no leader past its lease) aborts the run through `ctx.signal`, and the outcome it reports
 * then is stale, refused by the state. A restarted member runs none of the leases of its life
 * before: it gives them back once its new registration applies, so that they are leased again
 * at once rather than at their deadline.
 */

/** What an item's handler is given besides the item's bytes. */
export interface ItemContext {
  readonly id: number;
  readonly topic: string;
  /** Attempts that failed before this one, plus one. */
  readonly attempt: number;
  /** The lease's log index: greater on every delivery of the item. */
  readonly fencingToken: number;
  readonly signal: AbortSignal;
  /** The job and slot whose handler emitted the item, or null. */
  readonly job: string | null;
  readonly slot: Date | null;
}

export type ItemHandler = (data: Uint8Array, ctx: ItemContext) => unknown;

export interface FanoutConsumerOptions {
  readonly self: NodeId;
  readonly state: FanoutState;
  readonly timers: Timers;
  /** Proposes a command; settles once applied here or failed. */
  readonly propose: (command: FanoutCommand) => Promise<unknown>;
  readonly clusterNowMs: () => number;
  /** Whether this member still holds its lease: has heard from a leader lately (Member.holdsLease). */
  readonly holdsLease: () => boolean;
  /** Where a handler that held the event loop for the member's lease or longer is told of (loop-blocks.ts). */
  readonly loopBlocks?: LoopBlocks;
}

/**
 * An item running here under its lease's token. Its AbortSignal is made only when its handler
 * asks for it (`ctx.signal`): most handlers never do, and an AbortController with its listener
 * is the dearest part of a run's start. An abort before that is kept, and the signal, once made,
 * is aborted with its reason.
 */
class Running {
  #controller: AbortController | null = null;
  #aborted = false;
  #reason: unknown = undefined;

  constructor(
    readonly id: number,
    readonly token: number,
    readonly topic: string,
    readonly timeout: TimeoutGroup,
  ) {}

  get signal(): AbortSignal {
    if (this.#controller === null) {
      this.#controller = new AbortController();
      if (this.#aborted) this.#controller.abort(this.#reason);
    }
    return this.#controller.signal;
  }

  /** Aborts the signal, made or still to be made; once. */
  abort(reason: unknown): void {
    if (this.#aborted) return;
    this.#aborted = true;
    this.#reason = reason;
    this.#controller?.abort(reason);
  }
}

/**
 * The runs started in one turn with one timeout share a timer: they started at the same moment
 * and time out together. It is cleared once all of them ended, so that what holds the runs is
 * bounded by the runs still going.
 */
interface TimeoutGroup {
  readonly runs: Running[];
  live: number;
  timer: TimerHandle | null;
}

/** A lease this member gives back (proposed as a `reclaim`): the item is leased again elsewhere, no attempt counted. */
interface GiveBack {
  readonly id: number;
  readonly token: number;
}

export class FanoutConsumer {
  readonly #o: FanoutConsumerOptions;
  readonly #handlers = new Map<string, { readonly handler: ItemHandler; readonly settings: ConsumerSettings }>();
  /**
   * Per topic, the index at which this life's registration applied. Leases under an earlier
   * token were given to a life of this member before (a restart replays them, or the leader
   * leased before the new registration arrived): none of them runs here, they are given back.
   */
  readonly #registered = new Map<string, number>();
  readonly #running = new Map<number, Running>();
  /** Per topic, its items running here. */
  readonly #runningOf = new Map<string, number>();
  /**
   * Per topic, the items leased here waiting for a run to end, in lease order: bounded by the
   * prefetch the state allows (fanout/prefetch.ts). One whose lease ended meanwhile (taken back,
   * or a snapshot without it) is passed over when its turn comes.
   */
  readonly #waiting = new Map<string, GiveBack[]>();
  /** Outcomes not yet in the log; at most one per item run here, so bounded by what runs. */
  readonly #outcomes: ItemOutcome[] = [];
  /** Leases to give back: bounded by the items leased to this member (parallelism per topic, and a previous life's). */
  readonly #giveBacks: GiveBack[] = [];
  #flushing = false;
  /** The outcomes or give-backs of the proposal in flight, while it is (see restored). */
  #proposing: ReadonlyArray<GiveBack | ItemOutcome> = [];
  #flushQueued = false;
  /** The runs started this turn whose handlers are still to be called, at the end of the turn (one microtask for them all). */
  #toCall: Array<{ readonly run: Running; readonly data: Uint8Array; readonly ctx: ItemContext; readonly handler: ItemHandler }> = [];
  /** This turn's timeout groups, by timeout in ms; forgotten at the end of the turn. */
  readonly #timeoutGroups = new Map<number, TimeoutGroup>();
  #draining = false;
  #stopped = false;
  /** Set by halt(): no item starts. */
  #halted = false;

  readonly #leaseChecks: Periodic;

  constructor(options: FanoutConsumerOptions) {
    this.#o = options;
    this.#leaseChecks = new Periodic(options.timers, LEASE_CHECK_MS, () => this.checkLease());
  }

  /** Items running here now. */
  get running(): number {
    return this.#running.size;
  }

  /** Items leased here waiting for a run of their topic to end. */
  get waiting(): number {
    let n = 0;
    for (const queue of this.#waiting.values()) n += queue.length;
    return n;
  }

  /** Whether outcomes or leases to give back still wait to be proposed. */
  get unflushed(): boolean {
    return this.#flushing || this.#outcomes.length > 0 || this.#giveBacks.length > 0;
  }

  /** Consumes `topic` here with `handler`: registered through the log (the caller retries until it applied). */
  consume(topic: string, handler: ItemHandler, settings: ConsumerSettings): Promise<unknown> {
    this.#handlers.set(topic, { handler, settings });
    return this.#o.propose({ type: 'consume', topic, member: this.#o.self, settings });
  }

  /**
   * Called for every fan-out command applied, in log order, with its result; `mine` says
   * whether this life of the member proposed it (its entry's proposal id carries this boot's id).
   */
  applied(index: number, command: FanoutCommand, result: FanoutApplyResult, mine: boolean): void {
    switch (command.type) {
      case 'consume':
        if (mine && result.ok && command.member === this.#o.self && this.#handlers.has(command.topic) && !this.#registered.has(command.topic)) {
          this.#registered.set(command.topic, index);
          this.#giveBackOrphans(command.topic, index);
        }
        return;
      case 'lease':
        if (command.member === this.#o.self && result.ok) for (const id of result.leased ?? []) this.#leased(id, index);
        return;
      case 'reclaim':
        for (const { id, token } of command.leases) {
          const run = this.#running.get(id);
          if (run !== undefined && run.token === token) this.#abort(run, new RunAbortedError('reassigned', `Item ${id} was leased again elsewhere: its lease ${token} was taken back`));
        }
        return;
      default:
        return;
    }
  }

  start(): void {
    this.#leaseChecks.start();
  }

  /**
   * The state was replaced by a leader's snapshot (this member had fallen behind its compacted
   * log): a run whose lease the snapshot no longer holds (taken back, or settled) is aborted, as
   * the reclaim it never applied one by one would have aborted it; and a lease to this member
   * that the snapshot holds but that runs nowhere here (leased in the entries it skipped) runs
   * now, as the lease applied one by one would have made it, rather than wait for its deadline.
   * (Leases of a life before this one precede this life's registration, which gave them back.)
   */
  restored(): void {
    const state = this.#o.state;
    for (const [id, run] of this.#running) {
      const phase = state.items.get(id)?.phase;
      if (phase?.kind === 'leased' && phase.member === this.#o.self && phase.token === run.token) continue;
      this.#abort(run, new RunAbortedError('reassigned', `Item ${id}: a snapshot from the leader shows its lease ${run.token} taken back`));
    }
    // A lease whose run ended here has its outcome or give-back on its way to the log: the
    // snapshot, taken before it applied, still holds the lease, which must not run again.
    const ended = new Set<string>();
    for (const one of [...this.#outcomes, ...this.#giveBacks, ...this.#proposing]) ended.add(`${one.id} ${one.token}`);
    for (const id of state.leased) {
      const item = state.items.get(id);
      if (item === undefined || item.phase.kind !== 'leased' || item.phase.member !== this.#o.self || this.#running.has(id)) continue;
      const token = item.phase.token;
      if (ended.has(`${id} ${token}`) || this.#waiting.get(item.topic)?.some((w) => w.id === id && w.token === token) === true) continue;
      this.#leased(id, token);
    }
  }

  /**
   * Aborts the runs in progress if this member no longer holds its lease (no leader heard for
   * too long: the leader takes its items back), giving their leases back and those of the items
   * waiting here; while it holds it, starts the items that wait for it (leased while it held
   * none), as far as its parallelism lets it. Looked at every LEASE_CHECK_MS, and by the member
   * before a message from a peer counts as contact, as the scheduler's runs are.
   */
  checkLease(): void {
    if (this.#running.size === 0 && this.#waiting.size === 0) return;
    if (this.#o.holdsLease()) {
      // Looked at before every message from a peer: only a topic with room has any to start (most
      // items wait for room, and a run's end starts them).
      for (const topic of [...this.#waiting.keys()]) if (this.#hasRoom(topic)) this.#startWaiting(topic);
      return;
    }
    this.#giveBackWaiting();
    for (const [id, run] of this.#running) this.#abort(run, new RunAbortedError('interrupted', `Item ${id}: this member lost its lease`));
  }

  /**
   * Hands this member's items over before it stops: it stops consuming its topics (no more
   * leases), lets its runs finish within `timeoutMs`, then aborts those still going and gives
   * their leases back, and waits (within the same time) for its outcomes and give-backs to apply.
   * Resolves with whether everything was handed over in time.
   */
  async handOver(timeoutMs: number): Promise<boolean> {
    this.#draining = true;
    const timers = this.#o.timers;
    const deadline = timers.now() + timeoutMs;
    const left = (): number => Math.max(0, deadline - timers.now());
    const unconsumed = [...this.#registered.keys()].map((topic) => this.#o.propose({ type: 'unconsume', topic, member: this.#o.self }).catch(() => undefined));
    await within(timers, Promise.all(unconsumed), left());
    this.#giveBackWaiting();
    await waitUntil(timers, () => this.#running.size === 0, left());
    for (const [id, run] of this.#running) this.#abort(run, new RunAbortedError('stopping', `Item ${id}: this member is stopping`));
    return waitUntil(timers, () => this.#running.size === 0 && !this.unflushed, left());
  }

  /**
   * Starts no item from now on: the member's driver stopped (a failure, its removal), so it can
   * record no outcome, and the leader leases its items again once it finds the member lost. The
   * items waiting here are dropped. Runs in progress are aborted with `abort` when given (a
   * removal: the leader takes their leases back as it applies it); else they go on until their
   * lease runs out.
   */
  halt(abort?: RunAbortedError): void {
    this.#halted = true;
    this.#waiting.clear();
    if (abort !== undefined) for (const run of this.#running.values()) this.#abort(run, abort);
  }

  stop(): void {
    this.#leaseChecks.stop();
    this.#stopped = true;
    this.#waiting.clear();
    for (const [id, run] of this.#running) this.#abort(run, new RunAbortedError('stopping', `Item ${id}: this member is stopping`));
  }

  /**
   * An item leased to this member: it runs, unless the lease belongs to a life before this one or
   * the member is handing over. It waits while the topic's parallelism is full, and while this
   * member holds no lease of its own (it applies the leader's entries as it catches up after a
   * silence, and renews its lease once it has applied them): started then, its run was aborted
   * at the next look at the lease, given back, leased to it again and aborted again, its handler
   * called each time (a stranger saw one item run four times so). The next look starts it, or
   * gives it back if the lease is still not held.
   */
  #leased(id: number, token: number): void {
    const item = this.#o.state.items.get(id);
    if (item === undefined || this.#stopped || this.#halted) return;
    const registeredAt = this.#registered.get(item.topic);
    if (registeredAt === undefined || token < registeredAt) return;
    if (this.#draining) {
      this.#giveBack({ id, token });
      return;
    }
    if (this.#hasRoom(item.topic) && this.#o.holdsLease()) {
      this.#start(item, token);
      return;
    }
    const queue = this.#waiting.get(item.topic);
    if (queue === undefined) this.#waiting.set(item.topic, [{ id, token }]);
    else queue.push({ id, token });
  }

  /** Starts the items of `topic` waiting here, in lease order, while it has room and holds its lease; passes over those whose lease ended. */
  #startWaiting(topic: string): void {
    const queue = this.#waiting.get(topic);
    // Handing over, it takes on nothing more: what waits is given back.
    if (queue === undefined || this.#draining || !this.#o.holdsLease()) return;
    const state = this.#o.state;
    while (queue.length > 0 && this.#hasRoom(topic)) {
      const { id, token } = queue.shift() as GiveBack;
      const item = state.items.get(id);
      if (item === undefined || item.phase.kind !== 'leased' || item.phase.member !== this.#o.self || item.phase.token !== token) continue;
      this.#start(item, token);
    }
    if (queue.length === 0) this.#waiting.delete(topic);
  }

  /** Whether fewer of `topic`'s items run here than its parallelism. */
  #hasRoom(topic: string): boolean {
    return (this.#runningOf.get(topic) ?? 0) < (this.#handlers.get(topic)?.settings.parallelism ?? 0);
  }

  /** Gives back every item waiting here (the member stops consuming, or lost its lease): another member may run them now. */
  #giveBackWaiting(): void {
    const state = this.#o.state;
    for (const queue of this.#waiting.values()) {
      for (const lease of queue) {
        const phase = state.items.get(lease.id)?.phase;
        if (phase?.kind === 'leased' && phase.member === this.#o.self && phase.token === lease.token) this.#giveBacks.push(lease);
      }
    }
    this.#waiting.clear();
    this.#flush();
  }

  /** Gives back the leases of `topic` held by this member under tokens from before `registeredAt` that do not run here. */
  #giveBackOrphans(topic: string, registeredAt: number): void {
    const state = this.#o.state;
    for (const id of state.leased) {
      const item = state.items.get(id);
      if (item?.topic !== topic || item.phase.kind !== 'leased') continue;
      if (item.phase.member === this.#o.self && item.phase.token < registeredAt && !this.#running.has(id)) this.#giveBacks.push({ id, token: item.phase.token });
    }
    this.#flush();
  }

  #giveBack(lease: GiveBack): void {
    this.#giveBacks.push(lease);
    this.#flush();
  }

  #start(item: ItemRecord, token: number): void {
    const id = item.id;
    const entry = this.#handlers.get(item.topic);
    if (entry === undefined || this.#running.has(id)) return;
    const run = new Running(id, token, item.topic, this.#timeoutGroup(entry.settings.timeoutMs));
    run.timeout.runs.push(run);
    this.#running.set(id, run);
    this.#runningOf.set(item.topic, (this.#runningOf.get(item.topic) ?? 0) + 1);
    const origin = item.origin;
    const ctx: ItemContext = {
      id,
      topic: item.topic,
      attempt: item.failures + 1,
      fencingToken: token,
      get signal() {
        return run.signal;
      },
      job: origin?.job ?? null,
      slot: origin === null ? null : new Date(origin.slotMs),
    };
    // Called at the end of the turn, not inside the apply that leased the item: the handlers of
    // the items leased together, one after the other in one microtask.
    this.#toCall.push({ run, data: item.data, ctx, handler: entry.handler });
    if (this.#toCall.length === 1) queueMicrotask(() => this.#callHandlers());
  }

  /** This turn's timeout group for `timeoutMs`: its timer is set with the first run it holds. */
  #timeoutGroup(timeoutMs: number): TimeoutGroup {
    const group = this.#timeoutGroups.get(timeoutMs);
    // A group whose runs all ended this turn has no timer left: the next run starts another.
    if (group !== undefined && group.timer !== null) {
      group.live++;
      return group;
    }
    if (this.#timeoutGroups.size === 0) queueMicrotask(() => this.#timeoutGroups.clear());
    const made: TimeoutGroup = { runs: [], live: 1, timer: null };
    made.timer = this.#o.timers.setTimeout(() => {
      made.timer = null;
      for (const run of made.runs) {
        if (this.#running.get(run.id) === run) this.#abort(run, new RunAbortedError('timeout', `Item ${run.id} ran past its timeout of ${timeoutMs} ms`));
      }
    }, timeoutMs);
    this.#timeoutGroups.set(timeoutMs, made);
    return made;
  }

  /** Calls the handlers of the runs started this turn; a run that ended meanwhile (aborted) is not called. */
  #callHandlers(): void {
    const calls = this.#toCall;
    this.#toCall = [];
    for (const { run, data, ctx, handler } of calls) {
      if (this.#running.get(run.id) !== run) continue;
      let result: unknown;
      const calledAt = this.#o.timers.now();
      try {
        result = handler(data, ctx);
      } catch (error) {
        this.#end(run, error ?? 'failed');
        continue;
      } finally {
        this.#o.loopBlocks?.handler(this.#o.timers.now() - calledAt, () => ({ kind: 'item', topic: ctx.topic, id: ctx.id, fencingToken: ctx.fencingToken }));
      }
      if (result !== null && typeof result === 'object' && typeof (result as PromiseLike<unknown>).then === 'function') {
        Promise.resolve(result).then(
          () => this.#end(run, null),
          (error: unknown) => this.#end(run, error ?? 'failed'),
        );
      } else {
        this.#end(run, null);
      }
    }
  }

  /**
   * An abort ends the run here at once, whether or not its handler heeds the signal: its permit
   * is free and its item may run again, here or elsewhere, under a new lease. Then the signal is
   * aborted, if the handler has one.
   */
  #abort(run: Running, reason: RunAbortedError): void {
    this.#end(run, reason, true);
    run.abort(reason);
  }

  /**
   * A run ends, once: the first of its handler's end and an abort (`aborted`: this member ended
   * it). Aborted by the member's stop or the loss of its lease, the lease is given back: the
   * attempt is not the handler's failure. Past its timeout, it failed. Taken back (reclaim),
   * there is nothing to record: the log took it back already. Whatever the handler throws itself
   * is its failure, a RunAbortedError too (one of a run of its own, say): given back, such an
   * item would be leased again for ever, never reaching the dead letters.
   */
  #end(run: Running, failure: unknown, aborted = false): void {
    const id = run.id;
    if (this.#running.get(id) !== run) return;
    this.#running.delete(id);
    const left = (this.#runningOf.get(run.topic) ?? 1) - 1;
    if (left === 0) this.#runningOf.delete(run.topic);
    else this.#runningOf.set(run.topic, left);
    const group = run.timeout;
    if (--group.live === 0 && group.timer !== null) {
      this.#o.timers.clearTimeout(group.timer);
      group.timer = null;
    }
    if (this.#stopped) return;
    if (aborted && failure instanceof RunAbortedError && failure.reason !== 'timeout') {
      if (failure.reason !== 'reassigned') this.#giveBack({ id, token: run.token });
    } else {
      this.#outcomes.push({ id, token: run.token, error: failure === null ? null : errorOf(failure) });
      this.#flushSoon();
    }
    // Its slot is free: the next item waiting for it starts (a draining member gave them back).
    this.#startWaiting(run.topic);
  }

  /**
   * Flushes once the runs that end in this turn of the event loop have ended, on a timer of no
   * delay rather than a microtask: items leased together mostly end together, and as each run
   * ends the next item waiting for its slot starts, in the same turn; their outcomes then go in
   * one command. (After a microtask, the first runs' outcomes went alone, and the rest waited
   * for that command to commit.)
   */
  #flushSoon(): void {
    if (this.#flushQueued) return;
    this.#flushQueued = true;
    this.#o.timers.setTimeout(() => {
      this.#flushQueued = false;
      this.#flush();
    }, 0);
  }

  /**
   * Proposes what waits, a batch at a time: leases to give back first (another member may run
   * them), then outcomes. A failed proposal keeps its batch for the next try.
   */
  #flush(): void {
    if (this.#flushing || this.#stopped) return;
    const giveBacks = this.#giveBacks.length > 0;
    if (!giveBacks && this.#outcomes.length === 0) return;
    this.#flushing = true;
    const atMs = this.#o.clusterNowMs();
    const queue: Array<GiveBack | ItemOutcome> = giveBacks ? this.#giveBacks : this.#outcomes;
    const batch = queue.splice(0, MAX_OUTCOMES_PER_COMMAND);
    const command: FanoutCommand = giveBacks ? { type: 'reclaim', leases: batch as GiveBack[], atMs } : { type: 'done', member: this.#o.self, outcomes: batch as ItemOutcome[], atMs };
    this.#proposing = batch;
    this.#o.propose(command).then(
      () => {
        this.#proposing = [];
        this.#flushing = false;
        this.#flush();
      },
      (error: unknown) => {
        // Back in front, to be proposed again; an outcome whose lease moved meanwhile is refused
        // as stale. Not once the driver stopped for good: nothing could record them, and the
        // leader leases the items again once it finds this member lost.
        this.#proposing = [];
        queue.unshift(...batch);
        this.#flushing = false;
        if (!this.#stopped && !driverStopped(error)) this.#o.timers.setTimeout(() => this.#flush(), RETRY_OUTCOMES_MS);
      },
    );
  }
}

/** How long outcomes wait before they are proposed again after a failed proposal. */
export const RETRY_OUTCOMES_MS = 100;

function errorOf(error: unknown): string {
  const message = thrownMessage(error);
  return (message.length === 0 ? 'failed' : message).slice(0, MAX_ERROR_LENGTH);
}
