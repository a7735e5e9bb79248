import type { MessageStream } from '@libp2p/interface';

interface Corkable {
  cork(): void;
  uncork(): void;
}

type SendData = (data: unknown) => unknown;

function isCorkable(value: unknown): value is Corkable {
  const v = value as Partial<Corkable> | null;
  return typeof v === 'object' && v !== null && typeof v.cork === 'function' && typeof v.uncork === 'function';
}

/**
 * @libp2p/tcp writes each buffer of an encrypted frame with its own `socket.write`; with TCP
 * noDelay, the noise length prefix, the ciphertext and its tag then leave as separate segments,
 * each a syscall on this side and a wake-up on the other. Corking the socket for one
 * `sendData` call makes Node hand them to the kernel in one `writev`. This touches only a
 * connection that has a Node socket and a `sendData` method (@libp2p/tcp's); anything else
 * passes through unchanged, so a library upgrade that changes the shape loses only the speed-up.
 */
export function corkWrites(connection: MessageStream): MessageStream {
  const target = connection as unknown as { socket?: unknown; sendData?: SendData };
  const socket = target.socket;
  const sendData = target.sendData;
  if (typeof sendData !== 'function' || !isCorkable(socket)) return connection;
  target.sendData = (data: unknown): unknown => {
    socket.cork();
    try {
      return sendData.call(connection, data);
    } finally {
      socket.uncork();
    }
  };
  return connection;
}
