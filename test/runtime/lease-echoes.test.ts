import { describe, expect, it } from 'vitest';
import { configurationOf } from '../../src/raft/configuration.js';
import type { RaftNode } from '../../src/raft/node.js';
import type { Configuration, NodeId } from '../../src/raft/types.js';
import type { WireMessage } from '../../src/transport/envelope.js';
import { LeaseEchoes } from '../../src/runtime/lease-echoes.js';

const LEASE_MS = 500;

/** What LeaseEchoes reads of the protocol: a leader 'a' of a, b, c in term 2, whose log, commit and followers' progress a test sets. */
function leaderNode(): { node: RaftNode; set: (s: Partial<{ role: string; term: number; lastIndex: number; committed: number; configuration: Configuration; match: Record<NodeId, number> }>) => void } {
  const s = { role: 'leader', term: 2, lastIndex: 10, committed: 10, configuration: configurationOf(['a', 'b', 'c']), match: { b: 10, c: 10 } as Record<NodeId, number> };
  const node = {
    get role() {
      return s.role;
    },
    get term() {
      return s.term;
    },
    get configuration() {
      return s.configuration;
    },
    log: {
      lastIndex: () => s.lastIndex,
      get committed() {
        return s.committed;
      },
    },
    progressOf: (peer: NodeId) => (s.match[peer] === undefined ? undefined : { match: s.match[peer] }),
  } as unknown as RaftNode;
  return { node, set: (changes) => Object.assign(s, changes) };
}

/** `from`'s answer to a heartbeat of `term`, which it sent at `sentAt` on its clock. */
const answer = (from: NodeId, sentAt: number, term = 2): WireMessage => ({ type: 'heartbeat-resp', from, to: 'a', term, readCtx: 0, clock: { echo: 0, receivedAt: 0, sentAt, wallOffset: 0 } });
const heartbeat = (to: NodeId): WireMessage => ({ type: 'heartbeat', from: 'a', to, term: 2, commit: 10, readCtx: 0 });

describe('LeaseEchoes', () => {
  it("tells a follower of its latest answer taken in, on its own clock, and nothing before it answered", () => {
    const echoes = new LeaseEchoes(leaderNode().node, LEASE_MS);
    expect(echoes.heardAt('b', 10, 10)).toBeUndefined();
    // A leader's first answer from a follower ends a silence: fenced at the log's end (10), which b holds and which is committed.
    echoes.answered('b', 73_000.5, 1_000, 10);
    expect(echoes.heardAt('b', 10, 10)).toBe(73_000.5);
    echoes.answered('b', 73_050.5, 1_050, 12);
    expect(echoes.heardAt('b', 10, 10)).toBe(73_050.5);
    expect(echoes.heardAt('c', 10, 10)).toBeUndefined();
  });

  it('after a silence as long as the lease, says nothing until the follower holds, and the leader committed, the log as it then ended', () => {
    const echoes = new LeaseEchoes(leaderNode().node, LEASE_MS);
    echoes.answered('b', 100, 1_000, 10);
    expect(echoes.heardAt('b', 10, 10)).toBe(100);
    // Silent for the lease: its work may have moved, at indexes up to 15.
    echoes.answered('b', 700, 1_000 + LEASE_MS, 15);
    expect(echoes.heardAt('b', 14, 15)).toBeUndefined();
    expect(echoes.heardAt('b', 15, 14)).toBeUndefined();
    // Later answers keep the fence until it is passed.
    echoes.answered('b', 750, 1_550, 16);
    expect(echoes.heardAt('b', 14, 16)).toBeUndefined();
    expect(echoes.heardAt('b', 15, 15)).toBe(750);
    // Passed once, gone: a follower a little behind is told at once.
    echoes.answered('b', 800, 1_600, 18);
    expect(echoes.heardAt('b', 16, 17)).toBe(800);
  });

  it('forgets a follower whose connection closed, and every follower as its leading ends', () => {
    const echoes = new LeaseEchoes(leaderNode().node, LEASE_MS);
    echoes.answered('b', 100, 1_000, 10);
    echoes.answered('c', 200, 1_000, 10);
    echoes.forget('b');
    expect(echoes.heardAt('b', 10, 10)).toBeUndefined();
    expect(echoes.heardAt('c', 10, 10)).toBe(200);
    echoes.reset();
    expect(echoes.heardAt('c', 10, 10)).toBeUndefined();
  });

  it("takes in, of the messages stepped, only members' stamped answers to this leader in its term, fenced where its log ends", () => {
    const { node, set } = leaderNode();
    const echoes = new LeaseEchoes(node, LEASE_MS);
    // Not an answer, not stamped, of another term, of a stranger: nothing.
    echoes.stepped(heartbeat('b'), 1_000);
    echoes.stepped({ ...answer('b', 90), clock: undefined } as WireMessage, 1_000);
    echoes.stepped(answer('b', 90, 1), 1_000);
    echoes.stepped(answer('x', 90), 1_000);
    set({ match: { b: 10, c: 10, x: 10 } });
    for (const to of ['b', 'x']) expect(echoes.heardAtFor(heartbeat(to))).toBeUndefined();
    // b's answer, with the log ending at 12: nothing until b holds 12 and it is committed.
    set({ lastIndex: 12 });
    echoes.stepped(answer('b', 100), 1_000);
    expect(echoes.heardAtFor(heartbeat('b'))).toBeUndefined();
    set({ match: { b: 12, c: 10 }, committed: 12 });
    expect(echoes.heardAtFor(heartbeat('b'))).toBe(100);
    // Only a heartbeat says it.
    expect(echoes.heardAtFor({ type: 'append', from: 'a', to: 'b', term: 2, prevIndex: 12, prevTerm: 2, entries: [], commit: 12 })).toBeUndefined();
    // Not leading: an answer is not taken in.
    set({ role: 'follower' });
    echoes.stepped(answer('b', 200), 1_100);
    expect(echoes.heardAtFor(heartbeat('b'))).toBe(100);
  });

  it('forgets the answers of members the configuration no longer holds', () => {
    const { node } = leaderNode();
    const echoes = new LeaseEchoes(node, LEASE_MS);
    echoes.stepped(answer('b', 100), 1_000);
    echoes.stepped(answer('c', 200), 1_000);
    echoes.configured(configurationOf(['a', 'c']));
    expect(echoes.heardAtFor(heartbeat('b'))).toBeUndefined();
    expect(echoes.heardAtFor(heartbeat('c'))).toBe(200);
  });
});
