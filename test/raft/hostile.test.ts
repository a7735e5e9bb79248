import { describe, expect, it } from 'vitest';
import { EntryType } from '../../src/raft/types.js';
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
