import type { AbortOptions, MessageStream, StreamMuxer, StreamMuxerFactory } from '@libp2p/interface';
import { byteStream } from '@libp2p/utils';
import { lines, UnexpectedFirstBytesError } from './first-bytes.js';

/**
 * The first bytes of a stream a peer opens, checked before libp2p's negotiation of its protocol
 * reads them: that negotiation is multistream-select's, read with the same reader that
 * first-bytes.ts keeps garbage from at a connection's start, so a peer past the handshake (one
 * holding the secret; without one, any, while the gate lets it in) held a member's event loop
 * for half a second a stream by sending bytes with their high bit set. A member opens a stream
 * with multistream-select's header and its proposal of one of the protocols this member serves,
 * in one write: a stream whose first bytes are not those is aborted before anything reads them.
 * A later release that proposes a protocol this one does not serve is refused by it as before
 * (multistream-select would have answered `na`, and the dialler given up all the same: members
 * propose one protocol a stream).
 */

/** multistream-select's header, as a stream begins. */
const HEADER = lines(['/multistream/1.0.0']);
/** The longest proposal a one-byte varint holds, its newline included. */
const MAX_PROPOSAL_BYTES = 0x7f;
/** How long a stream may take to send its first bytes: libp2p's own bound on the negotiation (PROTOCOL_NEGOTIATION_TIMEOUT). */
export const STREAM_FIRST_BYTES_TIMEOUT_MS = 10_000;

/**
 * Reads the header and the first proposal of `stream`, an inbound one, rejects unless the
 * proposal is one of `protocols`, and else puts them back for libp2p's negotiation to read.
 */
export async function checkStreamFirstBytes(stream: MessageStream, protocols: readonly string[], options?: AbortOptions): Promise<void> {
  const signal = options?.signal ?? AbortSignal.timeout(STREAM_FIRST_BYTES_TIMEOUT_MS);
  const bytes = byteStream(stream);
  try {
    const head = (await bytes.read({ bytes: HEADER.byteLength + 1, signal })).subarray();
    const length = head[HEADER.byteLength] as number;
    if (!HEADER.every((byte, i) => byte === head[i]) || length === 0 || length > MAX_PROPOSAL_BYTES) throw new UnexpectedFirstBytesError("a stream's first bytes are not multistream-select's header and a proposal");
    const line = (await bytes.read({ bytes: length, signal })).subarray();
    const proposal = new TextDecoder().decode(line);
    if (!protocols.some((protocol) => proposal === `${protocol}\n`)) throw new UnexpectedFirstBytesError("a stream's first proposal is none of the protocols this member serves");
    bytes.unwrap();
    stream.unshift(Uint8Array.from([...head, ...line]));
  } catch (error) {
    bytes.unwrap();
    throw error;
  }
}

/**
 * `inner` (a stream muxer's factory, yamux's), whose muxers hand libp2p each stream a peer
 * opens only once its first bytes passed checkStreamFirstBytes against `protocols()`, the
 * protocols served then; a stream that fails is aborted.
 */
export function checkedStreams<C, T extends StreamMuxerFactory>(inner: (components: C) => T, protocols: () => readonly string[]): (components: C) => T {
  return (components) => {
    const factory = inner(components);
    // A prototype link keeps every other member of the factory (its protocol) as is.
    const wrapped: T = Object.create(factory) as T;
    wrapped.createStreamMuxer = (maConn) => guarded(factory.createStreamMuxer(maConn), protocols);
    return wrapped;
  };
}

/** `muxer`, its 'stream' listeners called with a stream once it passed the check. */
function guarded(muxer: StreamMuxer, protocols: () => readonly string[]): StreamMuxer {
  const add = muxer.addEventListener.bind(muxer);
  const remove = muxer.removeEventListener.bind(muxer);
  const wrappers = new Map<unknown, (event: Event) => void>();
  muxer.addEventListener = ((type: string, listener: unknown, options?: unknown) => {
    if (type !== 'stream' || typeof listener !== 'function') return (add as (t: string, l: unknown, o?: unknown) => void)(type, listener, options);
    const wrapper = (event: Event): void => {
      const stream = (event as CustomEvent<MessageStream & { abort(error: Error): void }>).detail;
      checkStreamFirstBytes(stream, protocols()).then(
        () => (listener as (e: Event) => void).call(muxer, event),
        (error: unknown) => stream.abort(error instanceof Error ? error : new Error(String(error))),
      );
    };
    wrappers.set(listener, wrapper);
    (add as (t: string, l: unknown, o?: unknown) => void)(type, wrapper, options);
  }) as StreamMuxer['addEventListener'];
  muxer.removeEventListener = ((type: string, listener: unknown, options?: unknown) => {
    const wrapper = type === 'stream' ? wrappers.get(listener) : undefined;
    if (wrapper !== undefined) wrappers.delete(listener);
    (remove as (t: string, l: unknown, o?: unknown) => void)(type, wrapper ?? listener, options);
  }) as StreamMuxer['removeEventListener'];
  return muxer;
}
