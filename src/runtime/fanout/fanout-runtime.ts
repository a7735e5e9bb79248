import { BackpressureError, InvalidArgumentError } from '../../errors.js';
import { type ConsumerSettings, type EmitOrigin, type EmittedItem, type FanoutCommand } from '../../fanout/command.js';
import type { FanoutApplyResult, FanoutState } from '../../fanout/state.js';
import { BatchTracker, type Batch, type BatchSummary } from './batches.js';
import { SlotBatchTally } from './slot-batches.js';
import { encodeItems } from './encode-items.js';
import { proposeEntries } from './emit-entries.js';
import { nextTurn } from '../../time/clock.js';
import { fullness } from '../../fanout/fullness.js';
import { FanoutConsumer, type FanoutConsumerOptions, type ItemHandler } from './consumer.js';
import { LeaderDelivery, type LeaderDeliveryOptions } from './leader-delivery.js';

/**
 * Fan-out on one member (issue 19): the leader's delivery and this member's consumer over the
 * replicated FanoutState, the batches this member emitted, and `emit` and `requeue`. Member
 * builds it and tells it of every fan-out command applied (`applied`).
 */

/** What fan-out tells the application on this member (the Cluster's events). */
export type FanoutEvent =
  | {
      /** An attempt of an item run on this member failed (recorded in the log); `dead`: it went to the dead letters. */
      readonly type: 'item-failed';
      readonly topic: string;
      readonly id: number;
      readonly attempt: number;
      readonly error: string;
      readonly dead: boolean;
      /** The entry that recorded it: a member replays its log after a restart, and tells it again. */
      readonly index: number;
    }
  | { readonly type: 'batch-settled'; readonly batch: Batch; readonly summary: BatchSummary }
  /** A consumer this member registered was refused: the cluster holds as many topics, or as many bytes of their consumers, as it may. */
  | { readonly type: 'consume-refused'; readonly topic: string; readonly reason: 'too-many-topics'; readonly index: number };

/** What a member gives its fan-out: the leader's delivery's and the consumer's options, with a propose that tells the entry's index. */
export interface FanoutRuntimeOptions extends Omit<LeaderDeliveryOptions, 'propose'>, Omit<FanoutConsumerOptions, 'propose'> {
  /** Proposes a fan-out command (cluster version 3); resolves with its entry's index and apply result once applied here. */
  readonly propose: (command: FanoutCommand) => Promise<{ readonly index: number; readonly result: unknown }>;
  /**
   * Null while fan-out's cluster version is in force; else a wait for it, which an emit and a
   * consumer's registration take before they propose anything (version-waits.ts: it rejects
   * with VersionNotActiveError when the version does not come). @default none: never waits
   */
  readonly whenActive?: () => Promise<void> | null;
  readonly onEvent?: (event: FanoutEvent) => void;
}

export class FanoutRuntime {
  readonly #o: FanoutRuntimeOptions;
  readonly delivery: LeaderDelivery;
  readonly consumer: FanoutConsumer;
  readonly batches: BatchTracker;
  /** What each slot emitted, for history(). */
  readonly slotBatches = new SlotBatchTally();

  get state(): FanoutState {
    return this.#o.state;
  }

  constructor(options: FanoutRuntimeOptions) {
    this.#o = options;
    this.delivery = new LeaderDelivery(options);
    this.consumer = new FanoutConsumer(options);
    const timers = options.timers;
    this.batches = new BatchTracker(
      (fn, ms) => {
        const handle = timers.setTimeout(fn, ms);
        return () => timers.clearTimeout(handle);
      },
      (batch, summary) => this.#tell({ type: 'batch-settled', batch, summary }),
      (topic) => ((options.state.topics.get(topic)?.consumers.size ?? 0) === 0 ? 'no member consumes the topic now: its items wait for one' : null),
    );
  }

  start(): void {
    this.delivery.start();
    this.consumer.start();
  }

  stop(): void {
    this.delivery.stop();
    this.consumer.stop();
    this.batches.stop();
  }

  async consume(topic: string, handler: ItemHandler, settings: ConsumerSettings): Promise<unknown> {
    await this.#o.whenActive?.();
    return this.consumer.consume(topic, handler, settings);
  }

  /**
   * Emits an application's `items` (`Cluster.emitItems`, a job's `ctx.emit`): encoded and
   * checked a turn of the event loop at a time on this member's timers (encode-items.ts), all
   * before anything is proposed, then as `emit`.
   * @throws InvalidArgumentError for a bad item or key (nothing of the call is kept), and as `emit`
   */
  async emitItems(topic: string, items: readonly unknown[], key: ((item: unknown, index: number) => string | null) | undefined, origin: EmitOrigin | null, stopped?: () => Error | null): Promise<Batch> {
    // Refused by their count before they are encoded: 300,000 items to a topic that takes
    // 100,000 were all encoded, seconds of work, before the refusal.
    // (Not an array, null say: encodeItems refuses it, as InvalidArgumentError.)
    if (Array.isArray(items) && items.length > 0) this.#refuseOverfull(topic, items.length);
    return this.emit(topic, await encodeItems(items, key, () => nextTurn(this.#o.timers)), origin, stopped);
  }

  /**
   * Emits `items` to `topic`, MAX_ITEMS_PER_EMIT items and MAX_EMIT_ENTRY_BYTES to an entry, a few entries in flight at once
   * (emit-entries.ts), once all are applied here: the Batch of them. A topic already too full
   * is refused before anything is proposed; one that fills up part-way (others emit at the same
   * time) keeps the entries applied, and its error names their items.
   * @throws BackpressureError when the topic holds too many unsettled items
   */
  async emit(topic: string, items: readonly EmittedItem[], origin: EmitOrigin | null, stopped?: () => Error | null): Promise<Batch> {
    // Nothing to do (a nightly slot that found no ids): a batch of none, settled, nothing proposed.
    if (items.length === 0) return this.batches.track(topic, []);
    const version = this.#o.whenActive?.();
    if (version != null) {
      await version;
      // A slot's run that aborted or ended while the emit waited proposes none of it (ctx.emit).
      const why = stopped?.() ?? null;
      if (why !== null) throw why;
    }
    this.#refuseOverfull(topic, items.length);
    const entries = await proposeEntries(
      topic,
      items,
      (chunk) => this.#o.propose({ type: 'emit', topic, items: chunk, origin, atMs: this.#o.clusterNowMs() }),
      (count) => fullness(this.#o.state, topic, count),
      stopped,
    );
    return this.batches.track(topic, entries);
  }

  /** BackpressureError when `count` more items would pass the topic's maxPending. */
  #refuseOverfull(topic: string, count: number): void {
    const unsettled = this.#o.state.topics.get(topic)?.unsettled ?? 0;
    const limit = this.#o.state.maxPendingOf(topic);
    if (unsettled + count > limit) throw new BackpressureError(`The topic ${topic} holds ${unsettled} unsettled items: ${count} more would pass its maxPending of ${limit}`);
  }

  /**
   * Emits the dead letters of `topic` with these ids again (all of them when `ids` is null), as
   * new items of one batch; ids no longer among them are passed over.
   * @throws BackpressureError when the topic is too full to take them, InvalidArgumentError for an unknown topic
   */
  async requeue(topic: string, ids: readonly number[] | null): Promise<Batch> {
    const wanted = this.#letterIds(topic, ids);
    const { index, result } = await this.#o.propose({ type: 'requeue', topic, ids: wanted, atMs: this.#o.clusterNowMs() });
    const applied = result as FanoutApplyResult;
    if (!applied.ok) throw applied.reason === 'backpressure' ? new BackpressureError(`The dead letters of ${topic} cannot be taken back: ${fullness(this.#o.state, topic, wanted.length)}`) : new InvalidArgumentError('topic', topic, 'a topic this cluster knows');
    return this.batches.track(topic, (applied.count ?? 0) === 0 ? [] : [{ index, count: applied.count ?? 0, firstId: applied.firstId ?? 0 }]);
  }

  /**
   * The state was replaced by a leader's snapshot: the consumer's runs follow it, and the
   * batches tracked here that it shows settled (their entries' `done` never applied here) settle.
   */
  restored(): void {
    this.consumer.restored();
    this.batches.restored(this.#o.state);
    this.slotBatches.restored(this.#o.state);
  }

  /**
   * Drops the dead letters of `topic` with these ids for good (all of them when `ids` is null),
   * once applied here: how many went (ids no longer among them are passed over). A topic left
   * with no consumer, item or dead letter is forgotten.
   * @throws InvalidArgumentError for an unknown topic
   */
  async dropDeadLetters(topic: string, ids: readonly number[] | null): Promise<{ readonly dropped: number }> {
    const { result } = await this.#o.propose({ type: 'drop', topic, ids: this.#letterIds(topic, ids), atMs: this.#o.clusterNowMs() });
    const applied = result as FanoutApplyResult;
    if (!applied.ok) throw new InvalidArgumentError('topic', topic, 'a topic this cluster knows');
    return { dropped: applied.count ?? 0 };
  }

  /**
   * The dead letters of `topic` a requeue or a drop names: `ids`, or all it holds here when null.
   * @throws InvalidArgumentError for a topic this member does not know
   */
  #letterIds(topic: string, ids: readonly number[] | null): readonly number[] {
    const letters = this.#o.state.topics.get(topic)?.deadLetters;
    if (letters === undefined) throw new InvalidArgumentError('topic', topic, 'a topic this cluster knows');
    return ids ?? letters.map((l) => l.id);
  }

  /** Hands this member's items over before it stops (FanoutConsumer.handOver). */
  handOver(timeoutMs: number): Promise<boolean> {
    return this.consumer.handOver(timeoutMs);
  }

  /** Called for every fan-out command applied, in log order, with its result; `mine`: proposed by this life of the member. */
  applied(index: number, command: FanoutCommand, result: FanoutApplyResult, mine: boolean): void {
    this.consumer.applied(index, command, result, mine);
    if (command.type === 'consume' && command.member === this.#o.self && !result.ok && result.reason === 'too-many-topics') this.#tell({ type: 'consume-refused', topic: command.topic, reason: result.reason, index });
    if (command.type === 'emit' && result.ok && command.origin !== null) this.slotBatches.emitted(index, command.origin, { topic: command.topic, count: command.items.length, firstId: result.firstId ?? 0 });
    if (command.type === 'done' && result.ok) {
      // An item's failure is told before the batch it settles, as it came first.
      if (command.member === this.#o.self) {
        // The error as this member reported it: the state keeps it cut short at its bound.
        const reported = new Map(command.outcomes.map((o) => [o.id, o.error]));
        for (const item of result.failed ?? []) {
          this.#tell({ type: 'item-failed', topic: item.topic, id: item.id, attempt: item.failures, error: reported.get(item.id) ?? item.lastError ?? 'failed', dead: !this.#o.state.items.has(item.id), index });
        }
      }
      for (const batch of result.settledBatches ?? []) {
        this.batches.settled(batch);
        this.slotBatches.settled(batch);
      }
    }
    this.delivery.soon();
  }

  #tell(event: FanoutEvent): void {
    try {
      this.#o.onEvent?.(event);
    } catch {
      // A listener's error is the application's: it must not stop this member applying the log.
    }
  }
}
