import { afterEach, describe, expect, it } from 'vitest';
import { clusterIdOf } from '../../src/cluster-options.js';
import type { Cluster } from '../../src/index.js';
import { MAX_INDEX, MAX_TERM } from '../../src/raft/bounds.js';
import type { Message } from '../../src/raft/types.js';
import { pskFromSecret } from '../../src/transport/cluster-secret.js';
import { encodeFrame } from '../../src/transport/codec.js';
import { withPrefix } from '../../src/transport/framing.js';
import { hostileNode, openRaw, type HostileNode } from '../fixtures/hostile-node.js';
import { boundThreeMembers } from '../fixtures/loopback-members.js';

const SECRET = 'q7Hc1v9ZrKx0mT4aYw2LdNf8';
const WAIT = { timeout: 15_000, interval: 20 };
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

/** A vote request as a stranger holding the secret sends it, under an id that is no member's. */
async function sendVote(attacker: HostileNode, target: Cluster, clusterId: string, term: number, transfer: boolean): Promise<void> {
  const [address] = target.state().members.find((m) => m.id === target.id)?.addrs ?? [];
  const stream = await openRaw(attacker, address ?? '');
  const vote: Message = { type: 'vote', from: '127.0.0.1:9', to: target.id, term, lastIndex: MAX_INDEX, lastTerm: term, transfer };
  stream.send(withPrefix(encodeFrame({ clusterId, message: vote })));
}

describe('vote requests from a stranger holding the secret, on the wire', () => {
  it('neither depose a leader heard within its lease (a transfer asked for) nor push any member to the last term, and the cluster keeps committing', async () => {
    const members: Cluster[] = [];
    cleanups.push(async () => void (await Promise.all(members.map((m) => m.stop()))));
    // An election timeout long enough that a busy machine does not start an honest election,
    // which would move the terms this test watches. Every member bound: a stranger gets in as a
    // visitor, and only its vote requests are delivered.
    await boundThreeMembers(members, { electionTimeoutMs: 1000, secret: SECRET });
    const addrs = members.map((m) => m.id);
    const leader = members.find((m) => m.state().role === 'leader');
    if (leader === undefined) throw new Error('no leader');
    await leader.propose('before');
    const { term } = leader.state();
    const clusterId = clusterIdOf([...addrs].sort());

    const attacker = await hostileNode({ psk: pskFromSecret(SECRET) });
    cleanups.push(() => attacker.stop());
    // Before: the leader stepped down at the transfer, and the followers took the last term a
    // member may hold, from which none could campaign: nothing committed again.
    for (const m of members) await sendVote(attacker, m, clusterId, m === leader ? term + 1 : MAX_TERM - 1, m === leader);
    for (const m of members) await expect.poll(() => m.state().refusedFromNonMembers, WAIT).toBe(1);

    expect(leader.state().role).toBe('leader');
    for (const m of members) expect(m.state().term, m.id).toBe(term);
    const { index } = await leader.propose('after');
    expect(index).toBeGreaterThan(0);
  });
});
