// The polyfill must load before libp2p.
import '../../src/transport/polyfills.js';
import { connect } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { InvalidArgumentError } from '../../src/errors.js';
import type { Message, NodeId } from '../../src/raft/types.js';
import { parsePeerAddress, type PeerAddress } from '../../src/transport/address.js';
import { checkSecret, generateSecret, isLoopbackHost, MIN_SECRET_LENGTH, pskFromSecret } from '../../src/transport/cluster-secret.js';
import { decodeFrame, encodeFrame } from '../../src/transport/codec.js';
import { MAX_FRAME_BYTES, PROTOCOL_ID } from '../../src/transport/constants.js';
import type { TransportEvent } from '../../src/transport/events.js';
import { FrameReader, withPrefix } from '../../src/transport/framing.js';
import { Libp2pTransport, type Libp2pTransportOptions } from '../../src/transport/libp2p-transport.js';
import type { MemberPeer } from '../../src/transport/transport.js';
import { hostileNode, openRaw, type HostileNode } from '../fixtures/hostile-node.js';

const CLUSTER = 'test-cluster';
const WAIT = { timeout: 10_000, interval: 5 };
const SECRET = 'correct horse battery staple';
const PSK = pskFromSecret(SECRET);

interface Member {
  readonly id: NodeId;
  readonly transport: Libp2pTransport;
  readonly received: Message[];
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function member(id: NodeId, options: Partial<Libp2pTransportOptions> = {}): Promise<Member> {
  const received: Message[] = [];
  // No visitors unless a test asks for them: a non-member is closed right after its handshake.
  const transport = new Libp2pTransport({ self: id, clusterId: CLUSTER, listen: '/ip4/127.0.0.1/tcp/0', peers: new Map(), psk: PSK, visitors: { max: 0, keepMs: 0 }, ...options });
  cleanups.push(() => transport.stop());
  transport.onMessage((message) => received.push(message));
  await transport.start();
  return { id, transport, received };
}

/** The member's bound address, pinned to its peer id, or not. */
function addressOf(m: Member, pinned = true): PeerAddress {
  const [address] = m.transport.listenAddresses();
  if (address === undefined) throw new Error(`${m.id} is not listening`);
  const parsed = parsePeerAddress(address, 'test');
  return pinned ? parsed : { ...parsed, peerId: null };
}

function heartbeat(from: NodeId, to: NodeId): Message {
  return { type: 'heartbeat', from, to, term: 7, commit: 0, readCtx: 0 };
}

/** Two members that know each other, `pinned` or not, and have exchanged a message each way. */
async function pair(pinned: boolean): Promise<[Member, Member]> {
  const a = await member('a');
  const b = await member('b');
  const peers = new Map([
    ['a', addressOf(a, pinned)],
    ['b', addressOf(b, pinned)],
  ]);
  a.transport.setPeers(peers);
  b.transport.setPeers(peers);
  a.transport.send(heartbeat('a', 'b'));
  b.transport.send(heartbeat('b', 'a'));
  await vi.waitFor(() => expect([a.received.length, b.received.length]).toEqual([1, 1]), WAIT);
  return [a, b];
}

describe('the cluster secret', () => {
  it('derives the same private network key from the same secret, in the format @libp2p/pnet reads, and another from another', () => {
    const text = new TextDecoder().decode(PSK);
    expect(text).toMatch(/^\/key\/swarm\/psk\/1\.0\.0\/\n\/base16\/\n[0-9a-f]{64}$/);
    expect(pskFromSecret(SECRET)).toEqual(PSK);
    expect(pskFromSecret(`${SECRET}!`)).not.toEqual(PSK);
    // The key is derived, not the secret written out.
    expect(text).not.toContain(Buffer.from(SECRET).toString('hex'));
  });

  it('generates secrets that pass its own check, and refuses short or padded ones without echoing them', () => {
    const generated = generateSecret();
    expect(checkSecret(generated, 'secret')).toBe(generated);
    expect(generated).not.toBe(generateSecret());
    // A lone surrogate: the key's UTF-8 makes it U+FFFD, so secrets differing only there were one.
    for (const bad of ['x'.repeat(MIN_SECRET_LENGTH - 1), ` ${SECRET}`, `${SECRET}\n`, 'x'.repeat(5000), 42, `${SECRET}\uD800`]) {
      let caught: unknown;
      try {
        checkSecret(bad, 'secret');
      } catch (error) {
        caught = error;
      }
      expect(caught).toBeInstanceOf(InvalidArgumentError);
      expect((caught as Error).message).not.toContain(SECRET);
    }
  });

  it('counts loopback hosts, and only them, as loopback', () => {
    for (const host of ['127.0.0.1', '127.1.2.3', '::1', 'localhost']) expect(isLoopbackHost(host), host).toBe(true);
    for (const host of ['0.0.0.0', '::', '10.0.0.2', '128.0.0.1', 'example.com', '::ffff:127.0.0.1']) expect(isLoopbackHost(host), host).toBe(false);
  });

  it('lets no process without the secret reach the protocol, counting each, while members with it deliver', async () => {
    const [a, b] = await pair(false);
    const target = a.transport.listenAddresses()[0] ?? '';
    // A libp2p node without a secret, and one with another secret: neither gets a stream.
    const open = await hostileNode();
    const other = await hostileNode({ psk: pskFromSecret('another secret, not ours') });
    cleanups.push(() => open.stop(), () => other.stop());
    await expect(openRaw(open, target)).rejects.toThrow();
    await expect(openRaw(other, target)).rejects.toThrow();
    // A frame written straight onto TCP, as from member b.
    const { port } = addressOf(a);
    const socket = connect(port, '127.0.0.1');
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.on('error', () => undefined);
    socket.write(withPrefix(encodeFrame({ clusterId: CLUSTER, message: heartbeat('b', 'a') })));
    await new Promise<void>((resolve) => socket.once('close', resolve));

    await vi.waitFor(() => expect(a.transport.stats().inboundConnections?.handshakeFailed).toBeGreaterThanOrEqual(3), WAIT);
    expect(a.received).toHaveLength(1);
    expect(a.transport.stats()).toMatchObject({ received: 1, droppedMalformed: 0, droppedUnexpected: 0 });
    b.transport.send(heartbeat('b', 'a'));
    await vi.waitFor(() => expect(a.received).toHaveLength(2), WAIT);
  });

  it('closes a connection whose keystream is spent and dials again, so that messages go on (README, "Security")', async () => {
    // Each direction of a connection carries this many blocks of 64 bytes (2^32 in production).
    const pskMaxBlocks = 128;
    const connected: NodeId[] = [];
    const a = await member('a', { pskMaxBlocks });
    const b = await member('b', { pskMaxBlocks, onEvent: (e) => (e.type === 'connected' ? connected.push(e.peer) : undefined) });
    const peers = new Map([
      ['a', addressOf(a)],
      ['b', addressOf(b)],
    ]);
    a.transport.setPeers(peers);
    b.transport.setPeers(peers);
    // Far more than one connection's keystream carries, one at a time: a message written as a
    // connection is closed is lost (Raft sends it again), so each is sent until it arrives.
    const messages = 1000;
    for (let i = 0; i < messages; i++) {
      const deadline = Date.now() + WAIT.timeout;
      while (a.received.length <= i) {
        if (Date.now() > deadline) throw new Error(`message ${i} not delivered within ${WAIT.timeout} ms`);
        b.transport.send(heartbeat('b', 'a'));
        await vi.waitFor(() => expect(a.received.length).toBeGreaterThan(i), { timeout: 200, interval: 1 }).catch(() => undefined);
      }
    }
    expect(a.received.length).toBeGreaterThanOrEqual(messages);
    // Tens of KiB of heartbeats in frames, over connections of 8 KiB each way: dialled again and again.
    expect(connected.length).toBeGreaterThanOrEqual(4);
  });

  it('closes, right after the handshake, a connection from a peer id none of the pinned members holds', async () => {
    const [a] = await pair(true);
    // It holds the secret, but not a member's key.
    const stranger = await hostileNode({ psk: PSK });
    cleanups.push(() => stranger.stop());
    await expect(openRaw(stranger, a.transport.listenAddresses()[0] ?? '')).rejects.toThrow();
    await vi.waitFor(() => expect(a.transport.stats().inboundConnections?.notMember).toBe(1), WAIT);
    expect(a.transport.stats()).toMatchObject({ received: 1, droppedUnexpected: 0 });
  });

  it('lets any peer id with the secret connect while some member is not pinned (its frames are checked by sender)', async () => {
    const [a] = await pair(false);
    const holder = await hostileNode({ psk: PSK });
    cleanups.push(() => holder.stop());
    const stream = await openRaw(holder, a.transport.listenAddresses()[0] ?? '');
    stream.send(withPrefix(encodeFrame({ clusterId: CLUSTER, message: heartbeat('c', 'a') })));
    await vi.waitFor(() => expect(a.transport.stats().droppedUnexpected).toBe(1), WAIT);
    expect(a.transport.stats().inboundConnections?.notMember).toBe(0);
  });
});

/*
 * The peer ids the configuration binds (issue 18): a member's frames are accepted only from a
 * connection authenticated as its bound peer id, and once every member is bound, a connection
 * from any other peer id is closed right after the handshake. Against a process that holds the
 * secret but not a member's key.
 */

function peerIdOf(m: Member): string {
  const peerId = m.transport.peerId();
  if (peerId === null) throw new Error(`${m.id} has no peer id`);
  return peerId;
}

/** A heartbeat told apart from others by its commit index. */
function numbered(from: NodeId, to: NodeId, commit: number): Message {
  return { type: 'heartbeat', from, to, term: 7, commit, readCtx: 0 };
}

/** Members a and b that know each other's addresses, unpinned, and a process with the secret but its own key. */
async function setUp(options: Partial<Libp2pTransportOptions> = {}): Promise<{ a: Member; b: Member; impostor: HostileNode }> {
  const [a, b] = [await member('a', options), await member('b')];
  const peers = new Map([
    ['a', addressOf(a, false)],
    ['b', addressOf(b, false)],
  ]);
  a.transport.setPeers(peers);
  b.transport.setPeers(peers);
  const impostor = await hostileNode({ psk: PSK });
  cleanups.push(() => impostor.stop());
  return { a, b, impostor };
}

/** A frame sent by `from` on a raw stream of the impostor's: it claims b's id. */
function claimFromB(commit: number): Uint8Array {
  return withPrefix(encodeFrame({ clusterId: CLUSTER, message: numbered('b', 'a', commit) }));
}

describe('peer ids bound in the configuration', () => {
  it("drops a frame claiming a bound member's id from a connection of another key, counted as peer-id-mismatch; the member's own get in", async () => {
    const { a, b, impostor } = await setUp();
    // A third member, not bound yet: the gate lets any peer id with the secret in, so the
    // impostor reaches the frame checks.
    const c: MemberPeer = { id: '127.0.0.1:1', peerId: null };
    a.transport.setMembers([
      { id: 'a', peerId: null },
      { id: 'b', peerId: null },
      c,
    ]);
    const stream = await openRaw(impostor, a.transport.listenAddresses()[0] ?? '');
    // Unbound, b's id is taken at its word (trust on first use has nothing else to go on).
    stream.send(claimFromB(1));
    await vi.waitFor(() => expect(a.received).toHaveLength(1), WAIT);
    expect(a.transport.remotePeerIdOf('b')).toBe(impostor.node.peerId.toString());

    await vi.waitFor(() => expect(a.transport.isConnected('b')).toBe(true), WAIT);
    a.transport.setMembers([{ id: 'a', peerId: peerIdOf(a) }, { id: 'b', peerId: peerIdOf(b) }, c]);
    // Binding costs no reconnection: a moment without a connection would make the leader hand
    // the member's work to others.
    expect(a.transport.isConnected('b')).toBe(true);
    stream.send(claimFromB(2));
    await vi.waitFor(() => expect(a.transport.stats().droppedPeerIdMismatch).toBe(1), WAIT);
    expect(a.received.map((m) => m.type === 'heartbeat' && m.commit)).toEqual([1]);
    expect(a.transport.stats()).toMatchObject({ received: 1, droppedUnexpected: 0 });

    b.transport.send(numbered('b', 'a', 3));
    await vi.waitFor(() => expect(a.received.map((m) => m.type === 'heartbeat' && m.commit)).toEqual([1, 3]), WAIT);
    expect(a.transport.remotePeerIdOf('b')).toBe(peerIdOf(b));
  });

  it('closes a connection from a peer id bound to no member right after the handshake, once every member is bound', async () => {
    const { a, b, impostor } = await setUp();
    const target = a.transport.listenAddresses()[0] ?? '';
    a.transport.setMembers([
      { id: 'a', peerId: null },
      { id: 'b', peerId: null },
    ]);
    // Not every member bound: any peer id with the secret connects (its frames are checked by sender).
    const before = await openRaw(impostor, target);
    before.abort(new Error('done'));
    expect(a.transport.stats().inboundConnections?.notMember).toBe(0);
    for (const connection of impostor.node.getConnections()) connection.abort(new Error('done'));

    a.transport.setMembers([
      { id: 'a', peerId: peerIdOf(a) },
      { id: 'b', peerId: peerIdOf(b) },
    ]);
    await expect(openRaw(impostor, target)).rejects.toThrow();
    await vi.waitFor(() => expect(a.transport.stats().inboundConnections?.notMember).toBe(1), WAIT);
    // The bound member still connects and delivers.
    b.transport.send(numbered('b', 'a', 1));
    await vi.waitFor(() => expect(a.received).toHaveLength(1), WAIT);
  });

  it('lets a few non-members in for a while, to ask to join, their frames dropped; closes more at once, and each when its time is up', async () => {
    const { a, b, impostor } = await setUp({ visitors: { max: 1, keepMs: 1_000 } });
    const target = a.transport.listenAddresses()[0] ?? '';
    a.transport.setMembers([
      { id: 'a', peerId: peerIdOf(a) },
      { id: 'b', peerId: peerIdOf(b) },
    ]);
    // The first is a visitor: in, but whatever it says as a member is dropped.
    const stream = await openRaw(impostor, target);
    stream.send(withPrefix(encodeFrame({ clusterId: CLUSTER, message: numbered('b', 'a', 9) })));
    await vi.waitFor(() => expect(a.transport.stats().droppedPeerIdMismatch).toBe(1), WAIT);
    expect(a.transport.stats().inboundConnections).toMatchObject({ visitors: 1, notMember: 0 });
    // A second non-member while the first visits is closed right after its handshake.
    const second = await hostileNode({ psk: PSK });
    cleanups.push(() => second.stop());
    await expect(openRaw(second, target)).rejects.toThrow();
    await vi.waitFor(() => expect(a.transport.stats().inboundConnections?.notMember).toBe(1), WAIT);
    // The visitor, which did not become a member, is closed once its time is up.
    await vi.waitFor(() => expect(impostor.node.getConnections()).toHaveLength(0), WAIT);
    expect(a.received).toHaveLength(0);
  });

  it('takes a vote request from a visitor under an id that is no member\'s, answers it over the visitor\'s connection, and dials nothing', async () => {
    const events: TransportEvent[] = [];
    const { a, b, impostor } = await setUp({ visitors: { max: 1, keepMs: 10_000 }, onEvent: (event) => events.push(event) });
    const target = a.transport.listenAddresses()[0] ?? '';
    a.transport.setMembers([
      { id: 'a', peerId: peerIdOf(a) },
      { id: 'b', peerId: peerIdOf(b) },
    ]);
    // The answer comes back on a stream a opens over the visitor's connection.
    const answers: Message[] = [];
    const reader = new FrameReader(MAX_FRAME_BYTES);
    await impostor.node.handle(PROTOCOL_ID, (stream) => {
      stream.addEventListener('message', (event) => {
        const chunks = event.data instanceof Uint8Array ? [event.data] : [...event.data];
        for (const chunk of chunks) reader.push(chunk, (frame) => answers.push(decodeFrame(frame).message));
      });
    });
    // Its id is an address: were the answer dialled, a would dial it.
    const stranger = '/ip4/127.0.0.1/tcp/9';
    const stream = await openRaw(impostor, target);
    stream.send(withPrefix(encodeFrame({ clusterId: CLUSTER, message: numbered(stranger, 'a', 1) })));
    stream.send(withPrefix(encodeFrame({ clusterId: CLUSTER, message: { type: 'prevote', from: stranger, to: 'a', term: 8, lastIndex: 5, lastTerm: 7 } })));
    await vi.waitFor(() => expect(a.received.map((m) => m.type)).toEqual(['prevote']), WAIT);
    expect(a.transport.stats().droppedUnexpected).toBe(1);
    a.transport.send(numbered('a', stranger, 1));
    a.transport.send({ type: 'prevote-resp', from: 'a', to: stranger, term: 8, reject: false });
    await vi.waitFor(() => expect(answers.map((m) => m.type)).toEqual(['prevote-resp']), WAIT);
    expect(events.some((e) => (e.type === 'dial-failed' || e.type === 'connected') && e.peer === stranger)).toBe(false);
    expect(impostor.node.getConnections()).toHaveLength(1);
    stream.abort(new Error('done'));
  });

  it('frees the place of a visitor that became a member, so that the next joiner gets in', async () => {
    const { a, b, impostor: joiner } = await setUp({ visitors: { max: 1, keepMs: 60_000 } });
    const target = a.transport.listenAddresses()[0] ?? '';
    a.transport.setMembers([
      { id: 'a', peerId: peerIdOf(a) },
      { id: 'b', peerId: peerIdOf(b) },
    ]);
    // A joiner asks as a visitor, and is added, bound to its key: its connection stays, as a member's.
    const stream = await openRaw(joiner, target);
    a.transport.setMembers([
      { id: 'a', peerId: peerIdOf(a) },
      { id: 'b', peerId: peerIdOf(b) },
      { id: '127.0.0.1:9', peerId: joiner.node.peerId.toString() },
    ]);
    // The next joiner is let in as a visitor too: the first no longer holds a visitor's place.
    const next = await hostileNode({ psk: PSK });
    cleanups.push(() => next.stop());
    const nextStream = await openRaw(next, target);
    expect(a.transport.stats().inboundConnections).toMatchObject({ visitors: 2, notMember: 0 });
    stream.abort(new Error('done'));
    nextStream.abort(new Error('done'));
  });

  it('lets a peer id pinned in the given address win over the one bound', async () => {
    const { a, b, impostor } = await setUp();
    // b is pinned to its own key in a's peer list; the configuration binds it to the impostor's.
    a.transport.setPeers(new Map([['b', parsePeerAddress(b.transport.listenAddresses()[0] ?? '', 'test')]]));
    a.transport.setMembers([
      { id: 'a', peerId: null },
      { id: 'b', peerId: impostor.node.peerId.toString() },
    ]);
    b.transport.send(numbered('b', 'a', 1));
    await vi.waitFor(() => expect(a.received).toHaveLength(1), WAIT);
    await expect(openRaw(impostor, a.transport.listenAddresses()[0] ?? '')).rejects.toThrow();
    await vi.waitFor(() => expect(a.transport.stats().inboundConnections?.notMember).toBe(1), WAIT);
  });
});
