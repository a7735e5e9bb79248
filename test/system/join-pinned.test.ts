import { afterEach, describe, expect, it } from 'vitest';
import { clusterIdOf } from '../../src/cluster-options.js';
import { Cluster } from '../../src/index.js';
import type { Message } from '../../src/raft/types.js';
import { pskFromSecret } from '../../src/transport/cluster-secret.js';
import { encodeFrame } from '../../src/transport/codec.js';
import { withPrefix } from '../../src/transport/framing.js';
import { hostileNode, openRaw } from '../fixtures/hostile-node.js';
import { boundThreeMembers } from '../fixtures/loopback-members.js';
import { freePort } from '../fixtures/process-cluster.js';

const SECRET = 'q7Hc1v9ZrKx0mT4aYw2LdNf8';
const WAIT = { timeout: 20_000, interval: 20 };
const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

/**
 * A member joining a cluster whose members are all bound starts with no binding of its own: it
 * learns them as it replays the log. Until then, before the fix, it took frames speaking as the
 * leader from any connection holding the secret, and a later term in one pushed the whole
 * cluster through an election. It now pins the member that accepted it to the key its join
 * answer came from.
 */
describe('a member joining a bound cluster', () => {
  it('takes frames speaking as the leader that added it only from the key that answered it', async () => {
    const members: Cluster[] = [];
    cleanups.push(async () => void (await Promise.all(members.map((m) => m.stop()))));
    // An election timeout long enough that a busy machine does not start an honest election.
    await boundThreeMembers(members, { electionTimeoutMs: 1000, secret: SECRET });
    const addrs = members.map((m) => m.id);
    const leader = members.find((m) => m.state().role === 'leader') as Cluster;
    const term = leader.state().term + 5;

    const joinerAddr = `127.0.0.1:${await freePort()}`;
    const joiner = new Cluster(addrs, { storage: 'memory', listen: joinerAddr, electionTimeoutMs: 1000, secret: SECRET });
    cleanups.push(() => joiner.stop());
    const attacker = await hostileNode({ psk: pskFromSecret(SECRET) });
    cleanups.push(() => attacker.stop());
    // The leader's id, the attacker's key: a heartbeat of a later term, sent over and over from
    // the moment the joiner listens until it has replayed the bindings.
    const forged: Message = { type: 'heartbeat', from: leader.id, to: joinerAddr, term, commit: 0, readCtx: 0 };
    const frame = withPrefix(encodeFrame({ clusterId: clusterIdOf([...addrs].sort()), message: forged }));
    let flooding = true;
    const flood = (async (): Promise<void> => {
      let stream: Awaited<ReturnType<typeof openRaw>> | null = null;
      while (flooding) {
        try {
          stream ??= await openRaw(attacker, `/ip4/127.0.0.1/tcp/${joinerAddr.split(':')[1]}`);
          stream.send(frame);
        } catch {
          stream = null;
        }
        // A frame every 2 ms at most: a flood, paced so that the joiner's loop still runs.
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    await joiner.start();
    await expect.poll(() => Object.keys(joiner.state().configuration.peerIds).length, WAIT).toBe(4);
    flooding = false;
    await flood;

    // The forged frames reached it, and it dropped them.
    expect(joiner.state().transport.droppedPeerIdMismatch).toBeGreaterThan(0);
    expect(joiner.state().term).toBeLessThan(term);
    for (const m of members) expect(m.state().term, m.id).toBeLessThan(term);
  });
});
