/**
 * The key layout of a LevelLogStorage directory. Keys are bytes in one keyspace, split by their
 * first byte:
 *
 * - 0x00 + an ASCII name: the single-valued records (format version, identity, hard state,
 *   snapshot with its data).
 * - 0x01 + an index as 8 bytes big-endian: a segment, the entries of one save, from that index
 *   on. Fixed-width big-endian makes LevelDB's bytewise order the numeric order, so one range
 *   scan reads the log in order. One value per save rather than per entry, on the commit path of
 *   every member: with three processes writing at once, a synced write of many entries as
 *   many puts took measurably longer than one put of the same bytes, and the raft bench's
 *   throughput rose by about as much.
 *
 * Read in key order, a segment that starts within the log read so far replaces the log from its
 * first index on. That is how a suffix replacement is written without reading back the segment
 * it cuts into: a put at its first index, and a delete of every key after it. The retained log
 * runs from the snapshot's index + 1; a segment may straddle the snapshot, and readers skip the
 * entries at or below it. Keys that hold no retained entry are removed after the snapshot that
 * made them stale is durable, but for those written past it, in its own write (see
 * LevelLogStorage.compact).
 *
 * Meta keys sort before every entry key, so one scan of the whole store meets them first.
 * Raw prefix bytes rather than sublevels keep the hot path free of sublevel prefixing and let
 * the reader reject any key it does not know.
 */

/**
 * The version of this layout and of the value encodings a store starts in. Format 1 had one key
 * per entry: a segment of one entry in format 2, so open() reads it and marks the store as
 * format 2 before writing to it. Format 3 is format 2 whose values, from some point on, are
 * sealed by their CRC-32 (level-codec.ts sealValue): a store turns to it once the cluster
 * version in force reads it (SEALED_STORE_VERSION), since a release before it refuses the
 * directory, which must not happen while a downgrade is still allowed. It refuses any other
 * version.
 */
export const FORMAT_VERSION = 2;
export const READABLE_FORMAT_VERSIONS: readonly number[] = [1, 2, 3];
/** The format of a store that seals its values. */
export const SEALED_FORMAT_VERSION = 3;

export const META_PREFIX = 0x00;
export const ENTRY_PREFIX = 0x01;

/** An entry key, the key of a segment: the prefix byte and 8 index bytes. */
export const ENTRY_KEY_LENGTH = 9;

const TWO_POW_32 = 2 ** 32;

/** Longer than every meta name: a longer key with the meta prefix is not ours. */
const MAX_META_KEY_LENGTH = 32;

export const MetaName = {
  Format: 'format',
  Identity: 'identity',
  HardState: 'hardstate',
  Snapshot: 'snapshot',
} as const;
export type MetaName = (typeof MetaName)[keyof typeof MetaName];

const metaNames: readonly MetaName[] = Object.values(MetaName);

export function metaKey(name: MetaName): Uint8Array {
  const key = new Uint8Array(1 + name.length);
  key[0] = META_PREFIX;
  for (let i = 0; i < name.length; i++) key[i + 1] = name.charCodeAt(i);
  return key;
}

export const metaKeys: Readonly<Record<MetaName, Uint8Array>> = Object.freeze({
  format: metaKey(MetaName.Format),
  identity: metaKey(MetaName.Identity),
  hardstate: metaKey(MetaName.HardState),
  snapshot: metaKey(MetaName.Snapshot),
});

/**
 * The key of the segment that starts at `index`, a safe non-negative integer. A Buffer from
 * Node's pool rather than a Uint8Array of its own, which cost about six times as much (measured:
 * 360 ns against 60 ns per key).
 */
export function entryKey(index: number): Uint8Array {
  const key = Buffer.allocUnsafe(ENTRY_KEY_LENGTH);
  key[0] = ENTRY_PREFIX;
  key.writeUInt32BE(Math.floor(index / TWO_POW_32), 1);
  key.writeUInt32BE(index >>> 0, 5);
  return key;
}

/** The first key after every entry key: the upper bound of a scan of the log. */
export const ENTRY_KEYS_END: Uint8Array = Uint8Array.of(ENTRY_PREFIX + 1);

/** What a stored key is, or null when it is none of ours. */
export type ParsedKey = { readonly kind: 'meta'; readonly name: MetaName } | { readonly kind: 'entry'; readonly index: number };

export function parseKey(key: Uint8Array): ParsedKey | null {
  if (key[0] === ENTRY_PREFIX && key.length === ENTRY_KEY_LENGTH) {
    const view = new DataView(key.buffer, key.byteOffset, key.byteLength);
    const index = view.getUint32(1) * TWO_POW_32 + view.getUint32(5);
    return Number.isSafeInteger(index) ? { kind: 'entry', index } : null;
  }
  if (key[0] === META_PREFIX && key.length <= MAX_META_KEY_LENGTH) {
    const name = String.fromCharCode(...key.subarray(1));
    const meta = metaNames.find((known) => known === name);
    if (meta !== undefined) return { kind: 'meta', name: meta };
  }
  return null;
}

/** A key as it appears in an error: its meaning when it has one, else its bytes. */
export function describeKey(key: Uint8Array): string {
  const parsed = parseKey(key);
  if (parsed === null) return `key 0x${Buffer.from(key.buffer, key.byteOffset, key.byteLength).toString('hex')}`;
  return parsed.kind === 'entry' ? `entry key ${parsed.index}` : `key "${parsed.name}"`;
}
