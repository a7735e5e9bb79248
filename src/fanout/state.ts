import type { NodeId } from '../raft/types.js';
import { MAX_PENDING_PER_TOPIC, type ConsumerSettings, type EmitOrigin, type FanoutCommand, type ItemOutcome } from './command.js';
import { leaseDeadlineMs, maxLeased } from './prefetch.js';
import { BATCH_RECORD_BYTES, consumerBytes, deadLetterBytes, itemBytes, textBytes, textWithin, topicBytes } from './footprint.js';
import { SNAPSHOT_SHARES } from '../snapshot-shares.js';
import type { BatchRecord, DeadLetter, ItemPhase, ItemRecord, SettledBatch, TopicRecord } from './records.js';

export type { BatchRecord, DeadLetter, ItemPhase, ItemRecord, SettledBatch, TopicCounts, TopicRecord } from './records.js';

/**
 * Fan-out's replicated state (issue 19): the topics, their consumers, and the items not yet
 * settled. `apply` is pure and deterministic: every member applies the same commands in log
 * order and reaches the same state. An item is settled once: done under the token of its
 * current lease, or dead after its retries; an outcome under any other token is stale, counted
 * and ignored. Settled items leave the state: it holds only what is unsettled, and what was
 * settled is counted (per topic and per batch).
 */

export const FANOUT_DEFAULTS = {
  /** Unsettled items a topic holds at most; an emit past it is refused whole (`backpressure`). */
  maxPendingPerTopic: MAX_PENDING_PER_TOPIC,
  /**
   * Bytes of unsettled items every topic together holds, as their records and their batches'
   * take them in a snapshot (footprint.ts: data, text and the rest), but the members their
   * leases name (maxLeaseBytes); an emit past it is refused whole (`backpressure`), and a
   * failure's error is kept cut short to stay within it, so that a member's memory and its
   * snapshot stay bounded whatever the topics' maxPending: fan-out's share of what a follower
   * takes in (snapshot-shares.ts).
   */
  maxUnsettledBytes: SNAPSHOT_SHARES.unsettledItems,
  /** Bytes of the members that the leases name on their items (footprint.ts textBytes): past it, a lease leaves an item pending. */
  maxLeaseBytes: SNAPSHOT_SHARES.leases,
  /** Bytes of dead letters every topic together keeps (footprint.ts deadLetterBytes): past it, the oldest of the topic that keeps the most are forgotten. */
  maxDeadLetterBytes: SNAPSHOT_SHARES.deadLetters,
  /** Topics the cluster keeps (a topic is kept while it has consumers or unsettled items). */
  maxTopics: 1000,
  /** Bytes of the topics' records with their consumers (footprint.ts topicBytes, consumerBytes): a new topic or consumer past it is refused as past maxTopics. */
  maxTopicBytes: SNAPSHOT_SHARES.topics,
  /** Dead letters kept per topic, the oldest forgotten first. */
  maxDeadLettersPerTopic: 1000,
} as const;

/**
 * How long after an attempt's timeout its lease ends: the consumer aborts the attempt at its
 * timeout, and its outcome must still reach the log before the leader leases the item again.
 */
export const LEASE_GRACE_MS = 2000;

/** The longest wait before a retry, however many attempts failed. */
export const MAX_BACKOFF_MS = 5 * 60_000;

/**
 * The `notBeforeMs` of an item due at once (emitted, taken back, or left without a consumer): no
 * member's clock is read for it, so a clock ahead (a member whose correction went wrong, one
 * restarted before it learned the cluster's time) cannot hold an item back for as long as it
 * is ahead.
 */
const DUE_AT_ONCE = 0;

/** The phase of every item due at once: one object, shared, as records and their phases are never changed in place. */
const DUE_NOW: ItemPhase = Object.freeze({ kind: 'pending', notBeforeMs: DUE_AT_ONCE });

/**
 * When the attempt that `held` (leased) failed, for its backoff: the time its reporter gives,
 * but never past its lease's deadline, which the leader's clock set. The leader takes a lease
 * back at its deadline, so a later time mostly says the reporter's clock is ahead, and the item
 * would otherwise wait, beside its backoff, for as long as that clock is ahead.
 */
function failedAtMs(held: ItemRecord, reportedAtMs: number): number {
  return held.phase.kind === 'leased' ? Math.min(reportedAtMs, held.phase.deadlineMs) : reportedAtMs;
}

export type FanoutApplyResult =
  | {
      readonly ok: true;
      readonly firstId?: number;
      readonly leased?: readonly number[];
      readonly stale?: number;
      readonly failed?: readonly ItemRecord[];
      /** The items whose success a `done` recorded (each settles done once: the simulator's checkers watch them). */
      readonly succeeded?: readonly number[];
      /** The items a `done` sent to the dead letters. */
      readonly dead?: readonly number[];
      readonly settledBatches?: readonly SettledBatch[];
      readonly count?: number;
    }
  | { readonly ok: false; readonly reason: 'backpressure' | 'too-many-topics' | 'unknown-topic' };

export interface FanoutLimits {
  readonly maxPendingPerTopic?: number;
  readonly maxUnsettledBytes?: number;
  readonly maxLeaseBytes?: number;
  readonly maxTopics?: number;
  readonly maxTopicBytes?: number;
  readonly maxDeadLettersPerTopic?: number;
  readonly maxDeadLetterBytes?: number;
}

/**
 * What a snapshot holds of the state (state-snapshot.ts), every Map and Set in its order; the
 * rest (each key's line, each topic's unsettled count and items in flight) is derived from it
 * by `restore`.
 */
export interface FanoutStateParts {
  readonly nextItemId: number;
  /** The topics in the order kept, without what is derived. */
  readonly topics: readonly Omit<TopicRecord, 'unsettled' | 'inFlight'>[];
  /** The unsettled items, in id order (the order they were emitted). */
  readonly items: readonly ItemRecord[];
  /** The batches by emit index, in the order they were emitted. */
  readonly batches: readonly (readonly [number, BatchRecord])[];
}

export class FanoutState {
  readonly topics = new Map<string, TopicRecord>();
  /** Every unsettled item by id. */
  readonly items = new Map<number, ItemRecord>();
  /** Per `${topic}\n${key}`, the unsettled items of that key in emit order; the first is the head. */
  readonly #keys = new Map<string, number[]>();
  /**
   * The items leased now, in the order they were: derived from the items' phases, so that the
   * leader's plan looks at these for leases to take back rather than at every unsettled item.
   */
  readonly #leased = new Set<number>();
  readonly batches = new Map<number, BatchRecord>();
  nextItemId = 1;
  readonly #maxPending: number;
  readonly #maxTopics: number;
  readonly #maxDeadLetters: number;
  readonly #maxUnsettledBytes: number;
  readonly #maxLeaseBytes: number;
  readonly #maxTopicBytes: number;
  readonly #maxDeadLetterBytes: number;
  /** The unsettled items' bytes (itemBytes), every topic together: derived, rebuilt on restore. */
  #unsettledBytes = 0;
  /** Of #unsettledBytes, the members the leases name (maxLeaseBytes bounds it): derived, rebuilt on restore. */
  #leaseBytes = 0;
  /** The topics' records with their consumers (topicBytes, consumerBytes): derived, rebuilt on restore. */
  #topicBytes = 0;
  /** The dead letters' bytes (deadLetterBytes), in all and per topic that keeps any: derived, rebuilt on restore. */
  #deadLetterBytes = 0;
  readonly #deadLetterBytesOf = new Map<string, number>();

  constructor(limits: FanoutLimits = {}) {
    this.#maxPending = limits.maxPendingPerTopic ?? FANOUT_DEFAULTS.maxPendingPerTopic;
    this.#maxTopics = limits.maxTopics ?? FANOUT_DEFAULTS.maxTopics;
    this.#maxDeadLetters = limits.maxDeadLettersPerTopic ?? FANOUT_DEFAULTS.maxDeadLettersPerTopic;
    this.#maxUnsettledBytes = limits.maxUnsettledBytes ?? FANOUT_DEFAULTS.maxUnsettledBytes;
    this.#maxLeaseBytes = limits.maxLeaseBytes ?? FANOUT_DEFAULTS.maxLeaseBytes;
    this.#maxTopicBytes = limits.maxTopicBytes ?? FANOUT_DEFAULTS.maxTopicBytes;
    this.#maxDeadLetterBytes = limits.maxDeadLetterBytes ?? FANOUT_DEFAULTS.maxDeadLetterBytes;
  }

  /** The ids of the items leased now, in the order they were leased. */
  get leased(): ReadonlySet<number> {
    return this.#leased;
  }

  get limits(): Required<FanoutLimits> {
    return {
      maxPendingPerTopic: this.#maxPending,
      maxTopics: this.#maxTopics,
      maxDeadLettersPerTopic: this.#maxDeadLetters,
      maxUnsettledBytes: this.#maxUnsettledBytes,
      maxLeaseBytes: this.#maxLeaseBytes,
      maxTopicBytes: this.#maxTopicBytes,
      maxDeadLetterBytes: this.#maxDeadLetterBytes,
    };
  }

  /** The unsettled items' bytes as their records take them in a snapshot, every topic together (boundedUnsettledBytes and leaseBytes). */
  get unsettledBytes(): number {
    return this.#unsettledBytes;
  }

  /** The unsettled bytes that maxUnsettledBytes bounds: all but the members the leases name (leaseBytes). */
  get boundedUnsettledBytes(): number {
    return this.#unsettledBytes - this.#leaseBytes;
  }

  /** The bytes of the members the leases name on their items, which maxLeaseBytes bounds. */
  get leaseBytes(): number {
    return this.#leaseBytes;
  }

  /** The bytes of members' names that leases may still add (maxLeaseBytes less leaseBytes). */
  get leaseRoom(): number {
    return Math.max(0, this.#maxLeaseBytes - this.#leaseBytes);
  }

  /** What the topics' records take in a snapshot with their consumers, which maxTopicBytes bounds. */
  get topicBytes(): number {
    return this.#topicBytes;
  }

  /** The dead letters' bytes as their records take them in a snapshot, every topic together (bounded by maxDeadLetterBytes). */
  get deadLetterBytes(): number {
    return this.#deadLetterBytes;
  }

  /** The most unsettled items `topic` may hold: the least its consumers ask for, within maxPendingPerTopic. */
  maxPendingOf(name: string): number {
    let limit = this.#maxPending;
    for (const settings of this.topics.get(name)?.consumers.values() ?? []) if (settings.maxPending !== null) limit = Math.min(limit, settings.maxPending);
    return limit;
  }

  /**
   * Replaces the whole contents with `parts`, in place, and rebuilds what is derived from them.
   * The parts must be whole and consistent (decodeFanoutSnapshot checks a snapshot's before it
   * returns them); they become the state's own, so give them to one state only. Items in flight
   * per member are counted afresh in id order: that map's order is not replicated state (apply
   * only looks members up in it).
   */
  restore(parts: FanoutStateParts): void {
    this.topics.clear();
    this.items.clear();
    this.#keys.clear();
    this.#leased.clear();
    this.batches.clear();
    this.#unsettledBytes = 0;
    this.#leaseBytes = 0;
    this.#topicBytes = 0;
    this.#deadLetterBytes = 0;
    this.#deadLetterBytesOf.clear();
    for (const topic of parts.topics) {
      this.topics.set(topic.name, { ...topic, unsettled: 0, inFlight: new Map() });
      this.#topicBytes += topicBytes(topic.name);
      for (const member of topic.consumers.keys()) this.#topicBytes += consumerBytes(member);
      for (const letter of topic.deadLetters) this.#addDeadLetterBytes(topic.name, deadLetterBytes(letter));
    }
    for (const item of parts.items) {
      const topic = this.topics.get(item.topic) as TopicRecord;
      this.items.set(item.id, item);
      topic.unsettled++;
      this.#unsettledBytes += itemBytes(item);
      if (item.phase.kind === 'leased') {
        topic.inFlight.set(item.phase.member, (topic.inFlight.get(item.phase.member) ?? 0) + 1);
        this.#leased.add(item.id);
        this.#leaseBytes += textBytes(item.phase.member);
      }
      if (item.key !== null) this.#joinLine(item);
    }
    for (const [index, batch] of parts.batches) this.batches.set(index, batch);
    this.#unsettledBytes += parts.batches.length * BATCH_RECORD_BYTES;
    this.nextItemId = parts.nextItemId;
  }

  /** Empties the state, as a snapshot of a cluster before fan-out's version restores it. */
  clear(): void {
    this.restore({ nextItemId: 1, topics: [], items: [], batches: [] });
  }

  apply(index: number, command: FanoutCommand): FanoutApplyResult {
    switch (command.type) {
      case 'consume': {
        const topic = this.#topic(command.topic);
        if (topic === null) return { ok: false, reason: 'too-many-topics' };
        if (!topic.consumers.has(command.member)) {
          // A consumer past the topics' share is refused as a topic past their number is.
          const bytes = consumerBytes(command.member);
          if (this.#topicBytes + bytes > this.#maxTopicBytes) {
            this.#forgetIfIdle(topic);
            return { ok: false, reason: 'too-many-topics' };
          }
          this.#topicBytes += bytes;
        }
        topic.consumers.set(command.member, command.settings);
        return { ok: true };
      }
      case 'unconsume': {
        const topic = this.topics.get(command.topic);
        if (topic === undefined) return { ok: false, reason: 'unknown-topic' };
        if (topic.consumers.delete(command.member)) this.#topicBytes -= consumerBytes(command.member);
        this.#forgetIfIdle(topic);
        return { ok: true };
      }
      case 'emit':
        return this.#emit(index, command);
      case 'lease':
        return this.#lease(index, command);
      case 'done':
        return this.#done(command);
      case 'reclaim':
        return this.#reclaim(command);
      case 'requeue':
        return this.#requeue(index, command);
      case 'drop':
        return this.#drop(command);
    }
  }

  /** The topic named, made if there is room; null when there is none. */
  #topic(name: string): TopicRecord | null {
    const known = this.topics.get(name);
    if (known !== undefined) return known;
    if (this.topics.size >= this.#maxTopics || this.#topicBytes + topicBytes(name) > this.#maxTopicBytes) return null;
    this.#topicBytes += topicBytes(name);
    const topic: TopicRecord = { name, ready: new Set(), consumers: new Map(), unsettled: 0, inFlight: new Map(), counts: { emitted: 0, done: 0, failed: 0, dead: 0, stale: 0, redelivered: 0 }, deadLetters: [] };
    this.topics.set(name, topic);
    return topic;
  }

  /** A topic with no consumer and nothing unsettled is forgotten, its counts and dead letters with it. */
  #forgetIfIdle(topic: TopicRecord): void {
    if (topic.consumers.size !== 0 || topic.unsettled !== 0 || topic.deadLetters.length !== 0) return;
    this.topics.delete(topic.name);
    this.#topicBytes -= topicBytes(topic.name);
  }

  #emit(index: number, command: Extract<FanoutCommand, { type: 'emit' }>): FanoutApplyResult {
    const topic = this.#topic(command.topic);
    if (topic === null) return { ok: false, reason: 'too-many-topics' };
    // All or nothing: an emit that does not fit keeps none of its items.
    const bytes = bytesOf(command.items, command.origin);
    if (!this.#fits(topic, command.items.length, bytes)) {
      this.#forgetIfIdle(topic);
      return { ok: false, reason: 'backpressure' };
    }
    const firstId = this.nextItemId;
    for (const item of command.items) {
      const record: ItemRecord = { id: this.nextItemId++, topic: topic.name, data: item.data, key: item.key, batch: index, origin: command.origin, failures: 0, redeliveries: 0, lastError: null, phase: DUE_NOW };
      this.items.set(record.id, record);
      this.#queue(record, topic);
    }
    topic.unsettled += command.items.length;
    this.#unsettledBytes += bytes;
    topic.counts.emitted += command.items.length;
    this.batches.set(index, { topic: topic.name, total: command.items.length, done: 0, dead: 0 });
    return { ok: true, firstId, count: command.items.length };
  }

  /** Whether `count` more items of `bytes` (itemBytes) fit in `topic` and in the state. */
  #fits(topic: TopicRecord, count: number, bytes: number): boolean {
    return topic.unsettled + count <= this.maxPendingOf(topic.name) && this.boundedUnsettledBytes + bytes <= this.#maxUnsettledBytes;
  }

  /** A new item joins its key's line, and the ready set when it is first in it (or has no key). */
  #queue(item: ItemRecord, topic: TopicRecord): void {
    if (item.key === null || this.#joinLine(item)) topic.ready.add(item.id);
  }

  /** A keyed item joins the end of its key's line: whether it is first in it (the head). */
  #joinLine(item: ItemRecord): boolean {
    const line = this.#keys.get(lineOf(item));
    if (line !== undefined) {
      line.push(item.id);
      return false;
    }
    this.#keys.set(lineOf(item), [item.id]);
    return true;
  }

  /** A settled item leaves the state; the next item of its key, if any, becomes ready. */
  #settle(item: ItemRecord, topic: TopicRecord): void {
    this.items.delete(item.id);
    topic.ready.delete(item.id);
    topic.unsettled--;
    this.#unsettledBytes -= itemBytes(item);
    if (item.phase.kind === 'leased') this.#leaseBytes -= textBytes(item.phase.member);
    if (item.key === null) return;
    const line = this.#keys.get(lineOf(item)) as number[];
    line.shift();
    const next = line[0];
    if (next === undefined) this.#keys.delete(lineOf(item));
    else topic.ready.add(next);
  }

  /**
   * Leases the listed items to `member` under this entry's index, each one that is still
   * pending, due at `atMs` and ready (its key's head), of the command's topic if it names one,
   * on a topic `member` consumes with room
   * under its parallelism and prefetch (prefetch.ts); the others are skipped: the leader planned with a state a few entries
   * older, or another leader's lease applied meanwhile.
   */
  #lease(index: number, command: Extract<FanoutCommand, { type: 'lease' }>): FanoutApplyResult {
    const { member, atMs } = command;
    const leased: number[] = [];
    // The topic of the items looked at last, with the member's settings there, the most it may
    // hold and what it holds: a lease's items are mostly of one topic, and these were looked up
    // per item (the most held walks the topic's consumers for a rate).
    let topic: TopicRecord | null = null;
    let settings: ConsumerSettings | undefined;
    let most = 0;
    let held = 0;
    for (const id of command.ids) {
      const item = this.items.get(id);
      if (item === undefined || item.phase.kind !== 'pending' || item.phase.notBeforeMs > atMs || (command.topic !== undefined && item.topic !== command.topic)) continue;
      if (topic?.name !== item.topic) {
        topic = this.topics.get(item.topic) as TopicRecord;
        settings = topic.consumers.get(member);
        most = settings === undefined ? 0 : maxLeased(topic, settings);
        held = topic.inFlight.get(member) ?? 0;
      }
      // A member never holds more of a topic's items than its parallelism and prefetch
      // (prefetch.ts): a lease planned by an earlier leader, applied after a new leader's plan
      // that did not see it, would add to it.
      if (settings === undefined || held >= most || !topic.ready.has(id)) continue;
      // Past the leases' share the item stays pending: leases that end make room.
      if (this.#leaseBytes + textBytes(member) > this.#maxLeaseBytes) break;
      this.#change(item, { phase: { kind: 'leased', member, token: index, deadlineMs: leaseDeadlineMs(atMs, settings, held, LEASE_GRACE_MS) } });
      topic.ready.delete(id);
      this.#leased.add(id);
      topic.inFlight.set(member, ++held);
      leased.push(id);
    }
    return { ok: true, leased };
  }

  /** The lease of `item` ends (an outcome, or taken back): its member has one fewer in flight. */
  #endLease(item: ItemRecord, topic: TopicRecord): void {
    if (item.phase.kind !== 'leased') return;
    this.#leased.delete(item.id);
    const member = item.phase.member;
    const n = (topic.inFlight.get(member) ?? 1) - 1;
    if (n === 0) topic.inFlight.delete(member);
    else topic.inFlight.set(member, n);
  }

  #done(command: Extract<FanoutCommand, { type: 'done' }>): FanoutApplyResult {
    let stale = 0;
    const failed: ItemRecord[] = [];
    const succeeded: number[] = [];
    const dead: number[] = [];
    const settledBatches: SettledBatch[] = [];
    for (const outcome of command.outcomes) {
      const held = this.items.get(outcome.id);
      if (held === undefined || !this.#holds(held, command.member, outcome)) {
        // A late outcome, or one for an item settled already: its topic counts it when known.
        const topicName = held?.topic;
        const topic = topicName === undefined ? undefined : this.topics.get(topicName);
        if (topic !== undefined) topic.counts.stale++;
        stale++;
        continue;
      }
      const topic = this.topics.get(held.topic) as TopicRecord;
      this.#endLease(held, topic);
      const batch = this.batches.get(held.batch);
      if (outcome.error === null) {
        const item = held;
        topic.counts.done++;
        if (batch !== undefined) batch.done++;
        succeeded.push(item.id);
        this.#settle(item, topic);
      } else {
        topic.counts.failed++;
        // Kept cut short where the whole would pass the state's bound (an error is at most
        // MAX_ERROR_LENGTH characters, and so many items may fail at once).
        const room = this.#maxUnsettledBytes - this.boundedUnsettledBytes + textBytes(held.lastError);
        let item = this.#change(held, { failures: held.failures + 1, lastError: textWithin(outcome.error, room) });
        failed.push(item);
        // The settings of the member that ran it; of another consumer when it stopped consuming
        // meanwhile; with none left, the item waits for one, its failures counted.
        const settings = topic.consumers.get(command.member) ?? topic.consumers.values().next().value;
        if (settings === undefined) {
          item = this.#change(item, { phase: DUE_NOW });
          topic.ready.add(item.id);
        } else if (item.failures > settings.retries) {
          topic.counts.dead++;
          if (batch !== undefined) batch.dead++;
          this.#deadLetter(item, topic, command.atMs);
          dead.push(item.id);
          this.#settle(item, topic);
        } else {
          item = this.#change(item, { phase: { kind: 'pending', notBeforeMs: failedAtMs(held, command.atMs) + backoffMs(settings.backoffMs, item.failures) } });
          topic.ready.add(item.id);
        }
      }
      if (batch !== undefined && batch.done + batch.dead === batch.total) {
        this.batches.delete(held.batch);
        this.#unsettledBytes -= BATCH_RECORD_BYTES;
        settledBatches.push({ index: held.batch, ...batch });
      }
      this.#forgetIfIdle(topic);
    }
    return { ok: true, stale, failed, succeeded, dead, settledBatches };
  }

  /** Replaces `item`'s record with one changed as said (records are not changed in place: see ItemRecord). */
  #change(item: ItemRecord, changes: Partial<Pick<ItemRecord, 'failures' | 'redeliveries' | 'lastError' | 'phase'>>): ItemRecord {
    const next = { ...item, ...changes };
    this.items.set(item.id, next);
    if (changes.lastError !== undefined || changes.phase !== undefined) this.#unsettledBytes += itemBytes(next) - itemBytes(item);
    if (changes.phase !== undefined) this.#leaseBytes += leaseBytesOf(next) - leaseBytesOf(item);
    return next;
  }

  /** Whether `item` is leased to `member` under the outcome's token. */
  #holds(item: ItemRecord, member: NodeId, outcome: ItemOutcome): boolean {
    return item.phase.kind === 'leased' && item.phase.member === member && item.phase.token === outcome.token;
  }

  /**
   * `item` joins its topic's dead letters: past the topic's count, its oldest is forgotten, and
   * past the bytes every topic keeps, the oldest of the topic that keeps the most, one after
   * another (on a tie, of the topic it joined, else of the first in the order kept).
   */
  #deadLetter(item: ItemRecord, topic: TopicRecord, atMs: number): void {
    const letter: DeadLetter = { id: item.id, data: item.data, key: item.key, failures: item.failures, error: item.lastError, origin: item.origin, atMs };
    topic.deadLetters.push(letter);
    this.#addDeadLetterBytes(topic.name, deadLetterBytes(letter));
    if (topic.deadLetters.length > this.#maxDeadLetters) this.#forgetDeadLetters(topic, 1);
    while (this.#deadLetterBytes > this.#maxDeadLetterBytes) {
      let most = topic;
      for (const t of this.topics.values()) if ((this.#deadLetterBytesOf.get(t.name) ?? 0) > (this.#deadLetterBytesOf.get(most.name) ?? 0)) most = t;
      this.#forgetDeadLetters(most, 1);
      if (most !== topic) this.#forgetIfIdle(most);
    }
  }

  /** Forgets the `count` oldest dead letters of `topic`. */
  #forgetDeadLetters(topic: TopicRecord, count: number): void {
    for (const letter of topic.deadLetters.splice(0, count)) this.#addDeadLetterBytes(topic.name, -deadLetterBytes(letter));
  }

  /** Keeps `topic` only of the dead letters `keep` says, in their order. */
  #keepDeadLetters(topic: TopicRecord, keep: (letter: DeadLetter) => boolean): void {
    const kept: DeadLetter[] = [];
    for (const letter of topic.deadLetters) {
      if (keep(letter)) kept.push(letter);
      else this.#addDeadLetterBytes(topic.name, -deadLetterBytes(letter));
    }
    topic.deadLetters.splice(0, topic.deadLetters.length, ...kept);
  }

  #addDeadLetterBytes(topic: string, bytes: number): void {
    this.#deadLetterBytes += bytes;
    const left = (this.#deadLetterBytesOf.get(topic) ?? 0) + bytes;
    if (left === 0) this.#deadLetterBytesOf.delete(topic);
    else this.#deadLetterBytesOf.set(topic, left);
  }

  /** Leases taken back (their member died, stopped, or ran past the deadline): pending again, due at once. */
  #reclaim(command: Extract<FanoutCommand, { type: 'reclaim' }>): FanoutApplyResult {
    let count = 0;
    for (const lease of command.leases) {
      const item = this.items.get(lease.id);
      if (item === undefined || item.phase.kind !== 'leased' || item.phase.token !== lease.token) continue;
      const topic = this.topics.get(item.topic) as TopicRecord;
      this.#endLease(item, topic);
      this.#change(item, { redeliveries: item.redeliveries + 1, phase: DUE_NOW });
      topic.counts.redelivered++;
      topic.ready.add(item.id);
      count++;
    }
    return { ok: true, count };
  }

  /** Dead letters dropped for good; ids no longer among them are passed over. `count`: how many went. */
  #drop(command: Extract<FanoutCommand, { type: 'drop' }>): FanoutApplyResult {
    const topic = this.topics.get(command.topic);
    if (topic === undefined) return { ok: false, reason: 'unknown-topic' };
    const dropped = new Set(command.ids);
    const before = topic.deadLetters.length;
    this.#keepDeadLetters(topic, (letter) => !dropped.has(letter.id));
    const count = before - topic.deadLetters.length;
    this.#forgetIfIdle(topic);
    return { ok: true, count };
  }

  /** Dead letters emitted again, as new items of a batch of this entry (their ids are new). */
  #requeue(index: number, command: Extract<FanoutCommand, { type: 'requeue' }>): FanoutApplyResult {
    const topic = this.topics.get(command.topic);
    if (topic === undefined) return { ok: false, reason: 'unknown-topic' };
    const wanted = new Set(command.ids);
    const letters = topic.deadLetters.filter((letter) => wanted.has(letter.id));
    if (letters.length === 0) return { ok: true, count: 0 };
    // Checked before the letters leave their list: refused, they stay dead letters.
    if (!this.#fits(topic, letters.length, bytesOf(letters, null))) return { ok: false, reason: 'backpressure' };
    this.#keepDeadLetters(topic, (letter) => !wanted.has(letter.id));
    return this.#emit(index, { type: 'emit', topic: topic.name, items: letters.map((l) => ({ data: l.data, key: l.key })), origin: null, atMs: command.atMs });
  }
}

/** What `items` of `origin`, emitted, take as unsettled items (itemBytes) with their batch. */
function bytesOf(items: ReadonlyArray<{ readonly data: Uint8Array; readonly key: string | null }>, origin: EmitOrigin | null): number {
  let bytes = BATCH_RECORD_BYTES;
  for (const item of items) bytes += itemBytes({ data: item.data, key: item.key, origin, lastError: null, phase: DUE_NOW });
  return bytes;
}

/**
 * The name of the line of a keyed item's key, in `#keys` (and in a snapshot's checks): one per
 * topic and key, since a topic has no line break (items.ts checkTopic).
 */
export function lineOf(item: { readonly topic: string; readonly key: string | null }): string {
  return `${item.topic}\n${item.key}`;
}

/** The wait before the retry after `failures` failed attempts: `baseMs` doubled each time, capped. */
export function backoffMs(baseMs: number, failures: number): number {
  return Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.min(failures - 1, 30));
}

/** What the member an item's lease names takes (textBytes), or 0 when it is not leased. */
function leaseBytesOf(item: ItemRecord): number {
  return item.phase.kind === 'leased' ? textBytes(item.phase.member) : 0;
}
