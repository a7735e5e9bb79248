import type { MessageStream, StreamMessageEvent, StreamMuxer, StreamMuxerFactory } from '@libp2p/interface';
import { lines, UnexpectedFirstBytesError } from './first-bytes.js';

/**
 * The first bytes of a stream a peer opens, checked before libp2p's negotiation of its protocol
 * reads them: that negotiation is multistream-select's, read with the same reader that
 * first-bytes.ts keeps garbage from at a connection's start, so a peer past the handshake (one
 * holding the secret; without one, any, while the gate lets it in) held a member's event loop
 * for half a second a stream by sending bytes with their high bit set. A member opens a stream
 * with multistream-select's header and its proposal of one of the protocols this member serves,
 * in one write: a stream whose first bytes are not multistream-select's is aborted before libp2p
 * reads them (one that sends too few waits for libp2p's own timeout on the negotiation, as
 * before).
 */

/** multistream-select's header, as a stream begins. */
const HEADER = lines(['/multistream/1.0.0']);
/** The longest line a one-byte varint holds, its newline included. */
const MAX_LINE_BYTES = 0x7f;
const NEWLINE = 0x0a;

/**
 * Watches the first bytes of `stream`, an inbound one, as they reach its 'message' listeners:
 * attached before any other, it lets through multistream-select's header and its lines, each a
 * one-byte length (1 to 127) and that many bytes ending in a newline, and stops the first bytes
 * that are not (no later listener gets them), aborting the stream; once a line proposes one of
 * `protocols()` it stops watching. A proposal of another is let through, for multistream-select
 * to answer `na` as it would (libp2p's connection monitor proposes its ping, which a member does
 * not serve, and a stream aborted for it cost the connection), and the next line is watched.
 * Read in passing rather than read and put back: put back, bytes are handed out again after a
 * remote that closed its end was seen closed, and the stream refuses them.
 */
export function watchStreamFirstBytes(stream: MessageStream & { abort(error: Error): void }, protocols: () => readonly string[]): void {
  let headerSeen = 0;
  /** The line under way: its length (0 before its length byte), and its bytes so far. */
  let length = 0;
  let line: number[] = [];
  const refuse = (event: Event, why: string): void => {
    event.stopImmediatePropagation();
    stream.removeEventListener('message', watch);
    stream.abort(new UnexpectedFirstBytesError(why));
  };
  const watch = (event: Event): void => {
    const data = (event as StreamMessageEvent).data;
    for (const chunk of data instanceof Uint8Array ? [data] : data) {
      for (const byte of chunk) {
        if (headerSeen < HEADER.byteLength) {
          if (byte !== HEADER[headerSeen++]) return refuse(event, "a stream's first bytes are not multistream-select's header");
          continue;
        }
        if (length === 0) {
          if (byte === 0 || byte > MAX_LINE_BYTES) return refuse(event, "a stream's multistream-select line is longer than a member sends");
          length = byte;
          continue;
        }
        line.push(byte);
        if (line.length < length) continue;
        if (byte !== NEWLINE) return refuse(event, "a stream's multistream-select line does not end its line");
        const proposal = new TextDecoder().decode(Uint8Array.from(line.slice(0, -1)));
        if (protocols().includes(proposal)) {
          stream.removeEventListener('message', watch);
          return;
        }
        length = 0;
        line = [];
      }
    }
  };
  stream.addEventListener('message', watch);
}

/**
 * `inner` (a stream muxer's factory, yamux's), whose muxers hand libp2p each stream a peer
 * opens watched by watchStreamFirstBytes against `protocols()`, the protocols served then.
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

/** `muxer`, each of its 'stream' listeners called with the stream at once, watched by watchStreamFirstBytes first. */
function guarded(muxer: StreamMuxer, protocols: () => readonly string[]): StreamMuxer {
  const add = muxer.addEventListener.bind(muxer);
  const remove = muxer.removeEventListener.bind(muxer);
  const wrappers = new Map<unknown, (event: Event) => void>();
  muxer.addEventListener = ((type: string, listener: unknown, options?: unknown) => {
    if (type !== 'stream' || typeof listener !== 'function') return (add as (t: string, l: unknown, o?: unknown) => void)(type, listener, options);
    const wrapper = (event: Event): void => {
      // Before libp2p's own listener attaches to the stream, so that it sees only what passed.
      watchStreamFirstBytes((event as CustomEvent<MessageStream & { abort(error: Error): void }>).detail, protocols);
      (listener as (e: Event) => void).call(muxer, event);
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
