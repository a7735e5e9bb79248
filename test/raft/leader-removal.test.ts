import { describe, expect, it } from 'vitest';
import { isMember } from '../../src/raft/configuration.js';
import type { Ready } from '../../src/raft/ready.js';
import type { Message, NodeId } from '../../src/raft/types.js';
import { TestNetwork } from './network.js';

const encoder = new TextEncoder();

/** Steps each message into its addressee, as a transport that loses nothing would. */
function deliver(net: TestNetwork, messages: readonly Message[], to: readonly NodeId[]): void {
  for (const m of messages) if (to.includes(m.to)) net.node(m.to).step(m);
}

/**
 * The driver's transport reaches only the members of its own member's configuration, and the
 * leader it follows (configuration-keeper.ts): a member behind the configuration cannot answer
 * a voter it does not know yet, even when it took its vote request.
 */
function reachableOnly(net: TestNetwork): (m: Message) => boolean {
  return (m) => {
    const sender = net.node(m.from);
    return isMember(sender.configuration, m.to) || sender.leader === m.to;
  };
}

/**
 * The history of CI sweep seed 8 (3 members, fan-out off) reduced to its Raft: voters a, b, c,
 * with c cut off while d is added and promoted, so that c holds the founding configuration and
 * does not know d; then a, the leader, proposes its own removal, and, before the
 * acknowledgements of b and d commit it, one more entry that reaches d alone. The Ready in which
 * a applies its removal is handed out while a's write of that entry is still in flight; the
 * driver stops a removed member once its Ready is handed out, so only what the Ready lets leave
 * before the write (`messages`) ever leaves. Returns that Ready.
 */
function leaderRemovedWithWriteInFlight(net: TestNetwork): Ready {
  net.elect('a');
  net.propose('a', 'x');
  net.stabilize();
  net.isolate('c');
  net.addMember('d');
  expect(net.confChange('a', { type: 'add-learner', id: 'd' }).kind).toBe('appended');
  net.stabilize();
  net.tickAll(2);
  expect(net.confChange('a', { type: 'promote', id: 'd' }).kind).toBe('appended');
  net.stabilize();
  net.tickAll(2);
  for (const id of ['a', 'b', 'd']) expect(net.node(id).configuration.voters).toEqual(['a', 'b', 'c', 'd']);
  expect(net.node('c').configuration.voters).toEqual(['a', 'b', 'c']);

  const a = net.node('a');
  expect(net.confChange('a', { type: 'remove', id: 'a' }).kind).toBe('appended');
  const removal = a.ready();
  deliver(net, removal.messages, ['b', 'd']);
  a.advance(removal);
  const acks = ['b', 'd'].flatMap((id) => {
    const rd = net.node(id).ready();
    net.node(id).advance(rd);
    return [...rd.messages, ...rd.messagesAfterWrite].filter((m) => m.to === 'a');
  });
  // One more entry: its append reaches d, not b, and a's own write of it stays in flight.
  a.propose([{ pid: 'a#late', data: encoder.encode('late') }]);
  const late = a.ready();
  expect(late.mustSync).toBe(true);
  deliver(net, late.messages, ['d']);
  net.node('d').advance(net.node('d').ready());
  deliver(net, acks, ['a']);
  const farewell = a.ready();
  expect(farewell.committed.at(-1)?.index).toBe(removal.entries[0]?.index);
  expect(a.configuration.voters).toEqual(['b', 'c', 'd']);
  expect(a.role).toBe('follower');
  expect(a.writesInFlight).toBe(1);
  return farewell;
}

/**
 * A leader that applies its own removal tells the voters that the removal committed (a
 * heartbeat with the commit) before it steps down (node.ts #switchConfiguration). Those are a
 * leader's messages of a durable term, which leave before the write; held for the write, they
 * never left, and the voters kept the configuration that counts the leader gone, needing every
 * one of the others: with one of them unable to answer the one that could win, no leader was
 * ever elected again (the raft-liveness violation of sweep seed 8 with the commit notice).
 */
describe('a leader removed', () => {
  it('sends its farewell before its write: the voters learn that its removal committed', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    const farewell = leaderRemovedWithWriteInFlight(net);
    const commits = farewell.messages.filter((m) => m.type === 'heartbeat' && (m.to === 'b' || m.to === 'd')).map((m) => (m.type === 'heartbeat' ? m.commit : -1));
    expect(commits).toEqual([farewell.committed.at(-1)?.index, farewell.committed.at(-1)?.index]);
    expect(farewell.messagesAfterWrite.filter((m) => m.type === 'heartbeat')).toEqual([]);
  });

  it('sends its TimeoutNow before its write too', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const a = net.node('a');
    expect(net.confChange('a', { type: 'remove', id: 'a' }).kind).toBe('appended');
    a.propose([{ pid: 'a#late', data: encoder.encode('late') }]);
    // Both entries reach b and c, whose acknowledgements commit them while a's write is in flight.
    const append = a.ready();
    expect(append.mustSync).toBe(true);
    deliver(net, append.messages, ['b', 'c']);
    for (const id of ['b', 'c']) {
      const rd = net.node(id).ready();
      net.node(id).advance(rd);
      deliver(net, [...rd.messages, ...rd.messagesAfterWrite], ['a']);
    }
    const farewell = a.ready();
    expect(a.configuration.voters).toEqual(['b', 'c']);
    expect(a.writesInFlight).toBe(1);
    expect(farewell.messages.filter((m) => m.type === 'timeout-now')).toHaveLength(1);
    expect(farewell.messagesAfterWrite).toEqual([]);
  });

  it('is followed by a new leader though its messages held for the write are lost with it', () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    const farewell = leaderRemovedWithWriteInFlight(net);
    // The driver stops a: what waited for its write never leaves, and a says nothing more.
    deliver(net, farewell.messages, ['b', 'c', 'd']);
    net.recover();
    net.isolate('a');
    net.filter = reachableOnly(net);
    for (let round = 0; round < 50 && net.leaders().filter((id) => id !== 'a').length === 0; round++) net.tickAll(10);
    const leaders = net.leaders().filter((id) => id !== 'a');
    expect(leaders).toHaveLength(1);
    for (const id of ['b', 'd']) expect(net.node(id).configuration.voters).toEqual(['b', 'c', 'd']);
  });
});
