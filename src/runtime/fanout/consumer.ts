import { RunAbortedError } from '../../errors.js';
import { MAX_ERROR_LENGTH, MAX_OUTCOMES_PER_COMMAND, type ConsumerSettings, type FanoutCommand, type ItemOutcome } from '../../fanout/command.js';
import type { FanoutApplyResult, FanoutState } from '../../fanout/state.js';
import type { NodeId } from '../../raft/types.js';
import type { TimerHandle, Timers } from '../../time/clock.js';

/**
 * A member's side of fan-out (issue 19): the topics it consumes, the items leased to it, run
 * under their lease's token, and their outcomes, proposed in batches. An item runs only while
 * its lease is the current one: a lease taken back (reclaim) or a lost lease of the member
 * (no leader past its lease) aborts the run through `ctx.signal`, and the outcome it reports
 * then is stale, refused by the state. WIP: not wired into the member yet.
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
}

interface Running {
  readonly token: number;
  readonly controller: AbortController;
  readonly timer: TimerHandle;
}

export class FanoutConsumer {
  readonly #o: FanoutConsumerOptions;
  readonly #handlers = new Map<string, { readonly handler: ItemHandler; readonly settings: ConsumerSettings }>();
  readonly #running = new Map<number, Running>();
  /** Outcomes not yet in the log; at most one per item run here, so bounded by what runs. */
  readonly #outcomes: ItemOutcome[] = [];
  #flushing = false;
  #stopped = false;

  constructor(options: FanoutConsumerOptions) {
    this.#o = options;
  }

  /** Items running here now. */
  get running(): number {
    return this.#running.size;
  }

  /** Consumes `topic` here with `handler`: registered through the log (the caller retries until it applied). */
  consume(topic: string, handler: ItemHandler, settings: ConsumerSettings): Promise<unknown> {
    this.#handlers.set(topic, { handler, settings });
    return this.#o.propose({ type: 'consume', topic, member: this.#o.self, settings });
  }

  /** Called for every fan-out command applied, in log order, with its result. */
  applied(index: number, command: FanoutCommand, result: FanoutApplyResult): void {
    if (command.type === 'lease' && command.member === this.#o.self && result.ok) {
      for (const id of result.leased ?? []) this.#start(id, index);
    }
    if (command.type === 'reclaim') {
      for (const { id, token } of command.leases) {
        const run = this.#running.get(id);
        if (run !== undefined && run.token === token) run.controller.abort(new RunAbortedError('reassigned', `Item ${id} was leased again elsewhere: its lease ${token} was taken back`));
      }
    }
  }

  /** This member lost its lease (no leader heard for too long): every run stops. */
  leaseLost(): void {
    for (const [id, run] of this.#running) run.controller.abort(new RunAbortedError('interrupted', `Item ${id}: this member lost its lease`));
  }

  stop(): void {
    this.#stopped = true;
    for (const [id, run] of this.#running) run.controller.abort(new RunAbortedError('stopping', `Item ${id}: this member is stopping`));
  }

  #start(id: number, token: number): void {
    const item = this.#o.state.items.get(id);
    const entry = item === undefined ? undefined : this.#handlers.get(item.topic);
    if (item === undefined || entry === undefined || this.#stopped || this.#running.has(id)) return;
    const controller = new AbortController();
    const timer = this.#o.timers.setTimeout(() => controller.abort(new RunAbortedError('timeout', `Item ${id} ran past its timeout of ${entry.settings.timeoutMs} ms`)), entry.settings.timeoutMs);
    this.#running.set(id, { token, controller, timer });
    const ctx: ItemContext = { id, topic: item.topic, attempt: item.failures + 1, fencingToken: token, signal: controller.signal, job: item.origin?.job ?? null, slot: item.origin === null ? null : new Date(item.origin.slotMs) };
    void Promise.resolve()
      .then(() => entry.handler(item.data, ctx))
      .then(
        () => (controller.signal.aborted ? errorOf(controller.signal.reason) : null),
        (error: unknown) => errorOf(error),
      )
      .then((error) => {
        this.#o.timers.clearTimeout(timer);
        this.#running.delete(id);
        this.#outcomes.push({ id, token, error });
        this.#flush();
      });
  }

  /** Proposes the outcomes waiting, a batch at a time; a failed proposal keeps them for the next. */
  #flush(): void {
    if (this.#flushing || this.#outcomes.length === 0) return;
    this.#flushing = true;
    const batch = this.#outcomes.splice(0, MAX_OUTCOMES_PER_COMMAND);
    this.#o.propose({ type: 'done', member: this.#o.self, outcomes: batch, atMs: this.#o.clusterNowMs() }).then(
      () => {
        this.#flushing = false;
        this.#flush();
      },
      () => {
        // Back in front, to be proposed again; an outcome whose lease moved meanwhile is refused as stale.
        this.#outcomes.unshift(...batch);
        this.#flushing = false;
        if (!this.#stopped) this.#o.timers.setTimeout(() => this.#flush(), RETRY_OUTCOMES_MS);
      },
    );
  }
}

/** How long outcomes wait before they are proposed again after a failed proposal. */
export const RETRY_OUTCOMES_MS = 100;

function errorOf(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return (message.length === 0 ? 'failed' : message).slice(0, MAX_ERROR_LENGTH);
}
