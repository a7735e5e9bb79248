import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { LEADERLESS_BEFORE_PROBE_MS, RemovalProbe, type RemovalProbeOptions } from '../../src/runtime/removal-probe.js';
import { parsePeerAddress, type PeerAddress } from '../../src/transport/address.js';
import type { JoinAnswer, JoinRequest } from '../../src/transport/join-protocol.js';
import { SUPPORTED } from '../../src/version/versions.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const SELF = '127.0.0.1:7003';
const A = '127.0.0.1:7001';
const B = '127.0.0.1:7002';
const PINNED_A: PeerAddress = { ...parsePeerAddress(A, 'peer'), peerId: 'PA' };
const PINNED_B: PeerAddress = { ...parsePeerAddress(B, 'peer'), peerId: 'PB' };

interface Probed {
  readonly p: RemovalProbe;
  readonly timers: ManualTimers;
  readonly asked: Array<{ peer: NodeId; request: JoinRequest }>;
  readonly removed: number[];
  readonly state: { leader: NodeId | null; committed: number };
}

/** A probe on manual time whose peers answer as `answer` says; what it asked and learned recorded. */
function probe(answer: (peer: PeerAddress, request: JoinRequest) => JoinAnswer | null, peers: readonly PeerAddress[] = [PINNED_A, PINNED_B]): Probed {
  const timers = new ManualTimers();
  const asked: Array<{ peer: NodeId; request: JoinRequest }> = [];
  const removed: number[] = [];
  const state = { leader: null as NodeId | null, committed: 40 };
  const options: RemovalProbeOptions = {
    self: SELF,
    clusterId: 'c1',
    reads: SUPPORTED,
    timers,
    leader: () => state.leader,
    committed: () => state.committed,
    peers: () => peers,
    ask: (peer, request) => {
      asked.push({ peer: peer.id, request });
      const a = answer(peer, request);
      return a === null ? Promise.reject(new Error('unreachable')) : Promise.resolve(a);
    },
    askTimeoutMs: 100,
    onRemoved: (index) => removed.push(index),
  };
  const p = new RemovalProbe(options);
  p.start();
  return { p, timers, asked, removed, state };
}

/** Lets the answers' promises settle. */
const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

describe('asking whether this member was removed (RemovalProbe)', () => {
  it('asks nobody while a leader is known, nor before LEADERLESS_BEFORE_PROBE_MS without one', async () => {
    const t = probe(() => ({ type: 'removed', index: 50 }));
    t.state.leader = A;
    t.timers.advance(10 * LEADERLESS_BEFORE_PROBE_MS);
    expect(t.asked).toEqual([]);
    t.state.leader = null;
    t.timers.advance(LEADERLESS_BEFORE_PROBE_MS - 1);
    await settle();
    expect(t.asked).toEqual([]);
    // Within a third of the wait more, it asks every member that pins a key, with what it knows committed.
    t.timers.advance(LEADERLESS_BEFORE_PROBE_MS / 3 + 1);
    await settle();
    expect(t.asked.map((a) => a.peer)).toEqual([A, B]);
    expect(t.asked[0]?.request.member).toEqual({ clusterId: 'c1', committed: 40 });
    expect(t.removed).toEqual([50]);
  });

  it('a leader heard again starts the wait over', async () => {
    const t = probe(() => ({ type: 'removed', index: 50 }));
    t.timers.advance(LEADERLESS_BEFORE_PROBE_MS - 1000);
    t.state.leader = A;
    t.timers.advance(5000);
    t.state.leader = null;
    t.timers.advance(LEADERLESS_BEFORE_PROBE_MS - 1000);
    await settle();
    expect(t.asked).toEqual([]);
  });

  it('stops for nothing but a removed answer, asks again each round, and asks no member whose key it does not know', async () => {
    let round = 0;
    const unpinned = parsePeerAddress(B, 'peer');
    const t = probe((peer) => (round < 2 ? ({ type: 'retry', detail: 'a member of this configuration' } as const) : peer.id === A ? ({ type: 'removed', index: 9 } as const) : null), [PINNED_A, unpinned]);
    for (; round < 3; round++) {
      t.timers.advance(LEADERLESS_BEFORE_PROBE_MS + 5000);
      await settle();
    }
    expect(t.asked.every((a) => a.peer === A)).toBe(true);
    expect(t.asked.length).toBe(t.p.rounds);
    expect(t.removed).toEqual([9]);
  });

  it('drops an answer that comes after a leader was found, and asks nothing once stopped', async () => {
    const stopped = probe(() => ({ type: 'removed', index: 3 }), [PINNED_A]);
    stopped.p.stop();
    stopped.timers.advance(3 * LEADERLESS_BEFORE_PROBE_MS);
    expect(stopped.asked).toEqual([]);
    let release: (a: JoinAnswer) => void = () => undefined;
    const held = new Promise<JoinAnswer>((resolve) => (release = resolve));
    const timers = new ManualTimers();
    const removed: number[] = [];
    let leader: NodeId | null = null;
    const late = new RemovalProbe({ self: SELF, clusterId: 'c1', reads: SUPPORTED, timers, leader: () => leader, committed: () => 1, peers: () => [PINNED_A], ask: () => held, askTimeoutMs: 100, onRemoved: (index) => removed.push(index) });
    late.start();
    timers.advance(LEADERLESS_BEFORE_PROBE_MS + 5000);
    expect(late.rounds).toBe(1);
    // A leader is known by the time the answer comes: the member is not stopped.
    leader = A;
    release({ type: 'removed', index: 3 });
    await settle();
    expect(removed).toEqual([]);
    late.stop();
  });
});
