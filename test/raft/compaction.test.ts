import { describe, expect, it } from 'vitest';
import { SNAPSHOT_RETRY_HEARTBEATS } from '../../src/raft/node.js';
import { TestNetwork } from './network.js';

const three = ['a', 'b', 'c'];
const texts = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

/**
 * Lets the leader notice, by CheckQuorum's count of who answered within an election timeout,
 * that an isolated member is gone: a leader keeps entries a live follower still needs.
 */
function outlastElectionTimeout(net: TestNetwork): void {
  net.tickAll(25);
}

function proposeAll(net: TestNetwork, id: string, values: readonly string[]): void {
  for (const v of values) expect(net.propose(id, v).kind).toBe('appended');
  net.stabilize();
  net.tickAll(1);
}

/**
 * Three members: a leads and commits `n` entries while c is cut off and then counted gone, a
 * compacts its log behind a snapshot, and the network heals. c is then behind a's log.
 */
function compactedWhileCIsAway(n: number): TestNetwork {
  const net = new TestNetwork(three);
  net.elect('a');
  net.isolate('c');
  proposeAll(net, 'a', texts('x', n));
  outlastElectionTimeout(net);
  expect(net.compact('a')).toBe(true);
  net.recover();
  return net;
}

/**
 * Three members: a leads and commits three entries everywhere, then `missed` more that c, live
 * (its heartbeats answer) but losing every append, does not get.
 */
function cMissesAppends(missed: number): TestNetwork {
  const net = new TestNetwork(three);
  net.elect('a');
  proposeAll(net, 'a', texts('x', 3));
  net.filter = (m) => !(m.type === 'append' && m.to === 'c');
  proposeAll(net, 'a', texts('y', missed));
  return net;
}

describe('log compaction and snapshots', () => {
  it('catches up a follower behind the compacted log with the snapshot, then with entries', () => {
    const net = compactedWhileCIsAway(20);
    expect(net.node('a').log.firstIndex()).toBe(net.node('a').log.applied + 1);
    net.tickAll(3);
    proposeAll(net, 'a', ['after']);
    expect(net.count('snapshot')).toBe(1);
    for (const id of three) expect(net.appliedTexts(id)).toEqual([...texts('x', 20), 'after']);
    // c's log starts after the snapshot it installed, and it persisted the snapshot.
    expect(net.node('c').log.snapshot().index).toBe(net.node('a').latestSnapshot.index);
    expect(net.member('c').disk.snapshot.index).toBe(net.node('a').latestSnapshot.index);
    expect(net.node('c').log.stable).toBe(net.node('c').log.lastIndex());
  });

  it('keeps `retain` entries behind the snapshot, so a follower a little behind gets entries', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    proposeAll(net, 'a', texts('x', 5));
    net.isolate('c');
    proposeAll(net, 'a', texts('y', 5));
    expect(net.compact('a', 8)).toBe(true);
    net.recover();
    net.tickAll(3);
    expect(net.count('snapshot')).toBe(0);
    expect(net.appliedTexts('c')).toEqual([...texts('x', 5), ...texts('y', 5)]);
  });

  it('sends the snapshot again when it was lost, after a few unanswered heartbeats', () => {
    const net = compactedWhileCIsAway(10);
    let dropped = 0;
    net.filter = (m) => !(m.type === 'snapshot' && dropped++ === 0);
    net.tickAll(SNAPSHOT_RETRY_HEARTBEATS + 2);
    expect(dropped).toBe(2);
    expect(net.count('snapshot')).toBe(1);
    expect(net.appliedTexts('c')).toEqual(texts('x', 10));
  });

  it('backs off: a follower that never takes the snapshot gets it ever less often', () => {
    const net = compactedWhileCIsAway(10);
    let sent = 0;
    net.filter = (m) => !(m.type === 'snapshot' && ++sent > 0);
    net.tickAll(200);
    // Waits of 3, 6, 12, 24, 48, 48, 48 heartbeats: 7 sendings in 200, not one every 3.
    expect(sent).toBeGreaterThanOrEqual(5);
    expect(sent).toBeLessThanOrEqual(8);
  });

  it('a follower whose log holds the snapshot\'s last entry only commits: it keeps its log and state', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    proposeAll(net, 'a', texts('x', 6));
    const c = net.node('c');
    const lastBefore = c.log.lastIndex();
    // Hand c a snapshot of a's state at an index its log already holds.
    const snapshot = { index: lastBefore, term: c.log.term(lastBefore)!, data: new Uint8Array([1]) };
    c.step({ type: 'snapshot', from: 'a', to: 'c', term: net.node('a').term, snapshot });
    net.stabilize();
    expect(c.log.lastIndex()).toBe(lastBefore);
    expect(c.latestSnapshot.index).toBe(0);
    expect(net.appliedTexts('c')).toEqual(texts('x', 6));
  });

  it('replaces a diverged follower log (uncommitted entries of an old leader) with the snapshot', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    proposeAll(net, 'a', ['base']);
    // a appends entries that never commit, then loses leadership to b.
    net.isolate('a');
    for (const v of texts('lost', 4)) net.propose('a', v);
    net.stabilize();
    net.forceElection('b');
    proposeAll(net, 'b', texts('won', 6));
    outlastElectionTimeout(net);
    expect(net.compact('b')).toBe(true);
    net.recover();
    for (let i = 0; i < 30 && net.node('a').role === 'leader'; i++) net.tickAll(1);
    net.tickAll(5);
    expect(net.count('snapshot')).toBeGreaterThanOrEqual(1);
    for (const id of three) expect(net.appliedTexts(id)).toEqual(['base', ...texts('won', 6)]);
    expect(net.logTerms('a')).toEqual(net.logTerms('b').slice(-net.logTerms('a').length));
  });

  it('restarts from the snapshot and the entries after it', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    proposeAll(net, 'a', texts('x', 8));
    net.compact('b');
    proposeAll(net, 'a', ['tail']);
    net.restart('b');
    expect(net.node('b').log.firstIndex()).toBe(net.member('b').disk.snapshot.index + 1);
    net.tickAll(3);
    expect(net.appliedTexts('b')).toEqual([...texts('x', 8), 'tail']);
  });

  it('a leader keeps the entries a live follower a little behind still needs, whatever it retains', () => {
    const net = cMissesAppends(4);
    expect(net.compact('a', 0)).toBe(true);
    expect(net.node('a').log.firstIndex()).toBeLessThanOrEqual(net.node('c').log.lastIndex() + 1);
    net.recover();
    net.tickAll(3);
    expect(net.count('snapshot')).toBe(0);
    expect(net.appliedTexts('c')).toEqual([...texts('x', 3), ...texts('y', 4)]);
  });

  it('a leader keeps entries for a live follower only within the compaction interval it is given', () => {
    const net = cMissesAppends(10);
    const behind = net.node('c').log.lastIndex();
    // The snapshot lies 14 entries past the last (none); compacting every 4, c, 10 behind, is
    // beyond what the leader keeps for followers: it will get the snapshot.
    expect(net.compact('a', 0, 4)).toBe(true);
    expect(net.node('a').log.firstIndex()).toBeGreaterThan(behind + 1);
    net.recover();
    for (let i = 0; i < 10 && net.appliedTexts('c').length < 13; i++) {
      net.tickAll(SNAPSHOT_RETRY_HEARTBEATS);
      net.stabilize();
    }
    expect(net.appliedTexts('c')).toEqual([...texts('x', 3), ...texts('y', 10)]);
  });

  it('a member elected after compacting serves a lagging follower from its own snapshot', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.isolate('c');
    proposeAll(net, 'a', texts('x', 12));
    for (const id of ['a', 'b']) net.compact(id);
    net.forceElection('b');
    net.recover();
    net.tickAll(5);
    proposeAll(net, 'b', ['new']);
    expect(net.appliedTexts('c')).toEqual([...texts('x', 12), 'new']);
  });

  it('refuses a snapshot of an entry not yet applied, or not newer than the last', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    proposeAll(net, 'a', texts('x', 3));
    const node = net.node('a');
    const applied = node.log.applied;
    const data = new Uint8Array(0);
    expect(node.compact({ index: applied + 1, term: node.term, data }, 0)).toBe(false);
    expect(node.compact({ index: applied, term: node.term + 1, data }, 0)).toBe(false);
    expect(node.compact({ index: applied, term: node.log.term(applied)!, data }, 0)).toBe(true);
    expect(node.compact({ index: applied, term: node.log.term(applied)!, data }, 0)).toBe(false);
  });
});

describe('applying held while a snapshot is taken in steps', () => {
  it('hands out no committed entry past the hold, says that some wait, and hands them out once it is lifted', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    const a = net.node('a');
    const before = a.log.applied;
    a.holdApplyingAbove(before + 2);
    proposeAll(net, 'a', texts('x', 5));
    // Committed everywhere; a applies two of the five, and has no Ready for the rest.
    expect(a.log.committed).toBe(before + 5);
    expect(a.log.applied).toBe(before + 2);
    expect(a.applyingHeld).toBe(true);
    expect(a.hasReady()).toBe(false);
    expect(net.appliedTexts('b')).toEqual(texts('x', 5));
    a.holdApplyingAbove(null);
    expect(a.applyingHeld).toBe(false);
    net.stabilize();
    expect(a.log.applied).toBe(before + 5);
    expect(net.appliedTexts('a')).toEqual(texts('x', 5));
  });
});
