import { afterEach, describe, expect, it } from 'vitest';
import { clusterIdOf } from '../../src/cluster-options.js';
import { Cluster } from '../../src/index.js';
import { EntryType, type Message } from '../../src/raft/types.js';
import { pskFromSecret } from '../../src/transport/cluster-secret.js';
import { encodeFrame } from '../../src/transport/codec.js';
import { withPrefix } from '../../src/transport/framing.js';
import { hostileNode, openRaw, type HostileNode } from '../fixtures/hostile-node.js';
import { ProcessCluster } from '../fixtures/process-cluster.js';

const SECRET = 'q7Hc1v9ZrKx0mT4aYw2LdNf8';
const WAIT = { timeout: 20_000, interval: 50 };
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Sends `frames` to `port` every 2 ms until the returned stop is called; the stream is re-opened as it breaks. */
function flood(attacker: HostileNode, port: string, frames: readonly Uint8Array[]): () => Promise<void> {
  let on = true;
  const done = (async (): Promise<void> => {
    let stream: Awaited<ReturnType<typeof openRaw>> | null = null;
    while (on) {
      try {
        stream ??= await openRaw(attacker, `/ip4/127.0.0.1/tcp/${port}`);
        for (const frame of frames) stream.send(frame);
      } catch {
        stream = null;
      }
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
  })();
  return async () => {
    on = false;
    await done;
  };
}

/**
 * Every member of a cluster just formed is bound, each by an entry of its own, the last one
 * last. A member killed stores its commit index only with its next write (durable-writes.ts), so
 * restarted it has not applied the last entries of its log: the last binding among them. Before
 * the fix, until a leader told it the commit index again, it took frames speaking as the member
 * that binding is for from any key holding the secret: an append of a later term was taken, the
 * term adopted, the forged entry appended. It now holds the bindings its log has past its
 * commit index until they apply (Libp2pTransport.bindUntilConfigured).
 *
 * Forms a 3-member cluster of processes, waits until every member is bound, kills all three
 * (kill -9) and restarts them in this process on their data directories while a process holding
 * the secret floods each, from its own key, with an append of term `forged(term)` speaking as
 * each other member. Returns the restarted members, the forged term and the highest term each
 * was seen at over 3 s of it.
 */
async function crashAndForge(forged: (term: number) => number): Promise<{ restarted: Cluster[]; forgedTerm: number; seen: Map<string, number> }> {
    const pc = await ProcessCluster.create(3, { secret: SECRET, electionTimeoutMs: 1000 });
    cleanups.push(() => pc.cleanup());
    await pc.startAll();
    await pc.waitForLeader();
    await expect.poll(async () => (await Promise.all(pc.members.map((m) => m.state()))).every((s) => Object.keys(s.configuration.peerIds).length === 3), WAIT).toBe(true);
    const before = await Promise.all(pc.members.map((m) => m.state()));
    const term = Math.max(...before.map((s) => s.term));
    const lastIndex = Math.max(...before.map((s) => s.lastIndex));
    expect(before.every((s) => s.lastIndex === lastIndex && s.term === term)).toBe(true);
    for (const m of pc.members) await m.kill();

    const forgedTerm = forged(term);
    const attacker = await hostileNode({ psk: pskFromSecret(SECRET) });
    cleanups.push(() => attacker.stop());
    const clusterId = clusterIdOf([...pc.seeds].sort());
    // To each member, an append of a later term speaking as each other member, from the
    // attacker's key: one forged entry after the last one it holds, committed.
    const stops = pc.members.map((target) => {
      const frames = pc.members
        .filter((m) => m !== target)
        .map((as) => {
          const forged: Message = {
            type: 'append',
            from: as.address,
            to: target.address,
            term: forgedTerm,
            prevIndex: lastIndex,
            prevTerm: term,
            commit: lastIndex + 1,
            entries: [{ index: lastIndex + 1, term: forgedTerm, type: EntryType.Noop, data: new Uint8Array(0), pid: '' }],
          };
          return withPrefix(encodeFrame({ clusterId, message: forged }, undefined, 2));
        });
      return flood(attacker, target.address.split(':')[1] as string, frames);
    });
    const restarted = pc.members.map((m) => new Cluster([...pc.seeds], { storage: 'level', dataDir: m.dataDir, listen: m.address, secret: SECRET, electionTimeoutMs: 1000 }));
    cleanups.push(async () => void (await Promise.all(restarted.map((r) => r.stop()))));
    await Promise.all(restarted.map((r) => r.start()));
    const seen = new Map<string, number>();
    const deadline = Date.now() + 3000;
    while (Date.now() < deadline) {
      for (const r of restarted) seen.set(r.id, Math.max(seen.get(r.id) ?? 0, r.state().term));
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    for (const stop of stops) await stop();

    return { restarted, forgedTerm, seen };
}

describe('a cluster whose members are all bound, killed and restarted on their data directories', () => {
  it('takes no frame speaking as a bound member from another key (a later term, an entry)', async () => {
    const { restarted, forgedTerm, seen } = await crashAndForge((term) => term + 1000);
    for (const r of restarted) {
      expect(seen.get(r.id), r.id).toBeLessThan(forgedTerm);
      // The flood reached it, and it dropped it.
      expect(r.state().transport.droppedPeerIdMismatch, r.id).toBeGreaterThan(0);
    }
  });
});
