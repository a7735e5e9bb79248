import { BackpressureError, InvalidArgumentError } from '../../errors.js';
import { MAX_ITEMS_PER_EMIT, type ConsumerSettings, type EmitOrigin, type EmittedItem, type FanoutCommand } from '../../fanout/command.js';
import type { FanoutApplyResult, FanoutState } from '../../fanout/state.js';
import type { NodeId } from '../../raft/types.js';
import type { Timers } from '../../time/clock.js';
import { FanoutConsumer, type ItemHandler } from './consumer.js';
import { LeaderDelivery } from './leader-delivery.js';

/**
 * Fan-out on one member (issue 19): the leader's delivery and this member's consumer over the
 * replicated FanoutState, and `emit`. Member builds it and tells it of every fan-out command
 * applied (`applied`). WIP: the Cluster's API (consume, emit, ctx.emit) is not wired yet.
 */
export interface FanoutRuntimeOptions {
  readonly self: NodeId;
  readonly state: FanoutState;
  readonly timers: Timers;
  readonly isLeader: () => boolean;
  readonly clusterNowMs: () => number;
  readonly eligible: (member: NodeId) => boolean;
  readonly configured: (member: NodeId) => boolean;
  readonly holdsLease: () => boolean;
  /** Proposes a fan-out command (cluster version 3); resolves with its apply result once applied here. */
  readonly propose: (command: FanoutCommand) => Promise<unknown>;
}

export class FanoutRuntime {
  readonly #o: FanoutRuntimeOptions;
  readonly delivery: LeaderDelivery;
  readonly consumer: FanoutConsumer;

  constructor(options: FanoutRuntimeOptions) {
    this.#o = options;
    this.delivery = new LeaderDelivery(options);
    this.consumer = new FanoutConsumer(options);
  }

  start(): void {
    this.delivery.start();
    this.consumer.start();
  }

  stop(): void {
    this.delivery.stop();
    this.consumer.stop();
  }

  consume(topic: string, handler: ItemHandler, settings: ConsumerSettings): Promise<unknown> {
    return this.consumer.consume(topic, handler, settings);
  }

  /**
   * Emits `items` to `topic`, MAX_ITEMS_PER_EMIT to an entry; resolves with the first id of
   * each entry once all are applied here.
   * @throws BackpressureError when the topic holds too many unsettled items (nothing of the entry refused is kept)
   */
  async emit(topic: string, items: readonly EmittedItem[], origin: EmitOrigin | null): Promise<number[]> {
    if (items.length === 0) throw new InvalidArgumentError('items', items, 'at least one item');
    const firstIds: number[] = [];
    for (let i = 0; i < items.length; i += MAX_ITEMS_PER_EMIT) {
      const result = (await this.#o.propose({ type: 'emit', topic, items: items.slice(i, i + MAX_ITEMS_PER_EMIT), origin, atMs: this.#o.clusterNowMs() })) as FanoutApplyResult;
      if (!result.ok) throw new BackpressureError(`The topic ${topic} holds too many unsettled items (${result.reason})`);
      firstIds.push(result.firstId ?? 0);
    }
    return firstIds;
  }

  /** Hands this member's items over before it stops (FanoutConsumer.handOver). */
  handOver(timeoutMs: number): Promise<boolean> {
    return this.consumer.handOver(timeoutMs);
  }

  /** Called for every fan-out command applied, in log order, with its result; `mine`: proposed by this life of the member. */
  applied(index: number, command: FanoutCommand, result: FanoutApplyResult, mine: boolean): void {
    this.consumer.applied(index, command, result, mine);
    this.delivery.soon();
  }
}
