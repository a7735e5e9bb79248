import type { Connection } from '@libp2p/interface';
import type { Message, NodeId } from '../raft/types.js';
import { PROTOCOL_ID } from './constants.js';
import { withPrefix } from './framing.js';
import type { LinkContext } from './peer-link.js';
import { isVoteAnswer, VoteAskers } from './vote-askers.js';

/**
 * The libp2p transport's askers outside the members (vote-askers.ts), each with the connection
 * its request came on, and their answers sent back over it: the transport delivers such a
 * request and, when the protocol answers it, hands the answer here rather than to a link.
 */
export class AskerAnswers {
  readonly #askers = new VoteAskers<Connection>();
  /** The transport's counters, events and settings, as its links share them. */
  readonly #ctx: Pick<LinkContext, 'counters' | 'emit' | 'settings'>;
  /**
   * A message as a frame, without its length prefix, at the transport's cluster id and wire
   * protocol in force when it is called; throws CodecError, as for a peer.
   */
  readonly #encode: (message: Message) => Uint8Array;

  constructor(ctx: Pick<LinkContext, 'counters' | 'emit' | 'settings'>, encode: (message: Message) => Uint8Array) {
    this.#ctx = ctx;
    this.#encode = encode;
  }

  /** `id`, outside the members, had a vote request delivered that came on `connection`. */
  asked(id: NodeId, connection: Connection): void {
    this.#askers.asked(id, connection, performance.now());
  }

  /**
   * Sends `message` back to the asker it answers, over the connection the request came on, and
   * says whether it did: false when it is no vote answer or its recipient asked nothing within
   * the window, and the transport treats it as for any other unknown peer. Encoded first, so a
   * CodecError is thrown here; a failure to send is counted and told as a drop.
   */
  answer(message: Message): boolean {
    if (!isVoteAnswer(message)) return false;
    const connection = this.#askers.routeTo(message.to, performance.now());
    if (connection === undefined) return false;
    const { counters, emit, settings } = this.#ctx;
    const frame = withPrefix(this.#encode(message));
    // The dial timeout bounds the wait for the answer's stream, as it bounds a link's dial.
    answerOverConnection(connection, frame, settings.dialTimeoutMs).then(
      () => {
        counters.sent++;
        counters.sentBytes += frame.byteLength;
      },
      (error: unknown) => {
        if (connection.status !== 'open') this.#askers.forget(message.to);
        counters.droppedQueueFull++;
        emit({ type: 'dropped', reason: 'unreachable', peer: message.to, detail: `the answer to an asker outside the members: ${error instanceof Error ? error.message : String(error)}` });
      },
    );
    return true;
  }
}

/**
 * Sends one frame (with its length prefix) to an asker outside the members, the answer to its
 * vote request, on a stream of its own over the connection the request came on (vote-askers.ts):
 * the asker dialled it, so nothing is dialled for it (an id outside the configuration is an
 * address a stranger chose). Resolves once the frame is handed to the stream; rejects when the
 * connection closed or no stream opened within `timeoutMs`.
 */
export async function answerOverConnection(connection: Connection, frame: Uint8Array, timeoutMs: number): Promise<void> {
  if (connection.status !== 'open') throw new Error('the connection closed');
  const stream = await connection.newStream(PROTOCOL_ID, { signal: AbortSignal.timeout(timeoutMs) });
  try {
    stream.send(frame);
  } catch (error) {
    const cause = error instanceof Error ? error : new Error(String(error));
    stream.abort(cause);
    throw cause;
  }
  // One frame on this stream: closing it sends it and tells the asker there is no more.
  stream.close().catch(() => undefined);
}
