/**
 * Why the last dial to a member failed (README, "Operating a cluster"): what tells a member
 * started with another cluster secret, or none, from one that is down, as the member sees it.
 */
export type DialFailure =
  /**
   * The member's address took the connection, and the private network or Noise failed on it,
   * or the other end closed it meanwhile: most often one of the two holds another cluster secret
   * (or none), or the key there is not the one pinned or bound to the member.
   */
  | 'handshake'
  /** No connection: refused, unreachable, or not within the dial's timeout. */
  | 'connection';

/** Socket error codes of a connection the other end took and then reset. */
const RESET_CODES = new Set(['ECONNRESET', 'EPIPE']);

/** The kind of a dial's failure, from libp2p's error (its name: libp2p's errors keep their class names across versions). */
export function dialFailureOf(error: unknown): DialFailure {
  if (!(error instanceof Error)) return 'connection';
  if (error.name === 'EncryptionFailedError' || error.name === 'InvalidCryptoExchangeError' || error.name === 'UnexpectedPeerError') return 'handshake';
  const code = (error as { readonly code?: unknown }).code;
  if (typeof code === 'string' && RESET_CODES.has(code)) return 'handshake';
  return /\bread ECONNRESET\b/.test(error.message) ? 'handshake' : 'connection';
}
