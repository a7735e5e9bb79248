import { describe, expect, it } from 'vitest';
import { encodeConfChange } from '../../src/raft/conf-change.js';
import { InvariantError } from '../../src/raft/invariant.js';
import { EntryType, type Message, type NodeId } from '../../src/raft/types.js';
import { TestNetwork } from './network.js';

/** a leads a, b, c with one entry committed, and d has started empty, waiting to be added. */
function withJoiner(): TestNetwork {
  const net = new TestNetwork(['a', 'b', 'c']);
  net.elect('a');
  net.propose('a', 'x');
  net.stabilize();
  net.addMember('d');
  return net;
}

/** withJoiner, then d added as a learner and caught up. */
function withLearner(): TestNetwork {
  const net = withJoiner();
  expect(net.confChange('a', { type: 'add-learner', id: 'd' }).kind).toBe('appended');
  settle(net);
  return net;
}

/** Delivers everything, then two ticks' rounds: followers learn a commit from the next round. */
function settle(net: TestNetwork): void {
  net.stabilize();
  net.tickAll(2);
}

function sent(net: TestNetwork, from: NodeId, type: Message['type']): number {
  return net.delivered.filter((m) => m.from === from && m.type === type).length;
}

describe('adding a member', () => {
  it('a learner catches up, is never counted nor campaigns, then is promoted and votes', () => {
    const net = withLearner();
    for (const id of net.ids) expect(net.node(id).configuration).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'], peerIds: [] });
    expect(net.appliedTexts('d')).toEqual(['x']);
    expect(net.node('a').progressOf('d')?.match).toBe(net.node('a').log.lastIndex());

    // Never counted: with both voters cut off, the learner's acknowledgement commits nothing.
    net.cut('a', 'b');
    net.cut('a', 'c');
    const y = net.propose('a', 'y');
    net.stabilize();
    expect(y.kind).toBe('appended');
    expect(net.node('d').log.lastIndex()).toBe(net.node('a').log.lastIndex());
    expect(net.node('a').log.committed).toBeLessThan(net.node('a').log.lastIndex());
    net.recover();
    net.tickAll(2);
    expect(net.appliedTexts('d')).toEqual(['x', 'y']);

    // Never campaigns, told to or not; never a transfer's target.
    net.node('d').campaign();
    net.tick('d', 100);
    net.stabilize();
    expect(sent(net, 'd', 'prevote') + sent(net, 'd', 'vote')).toBe(0);
    expect(net.node('a').transferLeadership('d')).toBeNull();

    expect(net.confChange('a', { type: 'promote', id: 'd' }).kind).toBe('appended');
    settle(net);
    for (const id of net.ids) expect(net.node(id).configuration).toEqual({ voters: ['a', 'b', 'c', 'd'], learners: [], peerIds: [] });
    // A promoted member campaigns: handed leadership, it is elected by the other voters.
    expect(net.node('a').transferLeadership('d')).toBe('d');
    net.stabilize();
    expect(net.leaders()).toEqual(['d']);
  });

  it('two learners and the leader, a majority of the members, commit nothing', () => {
    const net = withLearner();
    net.addMember('e');
    expect(net.confChange('a', { type: 'add-learner', id: 'e' }).kind).toBe('appended');
    settle(net);
    expect(net.node('a').configuration).toEqual({ voters: ['a', 'b', 'c'], learners: ['d', 'e'], peerIds: [] });
    net.cut('a', 'b');
    net.cut('a', 'c');
    net.propose('a', 'y');
    net.stabilize();
    expect(net.node('e').log.lastIndex()).toBe(net.node('a').log.lastIndex());
    expect(net.node('a').log.committed).toBeLessThan(net.node('a').log.lastIndex());
  });

  it('with four voters, a commit needs three acknowledgements', () => {
    const net = withLearner();
    net.confChange('a', { type: 'promote', id: 'd' });
    net.stabilize();
    net.cut('a', 'b');
    net.cut('a', 'c');
    net.propose('a', 'y');
    net.stabilize();
    // a and d: two of four.
    expect(net.node('a').log.committed).toBeLessThan(net.node('a').log.lastIndex());
    net.recover();
    net.cut('a', 'c');
    net.tickAll(2);
    expect(net.node('a').log.committed).toBe(net.node('a').log.lastIndex());
  });

  it('CheckQuorum and ReadIndex count voters only', () => {
    const net = withLearner();
    net.cut('a', 'b');
    net.cut('a', 'c');
    expect(net.node('a').readIndex(7)).toBe(true);
    net.stabilize();
    expect(net.member('a').readStates).toEqual([]);
    // The learner answers every heartbeat; a still steps down within an election timeout.
    for (let t = 0; t < 20 && net.node('a').role === 'leader'; t++) net.tickAll(1);
    expect(net.node('a').role).toBe('follower');
    expect(net.member('a').readStates).toEqual([{ ctx: 7, index: 0 }]);
  });

  it("a learner's vote is asked of no one and its request is ignored", () => {
    const net = withLearner();
    const b = net.node('b');
    const term = b.term;
    const before = b.fromNonMembers;
    // Its log is b's (a learner holds what the voters hold); only one ahead of b's is heard (below).
    b.step({ type: 'vote', from: 'd', to: 'b', term: term + 5, lastIndex: b.log.lastIndex(), lastTerm: b.log.lastTerm(), transfer: true });
    expect(b.term).toBe(term);
    expect(b.fromNonMembers).toBe(before + 1);
    // b campaigns without a and c: it asks no learner, so it is not elected.
    net.isolate('a');
    net.drop('c', 'b');
    net.forceElection('b');
    expect(net.delivered.some((m) => m.type === 'vote' && m.to === 'd')).toBe(false);
    expect(b.role).toBe('candidate');
  });
});

describe('proposing a change', () => {
  it('is refused while another is pending, and when void; a follower forwards it, and the refusal comes back', () => {
    const net = withJoiner();
    net.addMember('e');
    expect(net.confChange('a', { type: 'add-learner', id: 'd' }).kind).toBe('appended');
    expect(net.confChange('a', { type: 'add-learner', id: 'e' })).toEqual({ kind: 'refused', reason: 'pending', leader: 'a' });
    net.stabilize();
    expect(net.confChange('b', { type: 'promote', id: 'e' })).toEqual({ kind: 'forwarded', leader: 'a' });
    net.stabilize();
    expect(net.members.get('b')?.forwarded.at(-1)).toMatchObject({ accepted: false, reason: 'not-learner' });
    expect(net.confChange('a', { type: 'add-learner', id: 'd' })).toMatchObject({ kind: 'refused', reason: 'already-member' });
    expect(net.confChange('a', { type: 'promote', id: 'e' })).toMatchObject({ kind: 'refused', reason: 'not-learner' });
    expect(net.confChange('a', { type: 'remove', id: 'e' })).toMatchObject({ kind: 'refused', reason: 'not-member' });
    expect(net.confChange('a', { type: 'remove', id: '' })).toMatchObject({ kind: 'refused', reason: 'malformed' });
    // A follower refuses one the log cannot carry rather than forward it: unencodable, it was
    // dropped on the way, and its caller waited until its timeout (CRONRAFT_TIMEOUT).
    for (const id of ['x'.repeat(301), '\ud800']) expect(net.confChange('b', { type: 'remove', id })).toEqual({ kind: 'refused', reason: 'malformed', leader: 'a' });
    const last = net.node('a').log.lastIndex();
    expect(net.confChange('a', { type: 'add-learner', id: 'e' }).kind).toBe('appended');
    expect(net.node('a').log.lastIndex()).toBe(last + 1);
  });

  it('forwards a change from a follower or a learner to the leader, which appends it as its own; never twice', () => {
    const net = withLearner();
    const appendedBefore = net.node('a').log.lastIndex();
    expect(net.confChange('d', { type: 'promote', id: 'd' })).toEqual({ kind: 'forwarded', leader: 'a' });
    settle(net);
    expect(net.members.get('d')?.forwarded.at(-1)).toEqual({ pid: expect.any(String), accepted: true });
    expect(net.node('a').log.lastIndex()).toBeGreaterThan(appendedBefore);
    for (const id of net.ids) expect(net.node(id).configuration).toEqual({ voters: ['a', 'b', 'c', 'd'], learners: [], peerIds: [] });
    // A member that is not the leader and is asked by another answers 'not-leader', naming the leader.
    net.node('b').step({ type: 'conf-propose', from: 'c', to: 'b', term: net.node('b').term, pid: 'c#9', change: { type: 'remove', id: 'd' } });
    const answer = net.node('b').ready().messages.find((m) => m.type === 'conf-propose-resp');
    expect(answer).toMatchObject({ to: 'c', pid: 'c#9', index: 0, reason: 'not-leader', leader: 'a' });
  });

  it('tells a member removed before it held the change that it was removed: the farewell carries the entries it lacks', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.propose('a', 'x');
    net.stabilize();
    // The change reaches b only; a and b commit it, and a applies it and says farewell to c.
    net.drop('a', 'c');
    expect(net.confChange('a', { type: 'remove', id: 'c' }).kind).toBe('appended');
    net.deliverOnce();
    net.recover();
    settle(net);
    expect(net.node('a').configuration).toEqual({ voters: ['a', 'b'], learners: [], peerIds: [] });
    expect(net.node('c').configuration).toEqual({ voters: ['a', 'b'], learners: [], peerIds: [] });
  });

  it('refuses to remove the last voter', () => {
    const net = new TestNetwork(['a']);
    net.elect('a');
    expect(net.confChange('a', { type: 'remove', id: 'a' })).toMatchObject({ kind: 'refused', reason: 'last-voter' });
  });

  it("is refused before the leader commits an entry of its term; an earlier leader's uncommitted change never takes effect", () => {
    // After the scenario of Ongaro's 2015 raft-dev report: a leader appends a change it cannot
    // commit, a new leader is elected without it and changes the configuration at once.
    const net = withJoiner();
    net.isolate('a');
    expect(net.confChange('a', { type: 'add-learner', id: 'd' }).kind).toBe('appended');
    net.stabilize();
    expect(net.node('a').configuration.learners).toEqual([]);
    // b is elected, but no append of its leaves it yet: its no-op is not committed.
    net.filter = (m): boolean => m.type !== 'append';
    net.forceElection('b');
    expect(net.leaders()).toContain('b');
    expect(net.confChange('b', { type: 'remove', id: 'a' })).toEqual({ kind: 'refused', reason: 'not-committed-in-term', leader: 'b' });
    net.filter = null;
    net.tickAll(2);
    expect(net.confChange('b', { type: 'remove', id: 'a' }).kind).toBe('appended');
    settle(net);
    for (const id of ['b', 'c']) expect(net.node(id).configuration).toEqual({ voters: ['b', 'c'], learners: [], peerIds: [] });
    // a comes back, never having learned of its removal: it campaigns in vain, its change never
    // took effect anywhere, and the others keep their term.
    const term = net.node('b').term;
    net.recover();
    net.tickAll(30);
    expect(net.node('a').configuration).toEqual({ voters: ['a', 'b', 'c'], learners: [], peerIds: [] });
    expect(sent(net, 'a', 'prevote')).toBeGreaterThan(0);
    expect(net.node('b').fromNonMembers).toBeGreaterThan(0);
    expect(net.leaders()).toEqual(['b']);
    expect(net.node('c').term).toBe(term);
  });
});

describe('removing a member', () => {
  it('a follower removed stops campaigning, and the rest commit without it', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    expect(net.confChange('a', { type: 'remove', id: 'c' }).kind).toBe('appended');
    net.stabilize();
    net.tickAll(2);
    for (const id of net.ids) expect(net.node(id).configuration).toEqual({ voters: ['a', 'b'], learners: [], peerIds: [] });
    expect(net.node('a').progressOf('c')).toBeUndefined();
    const prevotes = sent(net, 'c', 'prevote');
    net.tick('c', 100);
    net.stabilize();
    expect(sent(net, 'c', 'prevote')).toBe(prevotes);
    net.isolate('c');
    net.propose('a', 'y');
    settle(net);
    expect(net.appliedTexts('b')).toEqual(['y']);
  });

  it('the leader removed steps down once the change commits, hands over, and the rest go on', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const change = net.confChange('a', { type: 'remove', id: 'a' });
    expect(change.kind).toBe('appended');
    net.stabilize();
    expect(net.node('a').role).toBe('follower');
    const successor = net.leaders();
    expect(successor).toHaveLength(1);
    expect(net.node(successor[0]!).term).toBe(2);
    for (const id of ['b', 'c']) expect(net.node(id).configuration).toEqual({ voters: ['b', 'c'], learners: [], peerIds: [] });
    net.propose(successor[0]!, 'y');
    settle(net);
    expect(net.appliedTexts('b')).toEqual(['y']);
    expect(net.appliedTexts('c')).toEqual(['y']);
    // a never campaigns again, and the others do not hear it.
    net.tick('a', 100);
    net.stabilize();
    expect(net.node('a').role).toBe('follower');
    expect(net.leaders()).toEqual(successor);
  });

  it("a removed member's messages at a higher term move no one's term", () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.confChange('a', { type: 'remove', id: 'c' });
    net.stabilize();
    net.tickAll(2);
    const term = net.node('a').term;
    const before = ['a', 'b'].map((id) => net.node(id).fromNonMembers);
    // As c would send them had it missed its removal (its log is never ahead of the voters' that
    // committed it), and a stranger never added.
    for (const from of ['c', 'z']) {
      for (const to of ['a', 'b']) {
        const node = net.node(to);
        const last = { lastIndex: node.log.lastIndex(), lastTerm: node.log.lastTerm() };
        node.step({ type: 'prevote', from, to, term: term + 1, ...last });
        node.step({ type: 'vote', from, to, term: term + 3, ...last, transfer: true });
        node.step({ type: 'heartbeat', from, to, term: term + 5, commit: 0, readCtx: 0 });
        node.step({ type: 'timeout-now', from, to, term });
        node.step({ type: 'propose', from, to, term, proposals: [{ pid: 'z#1', data: new Uint8Array(1) }] });
      }
    }
    expect(['a', 'b'].map((id) => net.node(id).fromNonMembers - before[['a', 'b'].indexOf(id)]!)).toEqual([10, 10]);
    net.stabilize();
    for (const id of ['a', 'b']) expect(net.node(id).term).toBe(term);
    expect(net.leaders()).toEqual(['a']);
  });
});

describe('a voter that missed configuration changes', () => {
  it('elects the voter it does not know but whose log is ahead, so the last two voters find a leader (simulator seed 106)', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.addMember('d');
    net.confChange('a', { type: 'add-learner', id: 'd' });
    settle(net);
    net.confChange('a', { type: 'promote', id: 'd' });
    settle(net);
    // d goes down holding voters a, b, c, d; the others move on without it to voters d and e.
    net.addMember('e');
    net.isolate('d');
    const changes = [{ type: 'remove', id: 'c' }, { type: 'add-learner', id: 'e' }, { type: 'promote', id: 'e' }, { type: 'remove', id: 'b' }] as const;
    for (const change of changes) {
      expect(net.confChange('a', change).kind, change.type).toBe('appended');
      settle(net);
    }
    expect(net.node('e').configuration.voters).toEqual(['a', 'd', 'e']);
    // a leaves too, which takes a and e (a majority of a, d, e): d is now needed for every quorum.
    expect(net.confChange('a', { type: 'remove', id: 'a' }).kind).toBe('appended');
    settle(net);
    expect(net.node('e').configuration.voters).toEqual(['d', 'e']);
    expect(net.node('d').configuration.voters).toEqual(['a', 'b', 'c', 'd']);
    net.isolate('a');
    net.recover();
    net.isolate('a');
    net.isolate('b');
    net.isolate('c');
    // e is a voter of no configuration d holds, and d's log is behind: d votes for it all the same.
    const granted = (): number => net.delivered.filter((m) => m.from === 'd' && m.to === 'e' && (m.type === 'vote-resp' || m.type === 'prevote-resp') && !m.reject).length;
    for (let t = 0; t < 100 && net.leaders().length === 0; t++) {
      net.tickAll(1);
      net.stabilize();
    }
    expect(net.leaders()).toEqual(['e']);
    expect(granted()).toBeGreaterThan(0);
    net.propose('e', 'after');
    settle(net);
    expect(net.appliedTexts('d')).toContain('after');
    expect(net.node('d').configuration.voters).toEqual(['d', 'e']);
  });

  it('ignores a non-voter whose log is not ahead of its own', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.propose('a', 'x');
    settle(net);
    const b = net.node('b');
    // Out of its lease (it hears no leader, and its pre-votes reach nobody): a request from
    // outside the voters is looked at (within the lease it is not, see hostile.test.ts).
    net.isolate('b');
    net.tickAll(25);
    net.stabilize();
    const before = b.fromNonMembers;
    const term = b.term;
    b.step({ type: 'vote', from: 'z', to: 'b', term: term + 1, lastIndex: b.log.lastIndex(), lastTerm: b.log.lastTerm(), transfer: false });
    b.step({ type: 'vote', from: 'z', to: 'b', term: term + 1, lastIndex: b.log.lastIndex() + 1, lastTerm: b.log.lastTerm() - 1, transfer: false });
    expect(b.fromNonMembers).toBe(before + 2);
    expect(b.term).toBe(term);
    // One entry more, of the same term: heard, and granted.
    b.step({ type: 'vote', from: 'z', to: 'b', term: term + 1, lastIndex: b.log.lastIndex() + 1, lastTerm: b.log.lastTerm(), transfer: false });
    expect(b.fromNonMembers).toBe(before + 2);
    expect(b.term).toBe(term + 1);
  });
});

describe('binding a peer id', () => {
  it('changes no quorum, is applied on every member, and is refused twice', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.propose('a', 'x');
    settle(net);
    expect(net.confChange('a', { type: 'bind', id: 'c', peerId: 'PC' }).kind).toBe('appended');
    settle(net);
    for (const id of net.ids) expect(net.node(id).configuration).toEqual({ voters: ['a', 'b', 'c'], learners: [], peerIds: [['c', 'PC']] });
    expect(net.confChange('a', { type: 'bind', id: 'c', peerId: 'PX' })).toEqual({ kind: 'refused', reason: 'already-bound', leader: 'a' });
    expect(net.confChange('a', { type: 'bind', id: 'b', peerId: 'PC' })).toEqual({ kind: 'refused', reason: 'peer-id-taken', leader: 'a' });
    // Still three voters: two of them commit, and the binding is dropped with its member.
    expect(net.confChange('a', { type: 'remove', id: 'c' }).kind).toBe('appended');
    settle(net);
    expect(net.node('b').configuration).toEqual({ voters: ['a', 'b'], learners: [], peerIds: [] });
  });
});

describe('a member behind the configuration', () => {
  it('follows a leader its configuration does not list yet, once its lease lapses', () => {
    const net = withLearner();
    net.isolate('c');
    net.confChange('a', { type: 'promote', id: 'd' });
    settle(net);
    expect(net.node('a').transferLeadership('d')).toBe('d');
    net.stabilize();
    expect(net.leaders()).toEqual(['d']);
    net.recover();
    net.tickAll(40);
    expect(net.node('c').leader).toBe('d');
    expect(net.node('c').configuration).toEqual({ voters: ['a', 'b', 'c', 'd'], learners: [], peerIds: [] });
  });
});

describe('restarting', () => {
  it('restores the configuration from the snapshot, then from the committed changes after it', () => {
    const net = withLearner();
    net.tickAll(2);
    expect(net.compact('b')).toBe(true);
    expect(net.member('b').disk.snapshot.conf).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'], peerIds: [] });
    net.confChange('a', { type: 'remove', id: 'c' });
    net.stabilize();
    net.tickAll(2);
    net.restart('b');
    expect(net.node('b').configuration).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'], peerIds: [] });
    net.tickAll(2);
    expect(net.node('b').configuration).toEqual({ voters: ['a', 'b'], learners: ['d'], peerIds: [] });
  });

  it('a member added after compaction takes the configuration from the snapshot it is sent, peer ids bound included', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    net.propose('a', 'x');
    net.stabilize();
    net.tickAll(2);
    expect(net.confChange('a', { type: 'bind', id: 'b', peerId: 'PB' }).kind).toBe('appended');
    settle(net);
    expect(net.compact('a')).toBe(true);
    net.addMember('d');
    net.confChange('a', { type: 'add-learner', id: 'd', peerId: 'PD' });
    net.stabilize();
    net.tickAll(3);
    expect(net.count('snapshot')).toBe(1);
    expect(net.node('d').configuration).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'], peerIds: [['b', 'PB'], ['d', 'PD']] });
    expect(net.appliedTexts('d')).toEqual(['x']);
  });
});

describe('a conf change that does not decode', () => {
  it('is an InvariantError once committed: only leaders write them', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const b = net.node('b');
    const last = b.log.lastIndex();
    const bogus = { index: last + 1, term: b.term, type: EntryType.ConfChange, data: Uint8Array.of(9, 9, 9), pid: '' };
    b.step({ type: 'append', from: 'a', to: 'b', term: b.term, prevIndex: last, prevTerm: b.term, entries: [bogus], commit: last + 1 });
    expect(() => b.ready()).toThrow(InvariantError);
    expect(encodeConfChange({ type: 'remove', id: 'c' })).not.toEqual(bogus.data);
  });
});
