import type { NodeId } from './types.js';

/**
 * One change of the configuration, the data of an `EntryType.ConfChange` entry:
 * - `add-learner`: a new member joins as a learner (replicated to, never counted in a quorum);
 * - `promote`: a learner becomes a voter (once it has caught up: the caller's judgement);
 * - `remove`: a voter or a learner leaves.
 *
 * One member at a time (the Raft thesis, section 4.1): the majorities of two configurations
 * that differ by one voter always overlap, so each change is safe on its own, provided that the
 * next one is proposed only once this one is applied and that a new leader first commits an
 * entry of its term. Joint consensus (etcd-io/raft's confchange/ does both) would allow
 * replacing several voters at once, at the price of a second entry per change and two quorums
 * counted during it; a cluster of 3 or 5 voters that adds and removes one instance at a time
 * gains nothing from it.
 */
export type ConfChange = { readonly type: 'add-learner' | 'promote' | 'remove'; readonly id: NodeId };

/**
 * The longest member id a change may name, in bytes of UTF-8: the transport's bound on ids
 * (MAX_ID_LENGTH, which the protocol may not import), so that any member the transport can
 * address can be named.
 */
export const MAX_CONF_CHANGE_ID_BYTES = 300;

/** The encoding's version byte: a change of layout gets a new one, and an old reader refuses it. */
const FORMAT = 1;
const KINDS = ['add-learner', 'promote', 'remove'] as const;

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

/**
 * Whether `change` is one this module can encode and read back: a known type and an id of 1 to
 * MAX_CONF_CHANGE_ID_BYTES bytes that survives UTF-8 unchanged (no lone surrogate). A caller's
 * input, refused at proposal otherwise.
 */
export function isWellFormedConfChange(change: ConfChange): boolean {
  if (typeof change !== 'object' || change === null) return false;
  if (!(KINDS as readonly string[]).includes(change.type) || typeof change.id !== 'string') return false;
  const bytes = encoder.encode(change.id);
  // A lone surrogate encodes as U+FFFD: the id would come back as another one.
  return bytes.byteLength >= 1 && bytes.byteLength <= MAX_CONF_CHANGE_ID_BYTES && decoder.decode(bytes) === change.id;
}

/** The entry data of a well-formed change: [format, kind, id as UTF-8]. */
export function encodeConfChange(change: ConfChange): Uint8Array {
  if (!isWellFormedConfChange(change)) throw new TypeError('encodeConfChange: not a well-formed change');
  const id = encoder.encode(change.id);
  const out = new Uint8Array(2 + id.byteLength);
  out[0] = FORMAT;
  out[1] = KINDS.indexOf(change.type);
  out.set(id, 2);
  return out;
}

/**
 * Reads an entry's data back, or null when it is not exactly what encodeConfChange writes: an
 * unknown format or kind, an empty or too long id, bytes that are not UTF-8.
 */
export function decodeConfChange(data: Uint8Array): ConfChange | null {
  if (data.byteLength < 3 || data.byteLength > 2 + MAX_CONF_CHANGE_ID_BYTES || data[0] !== FORMAT) return null;
  const type = KINDS[data[1] as number];
  if (type === undefined) return null;
  let id: string;
  try {
    id = decoder.decode(data.subarray(2));
  } catch {
    return null;
  }
  return { type, id };
}
