import { describe, expect, it } from 'vitest';
import { MAX_INDEX, MAX_OUTSIDE_TERM_LEAD, MAX_TERM } from '../../src/raft/bounds.js';
import { EntryType, type Message } from '../../src/raft/types.js';
import { TestNetwork } from './network.js';

/** Messages that a correct member never sends: the node must neither crash nor give up safety. */
describe('faulty peers', () => {
  it('a leader ignores a second leader claiming its own term', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const term = net.node('a').term;
    net.node('a').step({ type: 'heartbeat', from: 'b', to: 'a', term, commit: 0, readCtx: 0 });
    net.node('a').step({ type: 'append', from: 'c', to: 'a', term, prevIndex: 0, prevTerm: 0, entries: [], commit: 0 });
    expect(net.node('a').role).toBe('leader');
    expect(net.node('a').protocolViolations).toBe(2);
  });

  it('a follower never lets an append rewrite its committed entries', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.propose('a', 'x');
    net.stabilize();
    net.tickAll(1);
    const b = net.node('b');
    expect(b.log.committed).toBe(2);
    const before = net.logTerms('b');
    // From a leader of a later term (an entry's term is never past its message's).
    const term = b.term + 7;
    const forged = { index: 2, term, type: EntryType.Normal, data: new Uint8Array([1]), pid: 'evil' };
    b.step({ type: 'append', from: 'a', to: 'b', term, prevIndex: 1, prevTerm: 1, entries: [forged], commit: 2 });
    expect(net.logTerms('b')).toEqual(before);
    expect(b.log.entry(2)?.pid).not.toBe('evil');
    // It answers with its commit index, which tells a confused leader where to resume.
    expect(net.pending().find((m) => m.type === 'append-resp')).toMatchObject({ reject: false, index: 2 });
  });

  it('ignores messages from members outside the configuration and to other members', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const term = net.node('b').term;
    net.node('b').step({ type: 'vote', from: 'mallory', to: 'b', term: term + 10, lastIndex: 100, lastTerm: 100, transfer: true });
    net.node('b').step({ type: 'vote', from: 'c', to: 'z', term: term + 10, lastIndex: 100, lastTerm: 100, transfer: true });
    expect(net.node('b').term).toBe(term);
    expect(net.pending()).toEqual([]);
  });
});

/**
 * A vote request from outside the voters: a voter of a configuration the member has not applied
 * must be answered, but the same request may come from a stranger holding the secret, who
 * claims whatever log it likes (the transport lets vote requests from unknown ids through).
 */
describe('vote requests from outside the voters', () => {
  const vote = (to: string, term: number, transfer = false): Message => ({ type: 'vote', from: 'stranger', to, term, lastIndex: MAX_INDEX, lastTerm: term, transfer });

  it('a leadership transfer asked by a stranger does not depose a leader heard within its lease', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const term = net.node('a').term;
    for (const id of ['a', 'b', 'c']) net.node(id).step(vote(id, term + 1, true));
    expect(net.pending()).toEqual([]);
    for (const id of ['a', 'b', 'c']) {
      expect(net.node(id).term, id).toBe(term);
      expect(net.node(id).fromNonMembers, id).toBe(1);
    }
    expect(net.node('a').role).toBe('leader');
  });

  it('a stranger moves no term past MAX_OUTSIDE_TERM_LEAD ahead while no leader is heard, so the cluster elects one after', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.propose('a', 'x');
    net.stabilize();
    // The members cannot reach one another (a partition, or the leader crashed): none hears a leader.
    for (const id of ['a', 'b', 'c']) net.isolate(id);
    net.tickAll(25);
    net.stabilize();
    const terms = ['a', 'b', 'c'].map((id) => net.node(id).term);
    // Before: every member took the last term it may hold, where none can campaign again.
    for (const id of ['a', 'b', 'c']) net.node(id).step(vote(id, MAX_TERM - 1));
    for (const id of ['a', 'b', 'c']) net.node(id).step(vote(id, net.node(id).term + MAX_OUTSIDE_TERM_LEAD + 1));
    expect(['a', 'b', 'c'].map((id) => net.node(id).term)).toEqual(terms);
    // As far ahead as an honest voter the member has not heard of may be, it is taken.
    net.node('b').step(vote('b', net.node('b').term + MAX_OUTSIDE_TERM_LEAD));
    expect(net.node('b').term).toBe((terms[1] as number) + MAX_OUTSIDE_TERM_LEAD);
    net.discardPending();
    net.recover();
    for (let i = 0; i < 50 && net.leaders().length === 0; i++) {
      net.tickAll(5);
      net.stabilize();
    }
    expect(net.leaders()).toHaveLength(1);
  });
});
