import type { NodeId } from './types.js';

/**
 * One change of the configuration, the data of an `EntryType.ConfChange` entry:
 * - `add-learner`: a new member joins as a learner (replicated to, never counted in a quorum),
 *   bound to `peerId` when given: the libp2p peer id the joining connection authenticated;
 * - `promote`: a learner becomes a voter (once it has caught up: the caller's judgement);
 * - `remove`: a voter or a learner leaves, and its binding with it;
 * - `bind`: a member that has no peer id yet is bound to `peerId` (a founding member, which
 *   no add-learner bound: trust on first use, see runtime/binding-keeper.ts). It changes no
 *   quorum. A binding is never changed: a member whose key changed is removed and joins again.
 *
 * One member at a time (the Raft thesis, section 4.1): the majorities of two configurations
 * that differ by one voter always overlap, so each change is safe on its own, provided that the
 * next one is proposed only once this one is applied and that a new leader first commits an
 * entry of its term. Joint consensus (etcd-io/raft's confchange/ does both) would allow
 * replacing several voters at once, at the price of a second entry per change and two quorums
 * counted during it; a cluster of 3 or 5 voters that adds and removes one instance at a time
 * gains nothing from it.
 */
export type ConfChange =
  | { readonly type: 'add-learner'; readonly id: NodeId; readonly peerId?: string }
  | { readonly type: 'promote' | 'remove'; readonly id: NodeId }
  | { readonly type: 'bind'; readonly id: NodeId; readonly peerId: string };

/**
 * The longest member id a change may name, in bytes of UTF-8: the transport's bound on ids
 * (MAX_ID_LENGTH, which the protocol may not import), so that any member the transport can
 * address can be named.
 */
export const MAX_CONF_CHANGE_ID_BYTES = 300;

/**
 * The longest peer id a configuration may bind, in characters. A libp2p peer id in its string
 * form (base58btc of an identity multihash, e.g. `12D3KooW…` for Ed25519, or a CID in base32
 * or base36) has some 46 to 65 of them; twice that leaves room for other key types.
 */
export const MAX_PEER_ID_LENGTH = 128;

/**
 * A peer id's characters: letters and digits, the alphabets of every multibase a peer id is
 * written in (base58btc, base32, base36). Anything else (spaces, control characters, non-ASCII)
 * is no peer id, and so never reaches a log line or a comparison as one.
 */
const PEER_ID_PATTERN = /^[A-Za-z0-9]+$/;

/**
 * The encoding's version byte: a change of layout gets a new one, and an old reader refuses it.
 * Format 1, [1, kind, id], could carry no peer id; this release writes format 2 only and reads
 * both (format 1 was never released, but logs of the development versions hold it).
 */
const FORMAT_1 = 1;
const FORMAT = 2;
/** Kinds by their byte; format 1 knows the first three. */
const KINDS = ['add-learner', 'promote', 'remove', 'bind'] as const;
const FORMAT_1_KINDS = 3;
/** Format 2's header: format, kind, the id's length in bytes (16 bits, big-endian). */
const HEADER_BYTES = 4;

const encoder = new TextEncoder();
// A leading U+FEFF is kept (TextDecoder drops it by default): the bytes mean what they say.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** Whether `value` is a peer id a configuration may bind: 1 to MAX_PEER_ID_LENGTH letters and digits. */
export function isWellFormedPeerId(value: unknown): value is string {
  return typeof value === 'string' && value.length <= MAX_PEER_ID_LENGTH && PEER_ID_PATTERN.test(value);
}

/**
 * Whether `change` is one this module can encode and read back: a known type, an id of 1 to
 * MAX_CONF_CHANGE_ID_BYTES bytes that survives UTF-8 unchanged (no lone surrogate), and a
 * well-formed peer id where the kind has one (required for `bind`, optional for `add-learner`,
 * none for the others). A caller's input, refused at proposal otherwise.
 */
export function isWellFormedConfChange(change: ConfChange): boolean {
  if (typeof change !== 'object' || change === null) return false;
  if (!(KINDS as readonly string[]).includes(change.type) || typeof change.id !== 'string') return false;
  const peerId = (change as { readonly peerId?: unknown }).peerId;
  const peerIdFits = change.type === 'bind' ? isWellFormedPeerId(peerId) : change.type === 'add-learner' ? peerId === undefined || isWellFormedPeerId(peerId) : peerId === undefined;
  if (!peerIdFits) return false;
  const bytes = encoder.encode(change.id);
  // A lone surrogate encodes as U+FFFD: the id would come back as another one.
  return bytes.byteLength >= 1 && bytes.byteLength <= MAX_CONF_CHANGE_ID_BYTES && decoder.decode(bytes) === change.id;
}

/** The peer id a change binds, if any. */
export function peerIdOf(change: ConfChange): string | undefined {
  return change.type === 'add-learner' || change.type === 'bind' ? change.peerId : undefined;
}

/**
 * The entry data of a well-formed change, in format 2: [2, kind, id length (2 bytes,
 * big-endian), id as UTF-8, peer id as ASCII (empty when the change binds none)].
 */
export function encodeConfChange(change: ConfChange): Uint8Array {
  if (!isWellFormedConfChange(change)) throw new TypeError('encodeConfChange: not a well-formed change');
  const id = encoder.encode(change.id);
  const peerId = encoder.encode(peerIdOf(change) ?? '');
  const out = new Uint8Array(HEADER_BYTES + id.byteLength + peerId.byteLength);
  out[0] = FORMAT;
  out[1] = KINDS.indexOf(change.type);
  out[2] = id.byteLength >> 8;
  out[3] = id.byteLength & 0xff;
  out.set(id, HEADER_BYTES);
  out.set(peerId, HEADER_BYTES + id.byteLength);
  return out;
}

/**
 * Reads an entry's data back (format 2, or format 1: [1, kind, id as UTF-8]), or null when it is
 * not exactly what encodeConfChange writes: an unknown format or kind, an empty or too long id,
 * bytes that are not UTF-8, a peer id missing, malformed, or on a kind that has none.
 */
export function decodeConfChange(data: Uint8Array): ConfChange | null {
  if (data[0] === FORMAT_1) return decodeFormat1(data);
  if (data[0] !== FORMAT || data.byteLength < HEADER_BYTES) return null;
  const type = KINDS[data[1] as number];
  const idBytes = ((data[2] as number) << 8) | (data[3] as number);
  if (type === undefined || idBytes > data.byteLength - HEADER_BYTES) return null;
  const id = utf8(data.subarray(HEADER_BYTES, HEADER_BYTES + idBytes));
  const peerId = utf8(data.subarray(HEADER_BYTES + idBytes));
  if (id === null || peerId === null) return null;
  const change: ConfChange = type === 'bind' ? { type, id, peerId } : type === 'add-learner' && peerId !== '' ? { type, id, peerId } : { type, id };
  // The same checks as encoding's: an empty peer id on a bind, one on a promote, a long id.
  if (!isWellFormedConfChange(change) || (peerId !== '' && peerIdOf(change) === undefined)) return null;
  return change;
}

function decodeFormat1(data: Uint8Array): ConfChange | null {
  if (data.byteLength < 3 || data.byteLength > 2 + MAX_CONF_CHANGE_ID_BYTES) return null;
  const kind = data[1] as number;
  const type = kind < FORMAT_1_KINDS ? KINDS[kind] : undefined;
  if (type === undefined || type === 'bind') return null;
  const id = utf8(data.subarray(2));
  return id === null ? null : { type, id };
}

function utf8(bytes: Uint8Array): string | null {
  try {
    return decoder.decode(bytes);
  } catch {
    return null;
  }
}
