/** The error a noise connection's length decoder throws when a read holds no whole prefix. */
const NO_WHOLE_PREFIX = new RangeError('Could not decode int16BE');

/** The 2-byte length prefix of each noise frame. */
const PREFIX_BYTES = 2;

interface LengthPrefixedDecoderShape {
  lengthDecoder?: unknown;
}

type LengthDecoder = (data: { readonly byteLength: number }) => number;

/**
 * @chainsafe/libp2p-noise reads the length prefix of each encrypted frame with @libp2p/utils'
 * LengthPrefixedDecoder, which learns that the bytes read so far hold no further whole prefix
 * by catching the RangeError its length decoder throws: once per socket read. Building a
 * RangeError captures a stack trace, which under load was 3 % of a member's CPU (perf, with
 * JIT symbols). This gives the decoder of an encrypted connection a length decoder that throws
 * one RangeError built once instead; the decoder only checks the error's class. It touches only
 * a connection with such a decoder; anything else is left as it is, so a library change costs
 * the speed-up, not safety.
 */
export function throwPrebuiltRangeError(connection: unknown): void {
  const decoder = (connection as { decoder?: unknown } | null)?.decoder as LengthPrefixedDecoderShape | undefined;
  if (typeof decoder !== 'object' || decoder === null) return;
  const original = decoder.lengthDecoder;
  if (typeof original !== 'function') return;
  decoder.lengthDecoder = (data: { readonly byteLength: number }): number => {
    if (data.byteLength < PREFIX_BYTES) throw NO_WHOLE_PREFIX;
    return (original as LengthDecoder)(data);
  };
}
