import { describe, expect, it } from 'vitest';
import { TestNetwork } from './network.js';

describe('a leader counts only its own durable entries', () => {
  it('after its log was truncated, a new leader does not count the replaced suffix as its own', () => {
    const net = new TestNetwork(['a', 'b', 'c', 'd', 'e']);
    net.elect('a');
    // a's entries 2..21 reach only b, which makes them durable; they never commit.
    for (const x of ['c', 'd', 'e']) net.cut('a', x);
    for (let i = 0; i < 20; i++) net.propose('a', `lost${i}`);
    net.stabilize();
    // c, d and e elect c, whose entries replace b's suffix from index 2.
    net.recover();
    net.isolate('a');
    for (let i = 0; i < 3 && net.node('c').role !== 'leader'; i++) net.forceElection('c');
    expect(net.node('c').role).toBe('leader');
    net.propose('c', 'kept');
    net.stabilize();
    const b = net.node('b');
    expect(b.log.lastIndex()).toBe(3);
    // b takes over (e.g. c hands over on stop): its own match must be what it has on disk.
    handOverFromCToB(net);
    expect(b.role).toBe('leader');
    expect(b.progressOf('b')!.match).toBeLessThanOrEqual(b.log.lastIndex());
  });

  it('counts uncommitted bytes of its own term only', () => {
    const net = new TestNetwork(['a', 'b', 'c'], { config: { maxUncommittedBytes: 100, maxEntriesPerAppend: 1 } });
    net.elect('a');
    // 90 bytes of term-1 entries (index 2) reach b only.
    net.cut('a', 'c');
    net.propose('a', 'x'.repeat(90));
    net.stabilize();
    net.recover();
    net.isolate('a');
    // b wins; its no-op is index 3. It takes 100 bytes of its own (index 4) before anything commits.
    net.filter = (m) => !(m.type === 'append' && m.from === 'b');
    for (let i = 0; i < 3 && net.node('b').role !== 'leader'; i++) net.forceElection('b');
    const b = net.node('b');
    expect(b.role).toBe('leader');
    expect(net.propose('b', 'y'.repeat(100)).kind).toBe('appended');
    // c gets indexes 2 and 3 only: the old 90 bytes and the no-op commit, b's 100 bytes do not.
    net.filter = (m) => !(m.type === 'append' && m.from === 'b' && m.entries.some((e) => e.index >= 4));
    net.tickAll(3);
    expect(b.log.committed).toBe(3);
    // Still 100 bytes of b's own are uncommitted: no room for more.
    expect(net.propose('b', 'z'.repeat(50))).toMatchObject({ kind: 'refused', reason: 'backpressure' });
  });
});

function handOverFromCToB(net: TestNetwork): void {
  net.recover();
  net.isolate('a');
  net.node('c').transferLeadership('b');
  net.stabilize();
  net.tickAll(2);
}

describe('linearizable reads', () => {
  it('an acknowledgement of a later round counts for every earlier read too', () => {
    const net = new TestNetwork(['a', 'b', 'c', 'd', 'e']);
    net.elect('a');
    net.discardPending();
    const a = net.node('a');
    a.readIndex(1);
    a.readIndex(2);
    net.discardPending();
    const term = a.term;
    // Acks in the order b:1, b:2, c:1, c:2. After c:1 the first read has a majority (a, b, c);
    // the second must have it too once c:2 arrives, without another heartbeat round.
    for (const [from, seq] of [['b', 1], ['b', 2], ['c', 1], ['c', 2]] as const) {
      a.step({ type: 'heartbeat-resp', from, to: 'a', term, readCtx: seq });
    }
    net.flush();
    expect(net.member('a').readStates.map((r) => r.ctx)).toEqual([1, 2]);
  });
});
