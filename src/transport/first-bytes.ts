import type { AbortOptions, ConnectionProtector, MessageStream } from '@libp2p/interface';
import { byteStream } from '@libp2p/utils';
import { INBOUND_UPGRADE_TIMEOUT_MS } from './constants.js';

/**
 * The first bytes of an inbound connection, checked before libp2p's upgrade reads them.
 * multistream-select reads each of its lines with @libp2p/utils' lpStream, which reads the
 * line's length prefix (a varint) a byte at a time and, while the bytes read form no varint,
 * catches the decoder's RangeError and reads on, its own bound on the prefix's length checked
 * only after a varint decoded. Bytes with their high bit set, from the first, so made it read
 * whatever the connection sent a byte at a time, an error built for each, until the upgrade's
 * timeout: one connection held a member's event loop for seconds and grew its heap by hundreds
 * of megabytes, and through the secret's cipher, whose output a process without the secret
 * does not choose, 1 connection in 256 of random bytes did the same. A dialling member sends
 * multistream-select's header and its proposal of Noise, its only encrypter, in one write
 * (select() writes the first proposal with the header): a connection whose first bytes are not
 * those is closed before anything reads them, and a member of any release passes. A release
 * whose members send anything else first (another encrypter, another multistream-select) must
 * let a rolling upgrade through: its members would be refused by this release's.
 */

/** Each of multistream-select's lines: its length (with the newline) as a one-byte varint, then the line. */
export function lines(texts: readonly string[]): Uint8Array {
  const encoder = new TextEncoder();
  const parts = texts.map((text) => {
    const line = encoder.encode(`${text}\n`);
    return Uint8Array.of(line.byteLength, ...line);
  });
  return Uint8Array.from(parts.flatMap((part) => [...part]));
}

/** What a dialling member sends first: multistream-select's header, then its proposal of Noise. */
export const FIRST_INBOUND_BYTES = lines(['/multistream/1.0.0', '/noise']);

/** An inbound connection whose first bytes are not a member's. */
export class UnexpectedFirstBytesError extends Error {
  override readonly name = 'UnexpectedFirstBytesError';
}

/**
 * Reads the first FIRST_INBOUND_BYTES.byteLength bytes of `connection` (an inbound one, as it
 * reaches the encrypter: after the private network's cipher, if any), rejects unless they are
 * FIRST_INBOUND_BYTES, and else puts them back, for the upgrade to read as if nothing had. It
 * waits for them as long as the upgrade's signal lets it (INBOUND_UPGRADE_TIMEOUT_MS, which
 * leaves room for a slow machine; a time of its own refused honest members whose bytes came
 * late or found the event loop held), or that long without one.
 */
export async function checkFirstBytes(connection: MessageStream, options?: AbortOptions): Promise<void> {
  const signal = options?.signal ?? AbortSignal.timeout(INBOUND_UPGRADE_TIMEOUT_MS);
  const bytes = byteStream(connection);
  const first = (await bytes.read({ bytes: FIRST_INBOUND_BYTES.byteLength, signal })).subarray();
  bytes.unwrap();
  if (!first.every((byte, i) => byte === FIRST_INBOUND_BYTES[i])) throw new UnexpectedFirstBytesError("the connection's first bytes are not a member's (multistream-select's header and Noise)");
  // unwrap() put back what was read past them; these go before it.
  connection.unshift(first);
}

/** The connection protector of a member without a secret: it checks an inbound connection's first bytes, and protects nothing. */
export function firstBytesProtector(): () => ConnectionProtector {
  return () => ({
    protect: async (connection, options) => {
      if (connection.direction === 'inbound') await checkFirstBytes(connection, options);
      return connection;
    },
  });
}
