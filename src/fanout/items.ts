import { InvalidArgumentError } from '../errors.js';
import { hasLoneSurrogate, optionsObject } from '../option-checks.js';
import { MAX_ITEM_BYTES, MAX_KEY_LENGTH, MAX_TOPIC_LENGTH, type EmittedItem } from './command.js';

/**
 * Work items as the log holds them (issue 19): bytes as emitted, or any other value as JSON,
 * behind a one-byte tag, so that a handler gets back what was emitted.
 */

const BYTES = 0;
const JSON_VALUE = 1;
const encoder = new TextEncoder();
// A leading U+FEFF is kept (TextDecoder drops it by default): an item's JSON never starts with one, but its bytes mean what they say.
const decoder = new TextDecoder('utf-8', { ignoreBOM: true });

/** The items of an emit as handed in, copied: an array (of none too), else InvalidArgumentError. */
export function itemsOf(items: unknown): readonly unknown[] {
  if (!Array.isArray(items)) throw new InvalidArgumentError('items', items, 'an array');
  return items.slice();
}

/** An emit's options (`emitItems`, `ctx.emit`), typed by its items: `key` names an item's key (its items run one at a time, in emit order), or null for none. */
export interface EmitOptions<T = unknown> {
  readonly key?: ((item: T, index: number) => string | null) | undefined;
}

/**
 * The key function of an emit's options (`emitItems`, `ctx.emit`): undefined when there is none.
 * @throws InvalidArgumentError for options that are not an object, or a key that is not a function
 */
export function emitKeyOf(options: { readonly key?: unknown } | undefined): ((item: unknown, index: number) => string | null) | undefined {
  const { key } = optionsObject(options, ['key']);
  if (key !== undefined && typeof key !== 'function') throw new InvalidArgumentError('key', key, 'a function (item, index) => string | null');
  return key as ((item: unknown, index: number) => string | null) | undefined;
}

/** How deep a JSON item may nest (arrays and objects within one another). */
export const MAX_ITEM_DEPTH = 64;

/**
 * JSON.stringify's text of `item` when the consumer's JSON.parse gives back what was emitted,
 * else undefined: JSON.stringify itself makes a Map, a Set, an Error or a typed array `{}` (or an
 * object of indexes), NaN and Infinity null, -0 0, a hole of an array null, a boxed primitive
 * the primitive, and drops a field whose value is undefined, a function or a symbol, a field
 * named by a symbol, a field that is not enumerable, and an array's fields of other names, all
 * unsaid, and makes an instance of a class a plain object. A value with a toJSON (a Date) is
 * taken as JSON takes it, as a request body would be. Undefined too for one it cannot write at
 * all (a BigInt, a cycle, a throwing toJSON) or nested past MAX_ITEM_DEPTH.
 */
function jsonOf(item: unknown): string | undefined {
  if (!faithful(item, 0, { left: MAX_ITEM_BYTES })) return undefined;
  try {
    return JSON.stringify(item);
  } catch {
    return undefined;
  }
}

/**
 * Whether JSON carries `value` as it is (see jsonOf), `depth` levels down. `budget` counts the
 * values looked at: each takes a byte of JSON at least, so an item of more than MAX_ITEM_BYTES of
 * them is too large whatever they are (an object that holds one array twice, and so on down,
 * would be looked at more times than it has values).
 */
function faithful(value: unknown, depth: number, budget: { left: number }): boolean {
  if (--budget.left < 0) return false;
  switch (typeof value) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      // JSON writes -0 as 0.
      return Number.isFinite(value) && !Object.is(value, -0);
    case 'object': {
      if (value === null) return true;
      if (depth >= MAX_ITEM_DEPTH) return false;
      if (typeof (value as { toJSON?: unknown }).toJSON === 'function') return true;
      // JSON drops the fields named by symbols.
      if (hasSymbolField(value)) return false;
      if (Array.isArray(value)) {
        for (let i = 0; i < value.length; i++) if (!(i in value) || !faithful(value[i], depth + 1, budget)) return false;
        // JSON writes an array's elements alone: a field of another name set on it, enumerable
        // or not, is dropped. Its elements all there, its own names are they and `length`.
        return Object.getOwnPropertyNames(value).length === value.length + 1;
      }
      // And the fields that are not enumerable (Object.defineProperty's default).
      if (Object.getOwnPropertyNames(value).length !== Object.keys(value).length) return false;
      // Nothing but a plain object (made by a literal, JSON.parse or Object.create(null)): JSON
      // writes a Map, a Set, an Error or a typed array as {} or an object of indexes, a boxed
      // number, string or boolean as the primitive, and an instance of a class as a plain object
      // of its own fields, its methods, getters and private fields gone. The app spreads such an
      // instance into a plain object ({ ...value }), or gives its class a toJSON, to say that
      // this is what it means.
      const prototype: unknown = Object.getPrototypeOf(value);
      if (prototype !== Object.prototype && prototype !== null) return false;
      for (const field of Object.values(value)) if (!faithful(field, depth + 1, budget)) return false;
      return true;
    }
    default:
      // undefined, a function, a symbol, a BigInt.
      return false;
  }
}

function hasSymbolField(value: object): boolean {
  for (const symbol of Object.getOwnPropertySymbols(value)) if (Object.prototype.propertyIsEnumerable.call(value, symbol)) return true;
  return false;
}

/** Item `index` of an emit, encoded and checked with its key: InvalidArgumentError for one that does not encode, is too large, or has a bad key. */
export function encodeEmitted(item: unknown, index: number, key: ((item: unknown, index: number) => string | null) | undefined): EmittedItem {
  const data = encodeItem(item, index);
  const k = key === undefined ? null : key(item, index);
  if (k !== null && (typeof k !== 'string' || k.length === 0 || k.length > MAX_KEY_LENGTH || hasLoneSurrogate(k) || hasControlCharacter(k))) {
    throw new InvalidArgumentError('key', k, `null or a string of 1 to ${MAX_KEY_LENGTH} characters, with no control character and no lone surrogate`);
  }
  return { data, key: k };
}

function encodeItem(item: unknown, index: number): Uint8Array {
  let body: Uint8Array;
  let tag: number;
  if (item instanceof Uint8Array) {
    body = item;
    tag = BYTES;
  } else {
    const json = item === undefined ? undefined : jsonOf(item);
    if (json === undefined) throw new InvalidArgumentError(`items[${index}]`, typeof item === 'function' ? item : typeof item, `bytes (a Uint8Array) or a JSON value that JSON carries as it is (finite numbers but -0, no Map, Set, typed array other than a whole Uint8Array, boxed primitive, hole, field undefined, named by a symbol or not enumerable, array with fields of other names, or instance of a class without a toJSON; nested at most ${MAX_ITEM_DEPTH} deep)`);
    body = encoder.encode(json);
    tag = JSON_VALUE;
  }
  if (body.byteLength + 1 > MAX_ITEM_BYTES) throw new InvalidArgumentError(`items[${index}]`, `${body.byteLength} bytes`, `at most ${MAX_ITEM_BYTES - 1} bytes encoded`);
  const data = new Uint8Array(body.byteLength + 1);
  data[0] = tag;
  data.set(body, 1);
  return data;
}

/**
 * An item as its handler gets it: bytes as they were emitted, or the JSON value. Bytes are a
 * copy: the state keeps `data`, and a handler that changed the bytes it was handed (decrypting
 * them in place, say) changed what its retry, a requeue of its dead letter, and this member's
 * snapshots carried, on this member alone.
 */
export function decodeItem(data: Uint8Array): unknown {
  // Uint8Array's slice, which copies (a Buffer's shares its memory).
  return data[0] === BYTES ? Uint8Array.prototype.slice.call(data, 1) : JSON.parse(decoder.decode(data.subarray(1)));
}


/** A topic's name as a user hands it in. */
export function checkTopic(topic: unknown): string {
  if (typeof topic !== 'string' || topic.length === 0 || topic.length > MAX_TOPIC_LENGTH) throw new InvalidArgumentError('topic', topic, `a string of 1 to ${MAX_TOPIC_LENGTH} characters`);
  // A key's line is named by its topic, a line break and the key (state.ts lineOf): a topic
  // with a line break could name another topic's line ('x' and key 'y\nz', 'x\ny' and key 'z'),
  // whose item would then wait for good.
  if (hasControlCharacter(topic)) throw new InvalidArgumentError('topic', topic, 'a name without control characters (a line break, say)');
  // The log would make it another topic than the consumer's, whose items then ran nowhere.
  if (hasLoneSurrogate(topic)) throw new InvalidArgumentError('topic', topic, 'a name with no lone surrogate (a name cut through an emoji)');
  return topic;
}

/** Whether `text` holds a control character (Unicode's: U+0000 to U+001F, and U+007F to U+009F, whose U+0085 is a line break). */
function hasControlCharacter(text: string): boolean {
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x20 || (code >= 0x7f && code <= 0x9f)) return true;
  }
  return false;
}
