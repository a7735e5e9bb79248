import '../../src/transport/polyfills.js';
import { Socket } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Message } from '../../src/raft/types.js';
import { parsePeerAddress } from '../../src/transport/address.js';
import { corkWrites } from '../../src/transport/corked-writes.js';
import { Libp2pTransport } from '../../src/transport/libp2p-transport.js';
import { throwPrebuiltRangeError } from '../../src/transport/noise-length-prefix.js';
import { relaxWindowUpdates } from '../../src/transport/yamux-window.js';

const transports: Libp2pTransport[] = [];
afterEach(async () => {
  vi.restoreAllMocks();
  await Promise.all(transports.splice(0).map((t) => t.stop()));
});

interface Member {
  readonly t: Libp2pTransport;
  readonly got: Message[];
}

/** Two transports on loopback, connected both ways, that have exchanged one message. */
async function connectedPair(): Promise<{ a: Member; b: Member }> {
  const make = async (id: string): Promise<Member> => {
    const got: Message[] = [];
    const t = new Libp2pTransport({ self: id, clusterId: 'c', listen: '/ip4/127.0.0.1/tcp/0', peers: new Map() });
    transports.push(t);
    t.onMessage((m) => got.push(m));
    await t.start();
    return { t, got };
  };
  const a = await make('a');
  const b = await make('b');
  const peers = new Map([
    ['a', parsePeerAddress(a.t.listenAddresses()[0] ?? '', 'a')],
    ['b', parsePeerAddress(b.t.listenAddresses()[0] ?? '', 'b')],
  ]);
  a.t.setPeers(peers);
  b.t.setPeers(peers);
  await vi.waitFor(() => expect(a.t.isConnected('b')).toBe(true), { timeout: 10_000 });
  a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 0, readCtx: 0 });
  await vi.waitFor(() => expect(b.got).toHaveLength(1), { timeout: 10_000 });
  return { a, b };
}

describe('fewer writes per message', () => {
  it('corks the socket around one sendData, and leaves other connections alone', () => {
    const calls: string[] = [];
    const conn = {
      socket: { cork: () => calls.push('cork'), uncork: () => calls.push('uncork') },
      sendData(data: unknown): string {
        calls.push(`send ${String(data)}`);
        return 'sent';
      },
    };
    corkWrites(conn as never);
    expect(conn.sendData('frame')).toBe('sent');
    expect(calls).toEqual(['cork', 'send frame', 'uncork']);
    const other = { sendData: (): string => 'x' };
    const before = other.sendData;
    corkWrites(other as never);
    expect(other.sendData).toBe(before);
  });

  it('sends a window update only once half the receive window is used', () => {
    let updates = 0;
    const stream = { state: 3, recvWindow: 1000, recvWindowCapacity: 1000, sendWindowUpdate: (): void => void updates++ };
    relaxWindowUpdates(stream);
    stream.recvWindowCapacity = 900;
    stream.sendWindowUpdate();
    expect(updates).toBe(0);
    stream.recvWindowCapacity = 400;
    stream.sendWindowUpdate();
    expect(updates).toBe(1);
    // Before the stream is established the update carries the SYN/ACK flags: always sent.
    stream.state = 2;
    stream.recvWindowCapacity = 999;
    stream.sendWindowUpdate();
    expect(updates).toBe(2);
  });

  it('applies both to real libp2p connections: about one corked write per message, no update per message', async () => {
    const { a, b } = await connectedPair();
    const cork = vi.spyOn(Socket.prototype, 'cork');
    const count = 200;
    for (let i = 1; i <= count; i++) {
      a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: i, readCtx: 0 });
      // One message per turn of the event loop, so the transport cannot batch them together.
      await vi.waitFor(() => expect(b.got).toHaveLength(i + 1), { timeout: 10_000, interval: 1 });
    }
    // Every message went out corked (one writev), and the receiver did not answer each with
    // a window update (which would double the count).
    expect(cork.mock.calls.length).toBeGreaterThanOrEqual(count);
    expect(cork.mock.calls.length).toBeLessThan(count * 1.2);
  });

  it('gives a noise decoder a length decoder that throws one prebuilt RangeError, and leaves other connections alone', () => {
    const original = (data: { readonly byteLength: number; readonly at?: unknown }): number => {
      if (data.byteLength < 2) throw new RangeError('Could not decode int16BE');
      return (data as Uint8Array)[0]! * 256 + (data as Uint8Array)[1]!;
    };
    const connection = { decoder: { lengthDecoder: original } };
    throwPrebuiltRangeError(connection);
    const decode = connection.decoder.lengthDecoder;
    expect(decode).not.toBe(original);
    expect(decode(Uint8Array.of(1, 2, 3))).toBe(258);
    const thrown = (bytes: Uint8Array): unknown => {
      try {
        decode(bytes);
      } catch (error) {
        return error;
      }
      return undefined;
    };
    const first = thrown(Uint8Array.of(1));
    // The decoder tells "wait for more bytes" from a real failure by the error's class alone.
    expect(first).toBeInstanceOf(RangeError);
    expect(thrown(new Uint8Array(0))).toBe(first);
    for (const other of [{}, { decoder: null }, { decoder: { lengthDecoder: 1 } }, null]) {
      const before = JSON.stringify(other);
      throwPrebuiltRangeError(other);
      expect(JSON.stringify(other)).toBe(before);
    }
  });

  it('builds no RangeError per read on real libp2p connections', async () => {
    const { a, b } = await connectedPair();
    // Counts every RangeError built in this process while messages flow (noise's length decoder
    // looks the global up when it throws). A proxy keeps instanceof working for the decoder.
    const Original = globalThis.RangeError;
    let built = 0;
    globalThis.RangeError = new Proxy(Original, {
      apply: (target, self, args: [string?]) => {
        built++;
        return Reflect.apply(target, self, args) as RangeError;
      },
      construct: (target, args: [string?], newTarget) => {
        built++;
        return Reflect.construct(target, args, newTarget) as RangeError;
      },
    });
    const count = 100;
    try {
      for (let i = 1; i <= count; i++) {
        a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: i, readCtx: 0 });
        await vi.waitFor(() => expect(b.got).toHaveLength(i + 1), { timeout: 10_000, interval: 1 });
      }
    } finally {
      globalThis.RangeError = Original;
    }
    // Without the prebuilt error, every read of every message builds one.
    expect(built).toBeLessThan(count / 10);
  });

  it('writes the messages queued in one turn of the event loop together, though queued in separate microtasks', async () => {
    const { a, b } = await connectedPair();
    const cork = vi.spyOn(Socket.prototype, 'cork');
    a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 1, readCtx: 0 });
    // As the driver's turns do: each ends in a microtask, and the next queues more.
    await Promise.resolve();
    await Promise.resolve();
    a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 2, readCtx: 0 });
    expect(cork).not.toHaveBeenCalled();
    await vi.waitFor(() => expect(b.got).toHaveLength(3), { timeout: 10_000 });
    expect(b.got.map((m) => (m.type === 'heartbeat' ? m.commit : -1))).toEqual([0, 1, 2]);
    expect(cork).toHaveBeenCalledTimes(1);
  });

  it('writes what is queued before stop() goes out, rather than dropping it with the link', async () => {
    const { a } = await connectedPair();
    const sent = a.t.stats().sent;
    a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 7, readCtx: 0 });
    await a.t.stop();
    // Written to the stream before the link closed; whether the peer reads it before the reset
    // that follows is the network's business.
    expect(a.t.stats().sent).toBe(sent + 1);
  });

  it('writes queued messages at the end of the turn, or at once on flush()', async () => {
    const { a, b } = await connectedPair();
    const cork = vi.spyOn(Socket.prototype, 'cork');
    a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 1, readCtx: 0 });
    a.t.send({ type: 'heartbeat', from: 'a', to: 'b', term: 1, commit: 2, readCtx: 0 });
    expect(cork).not.toHaveBeenCalled();
    a.t.flush();
    // Both frames went to the socket in this turn, in one write.
    expect(cork).toHaveBeenCalledTimes(1);
    await vi.waitFor(() => expect(b.got).toHaveLength(3), { timeout: 10_000 });
    expect(b.got.map((m) => (m.type === 'heartbeat' ? m.commit : -1))).toEqual([0, 1, 2]);
  });
});
