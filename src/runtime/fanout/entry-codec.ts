/**
 * The log entries of the fan-out commands made for every item (emit, lease, done), written and
 * read by hand (cbor-heads.ts, cbor-reader.ts): `writeFanoutEntry` writes the bytes cborg's
 * `encode` writes for `[kind, command, version]`, and `readFanoutEntry` gives the value cborg's
 * `decode` gives for them. cborg stays the codec of these entries: a command of another type, or
 * with a value written here in no form (a negative integer, a number a float32 holds, a lease's
 * topic key with no value), is written by it; any bytes not in the exact form written here (non-ASCII text,
 * a head longer than it needs, another order of keys, a command of another type, bytes after the
 * value) are read by it. So these decide nothing cborg would decide differently, and the tests
 * check them against cborg byte for byte and value for value, on corrupted entries too.
 *
 * Why: cborg sorts each map's keys as it writes it (an array and a token per key), and reads
 * each value as a token and each key as a new string. In a fan-out run at a steady rate that was
 * about two fifths of every member's allocation and a twentieth of its main thread's busy time
 * (measured with sampling heap and CPU profiles); the CPU per item fell with it.
 *
 * The keys are in the order cborg writes them: shorter first, then by their bytes.
 */

import { CBOR_ARRAY, CBOR_MAP, CBOR_NULL, CBOR_TEXT, CBOR_UINT, isHeadArgument, isWritableNumber, MAX_HEAD_BYTES, writeBytes, writeHead, writeNumber, writeText } from '../../bytes/cbor-heads.js';
import { CborReader, NOT_HANDLED } from '../../bytes/cbor-reader.js';
import { writeSmall } from '../../bytes/small-cbor.js';
import type { EmitOrigin, EmittedItem, FanoutCommand, ItemOutcome } from '../../fanout/command.js';

/** An array of three items, as an entry's head is written. */
const ENTRY_HEAD = CBOR_ARRAY | 3;

/** The most bytes a number takes, written by writeNumber: a float64, or a head. */
const NUMBER_BYTES = 9;

/** The most bytes writeText takes for `text`. */
function textBound(text: string): number {
  return MAX_HEAD_BYTES + 3 * text.length;
}

/** The most bytes of an entry's head, kind, version and a map's head with its keys. */
const FRAME_BYTES = 64;

/**
 * The bytes of `[kind, command, version]` as cborg writes them, in Node's pool of small buffers
 * as encodeSmall's are (short-lived: a proposal's); null for a command this leaves to cborg.
 */
export function writeFanoutEntry(kind: number, command: FanoutCommand, version: number): Uint8Array | null {
  switch (command.type) {
    case 'done':
      return writeDone(kind, command, version);
    case 'lease':
      return writeLease(kind, command, version);
    case 'emit':
      return writeEmit(kind, command, version);
    default:
      return null;
  }
}

function writeDone(kind: number, command: Extract<FanoutCommand, { type: 'done' }>, version: number): Uint8Array | null {
  const { outcomes, member, atMs } = command;
  if (!isWritableNumber(atMs)) return null;
  let bound = FRAME_BYTES + textBound(member) + MAX_HEAD_BYTES;
  for (const o of outcomes) {
    if (!isHeadArgument(o.id) || !isHeadArgument(o.token)) return null;
    bound += 16 + 2 * NUMBER_BYTES + (o.error === null ? 1 : textBound(o.error));
  }
  return writeSmall(bound, (out) => {
    let pos = timedStart(out, kind, 4, atMs, 'done');
    pos = writeKey(out, pos, 'member');
    pos = writeText(out, pos, member);
    pos = writeKey(out, pos, 'outcomes');
    pos = writeHead(out, pos, CBOR_ARRAY, outcomes.length);
    for (const o of outcomes) {
      out[pos++] = CBOR_MAP | 3;
      pos = writeKey(out, pos, 'id');
      pos = writeHead(out, pos, CBOR_UINT, o.id);
      pos = writeKey(out, pos, 'error');
      pos = o.error === null ? writeNull(out, pos) : writeText(out, pos, o.error);
      pos = writeKey(out, pos, 'token');
      pos = writeHead(out, pos, CBOR_UINT, o.token);
    }
    return writeHead(out, pos, CBOR_UINT, version);
  });
}

function writeLease(kind: number, command: Extract<FanoutCommand, { type: 'lease' }>, version: number): Uint8Array | null {
  const { ids, atMs, member, topic } = command;
  // A topic key present with no value is written by cborg (as CBOR's undefined).
  if (!isWritableNumber(atMs) || ('topic' in command && topic === undefined)) return null;
  for (const id of ids) if (!isHeadArgument(id)) return null;
  const bound = FRAME_BYTES + MAX_HEAD_BYTES + ids.length * NUMBER_BYTES + textBound(member) + (topic === undefined ? 0 : textBound(topic));
  return writeSmall(bound, (out) => {
    let pos = entryStart(out, kind, topic === undefined ? 4 : 5);
    pos = writeKey(out, pos, 'ids');
    pos = writeHead(out, pos, CBOR_ARRAY, ids.length);
    for (const id of ids) pos = writeHead(out, pos, CBOR_UINT, id);
    pos = writeKey(out, pos, 'atMs');
    pos = writeNumber(out, pos, atMs);
    pos = writeKey(out, pos, 'type');
    pos = writeKey(out, pos, 'lease');
    if (topic !== undefined) {
      pos = writeKey(out, pos, 'topic');
      pos = writeText(out, pos, topic);
    }
    pos = writeKey(out, pos, 'member');
    pos = writeText(out, pos, member);
    return writeHead(out, pos, CBOR_UINT, version);
  });
}

function writeEmit(kind: number, command: Extract<FanoutCommand, { type: 'emit' }>, version: number): Uint8Array | null {
  const { atMs, items, topic, origin } = command;
  if (!isWritableNumber(atMs) || (origin !== null && !isWritableNumber(origin.slotMs))) return null;
  let bound = FRAME_BYTES + MAX_HEAD_BYTES + textBound(topic) + (origin === null ? 1 : 16 + textBound(origin.job) + NUMBER_BYTES);
  for (const item of items) bound += 16 + (item.key === null ? 1 : textBound(item.key)) + MAX_HEAD_BYTES + item.data.length;
  return writeSmall(bound, (out) => {
    let pos = timedStart(out, kind, 5, atMs, 'emit');
    pos = writeKey(out, pos, 'items');
    pos = writeHead(out, pos, CBOR_ARRAY, items.length);
    for (const item of items) {
      out[pos++] = CBOR_MAP | 2;
      pos = writeKey(out, pos, 'key');
      pos = item.key === null ? writeNull(out, pos) : writeText(out, pos, item.key);
      pos = writeKey(out, pos, 'data');
      pos = writeBytes(out, pos, item.data);
    }
    pos = writeKey(out, pos, 'topic');
    pos = writeText(out, pos, topic);
    pos = writeKey(out, pos, 'origin');
    if (origin === null) pos = writeNull(out, pos);
    else {
      out[pos++] = CBOR_MAP | 2;
      pos = writeKey(out, pos, 'job');
      pos = writeText(out, pos, origin.job);
      pos = writeKey(out, pos, 'slotMs');
      pos = writeNumber(out, pos, origin.slotMs);
    }
    return writeHead(out, pos, CBOR_UINT, version);
  });
}

/** Writes the entry's head, its kind and the head of its command's map of `keys` keys. */
function entryStart(out: Uint8Array, kind: number, keys: number): number {
  out[0] = ENTRY_HEAD;
  const pos = writeHead(out, 1, CBOR_UINT, kind);
  out[pos] = CBOR_MAP | keys;
  return pos + 1;
}

/** Writes the start of an entry whose command's first keys are its time and its type (a done's, an emit's). */
function timedStart(out: Uint8Array, kind: number, keys: number, atMs: number, type: string): number {
  let pos = entryStart(out, kind, keys);
  pos = writeKey(out, pos, 'atMs');
  pos = writeNumber(out, pos, atMs);
  pos = writeKey(out, pos, 'type');
  return writeKey(out, pos, type);
}

/** Writes a key (or a short ASCII value), under 24 characters. */
function writeKey(out: Uint8Array, pos: number, key: string): number {
  out[pos] = CBOR_TEXT | key.length;
  for (let i = 0; i < key.length; i++) out[pos + 1 + i] = key.charCodeAt(i);
  return pos + 1 + key.length;
}

function writeNull(out: Uint8Array, pos: number): number {
  out[pos] = CBOR_NULL;
  return pos + 1;
}

/**
 * The value cborg's `decode` gives for `bytes` when they hold an entry written by
 * writeFanoutEntry (`[kind, command, version]`); undefined for anything else, for cborg to read.
 */
export function readFanoutEntry(bytes: Uint8Array): [number, FanoutCommand, number] | undefined {
  if (bytes[0] !== ENTRY_HEAD) return undefined;
  const r = new CborReader(bytes);
  r.pos = 1;
  const kind = r.head(CBOR_UINT);
  const keys = r.head(CBOR_MAP);
  if (kind === NOT_HANDLED || keys === NOT_HANDLED) return undefined;
  let command: FanoutCommand | undefined;
  if (r.key('ids')) command = keys === 4 || keys === 5 ? readLease(r, keys === 5) : undefined;
  else if (r.key('atMs')) {
    const atMs = r.number();
    if (atMs === NOT_HANDLED || !r.key('type')) return undefined;
    if (keys === 4 && r.key('done')) command = readDone(r, atMs);
    else if (keys === 5 && r.key('emit')) command = readEmit(r, atMs);
  }
  if (command === undefined) return undefined;
  const version = r.head(CBOR_UINT);
  // cborg rejects bytes after the value.
  if (version === NOT_HANDLED || !r.done) return undefined;
  return [kind, command, version];
}

/** The head of an array of at most as many items as the bytes left could hold (a byte each at least); NOT_HANDLED otherwise, before anything is made for it. */
function arrayHead(r: CborReader): number {
  const count = r.head(CBOR_ARRAY);
  return count === NOT_HANDLED || count > r.left ? NOT_HANDLED : count;
}

function readDone(r: CborReader, atMs: number): FanoutCommand | undefined {
  if (!r.key('member')) return undefined;
  const member = r.ascii();
  if (member === undefined || !r.key('outcomes')) return undefined;
  const count = arrayHead(r);
  if (count === NOT_HANDLED) return undefined;
  const outcomes: ItemOutcome[] = [];
  for (let i = 0; i < count; i++) {
    if (r.head(CBOR_MAP) !== 3 || !r.key('id')) return undefined;
    const id = r.head(CBOR_UINT);
    if (id === NOT_HANDLED || !r.key('error')) return undefined;
    const error = r.null() ? null : r.ascii();
    if (error === undefined || !r.key('token')) return undefined;
    const token = r.head(CBOR_UINT);
    if (token === NOT_HANDLED) return undefined;
    outcomes.push({ id, error, token });
  }
  return { atMs, type: 'done', member, outcomes };
}

function readLease(r: CborReader, withTopic: boolean): FanoutCommand | undefined {
  const count = arrayHead(r);
  if (count === NOT_HANDLED) return undefined;
  const ids: number[] = [];
  for (let i = 0; i < count; i++) {
    const id = r.head(CBOR_UINT);
    if (id === NOT_HANDLED) return undefined;
    ids.push(id);
  }
  if (!r.key('atMs')) return undefined;
  const atMs = r.number();
  if (atMs === NOT_HANDLED || !r.key('type') || !r.key('lease')) return undefined;
  let topic: string | undefined;
  if (withTopic) {
    if (!r.key('topic')) return undefined;
    topic = r.ascii();
    if (topic === undefined) return undefined;
  }
  if (!r.key('member')) return undefined;
  const member = r.ascii();
  if (member === undefined) return undefined;
  return topic === undefined ? { ids, atMs, type: 'lease', member } : { ids, atMs, type: 'lease', topic, member };
}

function readEmit(r: CborReader, atMs: number): FanoutCommand | undefined {
  if (!r.key('items')) return undefined;
  const count = arrayHead(r);
  if (count === NOT_HANDLED) return undefined;
  const items: EmittedItem[] = [];
  for (let i = 0; i < count; i++) {
    if (r.head(CBOR_MAP) !== 2 || !r.key('key')) return undefined;
    const key = r.null() ? null : r.ascii();
    if (key === undefined || !r.key('data')) return undefined;
    const data = r.bytes();
    if (data === undefined) return undefined;
    items.push({ key, data });
  }
  if (!r.key('topic')) return undefined;
  const topic = r.ascii();
  if (topic === undefined || !r.key('origin')) return undefined;
  let origin: EmitOrigin | null = null;
  if (!r.null()) {
    if (r.head(CBOR_MAP) !== 2 || !r.key('job')) return undefined;
    const job = r.ascii();
    if (job === undefined || !r.key('slotMs')) return undefined;
    const slotMs = r.number();
    if (slotMs === NOT_HANDLED) return undefined;
    origin = { job, slotMs };
  }
  return { atMs, type: 'emit', items, topic, origin };
}
