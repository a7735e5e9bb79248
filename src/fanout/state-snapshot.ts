import { encode } from 'cborg';
import { decode } from '../bytes/cbor-decode.js';
import { CodecError } from '../errors.js';
import type { NodeId } from '../raft/types.js';
import { arrayHeader, headBytes } from '../bytes/cbor-heads.js';
import { concatBytes } from '../bytes/concat-bytes.js';
import { DECODE_OPTIONS } from '../bytes/strict-cbor.js';
import { array, describe } from '../transport/wire-fields.js';
import type { ConsumerSettings, EmitOrigin } from './command.js';
import { isCount, isData, isError, isKey, isMemberId, isOrigin, isSettings, isTime, isTopic } from './command-shape.js';
import { FANOUT_DEFAULTS, lineOf, type BatchRecord, type DeadLetter, type FanoutLimits, type FanoutState, type FanoutStateParts, type ItemPhase, type ItemRecord, type TopicCounts, type TopicRecord } from './state.js';

/**
 * A snapshot of fan-out's replicated state (FanoutState), for log compaction, as the
 * scheduler's is (scheduler/state-snapshot.ts): a compact array, every Map and Set of the state
 * an array in its iteration order, since that order is state too (the ready order is the order
 * items are leased in, consumers are looked at in registration order, dead letters are
 * forgotten oldest first). Objects are never used.
 *
 * CBOR (cborg) rather than the scheduler's JSON: an item's data is bytes, up to 64 KiB each,
 * which CBOR holds as they are, where JSON would need them spelled out as text (base64 or an
 * array of numbers), larger and slower to read back, and one more thing to check. CBOR is as
 * deterministic here: cborg writes every integer and length in its shortest form and a number
 * that is not whole in the shortest float that holds it exactly, and the layout has arrays
 * only, so equal states give equal bytes on every member. It is read with the transport's
 * strict options (DECODE_OPTIONS: shortest forms only, no tags, undefined, NaN or Infinity).
 *
 *   [version, nextItemId, topics, items, batches]
 *
 *   topic:      [name, consumers, counts, deadLetters, ready]
 *   consumer:   [member, parallelism, retries, timeoutMs, backoffMs, ratePerSecond | null, maxPending | null]
 *   counts:     [emitted, done, failed, dead, stale, redelivered]
 *   deadLetter: [id, data, key | null, failures, error | null, origin, atMs]
 *   ready:      [id, ...], in the order the items became ready
 *   item:       [id, topic, data, key | null, batch, origin, failures, redeliveries, lastError | null, phase]
 *               topic: its position in topics; batch: the index of its emit
 *   origin:     null | [job, slotMs]
 *   phase:      [notBeforeMs] (pending) | [member, token, deadlineMs] (leased)
 *   batch:      [index, topic (its position in topics), total, done, dead]
 *
 * Items are in id order (the order they were emitted). Each key's line, each topic's unsettled
 * count and items in flight are derived, so not written: FanoutState.restore rebuilds them.
 * Decoding checks every field with the bounds a command read from the log is checked with
 * (command-shape.ts), and the whole against the state's bounds and its invariants, so a
 * snapshot a state could not have reached is refused whole. Any change to the layout must
 * bump FANOUT_SNAPSHOT_VERSION.
 */
export const FANOUT_SNAPSHOT_VERSION = 1;

const TOP_LEVEL_FIELDS = 5;
const TOPIC_FIELDS = 5;
const CONSUMER_FIELDS = 7;
const DEAD_LETTER_FIELDS = 7;
const ITEM_FIELDS = 10;
const ORIGIN_FIELDS = 2;
const PENDING_FIELDS = 1;
const LEASED_FIELDS = 3;
const BATCH_FIELDS = 5;

/** A topic's counts, in their order in a snapshot. */
const TOPIC_COUNTS = ['emitted', 'done', 'failed', 'dead', 'stale', 'redelivered'] as const satisfies readonly (keyof TopicCounts)[];
/** A batch's tallies, in their order in a snapshot, after its index and topic. */
const BATCH_COUNTS = ['total', 'done', 'dead'] as const satisfies readonly (keyof BatchRecord)[];

/** The bound of a topic's consumers, which the state does not bound (one per member): only the snapshot's size does. */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

type Wire = unknown[];
type Limits = Required<FanoutLimits>;

/**
 * Items, or dead letters, encoded per piece of a snapshot taken in steps (fanoutSnapshotSteps):
 * a piece is a small part of a step's budget (SNAPSHOT_STEP_BUDGET_MS), whatever the items'
 * size, as each item's data is at most MAX_ITEM_BYTES and copied once.
 */
export const SNAPSHOT_ITEMS_PER_PIECE = 64;

/** Ids of a topic's ready set encoded per piece (a few bytes each). */
const READY_IDS_PER_PIECE = 2048;

/** Encodes the whole state at once. Deterministic: the same state gives the same bytes on every member. */
export function encodeFanoutSnapshot(state: FanoutState): Uint8Array {
  const steps = fanoutSnapshotSteps(state);
  for (;;) {
    const next = steps.next();
    if (next.done === true) return concatBytes(next.value);
  }
}

/**
 * A snapshot of the state as it is now, encoded a piece at a time while the state moves on:
 * yields null after each piece, and returns the pieces of the bytes (joined, they are what
 * encodeFanoutSnapshot gives for the state as it was at the call; the caller joins them, in
 * steps of its own). What it encodes is taken at the call: the items' records (never
 * changed in place: a change replaces an item's record), and a copy of the topics' and the
 * batches' fields, the small part. The items, the large part, are encoded a piece at a time:
 * CBOR's array is its head and its elements one after the other, each encoded alone as it
 * would be within it, so the pieces joined are the array encoded at once.
 */
export function* fanoutSnapshotSteps(state: FanoutState): Generator<null, Uint8Array[], void> {
  const position = new Map<string, number>();
  for (const name of state.topics.keys()) position.set(name, position.size);
  const at = (topic: string): number => position.get(topic) as number;
  // Taken now: what changes in place is copied (dead letters are records never changed).
  const topics = [...state.topics.values()].map((t) => ({ head: topicHead(t), deadLetters: [...t.deadLetters], ready: [...t.ready] }));
  const batches = [...state.batches].map(([index, batch]) => [index, at(batch.topic), ...BATCH_COUNTS.map((name) => batch[name])]);
  const items = [...state.items.values()];
  const pieces: Uint8Array[] = [arrayHeader(TOP_LEVEL_FIELDS), encode(FANOUT_SNAPSHOT_VERSION), encode(state.nextItemId), arrayHeader(topics.length)];
  for (const topic of topics) {
    // [name, consumers, counts, deadLetters, ready]: the first three as they are, the two lists a piece at a time.
    pieces.push(arrayHeader(TOPIC_FIELDS), ...topic.head.map((field) => encode(field)));
    yield* inPieces(pieces, topic.deadLetters, SNAPSHOT_ITEMS_PER_PIECE, (l) => encode([l.id, l.data, l.key, l.failures, l.error, originWire(l.origin), l.atMs]));
    pieces.push(arrayHeader(topic.ready.length));
    for (let i = 0; i < topic.ready.length; i += READY_IDS_PER_PIECE) {
      yield null;
      // A run of ids encoded as an array, less its head: its elements, as they are within the whole.
      const run = topic.ready.slice(i, i + READY_IDS_PER_PIECE);
      pieces.push(encode(run).subarray(headBytes(run.length)));
    }
  }
  yield* inPieces(pieces, items, SNAPSHOT_ITEMS_PER_PIECE, (item) => encode([item.id, at(item.topic), item.data, item.key, item.batch, originWire(item.origin), item.failures, item.redeliveries, item.lastError, phaseWire(item.phase)]));
  pieces.push(encode(batches));
  return pieces;
}

/** Appends to `pieces` an array of `values` encoded one by one, yielding after every `perPiece` of them. */
function* inPieces<T>(pieces: Uint8Array[], values: readonly T[], perPiece: number, encodeOne: (value: T) => Uint8Array): Generator<null, void, void> {
  pieces.push(arrayHeader(values.length));
  for (let i = 0; i < values.length; i += perPiece) {
    yield null;
    const end = Math.min(values.length, i + perPiece);
    for (let j = i; j < end; j++) pieces.push(encodeOne(values[j] as T));
  }
}

/**
 * Replaces the whole contents of `state` with the snapshot's, in place. The bytes are untrusted
 * (a peer sent them): they are decoded and checked in full first, and on any fault this throws
 * CodecError and leaves `state` as it was.
 */
export function restoreFanoutSnapshot(state: FanoutState, bytes: Uint8Array): void {
  state.restore(decodeFanoutSnapshot(bytes, state.limits));
}

/**
 * Decodes and checks a snapshot into fresh records, for a state with `limits` (a snapshot that
 * does not fit them is refused: the state would break its bounds). Give the parts to one state
 * only: its apply changes the records. Throws CodecError, and only CodecError, on any bad input.
 */
export function decodeFanoutSnapshot(bytes: Uint8Array, limits: Limits = FANOUT_DEFAULTS): FanoutStateParts {
  try {
    if (!(bytes instanceof Uint8Array)) throw new CodecError(`expected a Uint8Array, got ${describe(bytes)}`);
    return partsFromWire(decode(bytes, DECODE_OPTIONS) as unknown, limits);
  } catch (error) {
    // Ours, cborg's (truncated or garbled bytes), and a stack overflow on absurd nesting: all
    // become one CodecError that says it was a snapshot.
    const detail = error instanceof Error ? error.message : String(error);
    throw new CodecError(`Malformed fan-out snapshot: ${detail}`, { cause: error });
  }
}

/** A topic's first fields: its name, consumers and counts. */
function topicHead(topic: TopicRecord): Wire {
  const consumers = [...topic.consumers].map(([member, s]) => [member, s.parallelism, s.retries, s.timeoutMs, s.backoffMs, s.ratePerSecond, s.maxPending]);
  return [topic.name, consumers, TOPIC_COUNTS.map((name) => topic.counts[name])];
}

function originWire(origin: EmitOrigin | null): Wire | null {
  return origin === null ? null : [origin.job, origin.slotMs];
}

function phaseWire(phase: ItemPhase): Wire {
  return phase.kind === 'pending' ? [phase.notBeforeMs] : [phase.member, phase.token, phase.deadlineMs];
}

type TopicParts = FanoutStateParts['topics'][number];

/** The unsettled items read, and what checking the ready sets needs of them. */
interface DecodedItems {
  /** In id order. */
  readonly byId: ReadonlyMap<number, ItemRecord>;
  /** The head of each key's line, by lineOf. */
  readonly heads: ReadonlyMap<string, number>;
  /** Per topic, its pending items that may be leased: without a key, or their key's head. */
  readonly leasable: ReadonlyMap<string, number>;
}

function partsFromWire(value: unknown, limits: Limits): FanoutStateParts {
  if (!Array.isArray(value) || value.length === 0) throw new CodecError(`expected a non-empty array, got ${describe(value)}`);
  if (value[0] !== FANOUT_SNAPSHOT_VERSION) throw new CodecError(`unsupported version ${describe(value[0])}`);
  const top = tuple(value, 'snapshot', TOP_LEVEL_FIELDS);
  const nextItemId = checked(top[1], 'nextItemId', isCount, 'a non-negative integer');
  if (nextItemId < 1) throw new CodecError(`nextItemId: expected 1 or more, got ${nextItemId}`);
  const topics: TopicParts[] = [];
  const names = new Set<string>();
  const ready: Wire[] = [];
  for (const [i, item] of array(top[2], 'topics', limits.maxTopics).entries()) {
    const [topic, readyWire] = topicFromWire(item, `topics[${i}]`, nextItemId, limits);
    if (names.has(topic.name)) throw new CodecError(`topics[${i}].name: ${describe(topic.name)} appears twice`);
    names.add(topic.name);
    topics.push(topic);
    ready.push(readyWire);
  }
  const items = itemsFromWire(top[3], topics, nextItemId, limits);
  const batches = batchesFromWire(top[4], topics, items.byId.values());
  topics.forEach((topic, i) => readyFromWire(ready[i] as Wire, `topics[${i}].ready`, topic, items));
  return { nextItemId, topics, items: [...items.byId.values()], batches };
}

function topicFromWire(value: unknown, field: string, nextItemId: number, limits: Limits): [TopicParts, Wire] {
  const t = tuple(value, field, TOPIC_FIELDS);
  const consumers = new Map<NodeId, ConsumerSettings>();
  for (const [i, item] of array(t[1], `${field}.consumers`, UNBOUNDED).entries()) {
    const c = tuple(item, `${field}.consumers[${i}]`, CONSUMER_FIELDS);
    const member = checked(c[0], `${field}.consumers[${i}].member`, isMemberId, 'a member id');
    if (consumers.has(member)) throw new CodecError(`${field}.consumers[${i}].member: ${describe(member)} appears twice`);
    const settings = { parallelism: c[1], retries: c[2], timeoutMs: c[3], backoffMs: c[4], ratePerSecond: c[5], maxPending: c[6] };
    if (!isSettings(settings)) throw new CodecError(`${field}.consumers[${i}]: settings out of their bounds (${c.slice(1).map(describe).join(', ')})`);
    consumers.set(member, settings);
  }
  const topicCounts: TopicCounts = counts(t[2], `${field}.counts`, TOPIC_COUNTS);
  const deadLetters = array(t[3], `${field}.deadLetters`, limits.maxDeadLettersPerTopic).map((item, i) => deadLetterFromWire(item, `${field}.deadLetters[${i}]`, nextItemId));
  const topic = { name: checked(t[0], `${field}.name`, isTopic, 'a topic name'), ready: new Set<number>(), consumers, counts: topicCounts, deadLetters };
  return [topic, array(t[4], `${field}.ready`, limits.maxPendingPerTopic)];
}

function deadLetterFromWire(value: unknown, field: string, nextItemId: number): DeadLetter {
  const l = tuple(value, field, DEAD_LETTER_FIELDS);
  return {
    id: itemId(l[0], `${field}.id`, nextItemId),
    data: checked(l[1], `${field}.data`, isData, 'bytes within the item bound'),
    key: checked(l[2], `${field}.key`, isKey, 'a key or null'),
    failures: checked(l[3], `${field}.failures`, isCount, 'a non-negative integer'),
    error: checked(l[4], `${field}.error`, isError, 'an error or null'),
    origin: originFromWire(l[5], `${field}.origin`),
    atMs: checked(l[6], `${field}.atMs`, isTime, 'a finite number'),
  };
}

/**
 * The unsettled items by id, in id order, each of a topic known and within its topic's bound;
 * an item of a key leased only as the head of its key's line (items of one key run one at a
 * time). A leased item's member need not consume its topic: a lease outlives an unconsume
 * until the leader takes it back.
 */
function itemsFromWire(value: unknown, topics: readonly TopicParts[], nextItemId: number, limits: Limits): DecodedItems {
  const byId = new Map<number, ItemRecord>();
  const perTopic = new Map<string, number>();
  const heads = new Map<string, number>();
  const leasable = new Map<string, number>();
  let lastId = 0;
  for (const [i, wire] of array(value, 'items', limits.maxTopics * limits.maxPendingPerTopic).entries()) {
    const field = `items[${i}]`;
    const w = tuple(wire, field, ITEM_FIELDS);
    const id = itemId(w[0], `${field}.id`, nextItemId);
    if (id <= lastId) throw new CodecError(`${field}.id: ${id} is not past the previous item's ${lastId}`);
    lastId = id;
    const topic = topicAt(w[1], `${field}.topic`, topics);
    const unsettled = (perTopic.get(topic.name) ?? 0) + 1;
    if (unsettled > limits.maxPendingPerTopic) throw new CodecError(`${field}: topic ${describe(topic.name)} has more than the ${limits.maxPendingPerTopic} unsettled items it may hold`);
    perTopic.set(topic.name, unsettled);
    const item: ItemRecord = {
      id,
      topic: topic.name,
      data: checked(w[2], `${field}.data`, isData, 'bytes within the item bound'),
      key: checked(w[3], `${field}.key`, isKey, 'a key or null'),
      batch: checked(w[4], `${field}.batch`, isCount, 'a non-negative integer'),
      origin: originFromWire(w[5], `${field}.origin`),
      failures: checked(w[6], `${field}.failures`, isCount, 'a non-negative integer'),
      redeliveries: checked(w[7], `${field}.redeliveries`, isCount, 'a non-negative integer'),
      lastError: checked(w[8], `${field}.lastError`, isError, 'an error or null'),
      phase: phaseFromWire(w[9], `${field}.phase`),
    };
    // Items are in id order, the order of each key's line: the first of a key is its head.
    const head = item.key === null || !heads.has(lineOf(item));
    if (item.key !== null && head) heads.set(lineOf(item), id);
    if (item.phase.kind === 'pending' && head) leasable.set(topic.name, (leasable.get(topic.name) ?? 0) + 1);
    if (item.phase.kind === 'leased' && !head) throw new CodecError(`${field}: leased while an older item of its key is unsettled`);
    byId.set(id, item);
  }
  return { byId, heads, leasable };
}

function phaseFromWire(value: unknown, field: string): ItemPhase {
  const p = array(value, field, LEASED_FIELDS);
  if (p.length === PENDING_FIELDS) return { kind: 'pending', notBeforeMs: checked(p[0], `${field}.notBeforeMs`, isTime, 'a finite number') };
  if (p.length !== LEASED_FIELDS) throw new CodecError(`${field}: expected ${PENDING_FIELDS} or ${LEASED_FIELDS} fields, got ${p.length}`);
  return {
    kind: 'leased',
    member: checked(p[0], `${field}.member`, isMemberId, 'a member id'),
    token: checked(p[1], `${field}.token`, isCount, 'a non-negative integer'),
    deadlineMs: checked(p[2], `${field}.deadlineMs`, isTime, 'a finite number'),
  };
}

/**
 * The batches by emit index: each of a topic known, with items of it still unsettled, exactly
 * as many as its total less those done and dead (the last one settled deletes it), and every
 * unsettled item's batch one of them, of the item's topic.
 */
function batchesFromWire(value: unknown, topics: readonly TopicParts[], items: Iterable<ItemRecord>): Array<[number, BatchRecord]> {
  const batches = new Map<number, BatchRecord>();
  for (const [i, wire] of array(value, 'batches', UNBOUNDED).entries()) {
    const field = `batches[${i}]`;
    const b = tuple(wire, field, BATCH_FIELDS);
    const index = checked(b[0], `${field}.index`, isCount, 'a non-negative integer');
    if (batches.has(index)) throw new CodecError(`${field}.index: ${index} appears twice`);
    batches.set(index, { topic: topicAt(b[1], `${field}.topic`, topics).name, ...counts(b.slice(2), field, BATCH_COUNTS) });
  }
  const unsettled = new Map<number, number>();
  for (const item of items) {
    const batch = batches.get(item.batch);
    if (batch === undefined || batch.topic !== item.topic) throw new CodecError(`item ${item.id}: no batch ${item.batch} of its topic`);
    unsettled.set(item.batch, (unsettled.get(item.batch) ?? 0) + 1);
  }
  for (const [index, batch] of batches) {
    const left = batch.total - batch.done - batch.dead;
    if (left < 1 || unsettled.get(index) !== left) throw new CodecError(`batch ${index}: ${left} of its items unsettled by its counts, ${unsettled.get(index) ?? 0} in the items`);
  }
  return [...batches];
}

/**
 * Fills `topic.ready`: exactly the topic's pending items that may be leased (`leasable` of
 * them), each once: every one without a key, and of each key the head of its line.
 */
function readyFromWire(value: Wire, field: string, topic: TopicParts, items: DecodedItems): void {
  for (const [i, wire] of value.entries()) {
    const id = checked(wire, `${field}[${i}]`, isCount, 'a non-negative integer');
    const item = items.byId.get(id);
    if (item === undefined || item.topic !== topic.name) throw new CodecError(`${field}[${i}]: no unsettled item ${id} of this topic`);
    if (item.phase.kind !== 'pending') throw new CodecError(`${field}[${i}]: item ${id} is leased`);
    if (topic.ready.has(id)) throw new CodecError(`${field}[${i}]: item ${id} appears twice`);
    if (item.key !== null && items.heads.get(lineOf(item)) !== id) throw new CodecError(`${field}[${i}]: item ${id} is not the oldest unsettled item of its key`);
    topic.ready.add(id);
  }
  const leasable = items.leasable.get(topic.name) ?? 0;
  if (topic.ready.size !== leasable) throw new CodecError(`${field}: ${topic.ready.size} items, where ${leasable} may be leased`);
}

function originFromWire(value: unknown, field: string): EmitOrigin | null {
  if (value === null) return null;
  const o = tuple(value, field, ORIGIN_FIELDS);
  const origin = { job: o[0], slotMs: o[1] };
  if (!isOrigin(origin)) throw new CodecError(`${field}: expected a job name and a finite slot, got ${describe(o[0])}, ${describe(o[1])}`);
  return origin;
}

/** The position of a topic in the snapshot's topics. */
function topicAt(value: unknown, field: string, topics: readonly TopicParts[]): TopicParts {
  const at = checked(value, field, isCount, 'a non-negative integer');
  const topic = topics[at];
  if (topic === undefined) throw new CodecError(`${field}: no topic at position ${at}`);
  return topic;
}

/** An item's id: ids are given from 1 up, so every one is below the next to give. */
function itemId(value: unknown, field: string, nextItemId: number): number {
  const id = checked(value, field, isCount, 'a non-negative integer');
  if (id < 1 || id >= nextItemId) throw new CodecError(`${field}: ${id} is not an id given out (1 to ${nextItemId - 1})`);
  return id;
}

/** Tallies, one non-negative integer per name, in the order of `names`. */
function counts<K extends string>(value: unknown, field: string, names: readonly K[]): Record<K, number> {
  const c = tuple(value, field, names.length);
  return Object.fromEntries(names.map((name, i) => [name, checked(c[i], `${field}.${name}`, isCount, 'a non-negative integer')])) as Record<K, number>;
}

function tuple(value: unknown, field: string, length: number): Wire {
  const a = array(value, field, length);
  if (a.length !== length) throw new CodecError(`${field}: expected ${length} fields, got ${a.length}`);
  return a;
}

/** `value` when `is` takes it (a check of command-shape.ts, so the log's bounds), else a CodecError naming the field. */
function checked<T>(value: unknown, field: string, is: (value: unknown) => value is T, what: string): T {
  if (!is(value)) throw new CodecError(`${field}: expected ${what}, got ${describe(value)}`);
  return value;
}
