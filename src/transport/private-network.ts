import { InvalidParametersError, type AbortOptions, type ConnectionProtector, type MessageStream, type MultiaddrConnection } from '@libp2p/interface';
import { AbstractMultiaddrConnection, byteStream, type SendResult } from '@libp2p/utils';
import { hsalsa, salsa20 } from '@noble/ciphers/salsa.js';
import { checkFirstBytes } from './first-bytes.js';

/**
 * The private network every connection of a cluster with a secret runs in: libp2p's pnet
 * protocol, byte for byte as `@libp2p/pnet` speaks it (each side sends 24 random bytes, then
 * everything it sends is XSalsa20 under the cluster's key and the nonce it chose), so members of
 * releases that used pnet itself talk to these. The cipher is @noble/ciphers' Salsa20 in place of
 * the `xsalsa20` package pnet uses: that package keeps every cipher's state in one WebAssembly
 * memory it never frees (pnet never finalizes a cipher), and once the memory grows, every cipher
 * made before grows it again on its next call, until it cannot and the process dies on a
 * RangeError. A process without the secret could do that with a few thousand connections that
 * sent 24 bytes each, and members sending large frames did it with no attacker at all.
 */

/** The nonce each side sends first, in bytes. */
export const NONCE_BYTES = 24;
/** The key's length, in bytes (XSalsa20). */
const KEY_BYTES = 32;
/** How long a connection may take to send its nonce (pnet's default). */
export const NONCE_TIMEOUT_MS = 1000;
/**
 * Salsa20 blocks of 64 bytes one direction of a connection may carry: @noble/ciphers counts
 * blocks in 32 bits (256 GiB), and a connection that would pass it is closed, to be dialled
 * again with new nonces, rather than reuse the keystream.
 */
export const MAX_BLOCKS_PER_DIRECTION = 2 ** 32;

/** The key of a private network key in pnet's format (`/key/swarm/psk/1.0.0/`, `/base16/`, 64 hex digits). */
export function keyOfPsk(psk: Uint8Array): Uint8Array {
  const lines = new TextDecoder().decode(psk).split(/\r\n|\r|\n/);
  const hex = lines[2] ?? '';
  if (lines[0] !== '/key/swarm/psk/1.0.0/' || lines[1] !== '/base16/' || !/^[0-9a-fA-F]{64}$/.test(hex)) throw new InvalidParametersError('a private network key in pnet format (/key/swarm/psk/1.0.0/, /base16/, 64 hex digits)');
  return Uint8Array.from(Buffer.from(hex, 'hex'));
}

/** The SIGMA constant of Salsa20 with a 32-byte key, as little-endian words. */
const SIGMA = new Uint32Array([0x61707865, 0x3320646e, 0x79622d32, 0x6b206574]);

/** Little-endian words of `bytes` (a multiple of 4 long), copied. */
function words(bytes: Uint8Array): Uint32Array {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  return Uint32Array.from({ length: bytes.byteLength / 4 }, (_, i) => view.getUint32(i * 4, true));
}

/**
 * One direction's XSalsa20 keystream, xored over the bytes given in order across calls, as
 * `xsalsa20`'s update() does. The subkey is derived once (HSalsa20 of the key and the nonce's
 * first 16 bytes); each call runs Salsa20 from the block it is in.
 */
export class XSalsa20Stream {
  readonly #subkey: Uint8Array;
  readonly #nonce: Uint8Array;
  /** Bytes xored so far. */
  #position = 0;
  readonly #maxBlocks: number;

  /** `maxBlocks`: the blocks it carries at most (tests make it small). */
  constructor(key: Uint8Array, nonce: Uint8Array, maxBlocks = MAX_BLOCKS_PER_DIRECTION) {
    this.#maxBlocks = maxBlocks;
    if (key.byteLength !== KEY_BYTES || nonce.byteLength !== NONCE_BYTES) throw new InvalidParametersError('XSalsa20 takes a 32-byte key and a 24-byte nonce');
    const subkey = new Uint32Array(8);
    hsalsa(SIGMA, words(key), words(nonce.subarray(0, 16)), subkey);
    const bytes = new Uint8Array(KEY_BYTES);
    const view = new DataView(bytes.buffer);
    subkey.forEach((word, i) => view.setUint32(i * 4, word, true));
    this.#subkey = bytes;
    this.#nonce = nonce.slice(16, 24);
  }

  /** `data` xored with the keystream where the last call left it; null once the stream would pass its blocks. */
  update(data: Uint8Array): Uint8Array | null {
    const skip = this.#position % 64;
    const counter = (this.#position - skip) / 64;
    if (counter + Math.ceil((skip + data.byteLength) / 64) > this.#maxBlocks) return null;
    this.#position += data.byteLength;
    if (data.byteLength === 0) return new Uint8Array(0);
    if (skip === 0) return salsa20(this.#subkey, this.#nonce, data, undefined, counter);
    // Mid-block: the block is run from its start, the bytes before this call's left out.
    const buffer = new Uint8Array(skip + data.byteLength);
    buffer.set(data, skip);
    return salsa20(this.#subkey, this.#nonce, buffer, buffer, counter).subarray(skip);
  }
}

/**
 * The private network's connection protector for libp2p's `connectionProtector`, keyed by `psk`
 * (pnet's format); `maxBlocks` bounds each direction of a connection (tests make it small).
 */
export function privateNetwork(psk: Uint8Array, maxBlocks = MAX_BLOCKS_PER_DIRECTION): () => ConnectionProtector {
  const key = keyOfPsk(psk);
  return () => ({ protect: (connection, options) => protect(connection, key, maxBlocks, options) });
}

/** Sends this side's nonce, reads the other's, and wraps the connection in the two keystreams. */
async function protect(connection: MessageStream, key: Uint8Array, maxBlocks: number, options?: AbortOptions): Promise<MessageStream> {
  const localNonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
  const signal = options?.signal ?? AbortSignal.timeout(NONCE_TIMEOUT_MS);
  const bytes = byteStream(connection);
  const [remote] = await Promise.all([bytes.read({ bytes: NONCE_BYTES, signal }), bytes.write(localNonce, { signal })]);
  const maConn = bytes.unwrap() as MultiaddrConnection;
  const encrypted = new EncryptedConnection(maConn, new XSalsa20Stream(key, remote.subarray(), maxBlocks), new XSalsa20Stream(key, localNonce, maxBlocks));
  // What a process without the key sends comes out of the cipher as random bytes, which the
  // upgrade must not read (first-bytes.ts).
  if (maConn.direction === 'inbound') await checkFirstBytes(encrypted, options);
  return encrypted;
}

/** A connection whose bytes go out under this side's keystream and come in under the other's. */
class EncryptedConnection extends AbstractMultiaddrConnection {
  readonly #maConn: MultiaddrConnection;
  readonly #outbound: XSalsa20Stream;

  constructor(maConn: MultiaddrConnection, inbound: XSalsa20Stream, outbound: XSalsa20Stream) {
    super({ log: maConn.log.newScope('pnet'), remoteAddr: maConn.remoteAddr, direction: maConn.direction });
    this.#maConn = maConn;
    this.#outbound = outbound;
    const take = (chunk: Uint8Array): void => {
      const plain = inbound.update(chunk);
      if (plain === null) this.abort(new Error('the private network keystream of this connection is spent'));
      else this.onData(plain);
    };
    maConn.addEventListener('message', (event) => {
      const data = event.data;
      if (data instanceof Uint8Array) take(data);
      else for (const chunk of data) take(chunk);
    });
    // Sending goes on once the connection under it takes more.
    maConn.addEventListener('drain', () => this.onMuxerDrain());
    maConn.addEventListener('close', (event) => {
      if (event.error === undefined || event.error === null) this.onTransportClosed();
      else if (event.local) this.abort(event.error);
      else this.onRemoteReset();
    });
  }

  override async sendClose(options?: AbortOptions): Promise<void> {
    await this.#maConn.close(options);
  }

  override sendData(data: Parameters<AbstractMultiaddrConnection['sendData']>[0]): SendResult {
    const sealed = this.#outbound.update(data.subarray());
    if (sealed === null) {
      this.#maConn.abort(new Error('the private network keystream of this connection is spent'));
      return { sentBytes: data.byteLength, canSendMore: false };
    }
    return { sentBytes: data.byteLength, canSendMore: this.#maConn.send(sealed) };
  }

  override sendReset(error: Error): void {
    this.#maConn.abort(error);
  }

  override sendPause(): void {
    this.#maConn.pause();
  }

  override sendResume(): void {
    this.#maConn.resume();
  }
}
