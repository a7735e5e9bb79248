/**
 * cborg's options for decoding what a peer, a disk or a snapshot hands over: minimal integer
 * encodings only, no indefinite lengths, no undefined, NaN, Infinity or BigInt (so an integer
 * above 2^64 cannot sneak in), plain objects rather than Maps, no duplicate keys, and no tags
 * (cborg rejects every tag it has no decoder for). The wire codec, the join protocol and
 * fan-out's snapshots share them.
 */
export const DECODE_OPTIONS = {
  strict: true,
  allowIndefinite: false,
  allowUndefined: false,
  allowInfinity: false,
  allowNaN: false,
  allowBigInt: false,
  useMaps: false,
  rejectDuplicateMapKeys: true,
  tags: [],
} as const;
