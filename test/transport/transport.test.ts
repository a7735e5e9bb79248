// The polyfill must load before libp2p.
import '../../src/transport/polyfills.js';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { Stream } from '@libp2p/interface';
import { peerIdFromPrivateKey } from '@libp2p/peer-id';
import { encode } from 'cborg';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { CodecError, InvalidArgumentError, ListenError } from '../../src/errors.js';
import { encodeConfChange } from '../../src/raft/conf-change.js';
import { EntryType, type Message, type NodeId } from '../../src/raft/types.js';
import { parsePeerAddress } from '../../src/transport/address.js';
import type { PeerAddress } from '../../src/transport/address.js';
import { encodeFrame } from '../../src/transport/codec.js';
import { MAX_FRAME_BYTES } from '../../src/transport/constants.js';
import type { TransportEvent } from '../../src/transport/events.js';
import { withPrefix } from '../../src/transport/framing.js';
import { Libp2pTransport } from '../../src/transport/libp2p-transport.js';
import type { Libp2pTransportOptions } from '../../src/transport/libp2p-transport.js';
import type { MemberPeer } from '../../src/transport/transport.js';
import { freePort } from '../fixtures/process-cluster.js';
import { hostileNode as createHostileNode, openRaw as openRawStream, type HostileNode } from '../fixtures/hostile-node.js';

const CLUSTER = 'test-cluster';
const LOCAL = '/ip4/127.0.0.1/tcp/0';
const WAIT = { timeout: 10_000, interval: 5 };

interface Member {
  readonly id: NodeId;
  readonly transport: Libp2pTransport;
  readonly received: Message[];
  readonly events: TransportEvent[];
}

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  const pending = cleanups.splice(0);
  await Promise.all(pending.map((cleanup) => cleanup()));
});

async function member(id: NodeId, options: Partial<Libp2pTransportOptions> = {}): Promise<Member> {
  const received: Message[] = [];
  const events: TransportEvent[] = [];
  const transport = new Libp2pTransport({
    self: id,
    clusterId: CLUSTER,
    listen: LOCAL,
    peers: new Map(),
    onEvent: (event) => events.push(event),
    ...options,
  });
  cleanups.push(() => transport.stop());
  transport.onMessage((message) => received.push(message));
  await transport.start();
  return { id, transport, received, events };
}

/** The member's bound address, pinned to its peer id. */
function addressOf(m: Member): PeerAddress {
  const [address] = m.transport.listenAddresses();
  if (address === undefined) throw new Error(`${m.id} is not listening`);
  return parsePeerAddress(address, 'test');
}

/** Tells every member where every other member listens. */
function wire(members: readonly Member[]): void {
  const peers = new Map(members.map((m) => [m.id, addressOf(m)] as const));
  for (const m of members) m.transport.setPeers(peers);
}

/**
 * As wire, but every member also knows one that pins no peer id (and never answers): the
 * connection gate then lets any peer id in (see ConnectionGate), so a hostile node reaches the
 * frame checks these tests are about.
 */
function wirePartlyPinned(members: readonly Member[]): void {
  const peers = new Map([...members.map((m) => [m.id, addressOf(m)] as const), ['unpinned', parsePeerAddress('127.0.0.1:1', 'test')] as const]);
  for (const m of members) m.transport.setPeers(peers);
}

/** Members of a configuration that binds them no peer id. */
function unbound(...ids: NodeId[]): MemberPeer[] {
  return ids.map((id) => ({ id, peerId: null }));
}

function heartbeat(from: NodeId, to: NodeId, commit: number): Message {
  return { type: 'heartbeat', from, to, term: 1, commit, readCtx: 0 };
}

async function waitForConnected(from: Member, to: NodeId): Promise<void> {
  await vi.waitFor(() => expect(from.transport.isConnected(to)).toBe(true), WAIT);
}

/** A libp2p node that is not a member, to speak the protocol badly on purpose. */
async function hostileNode(): Promise<HostileNode> {
  const node = await createHostileNode();
  cleanups.push(() => node.stop());
  return node;
}

async function openRaw(node: HostileNode, target: Member): Promise<Stream> {
  const [address] = target.transport.listenAddresses();
  return openRawStream(node, address ?? '');
}

describe('Libp2pTransport', () => {
  it('delivers messages both ways between three members', async () => {
    const members = await Promise.all(['n1', 'n2', 'n3'].map((id) => member(id)));
    wire(members);
    for (const from of members) {
      for (const to of members) {
        if (from !== to) from.transport.send(heartbeat(from.id, to.id, 1));
      }
    }
    for (const m of members) {
      await vi.waitFor(() => expect(m.received).toHaveLength(2), WAIT);
      const senders = m.received.map((message) => message.from).sort();
      expect(senders).toEqual(members.filter((o) => o !== m).map((o) => o.id));
      expect(m.received.every((message) => message.to === m.id)).toBe(true);
    }
    for (const m of members) {
      expect(m.transport.isConnected(members.find((o) => o !== m)?.id ?? '')).toBe(true);
      expect(m.transport.stats()).toMatchObject({ sent: 2, received: 2, droppedQueueFull: 0, droppedMalformed: 0, droppedOversized: 0, droppedUnexpected: 0, droppedPeerIdMismatch: 0 });
    }
  });

  it('keeps the order of messages to one peer and batches a burst', async () => {
    const [a, b] = await Promise.all([member('a'), member('b')]);
    wire([a, b]);
    await waitForConnected(a, 'b');
    const count = 2000;
    for (let i = 0; i < count; i++) a.transport.send(heartbeat('a', 'b', i));
    await vi.waitFor(() => expect(b.received).toHaveLength(count), WAIT);
    expect(b.received.map((m) => (m.type === 'heartbeat' ? m.commit : -1))).toEqual(Array.from({ length: count }, (_, i) => i));
  });

  it('delivers a large append carrying megabytes of entries', async () => {
    const [a, b] = await Promise.all([member('a'), member('b')]);
    wire([a, b]);
    const data = new Uint8Array(1024 * 1024).map((_, i) => i % 251);
    const message: Message = {
      type: 'append',
      from: 'a',
      to: 'b',
      term: 2,
      prevIndex: 0,
      prevTerm: 0,
      commit: 0,
      entries: [1, 2, 3].map((index) => ({ index, term: 2, type: 0, data, pid: `a#${index}` })),
    };
    a.transport.send(message);
    a.transport.send(heartbeat('a', 'b', 3));
    await vi.waitFor(() => expect(b.received).toHaveLength(2), WAIT);
    const [got, next] = b.received;
    // Compare the megabytes with Buffer.equals: a deep equality check element by element is slow.
    expect(got?.type === 'append' && got.entries.map((e) => e.index)).toEqual([1, 2, 3]);
    expect(got?.type === 'append' && got.entries.every((e) => Buffer.from(e.data).equals(data))).toBe(true);
    expect(next?.type).toBe('heartbeat');
  });

  it('writes through back-pressure: megabytes queued at once arrive complete and in order', async () => {
    const [a, b] = await Promise.all([member('a'), member('b')]);
    wire([a, b]);
    await waitForConnected(a, 'b');
    const data = new Uint8Array(1024 * 1024).fill(7);
    for (let i = 0; i < 20; i++) {
      a.transport.send({ type: 'propose', from: 'a', to: 'b', term: 1, proposals: [{ pid: `a#${i}`, data }] });
      a.transport.send(heartbeat('a', 'b', i));
    }
    await vi.waitFor(() => expect(b.received).toHaveLength(40), WAIT);
    const order = b.received.map((m) => (m.type === 'propose' ? m.proposals[0]?.pid : m.type === 'heartbeat' ? m.commit : null));
    expect(order).toEqual(Array.from({ length: 20 }, (_, i) => [`a#${i}`, i]).flat());
    expect(a.transport.stats().droppedQueueFull).toBe(0);
  });

  it('throws CodecError from send for a message the wire format cannot carry', async () => {
    const [a, b] = await Promise.all([member('a'), member('b')]);
    wire([a, b]);
    expect(() => a.transport.send({ ...heartbeat('a', 'b', 1), term: -1 })).toThrow(CodecError);
    expect(a.transport.stats().sent).toBe(0);
  });

  it('queues messages for a peer that is down and delivers them, and later ones, once it comes up', async () => {
    // Learn a free port, then free it: n2 will come up there later.
    const placeholder = await member('n2');
    const n2Address = addressOf(placeholder);
    await placeholder.transport.stop();

    const n1 = await member('n1', { peers: new Map([['n2', { ...n2Address, peerId: null }]]) });
    n1.transport.send(heartbeat('n1', 'n2', 1));
    await vi.waitFor(() => expect(n1.events.some((e) => e.type === 'dial-failed' && e.peer === n2Address.id)).toBe(true), WAIT);
    expect(n1.transport.isConnected('n2')).toBe(false);

    const n2 = await member('n2', { listen: n2Address.multiaddr });
    wire([n1, n2]);
    await waitForConnected(n1, 'n2');
    n1.transport.send(heartbeat('n1', 'n2', 2));
    await vi.waitFor(() => expect(n2.received.map((m) => (m.type === 'heartbeat' ? m.commit : -1))).toEqual([1, 2]), WAIT);
    expect(n1.events.some((e) => e.type === 'connected' && e.peer === n2Address.id)).toBe(true);
  });

  it('re-dials a peer that restarts with its key and delivers later messages to the new process', async () => {
    const privateKey = await generateKeyPair('Ed25519');
    const [n1, first] = await Promise.all([member('n1'), member('n2', { privateKey })]);
    wire([n1, first]);
    n1.transport.send(heartbeat('n1', 'n2', 1));
    await vi.waitFor(() => expect(first.received).toHaveLength(1), WAIT);
    const n2Address = addressOf(first);
    expect(n2Address.peerId).toBe(peerIdFromPrivateKey(privateKey).toString());
    await first.transport.stop();
    await vi.waitFor(() => expect(n1.transport.isConnected('n2')).toBe(false), WAIT);
    expect(n1.events.some((e) => e.type === 'disconnected' && e.peer === n2Address.id)).toBe(true);

    // Same key, same port: n1 keeps the pinned address and needs no new configuration.
    const second = await member('n2', { privateKey, listen: n2Address.multiaddr });
    second.transport.setPeers(new Map([['n1', addressOf(n1)]]));
    await waitForConnected(n1, 'n2');
    n1.transport.send(heartbeat('n1', 'n2', 2));
    await vi.waitFor(() => expect(second.received.map((m) => (m.type === 'heartbeat' ? m.commit : -1))).toContain(2), WAIT);
    second.transport.send(heartbeat('n2', 'n1', 3));
    await vi.waitFor(() => expect(n1.received).toContainEqual(heartbeat('n2', 'n1', 3)), WAIT);
  });

  it('dials at once a peer it hears from while waiting out its back-off, rather than when the back-off ends', async () => {
    // A back-off of 5 to 10 s after the first break: the link could only come up early by hearing from the peer.
    const reconnect = { reconnectMinMs: 10_000, reconnectMaxMs: 60_000 };
    const privateKey = await generateKeyPair('Ed25519');
    const [n1, first] = await Promise.all([member('n1', reconnect), member('n2', { privateKey })]);
    wire([n1, first]);
    await waitForConnected(n1, 'n2');
    const n2Address = addressOf(first);
    await first.transport.stop();
    await vi.waitFor(() => expect(n1.transport.isConnected('n2')).toBe(false), WAIT);

    const second = await member('n2', { privateKey, listen: n2Address.multiaddr });
    second.transport.setPeers(new Map([['n1', addressOf(n1)]]));
    second.transport.send(heartbeat('n2', 'n1', 1));
    await vi.waitFor(() => expect(n1.received).toContainEqual(heartbeat('n2', 'n1', 1)), WAIT);
    // Well inside the shortest back-off (5 s).
    await vi.waitFor(() => expect(n1.transport.isConnected('n2')).toBe(true), { timeout: 3_000, interval: 5 });
    n1.transport.send(heartbeat('n1', 'n2', 2));
    await vi.waitFor(() => expect(second.received).toContainEqual(heartbeat('n1', 'n2', 2)), WAIT);
  });

  it('bounds the queue of an unreachable peer, dropping the oldest, without stalling other peers', async () => {
    const placeholder = await member('down');
    const downAddress = addressOf(placeholder);
    await placeholder.transport.stop();
    const up = await member('up');
    const n1 = await member('n1', {
      maxQueuedMessages: 10,
      peers: new Map([
        ['down', { ...downAddress, peerId: null }],
        ['up', addressOf(up)],
      ]),
    });
    up.transport.setPeers(new Map([['n1', addressOf(n1)]]));
    for (let i = 0; i < 25; i++) n1.transport.send(heartbeat('n1', 'down', i));
    n1.transport.send(heartbeat('n1', 'up', 99));
    await vi.waitFor(() => expect(up.received).toHaveLength(1), WAIT);
    expect(n1.transport.stats().droppedQueueFull).toBe(15);
    expect(n1.events.filter((e) => e.type === 'dropped' && e.reason === 'queue-full')).toHaveLength(15);

    // When the peer comes up it gets the newest ten.
    const down = await member('down', { listen: downAddress.multiaddr });
    down.transport.setPeers(new Map([['n1', addressOf(n1)]]));
    await vi.waitFor(() => expect(down.received).toHaveLength(10), WAIT);
    expect(down.received.map((m) => (m.type === 'heartbeat' ? m.commit : -1))).toEqual([15, 16, 17, 18, 19, 20, 21, 22, 23, 24]);
  });

  it('drops messages to unknown peers without throwing', async () => {
    const a = await member('a');
    expect(() => a.transport.send(heartbeat('a', 'nobody', 1))).not.toThrow();
    expect(a.transport.stats().droppedQueueFull).toBe(1);
    expect(a.events).toContainEqual(expect.objectContaining({ type: 'dropped', reason: 'unreachable', peer: 'nobody' }));
  });

  it('refuses to connect to a peer that does not hold its pinned peer id', async () => {
    const [a, b] = await Promise.all([member('a'), member('b')]);
    const impostorId = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString();
    a.transport.setPeers(new Map([['b', { ...addressOf(b), peerId: impostorId }]]));
    await vi.waitFor(() => expect(a.events.filter((e) => e.type === 'dial-failed').length).toBeGreaterThanOrEqual(2), WAIT);
    expect(a.transport.isConnected('b')).toBe(false);
    expect(a.events.some((e) => e.type === 'connected')).toBe(false);
  });

  it('survives hostile input on its protocol and still delivers a real peer’s messages', async () => {
    const [victim, peer] = await Promise.all([member('victim'), member('peer')]);
    wirePartlyPinned([victim, peer]);
    const attacker = await hostileNode();
    const valid = (message: Message, clusterId = CLUSTER): Uint8Array => withPrefix(encodeFrame({ clusterId, message }));

    // (a) Garbage frames on one stream: each is dropped as malformed and the stream stays usable.
    const garbage = await openRaw(attacker, victim);
    const junk = [
      new Uint8Array([0xff, 0x00, 0x13, 0x37]),
      new TextEncoder().encode('GET / HTTP/1.1'),
      encode({ type: 'heartbeat', from: 'peer', to: 'victim' }),
      encode([1, CLUSTER, 7, 'peer', 'victim', -1, 0, 0]),
      new Uint8Array(0),
    ];
    for (const bytes of junk) garbage.send(withPrefix(bytes));
    await vi.waitFor(() => expect(victim.transport.stats().droppedMalformed).toBe(junk.length), WAIT);

    // (c) A valid frame of another cluster, (d) one addressed to another member, and two from
    // senders that are not who they claim: an unknown member, and `peer`, whose id is pinned.
    garbage.send(valid(heartbeat('peer', 'victim', 1), 'other-cluster'));
    garbage.send(valid(heartbeat('peer', 'someone-else', 2)));
    garbage.send(valid(heartbeat('stranger', 'victim', 3)));
    garbage.send(valid(heartbeat('peer', 'victim', 4)));
    await vi.waitFor(() => expect(victim.transport.stats()).toMatchObject({ droppedUnexpected: 3, droppedPeerIdMismatch: 1 }), WAIT);
    const reasons = victim.events.flatMap((e) => (e.type === 'dropped' ? [e.reason] : []));
    expect(reasons).toEqual(expect.arrayContaining(['wrong-cluster', 'wrong-recipient', 'unknown-sender', 'peer-id-mismatch']));

    // (b) An oversized length prefix: dropped at once and the stream is reset, not buffered.
    const oversized = await openRaw(attacker, victim);
    const closed = new Promise<void>((resolve) => oversized.addEventListener('close', () => resolve(), { once: true }));
    oversized.send(withPrefix(new Uint8Array(MAX_FRAME_BYTES + 1)).subarray(0, 16));
    await vi.waitFor(() => expect(victim.transport.stats().droppedOversized).toBe(1), WAIT);
    await closed;
    expect(oversized.status).toBe('reset');

    expect(victim.received).toEqual([]);
    expect(victim.transport.stats().received).toBe(0);

    // The member is unharmed: a real peer's message still arrives.
    peer.transport.send(heartbeat('peer', 'victim', 42));
    await vi.waitFor(() => expect(victim.received).toEqual([heartbeat('peer', 'victim', 42)]), WAIT);
    expect(victim.transport.stats()).toMatchObject({ received: 1, droppedMalformed: junk.length, droppedUnexpected: 3, droppedPeerIdMismatch: 1, droppedOversized: 1 });
  });

  it('resets a stream that pushes the bytes held for incomplete frames over the bound', async () => {
    const [victim, peer] = await Promise.all([member('victim', { maxInboundBufferedBytes: 100_000 }), member('peer')]);
    wirePartlyPinned([victim, peer]);
    const attacker = await hostileNode();
    // Each stream announces a 60 kB frame and sends 40 kB of it: the third crosses 100 kB.
    const partial = withPrefix(new Uint8Array(60_000)).subarray(0, 40_000);
    const streams = [await openRaw(attacker, victim), await openRaw(attacker, victim), await openRaw(attacker, victim)];
    const closed = streams.map((stream) => new Promise<void>((resolve) => stream.addEventListener('close', () => resolve(), { once: true })));
    for (const stream of streams) stream.send(partial);
    await vi.waitFor(() => expect(victim.transport.stats().droppedOversized).toBe(1), WAIT);
    // Whichever stream arrived last is reset; the two within the bound are left alone.
    await Promise.race(closed);
    expect(streams.map((stream) => stream.status).sort()).toEqual(['open', 'open', 'reset']);
    expect(victim.events).toContainEqual(expect.objectContaining({ type: 'dropped', reason: 'oversized' }));
    peer.transport.send(heartbeat('peer', 'victim', 1));
    await vi.waitFor(() => expect(victim.received).toHaveLength(1), WAIT);
  });

  it('drops, without counting as received, messages that arrive before a handler is set', async () => {
    const a = await member('a');
    const received: Message[] = [];
    const b = new Libp2pTransport({ self: 'b', clusterId: CLUSTER, listen: LOCAL, peers: new Map() });
    cleanups.push(() => b.stop());
    await b.start();
    const bMember: Member = { id: 'b', transport: b, received, events: [] };
    wire([a, bMember]);
    a.transport.send(heartbeat('a', 'b', 1));
    await vi.waitFor(() => expect(b.stats().droppedUnexpected).toBe(1), WAIT);
    b.onMessage((m) => received.push(m));
    a.transport.send(heartbeat('a', 'b', 2));
    await vi.waitFor(() => expect(received).toHaveLength(1), WAIT);
    expect(b.stats().received).toBe(1);
  });

  it('keeps delivering when the handler throws', async () => {
    const [a, b] = await Promise.all([member('a'), member('b')]);
    wire([a, b]);
    const seen: number[] = [];
    b.transport.onMessage((m) => {
      seen.push(m.type === 'heartbeat' ? m.commit : -1);
      if (seen.length === 1) throw new Error('handler bug');
    });
    a.transport.send(heartbeat('a', 'b', 1));
    a.transport.send(heartbeat('a', 'b', 2));
    await vi.waitFor(() => expect(seen).toEqual([1, 2]), WAIT);
    expect(b.events).toContainEqual(expect.objectContaining({ type: 'handler-error' }));
  });

  it('stops promptly with live connections, and ignores sends afterwards', async () => {
    const members = await Promise.all(['n1', 'n2', 'n3'].map((id) => member(id)));
    wire(members);
    const [n1] = members;
    if (n1 === undefined) throw new Error('no member');
    await waitForConnected(n1, 'n2');
    await waitForConnected(n1, 'n3');
    const started = performance.now();
    await n1.transport.stop();
    expect(performance.now() - started).toBeLessThan(1000);
    expect(n1.transport.isConnected('n2')).toBe(false);
    expect(n1.transport.listenAddresses()).toEqual([]);
    expect(() => n1.transport.send(heartbeat('n1', 'n2', 1))).not.toThrow();
    await n1.transport.stop();
    await expect(n1.transport.start()).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
  });

  it('reports a taken port as ListenError', async () => {
    const a = await member('a');
    const taken = addressOf(a).multiaddr;
    const b = new Libp2pTransport({ self: 'b', clusterId: CLUSTER, listen: taken, peers: new Map() });
    cleanups.push(() => b.stop());
    const error: unknown = await b.start().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ListenError);
    expect(error).toMatchObject({ code: 'CRONRAFT_LISTEN_FAILED', address: taken });
    // The system's reason, without libp2p's advice about its own options or a stack inside.
    const { message } = error as Error;
    expect(message).toMatch(/listen EADDRINUSE/);
    expect(message).not.toContain('faultTolerance');
    expect(message).not.toMatch(/\n\s+at /);
  });

  it('rejects bad options with InvalidArgumentError', () => {
    const ok: Libp2pTransportOptions = { self: 'a', clusterId: CLUSTER, listen: LOCAL, peers: new Map() };
    const bad: [string, Partial<Libp2pTransportOptions>][] = [
      ['self', { self: '' }],
      ['clusterId', { clusterId: '' }],
      ['listen', { listen: 'not a multiaddr' }],
      ['maxQueuedMessages', { maxQueuedMessages: 0 }],
      ['maxQueuedBytes', { maxQueuedBytes: 1.5 }],
      ['reconnectMinMs', { reconnectMinMs: -1 }],
      ['reconnectMaxMs', { reconnectMinMs: 50, reconnectMaxMs: 10 }],
      ['dialTimeoutMs', { dialTimeoutMs: Number.NaN }],
      ['maxInboundBufferedBytes', { maxInboundBufferedBytes: 0 }],
    ];
    for (const [option, override] of bad) {
      let caught: unknown;
      try {
        new Libp2pTransport({ ...ok, ...override });
      } catch (error) {
        caught = error;
      }
      expect(caught, option).toBeInstanceOf(InvalidArgumentError);
      expect((caught as InvalidArgumentError).option).toBe(option);
    }
  });
});

describe('the members of the configuration (setMembers)', () => {
  it('dials a member added by its id, which is its address, takes its frames, and drops it once removed', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const a = await member(`127.0.0.1:${pa}`, { listen: `/ip4/127.0.0.1/tcp/${pa}` });
    const b = await member(`127.0.0.1:${pb}`, { listen: `/ip4/127.0.0.1/tcp/${pb}` });
    // Neither knows the other: a frame from a stranger is dropped, and nothing is dialled.
    a.transport.send(heartbeat(a.id, b.id, 1));
    expect(a.events.some((e) => e.type === 'dropped' && e.reason === 'unreachable' && e.peer === b.id)).toBe(true);
    // Added by their ids (this one's among them, as a configuration lists it): each dials the other.
    a.transport.setMembers(unbound(a.id, b.id));
    b.transport.setMembers(unbound(a.id, b.id));
    await vi.waitFor(() => expect(a.transport.isConnected(b.id)).toBe(true), WAIT);
    a.transport.send(heartbeat(a.id, b.id, 2));
    await vi.waitFor(() => expect(b.received.map((m) => m.type === 'heartbeat' && m.commit)).toContain(2), WAIT);
    // Removed: no link, no dial, and its frames are a stranger's again.
    b.transport.setMembers(unbound(b.id));
    expect(b.transport.isConnected(a.id)).toBe(false);
    a.transport.send(heartbeat(a.id, b.id, 3));
    await vi.waitFor(() => expect(b.events.some((e) => e.type === 'dropped' && e.reason === 'unknown-sender')).toBe(true), WAIT);
    expect(b.received.map((m) => m.type === 'heartbeat' && m.commit)).not.toContain(3);
  });

  it('refuses to send a conf change before setProtocol(2), and carries it after', async () => {
    const [pa, pb] = [await freePort(), await freePort()];
    const a = await member(`127.0.0.1:${pa}`, { listen: `/ip4/127.0.0.1/tcp/${pa}` });
    const b = await member(`127.0.0.1:${pb}`, { listen: `/ip4/127.0.0.1/tcp/${pb}` });
    for (const m of [a, b]) m.transport.setMembers(unbound(a.id, b.id));
    const entry = { index: 1, term: 1, type: EntryType.ConfChange, data: encodeConfChange({ type: 'add-learner', id: 'c' }), pid: '' };
    const append: Message = { type: 'append', from: a.id, to: b.id, term: 1, prevIndex: 0, prevTerm: 0, commit: 0, entries: [entry] };
    expect(() => a.transport.send(append)).toThrow(CodecError);
    a.transport.setProtocol(2);
    a.transport.send(append);
    await vi.waitFor(() => expect(b.received.find((m) => m.type === 'append')).toEqual(append), WAIT);
  });

  it('leaves out an id that is no address, saying so', async () => {
    const a = await member('a');
    a.transport.setMembers(unbound('a', 'not an address'));
    expect(a.events.some((e) => e.type === 'dropped' && e.peer === 'not an address' && e.detail.includes('not an address'))).toBe(true);
    expect(a.transport.isConnected('not an address')).toBe(false);
  });
});
