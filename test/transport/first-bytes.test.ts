// The polyfill must load before libp2p.
import '../../src/transport/polyfills.js';
import { connect } from 'node:net';
import type { Libp2p, MessageStream, StreamMuxer } from '@libp2p/interface';
import { byteStream, multiaddrConnectionPair } from '@libp2p/utils';
import { multiaddr } from '@multiformats/multiaddr';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { parsePeerAddress } from '../../src/transport/address.js';
import { pskFromSecret } from '../../src/transport/cluster-secret.js';
import { INBOUND_UPGRADE_TIMEOUT_MS } from '../../src/transport/constants.js';
import { checkFirstBytes, FIRST_INBOUND_BYTES, UnexpectedFirstBytesError } from '../../src/transport/first-bytes.js';
import { keyOfPsk, NONCE_BYTES, XSalsa20Stream } from '../../src/transport/private-network.js';
import { hostileNode } from '../fixtures/hostile-node.js';
import { heartbeatArrives, transportMember, type TransportMember } from '../fixtures/transport-members.js';

/**
 * Well below INBOUND_UPGRADE_TIMEOUT_MS: a connection closed within it was closed for its bytes,
 * not timed out. Before the check, the flood below was read a byte at a time until that timeout.
 */
const WAIT = { timeout: INBOUND_UPGRADE_TIMEOUT_MS / 2, interval: 5 };
/** Bytes with their high bit set: a length prefix that never ends, for libp2p's lpStream. */
const FLOOD = new Uint8Array(256 * 1024).fill(0xff);

const cleanups: (() => Promise<void> | void)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

describe('checkFirstBytes', () => {
  it('lets through a connection that begins as a member dials, its bytes all read in order afterwards', async () => {
    const [outbound, inbound] = multiaddrConnectionPair();
    const rest = Uint8Array.of(0, 1, 2, 0xff, 0x80);
    outbound.send(Uint8Array.from([...FIRST_INBOUND_BYTES, ...rest]));
    await checkFirstBytes(inbound);
    const read = await byteStream(inbound).read({ bytes: FIRST_INBOUND_BYTES.byteLength + rest.byteLength });
    expect(read.subarray()).toEqual(Uint8Array.from([...FIRST_INBOUND_BYTES, ...rest]));
  });

  it('refuses one that begins otherwise: garbage, and the header with another proposal', async () => {
    const header = FIRST_INBOUND_BYTES.subarray(0, FIRST_INBOUND_BYTES[0] as number + 1);
    const tls = new TextEncoder().encode('/tls/1.0.0\n');
    for (const first of [FLOOD.subarray(0, 64), Uint8Array.from([...header, tls.byteLength, ...tls, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0])]) {
      const [outbound, inbound] = multiaddrConnectionPair();
      outbound.send(first);
      await expect(checkFirstBytes(inbound)).rejects.toThrow(UnexpectedFirstBytesError);
    }
  });

  it('gives up on one that sends too little, when the upgrade\'s signal aborts', async () => {
    const [outbound, inbound] = multiaddrConnectionPair();
    outbound.send(FIRST_INBOUND_BYTES.subarray(0, 5));
    await expect(checkFirstBytes(inbound, { signal: AbortSignal.timeout(50) })).rejects.toThrow(/abort/i);
  });
});

/** Writes `bytes` to the member's port from a raw socket; resolves once the member has closed it. */
async function closedAfter(m: TransportMember, bytes: Uint8Array): Promise<void> {
  const { port } = parsePeerAddress(m.transport.listenAddresses()[0] ?? '', 'test');
  const socket = connect(port, '127.0.0.1');
  cleanups.push(() => void socket.destroy());
  socket.on('error', () => undefined);
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  socket.write(bytes);
  let done = false;
  void closed.then(() => (done = true));
  await vi.waitFor(() => expect(done).toBe(true), WAIT);
}

describe('an inbound connection whose first bytes are not a member’s', () => {
  it.each([
    ['without a secret', undefined],
    ['with a secret', pskFromSecret('correct horse battery staple')],
  ])('is closed as they come, not read a byte at a time until the upgrade times out, and members still get in (%s)', async (_, psk) => {
    const a = await transportMember('a', cleanups, psk);
    let bytes: Uint8Array = FLOOD;
    if (psk !== undefined) {
      // As 1 connection in 256 of a process without the key: bytes that the member's cipher turns into the flood.
      const nonce = crypto.getRandomValues(new Uint8Array(NONCE_BYTES));
      bytes = Uint8Array.from([...nonce, ...(new XSalsa20Stream(keyOfPsk(psk), nonce).update(FLOOD) as Uint8Array)]);
    }
    await closedAfter(a, bytes);
    await vi.waitFor(() => expect(a.transport.stats().inboundConnections?.handshakeFailed).toBe(1), WAIT);
    // A member dials in and its frame arrives.
    const b = await hostileNode(psk === undefined ? {} : { psk });
    cleanups.push(() => b.stop());
    await heartbeatArrives(a, b, WAIT);
    expect(a.transport.stats().inboundConnections).toMatchObject({ accepted: 1, handshakeFailed: 1 });
  });
});

describe('a stream a peer opens, whose first bytes are not multistream-select lines', () => {
  /** A stream opened over `node`'s connection to `a`, before any protocol is negotiated, with `bytes` written on it. */
  async function rawStream(node: Libp2p, a: TransportMember, bytes: Uint8Array): Promise<MessageStream> {
    const connection = await node.dial(multiaddr(a.transport.listenAddresses()[0] ?? ''), { signal: AbortSignal.timeout(5000) });
    const muxer = (connection as unknown as { muxer: StreamMuxer }).muxer;
    const stream = await muxer.createStream();
    stream.send(bytes);
    return stream;
  }

  it.each([
    ['without a secret', undefined],
    ['with a secret', pskFromSecret('correct horse battery staple')],
  ])('is aborted as its bytes come, not read a byte at a time until the negotiation times out, after a protocol not served too; one naming the protocol gets in (%s)', async (_, psk) => {
    const a = await transportMember('a', cleanups, psk);
    const b = await hostileNode(psk === undefined ? {} : { psk });
    cleanups.push(() => b.stop());
    const header = FIRST_INBOUND_BYTES.subarray(0, (FIRST_INBOUND_BYTES[0] as number) + 1);
    const unknown = new TextEncoder().encode('/cronraft/other/1.0.0\n');
    // multistream-select answers a protocol not served with `na` and reads the next line: garbage there too.
    for (const bytes of [FLOOD, Uint8Array.from([...header, ...FLOOD.subarray(0, 1024)]), Uint8Array.from([...header, unknown.byteLength, ...unknown, ...FLOOD.subarray(0, 1024)])]) {
      const stream = await rawStream(b.node, a, bytes);
      await vi.waitFor(() => expect(['reset', 'aborted', 'closed']).toContain(stream.status), WAIT);
    }
    // A member's stream, negotiated as libp2p does, delivers its frame over the same connection.
    await heartbeatArrives(a, b, WAIT);
  });
});
