import { encode } from 'cborg';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterIdOf } from '../../src/cluster-options.js';
import { Cluster } from '../../src/index.js';
import { MAX_TERM } from '../../src/raft/bounds.js';
import { TYPE_CODES } from '../../src/transport/codec.js';
import { FRAME_FORMAT_VERSION } from '../../src/transport/constants.js';
import { withPrefix } from '../../src/transport/framing.js';
import { hostileNode, openRaw, type HostileNode } from '../fixtures/hostile-node.js';
import { freePort } from '../fixtures/process-cluster.js';

const WAIT = { timeout: 10_000, interval: 10 };

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

/** A heartbeat frame as it travels, written by hand: the encoder refuses to write one out of bounds. */
function heartbeatFrame(clusterId: string, from: string, to: string, term: number): Uint8Array {
  return withPrefix(encode([FRAME_FORMAT_VERSION, clusterId, TYPE_CODES.heartbeat, from, to, term, 0, 0]));
}

describe('a hostile term on the wire', () => {
  it('a member keeps its term, counts the frame it dropped, and the cluster keeps committing', async () => {
    const addrs: string[] = [];
    for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
    // An election timeout long enough that a busy machine does not start an honest election,
    // which would move the term this test watches.
    const members = addrs.map((listen) => new Cluster(addrs, { storage: 'memory', listen, electionTimeoutMs: 1000 }));
    cleanups.push(async () => void (await Promise.all(members.map((m) => m.stop()))));
    await Promise.all(members.map((m) => m.start()));
    await Promise.all(members.map((m) => m.waitForLeader()));
    const leader = members.find((m) => m.state().role === 'leader');
    const victim = members.find((m) => m.state().role === 'follower');
    if (leader === undefined || victim === undefined) throw new Error('no leader and follower');
    await leader.propose('before');
    const { term } = victim.state();
    const clusterId = clusterIdOf([...addrs].sort());

    const attacker: HostileNode = await hostileNode();
    cleanups.push(() => attacker.stop());
    const [address] = victim.state().members.find((m) => m.id === victim.id)?.addrs ?? [];
    const stream = await openRaw(attacker, address ?? '');
    // As from the leader (whose peer id no member pins): first at 2^53 - 1, past the codec's
    // bound, then at MAX_TERM, which the codec carries but no member may hold.
    stream.send(heartbeatFrame(clusterId, leader.id, victim.id, Number.MAX_SAFE_INTEGER));
    await expect.poll(() => victim.state().transport.droppedMalformed, WAIT).toBe(1);
    stream.send(heartbeatFrame(clusterId, leader.id, victim.id, MAX_TERM));
    await expect.poll(() => victim.state().invalidMessages, WAIT).toBe(1);

    expect(victim.state().term).toBe(term);
    expect(victim.state().leader).toBe(leader.id);
    // The cluster still commits, through the member attacked too.
    const { index } = await victim.propose('after');
    await victim.barrier();
    expect(victim.state().appliedIndex).toBeGreaterThanOrEqual(index);
    for (const m of members) expect(m.state().term, m.id).toBe(term);
  });
});
