import { describe, expect, it } from 'vitest';
import { MAX_INDEX, MAX_READ_CTX, MAX_TERM } from '../../src/raft/bounds.js';
import { RaftNode } from '../../src/raft/node.js';
import { EntryType, type Entry, type HardState, type Message } from '../../src/raft/types.js';
import { SeededRandom } from '../../src/time/random.js';
import { TestNetwork } from './network.js';

const noop = (index: number, term: number): Entry => ({ index, term, type: EntryType.Noop, data: new Uint8Array(0), pid: '' });

/** Member `a`, alone in its cluster unless `voters` says otherwise, started from `hardState` and a log that ends at `lastIndex` (a snapshot there). */
function startAt(hardState: HardState, lastIndex = 0, voters = ['a']): RaftNode {
  const snapshot = { index: lastIndex, term: lastIndex === 0 ? 0 : 1, data: new Uint8Array(0) };
  return new RaftNode({ id: 'a', voters, electionTicks: 10, heartbeatTicks: 1 }, { hardState, snapshot, entries: [] }, new SeededRandom(1));
}

/** A three-member cluster with `a` leading and two entries committed everywhere. */
function committing(): TestNetwork {
  const net = new TestNetwork(['a', 'b', 'c']);
  net.elect('a');
  net.propose('a', 'x');
  net.stabilize();
  net.tickAll(1);
  return net;
}

/** Nothing is waiting to be sent (no message was answered), and a proposal commits everywhere after `x`. */
function expectStillCommitting(net: TestNetwork): void {
  expect(net.pending()).toEqual([]);
  net.propose('a', 'y');
  net.stabilize();
  net.tickAll(1);
  for (const id of ['a', 'b', 'c']) expect(net.appliedTexts(id), id).toEqual(['x', 'y']);
}

describe('bounds on the protocol’s numbers', () => {
  it('a member ignores and counts a message at a term it could not hold, keeps its term, and the cluster keeps committing', () => {
    const net = committing();
    const term = net.node('a').term;
    // What a forged peer could send: a term whose successor is out of bounds (MAX_TERM, the
    // largest the codec carries), and 2^53 - 1, which once made every member adopt it for good.
    for (const hostile of [MAX_TERM, Number.MAX_SAFE_INTEGER]) {
      const messages: Message[] = [
        { type: 'heartbeat', from: 'a', to: 'b', term: hostile, commit: 0, readCtx: 0 },
        { type: 'append', from: 'a', to: 'c', term: hostile, prevIndex: 2, prevTerm: term, entries: [], commit: 2 },
        { type: 'vote', from: 'c', to: 'b', term: hostile, lastIndex: 2, lastTerm: term, transfer: true },
        { type: 'prevote', from: 'c', to: 'a', term: hostile, lastIndex: 2, lastTerm: term },
        { type: 'append-resp', from: 'b', to: 'a', term: hostile, index: 0, reject: true, hintIndex: 0, hintTerm: 0 },
        { type: 'timeout-now', from: 'a', to: 'b', term: hostile },
      ];
      for (const m of messages) net.node(m.to).step(m);
    }
    for (const id of ['a', 'b', 'c']) expect(net.node(id).term, id).toBe(term);
    expect(net.node('a').role).toBe('leader');
    expect(net.node('b').leader).toBe('a');
    expect(net.node('a').protocolViolations + net.node('b').protocolViolations + net.node('c').protocolViolations).toBe(12);
    // Nothing was answered, and the cluster goes on committing at its term.
    expectStillCommitting(net);
  });

  it('a member ignores and counts a message at its own term whose other numbers are out of bounds or past its term', () => {
    const net = committing();
    const term = net.node('a').term;
    const late = (index: number): Entry => ({ ...noop(index, term + 5), type: EntryType.Normal, pid: 'evil' });
    const toFollower: Message[] = [
      { type: 'heartbeat', from: 'a', to: 'b', term, commit: MAX_INDEX + 1, readCtx: 0 },
      { type: 'heartbeat', from: 'a', to: 'b', term, commit: 2, readCtx: MAX_READ_CTX + 1 },
      // An entry of a later term than its leader's would outrank every log in elections.
      { type: 'append', from: 'a', to: 'b', term, prevIndex: 2, prevTerm: term, entries: [late(3)], commit: 2 },
      // Terms that fall along the entries, or below the entry before them.
      { type: 'append', from: 'a', to: 'b', term, prevIndex: 2, prevTerm: term, entries: [noop(3, term), noop(4, term - 1)], commit: 2 },
      { type: 'append', from: 'a', to: 'b', term, prevIndex: 2, prevTerm: term, entries: [noop(3, term - 1)], commit: 2 },
      { type: 'append', from: 'a', to: 'b', term, prevIndex: 2, prevTerm: term + 1, entries: [], commit: 2 },
      { type: 'append', from: 'a', to: 'b', term, prevIndex: MAX_INDEX, prevTerm: term, entries: [noop(MAX_INDEX + 1, term)], commit: 2 },
      // Entries that do not follow prevIndex one after another.
      { type: 'append', from: 'a', to: 'b', term, prevIndex: 2, prevTerm: term, entries: [noop(4, term)], commit: 2 },
      { type: 'snapshot', from: 'a', to: 'b', term, snapshot: { index: MAX_INDEX + 1, term, data: new Uint8Array(0) } },
      { type: 'snapshot', from: 'a', to: 'b', term, snapshot: { index: 5, term: term + 1, data: new Uint8Array(0) } },
      { type: 'vote', from: 'c', to: 'b', term, lastIndex: 2, lastTerm: term + 1, transfer: true },
      { type: 'prevote', from: 'c', to: 'b', term: term + 1, lastIndex: MAX_INDEX + 1, lastTerm: term },
      { type: 'read-index-resp', from: 'a', to: 'b', term, ctx: 1, index: MAX_INDEX + 1, reject: false },
      { type: 'propose-resp', from: 'a', to: 'b', term, index: MAX_INDEX + 1, pids: ['b#1'], reject: false, leader: 'a' },
    ];
    const toLeader: Message[] = [
      { type: 'append-resp', from: 'b', to: 'a', term, index: 2, reject: true, hintIndex: 2, hintTerm: term + 1 },
      { type: 'append-resp', from: 'b', to: 'a', term, index: MAX_INDEX + 1, reject: false, hintIndex: 0, hintTerm: 0 },
      { type: 'heartbeat-resp', from: 'b', to: 'a', term, readCtx: MAX_READ_CTX + 1 },
      { type: 'read-index', from: 'b', to: 'a', term, ctx: MAX_READ_CTX + 1 },
      { type: 'read-index', from: 'b', to: 'a', term, ctx: 1.5 },
    ];
    const before = net.logTerms('b');
    for (const m of [...toFollower, ...toLeader]) net.node(m.to).step(m);
    expect(net.node('b').protocolViolations).toBe(toFollower.length);
    expect(net.node('a').protocolViolations).toBe(toLeader.length);
    expect(net.logTerms('b')).toEqual(before);
    expect(net.node('b').log.committed).toBe(2);
    expect(net.member('b').forwarded).toEqual([]);
    expect(net.member('b').readStates).toEqual([]);
    expect(net.node('a').progressOf('b')).toMatchObject({ match: 2 });
    expectStillCommitting(net);
  });

  it('a member at the last term it may hold does not campaign, rather than ask for votes no peer could take', () => {
    const last = startAt({ term: MAX_TERM - 1, vote: null, commit: 0 }, 0, ['a', 'b']);
    last.campaign();
    for (let i = 0; i < 40; i++) last.tick();
    last.step({ type: 'timeout-now', from: 'b', to: 'a', term: MAX_TERM - 1 });
    expect(last.term).toBe(MAX_TERM - 1);
    expect(last.role).toBe('follower');
    const rd = last.ready();
    expect([...rd.messages, ...rd.messagesAfterWrite]).toEqual([]);

    // One term below, it campaigns, and leads at the last term.
    const nextToLast = startAt({ term: MAX_TERM - 2, vote: null, commit: 0 });
    nextToLast.campaign();
    expect(nextToLast.role).toBe('leader');
    expect(nextToLast.term).toBe(MAX_TERM - 1);
  });

  it('refuses to start from a term no member may hold', () => {
    expect(() => startAt({ term: MAX_TERM, vote: null, commit: 0 })).toThrow(/term/);
    expect(() => startAt({ term: Number.MAX_SAFE_INTEGER, vote: null, commit: 0 })).toThrow(/term/);
  });

  it('a leader appends no entry past MAX_INDEX, and a member whose log is full does not campaign', () => {
    // A log one short of the bound: the new leader's no-op takes the last index.
    const leader = startAt({ term: 1, vote: null, commit: MAX_INDEX - 1 }, MAX_INDEX - 1);
    leader.campaign();
    expect(leader.role).toBe('leader');
    expect(leader.log.lastIndex()).toBe(MAX_INDEX);
    expect(leader.propose([{ pid: 'a#1', data: new Uint8Array(1) }])).toEqual({ kind: 'refused', reason: 'backpressure', leader: 'a' });
    expect(leader.log.lastIndex()).toBe(MAX_INDEX);

    // A full log leaves no room for a new leader's no-op.
    const full = startAt({ term: 1, vote: null, commit: MAX_INDEX }, MAX_INDEX);
    full.campaign();
    expect(full.role).toBe('follower');
    expect(full.term).toBe(1);
  });
});
