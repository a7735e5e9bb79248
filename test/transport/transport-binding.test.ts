// The polyfill must load before libp2p.
import '../../src/transport/polyfills.js';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { Message, NodeId } from '../../src/raft/types.js';
import { parsePeerAddress, type PeerAddress } from '../../src/transport/address.js';
import { pskFromSecret } from '../../src/transport/cluster-secret.js';
import { encodeFrame } from '../../src/transport/codec.js';
import { withPrefix } from '../../src/transport/framing.js';
import { Libp2pTransport } from '../../src/transport/libp2p-transport.js';
import type { MemberPeer } from '../../src/transport/transport.js';
import { hostileNode, openRaw, type HostileNode } from '../fixtures/hostile-node.js';

/*
 * The peer ids the configuration binds (issue 18): a member's frames are accepted only from a
 * connection authenticated as its bound peer id, and once every member is bound, a connection
 * from any other peer id is closed right after the handshake. Real libp2p on 127.0.0.1, with
 * the cluster secret, against a process that holds the secret but not a member's key.
 */

const CLUSTER = 'test-cluster';
const WAIT = { timeout: 10_000, interval: 5 };
const PSK = pskFromSecret('correct horse battery staple');

interface Member {
  readonly id: NodeId;
  readonly transport: Libp2pTransport;
  readonly received: Message[];
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

async function member(id: NodeId): Promise<Member> {
  const received: Message[] = [];
  const transport = new Libp2pTransport({ self: id, clusterId: CLUSTER, listen: '/ip4/127.0.0.1/tcp/0', peers: new Map(), psk: PSK });
  cleanups.push(() => transport.stop());
  transport.onMessage((message) => received.push(message));
  await transport.start();
  return { id, transport, received };
}

/** The member's address, pinning no peer id (as `host:port` member ids do). */
function unpinned(m: Member): PeerAddress {
  return { ...parsePeerAddress(m.transport.listenAddresses()[0] ?? '', 'test'), peerId: null };
}

function peerIdOf(m: Member): string {
  const peerId = m.transport.peerId();
  if (peerId === null) throw new Error(`${m.id} has no peer id`);
  return peerId;
}

function heartbeat(from: NodeId, to: NodeId, commit: number): Message {
  return { type: 'heartbeat', from, to, term: 7, commit, readCtx: 0 };
}

/** Members a and b that know each other's addresses, unpinned, and a process with the secret but its own key. */
async function setUp(): Promise<{ a: Member; b: Member; impostor: HostileNode }> {
  const [a, b] = [await member('a'), await member('b')];
  const peers = new Map([
    ['a', unpinned(a)],
    ['b', unpinned(b)],
  ]);
  a.transport.setPeers(peers);
  b.transport.setPeers(peers);
  const impostor = await hostileNode({ psk: PSK });
  cleanups.push(() => impostor.stop());
  return { a, b, impostor };
}

/** A frame sent by `from` on a raw stream of the impostor's: it claims b's id. */
function claimFromB(commit: number): Uint8Array {
  return withPrefix(encodeFrame({ clusterId: CLUSTER, message: heartbeat('b', 'a', commit) }));
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

    a.transport.setMembers([{ id: 'a', peerId: peerIdOf(a) }, { id: 'b', peerId: peerIdOf(b) }, c]);
    stream.send(claimFromB(2));
    await vi.waitFor(() => expect(a.transport.stats().droppedPeerIdMismatch).toBe(1), WAIT);
    expect(a.received.map((m) => m.type === 'heartbeat' && m.commit)).toEqual([1]);
    expect(a.transport.stats()).toMatchObject({ received: 1, droppedUnexpected: 0 });

    b.transport.send(heartbeat('b', 'a', 3));
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
    b.transport.send(heartbeat('b', 'a', 1));
    await vi.waitFor(() => expect(a.received).toHaveLength(1), WAIT);
  });

  it('lets a peer id pinned in the given address win over the one bound', async () => {
    const { a, b, impostor } = await setUp();
    // b is pinned to its own key in a's peer list; the configuration binds it to the impostor's.
    a.transport.setPeers(new Map([['b', parsePeerAddress(b.transport.listenAddresses()[0] ?? '', 'test')]]));
    a.transport.setMembers([
      { id: 'a', peerId: null },
      { id: 'b', peerId: impostor.node.peerId.toString() },
    ]);
    b.transport.send(heartbeat('b', 'a', 1));
    await vi.waitFor(() => expect(a.received).toHaveLength(1), WAIT);
    await expect(openRaw(impostor, a.transport.listenAddresses()[0] ?? '')).rejects.toThrow();
    await vi.waitFor(() => expect(a.transport.stats().inboundConnections?.notMember).toBe(1), WAIT);
  });
});
