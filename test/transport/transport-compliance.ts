import { afterEach, describe, expect, it } from 'vitest';
import type { Message, NodeId } from '../../src/raft/types.js';
import { messageTypes } from '../../src/raft/types.js';
import type { MemberPeer, Transport } from '../../src/transport/transport.js';
import { messageExamples } from '../fixtures/message-examples.js';

/** One member's transport in a compliance run, with what it received. */
export interface Endpoint {
  readonly id: NodeId;
  readonly transport: Transport;
  readonly received: Message[];
}

/**
 * A network of transports for the suite. The libp2p one binds 127.0.0.1 on port 0; the
 * simulator's moves virtual time. Every wait is bounded: `until` fails the test when its
 * condition does not come to hold.
 */
export interface TransportNetwork {
  /** Transports for `ids` that can reach one another, started, each with a handler recording what it receives. */
  start(ids: readonly NodeId[]): Promise<Endpoint[]>;
  /** A started transport for `ids`, whose handler is set only when `listen()` is called. */
  startSilent(id: NodeId, peers: readonly NodeId[]): Promise<{ readonly endpoint: Endpoint; listen(): void }>;
  /** Stops `endpoint`'s transport and starts a new one for the same member (same identity and address). */
  restart(endpoint: Endpoint, peers: readonly NodeId[]): Promise<Endpoint>;
  /** Lets the network run until `done()` holds; throws if it does not within the network's bound. */
  until(done: () => boolean, what: string): Promise<void>;
  /** Lets the network run a while with nothing expected (for checking that nothing arrives). */
  idle(): Promise<void>;
  /** Stops everything it started. */
  close(): Promise<void>;
}

/**
 * The behaviour every Transport must have, run against each implementation (as the storage
 * suite is run against every LogStorage): the simulator's network must carry messages as
 * production's does, or simulations test something else.
 */
export function describeTransportCompliance(name: string, makeNetwork: () => TransportNetwork): void {
  describe(`Transport compliance: ${name}`, () => {
    let network: TransportNetwork;
    afterEach(async () => {
      await network?.close();
    });
    const open = async (ids: readonly NodeId[]): Promise<Endpoint[]> => {
      network = makeNetwork();
      return network.start(ids);
    };
    const pair = async (): Promise<[Endpoint, Endpoint]> => {
      const [a, b] = await open(['m1', 'm2']);
      if (a === undefined || b === undefined) throw new Error('two endpoints expected');
      return [a, b];
    };

    it('delivers one message of every type intact, both ways', async () => {
      const [a, b] = await pair();
      // Every type, those of protocol 2 included (a forwarded change of the configuration).
      a.transport.setProtocol(2);
      b.transport.setProtocol(2);
      const there = messageExamples({ from: a.id, to: b.id, term: 7 });
      const back = messageExamples({ from: b.id, to: a.id, term: 7 });
      for (const type of messageTypes) {
        a.transport.send(there[type]);
        b.transport.send(back[type]);
      }
      await network.until(() => a.received.length === messageTypes.length && b.received.length === messageTypes.length, 'every message on both sides');
      // Order is not promised (the simulator reorders; Raft does not need it), content is.
      const byType = (ms: readonly Message[]): Message[] => [...ms].sort((x, y) => x.type.localeCompare(y.type));
      expect(byType(b.received)).toEqual(byType(Object.values(there)));
      expect(byType(a.received)).toEqual(byType(Object.values(back)));
    });

    it('counts what it sent and what it handed to its receiver', async () => {
      const [a, b] = await pair();
      const heartbeat = messageExamples({ from: a.id, to: b.id, term: 1 }).heartbeat;
      for (let i = 0; i < 5; i++) a.transport.send(heartbeat);
      await network.until(() => b.received.length === 5, 'five heartbeats');
      expect(a.transport.stats().sent).toBe(5);
      expect(b.transport.stats().received).toBe(5);
      expect(a.transport.stats().received).toBe(0);
    });

    it('never throws from send to a member it does not know, and keeps carrying the others', async () => {
      const [a, b] = await pair();
      expect(() => a.transport.send(messageExamples({ from: a.id, to: 'nobody', term: 1 }).heartbeat)).not.toThrow();
      a.transport.send(messageExamples({ from: a.id, to: b.id, term: 1 }).heartbeat);
      await network.until(() => b.received.length === 1, 'the heartbeat to a member');
    });

    it('drops a message that arrived before a receiver was set, counting it unexpected, never hands it over later, and counts nothing received', async () => {
      network = makeNetwork();
      const [a] = await network.start(['m1']);
      if (a === undefined) throw new Error('one endpoint expected');
      const silent = await network.startSilent('m2', ['m1']);
      a.transport.send(messageExamples({ from: a.id, to: 'm2', term: 1 }).heartbeat);
      await network.until(() => silent.endpoint.transport.stats().droppedUnexpected === 1, 'the message dropped as unexpected');
      silent.listen();
      await network.idle();
      expect(silent.endpoint.received).toEqual([]);
      expect(silent.endpoint.transport.stats().received).toBe(0);
      a.transport.send(messageExamples({ from: a.id, to: 'm2', term: 1 }).vote);
      await network.until(() => silent.endpoint.received.length === 1, 'the message sent once it listens');
      expect(silent.endpoint.received[0]?.type).toBe('vote');
    });

    it('delivers a vote request from outside the members and carries its answer back, and nothing else to the asker', async () => {
      const [a, b, c] = await open(['m1', 'm2', 'm3']);
      if (a === undefined || b === undefined || c === undefined) throw new Error('three endpoints expected');
      // m3 was added in a configuration m1 and m2 have not applied: it asks m2 for its vote.
      const members = (ids: readonly NodeId[]): MemberPeer[] => ids.map((id) => ({ id, peerId: null }));
      a.transport.setMembers(members([a.id, b.id]));
      b.transport.setMembers(members([a.id, b.id]));
      c.transport.setMembers(members([a.id, b.id, c.id]));
      c.transport.send(messageExamples({ from: c.id, to: b.id, term: 3 }).prevote);
      await network.until(() => b.received.length === 1, 'the pre-vote request from m3');
      expect(b.received[0]?.type).toBe('prevote');
      const fromB = messageExamples({ from: b.id, to: c.id, term: 3 });
      // Only an answer goes back: m2 does not reach m3 otherwise.
      b.transport.send(fromB.heartbeat);
      b.transport.send(fromB['prevote-resp']);
      await network.until(() => c.received.length === 1, 'the answer to m3');
      c.transport.send(messageExamples({ from: c.id, to: b.id, term: 4 }).vote);
      await network.until(() => b.received.length === 2, 'the vote request from m3');
      b.transport.send(messageExamples({ from: b.id, to: c.id, term: 4 })['vote-resp']);
      await network.until(() => c.received.length === 2, 'the second answer to m3');
      await network.idle();
      expect(c.received.map((m) => m.type)).toEqual(['prevote-resp', 'vote-resp']);
      // m1 was asked nothing: it has no way back to m3.
      a.transport.send(messageExamples({ from: a.id, to: c.id, term: 4 })['vote-resp']);
      await network.idle();
      expect(c.received).toHaveLength(2);
    });

    it('once stopped, ignores sends and receives nothing; stopping again is harmless', async () => {
      const [a, b] = await pair();
      a.transport.send(messageExamples({ from: a.id, to: b.id, term: 1 }).heartbeat);
      await network.until(() => b.received.length === 1, 'the first heartbeat');
      await b.transport.stop();
      expect(() => b.transport.send(messageExamples({ from: b.id, to: a.id, term: 1 }).heartbeat)).not.toThrow();
      a.transport.send(messageExamples({ from: a.id, to: b.id, term: 1 }).vote);
      await network.idle();
      expect(a.received).toEqual([]);
      expect(b.received).toHaveLength(1);
      await b.transport.stop();
    });

    it('shows a peer connected while it runs and not once it stopped, and reaches it again after a restart', async () => {
      const [a, b] = await pair();
      a.transport.send(messageExamples({ from: a.id, to: b.id, term: 1 }).heartbeat);
      await network.until(() => b.received.length === 1 && a.transport.isConnected(b.id), 'a connection from m1 to m2');
      await b.transport.stop();
      await network.until(() => !a.transport.isConnected(b.id), 'm1 to see m2 gone');
      const again = await network.restart(b, [a.id]);
      await network.until(() => a.transport.isConnected(b.id), 'm1 to see m2 back');
      a.transport.send(messageExamples({ from: a.id, to: b.id, term: 2 }).heartbeat);
      await network.until(() => again.received.length === 1, 'a heartbeat to the restarted m2');
      again.transport.send(messageExamples({ from: b.id, to: a.id, term: 2 }).vote);
      await network.until(() => a.received.some((m) => m.type === 'vote'), 'a vote from the restarted m2');
    });
  });
}
