import type { Connection } from '@libp2p/interface';
import { PROTOCOL_ID } from './constants.js';

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
