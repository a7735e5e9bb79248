import { describe, expect, it } from 'vitest';
import { MAX_READ_CTX } from '../../src/raft/bounds.js';
import type { RaftNode } from '../../src/raft/node.js';
import { PendingRequests, type RequestOptions } from '../../src/runtime/pending-requests.js';
import { READ_CTXS_PER_LIFE, ReadContexts } from '../../src/runtime/read-contexts.js';
import type { Timers } from '../../src/time/clock.js';

const OPTIONS: Omit<RequestOptions, 'bootId'> = {
  requestTimeoutMs: 5000,
  maxPendingProposals: 16,
  maxProposalBatch: 16,
  maxProposalBatchBytes: 1 << 20,
  maxPendingReads: 16,
  leaderSilenceMs: 1000,
};

const TIMERS: Timers = { now: () => 0, setTimeout: () => ({}) as never, clearTimeout: () => undefined };

/** A follower's node as PendingRequests sees it: the reads it asked the leader, and its log's apply point. */
function follower(applying: number): { node: RaftNode; asked: number[] } {
  const asked: number[] = [];
  const node = { id: 'm2', leader: 'm1', role: 'follower', log: { applying, committed: applying }, readIndex: (ctx: number) => (asked.push(ctx), true) };
  return { node: node as unknown as RaftNode, asked };
}

describe('read contexts', () => {
  it("are not the last process life's: a leader's answer to a read asked before a restart resolves no read of the new life", async () => {
    // The first life asks a read at commit 10; the leader holds it (no commit of its term yet).
    const before = follower(10);
    const old = new PendingRequests(before.node, TIMERS, { ...OPTIONS, bootId: 'a1b2c3d4' }, () => undefined);
    old.read().catch(() => undefined);
    const [oldCtx] = before.asked;
    // The member restarts and, having applied up to 20, asks a read of its own.
    const after = follower(20);
    const life = new PendingRequests(after.node, TIMERS, { ...OPTIONS, bootId: '5e6f7a8b' }, () => undefined);
    let resolved: number | null = null;
    void life.read().then((index) => (resolved = index));
    const [newCtx] = after.asked;
    // The leader answers the old read, at the commit index it had then: not this life's read.
    life.readStates([{ ctx: oldCtx as number, index: 12 }]);
    life.releaseReads();
    await Promise.resolve();
    expect(resolved).toBeNull();
    // Its own answer resolves it.
    life.readStates([{ ctx: newCtx as number, index: 20 }]);
    life.releaseReads();
    await Promise.resolve();
    expect(resolved).toBe(20);
  });

  it('stay within the bound of the wire, and never take 0, over a whole range', () => {
    for (const bootId of ['ffffffff', '00000000', 'm3.7', '']) {
      const contexts = new ReadContexts(bootId);
      const first = contexts.next();
      expect(first).toBeGreaterThan(0);
      let last = first;
      for (let i = 1; i < READ_CTXS_PER_LIFE - 1; i++) last = contexts.next();
      // The whole range taken, it starts again where it began.
      expect(last).toBeLessThanOrEqual(MAX_READ_CTX);
      expect(last - first).toBe(READ_CTXS_PER_LIFE - 2);
      expect(contexts.next()).toBe(first);
    }
  });
});
