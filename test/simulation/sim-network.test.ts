import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { SeededRandom } from '../../src/time/random.js';
import type { WireMessage } from '../../src/transport/envelope.js';
import { SimNetwork, type SimTransport } from '../../simulations/network.js';
import { SimScheduler } from '../../simulations/scheduler.js';
import { messageExamples } from '../fixtures/message-examples.js';

/** What the shared compliance suite cannot ask of libp2p: how the simulator models processes and hosts that die. */
describe("the simulator's network, beyond the transport contract", () => {
  const setup = (): { scheduler: SimScheduler; network: SimNetwork; received: Map<SimTransport, WireMessage[]>; attach: (id: NodeId) => SimTransport } => {
    const scheduler = new SimScheduler();
    const network = new SimNetwork(scheduler, new SeededRandom(1), { lossRate: 0, duplicateRate: 0, latencyMinMs: 1, latencyMaxMs: 1 });
    const received = new Map<SimTransport, WireMessage[]>();
    const attach = (id: NodeId): SimTransport => {
      const t = network.attach(id);
      const got: WireMessage[] = [];
      received.set(t, got);
      t.onMessage((m) => got.push(m));
      return t;
    };
    return { scheduler, network, received, attach };
  };
  const drain = (scheduler: SimScheduler): void => {
    while (scheduler.step(Number.POSITIVE_INFINITY));
  };

  it("a restarted member's old transport, stopped late, neither detaches the new one nor receives its messages", () => {
    const { scheduler, received, attach } = setup();
    const a = attach('a');
    const oldB = attach('b');
    const newB = attach('b');
    void oldB.stop();
    expect(a.isConnected('b')).toBe(true);
    a.send(messageExamples({ from: 'a', to: 'b', term: 1 }).heartbeat);
    drain(scheduler);
    expect(received.get(newB)).toHaveLength(1);
    expect(received.get(oldB)).toEqual([]);
  });

  it('a blocked link is a closed connection its sender is told of at once, as production reports `disconnected`; a mute closes nothing', () => {
    const { network, attach } = setup();
    const a = attach('a');
    const b = attach('b');
    const gone: Array<[NodeId, NodeId]> = [];
    a.onPeerGone = (peer) => void gone.push(['a', peer]);
    b.onPeerGone = (peer) => void gone.push(['b', peer]);
    network.mute('a', 'b');
    expect(gone).toEqual([]);
    network.block('a', 'b');
    // Its sender's connection closed (isConnected), and it was told, once; the other way is open.
    expect(a.isConnected('b')).toBe(false);
    expect(b.isConnected('a')).toBe(true);
    network.block('a', 'b');
    expect(gone).toEqual([['a', 'b']]);
    network.healPartitions();
    expect(a.isConnected('b')).toBe(true);
    network.block('a', 'b');
    expect(gone).toEqual([
      ['a', 'b'],
      ['a', 'b'],
    ]);
  });

  it('a crashed process closes its connections at once; a host that lost power looks connected, and gets nothing, until it restarts', () => {
    const { scheduler, network, received, attach } = setup();
    const a = attach('a');
    const b = attach('b');
    const c = attach('c');
    void b.stop();
    expect(a.isConnected('b')).toBe(false);
    c.loseHost();
    expect(a.isConnected('c')).toBe(true);
    expect(() => c.send(messageExamples({ from: 'c', to: 'a', term: 1 }).vote)).not.toThrow();
    a.send(messageExamples({ from: 'a', to: 'c', term: 1 }).heartbeat);
    drain(scheduler);
    expect(received.get(c)).toEqual([]);
    expect(received.get(a)).toEqual([]);
    expect(c.stats().sent).toBe(0);
    const again = attach('c');
    a.send(messageExamples({ from: 'a', to: 'c', term: 2 }).heartbeat);
    drain(scheduler);
    expect(received.get(again)).toHaveLength(1);
    expect(network.isAttached('c')).toBe(true);
  });

  it("tells a member's peers that its connection closed when its process dies, not when its host loses power", () => {
    const { attach } = setup();
    const a = attach('a');
    const gone: NodeId[] = [];
    a.onPeerGone = (peer) => gone.push(peer);
    const b = attach('b');
    const c = attach('c');
    c.loseHost();
    expect(gone).toEqual([]);
    void b.stop();
    expect(gone).toEqual(['b']);
    void b.stop();
    expect(gone).toEqual(['b']);
  });
});
