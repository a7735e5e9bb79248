// The polyfill must load before libp2p.
import '../../src/transport/polyfills.js';
import { generateKeyPair } from '@libp2p/crypto/keys';
import type { PrivateKey } from '@libp2p/interface';
import type { Message, NodeId } from '../../src/raft/types.js';
import { SeededRandom } from '../../src/time/random.js';
import { parsePeerAddress, type PeerAddress } from '../../src/transport/address.js';
import { Libp2pTransport } from '../../src/transport/libp2p-transport.js';
import { SimNetwork } from '../../simulations/network.js';
import { SimScheduler } from '../../simulations/scheduler.js';
import { describeTransportCompliance, type Endpoint, type TransportNetwork } from './transport-compliance.js';

/** How long a real network may take for what a test waits for, at most. */
const REAL_WAIT_MS = 10_000;
/** How long a real network is watched for messages that must not arrive. */
const REAL_IDLE_MS = 200;
/** How far simulated time may move for what a test waits for, at most. */
const SIM_WAIT_MS = 60_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** libp2p over TCP on 127.0.0.1, port 0, each member with a key of its own, pinned by its peers. */
function libp2pNetwork(): TransportNetwork {
  const live = new Map<NodeId, { transport: Libp2pTransport; key: PrivateKey; address: PeerAddress }>();
  const all: Libp2pTransport[] = [];
  const make = async (id: NodeId, key: PrivateKey, listen = '/ip4/127.0.0.1/tcp/0'): Promise<Libp2pTransport> => {
    const transport = new Libp2pTransport({ self: id, clusterId: 'compliance', listen, peers: new Map(), privateKey: key });
    all.push(transport);
    await transport.start();
    const [address] = transport.listenAddresses();
    if (address === undefined) throw new Error(`${id} is not listening`);
    live.set(id, { transport, key, address: parsePeerAddress(address, 'test') });
    return transport;
  };
  const rewire = (): void => {
    const peers = new Map([...live].map(([id, m]) => [id, m.address] as const));
    for (const m of live.values()) m.transport.setPeers(peers);
  };
  const endpoint = (id: NodeId, transport: Libp2pTransport, listen = true): Endpoint => {
    const received: Message[] = [];
    if (listen) transport.onMessage((m) => received.push(m));
    return { id, transport, received };
  };
  return {
    async start(ids) {
      const transports = await Promise.all(ids.map(async (id) => make(id, await generateKeyPair('Ed25519'))));
      rewire();
      return ids.map((id, i) => endpoint(id, transports[i] as Libp2pTransport));
    },
    async startSilent(id) {
      const transport = await make(id, await generateKeyPair('Ed25519'));
      rewire();
      const e = endpoint(id, transport, false);
      return { endpoint: e, listen: () => transport.onMessage((m) => e.received.push(m)) };
    },
    async restart(e) {
      const old = live.get(e.id);
      if (old === undefined) throw new Error(`${e.id} never started`);
      await old.transport.stop();
      // Same key, same port: its peers keep the address they pinned.
      const transport = await make(e.id, old.key, old.address.multiaddr);
      rewire();
      return endpoint(e.id, transport);
    },
    async until(done, what) {
      const deadline = performance.now() + REAL_WAIT_MS;
      while (!done()) {
        if (performance.now() > deadline) throw new Error(`waited ${REAL_WAIT_MS} ms for ${what}`);
        await sleep(5);
      }
    },
    idle: () => sleep(REAL_IDLE_MS),
    async close() {
      await Promise.all(all.map((t) => t.stop()));
    },
  };
}

/** The simulator's network, without faults: a millisecond or two of latency, on virtual time. */
function simNetwork(): TransportNetwork {
  const scheduler = new SimScheduler();
  const network = new SimNetwork(scheduler, new SeededRandom(1), { lossRate: 0, duplicateRate: 0, latencyMinMs: 1, latencyMaxMs: 2 });
  const endpoint = (id: NodeId, listen = true): Endpoint => {
    const transport = network.attach(id);
    const received: Message[] = [];
    if (listen) transport.onMessage((m) => received.push(m));
    return { id, transport, received };
  };
  const runUntil = (done: () => boolean, limitMs: number): boolean => {
    const end = scheduler.nowMs + limitMs;
    while (!done()) if (!scheduler.step(end)) return done();
    return true;
  };
  return {
    async start(ids) {
      const endpoints = ids.map((id) => endpoint(id));
      await Promise.all(endpoints.map((e) => e.transport.start()));
      return endpoints;
    },
    async startSilent(id) {
      const e = endpoint(id, false);
      await e.transport.start();
      return { endpoint: e, listen: () => e.transport.onMessage((m) => e.received.push(m)) };
    },
    async restart(e) {
      await e.transport.stop();
      const again = endpoint(e.id);
      await again.transport.start();
      return again;
    },
    async until(done, what) {
      if (!runUntil(done, SIM_WAIT_MS)) throw new Error(`ran ${SIM_WAIT_MS} simulated ms waiting for ${what}`);
    },
    async idle() {
      runUntil(() => false, SIM_WAIT_MS);
    },
    async close() {},
  };
}

describeTransportCompliance('libp2p', libp2pNetwork);
describeTransportCompliance("the simulator's network", simNetwork);
