import { describe, expect, it } from 'vitest';
import { EntryType, type Entry } from '../../src/raft/types.js';
import { TestNetwork } from './network.js';

const three = ['a', 'b', 'c'];

describe('log replication', () => {
  it('commits and applies proposals in order on every member', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    for (let i = 0; i < 10; i++) expect(net.propose('a', `v${i}`).kind).toBe('appended');
    net.stabilize();
    net.tickAll(1);
    for (const id of three) expect(net.appliedTexts(id)).toEqual(Array.from({ length: 10 }, (_, i) => `v${i}`));
  });

  it('does not commit without a majority, and commits once one returns', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.isolate('a');
    net.propose('a', 'x');
    net.stabilize();
    expect(net.node('a').log.committed).toBe(1);
    net.recover();
    net.tickAll(2);
    expect(net.appliedTexts('a')).toEqual(['x']);
  });

  it('a follower forwards proposals to the leader and learns where they went', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    expect(net.propose('b', 'from-b')).toEqual({ kind: 'forwarded', leader: 'a' });
    net.stabilize();
    net.tickAll(1);
    expect(net.appliedTexts('b')).toEqual(['from-b']);
    expect(net.member('b').forwarded).toEqual([{ pid: expect.stringMatching(/^b#/) as unknown as string, accepted: true }]);
  });

  it('refuses a proposal at once when no leader is known', () => {
    const net = new TestNetwork(three);
    expect(net.propose('b', 'x')).toEqual({ kind: 'refused', reason: 'no-leader', leader: null });
  });

  it('repairs a follower log that diverged, overwriting uncommitted entries of an old leader', () => {
    const net = new TestNetwork(['a', 'b', 'c', 'd', 'e']);
    net.elect('a');
    net.propose('a', 'committed');
    net.stabilize();
    // a, isolated with b, appends 20 entries that can never commit.
    net.cut('a', 'c');
    net.cut('a', 'd');
    net.cut('a', 'e');
    net.cut('b', 'c');
    net.cut('b', 'd');
    net.cut('b', 'e');
    for (let i = 0; i < 20; i++) net.propose('a', `lost${i}`);
    net.stabilize();
    // c, d, e elect c, which commits 20 entries of its own.
    for (let i = 0; i < 40 && net.node('c').role !== 'leader'; i++) {
      net.tick('c');
      net.tick('d');
      net.tick('e');
      net.stabilize();
    }
    net.elect('c');
    expect(net.node('c').role).toBe('leader');
    for (let i = 0; i < 20; i++) net.propose('c', `kept${i}`);
    net.stabilize();
    net.recover();
    net.tickAll(30);
    const expected = ['committed', ...Array.from({ length: 20 }, (_, i) => `kept${i}`)];
    for (const id of net.ids) expect(net.appliedTexts(id)).toEqual(expected);
    for (const id of net.ids) expect(net.logTerms(id)).toEqual(net.logTerms('c'));
  });

  it('fast back-off skips a divergent suffix a term at a time', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.isolate('a');
    for (let i = 0; i < 50; i++) net.propose('a', `lost${i}`);
    net.stabilize();
    // b and c elect b; a's 50 entries must be repaired in few rounds, not 50.
    for (let i = 0; i < 40 && net.leaders().every((id) => id === 'a'); i++) {
      net.tick('b');
      net.tick('c');
      net.stabilize();
    }
    const leader = net.leaders().find((id) => id !== 'a')!;
    net.propose(leader, 'new');
    net.stabilize();
    net.recover();
    const before = net.delivered.length;
    net.tickAll(5);
    const rejections = net.delivered.slice(before).filter((m) => m.type === 'append-resp' && m.reject && m.from === 'a' && m.index > 0);
    expect(rejections.length).toBeLessThanOrEqual(3);
    expect(net.appliedTexts('a')).toEqual(['new']);
  });

  it('sends the batches a leader appends in one turn in one append per follower, answered once', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.stabilize();
    net.delivered = [];
    // A member's proposals, then what a hook proposes of them, then a forwarded batch: three
    // batches appended before the Ready is taken.
    for (const text of ['emit', 'lease', 'done']) expect(net.propose('a', text).kind).toBe('appended');
    const sent = net.pending().filter((m) => m.type === 'append');
    expect(sent.map((m) => (m.type === 'append' ? [m.to, m.prevIndex, m.entries.map((e) => e.index)] : null))).toEqual([
      ['b', 1, [2, 3, 4]],
      ['c', 1, [2, 3, 4]],
    ]);
    net.stabilize();
    expect(net.delivered.filter((m) => m.type === 'append-resp' && m.from === 'b').map((m) => (m.type === 'append-resp' ? m.index : 0))).toEqual([4]);
    net.tickAll(1);
    for (const id of three) expect(net.appliedTexts(id)).toEqual(['emit', 'lease', 'done']);
  });

  it('sends entries appended in one turn past one append in as many appends as the window allows, not one per answer', () => {
    // Four entries, two to an append by their bytes: both appends leave at once, as they did
    // when each batch had an append of its own.
    const net = new TestNetwork(three, { config: { maxBytesPerAppend: 2 * 'entry-0'.length } });
    net.elect('a');
    net.stabilize();
    for (let i = 0; i < 4; i++) net.propose('a', `entry-${i}`);
    const toB = net.pending().flatMap((m) => (m.type === 'append' && m.to === 'b' ? [m.entries.map((e) => e.index)] : []));
    expect(toB).toEqual([
      [2, 3],
      [4, 5],
    ]);
    // With a window of one append, the second waits for the first's answer.
    const narrow = new TestNetwork(three, { config: { maxBytesPerAppend: 2 * 'entry-0'.length, maxInflightMsgs: 1 } });
    narrow.elect('a');
    narrow.stabilize();
    for (let i = 0; i < 4; i++) narrow.propose('a', `entry-${i}`);
    expect(narrow.pending().filter((m) => m.type === 'append' && m.to === 'b').map((m) => (m.type === 'append' ? m.entries.map((e) => e.index) : []))).toEqual([[2, 3]]);
    narrow.stabilize();
    narrow.tickAll(1);
    expect(narrow.appliedTexts('b')).toEqual(['entry-0', 'entry-1', 'entry-2', 'entry-3']);
  });

  it('bounds the appends in flight to a follower that does not answer', () => {
    const net = new TestNetwork(three, { config: { maxInflightMsgs: 4 } });
    net.elect('a');
    net.drop('b', 'a');
    net.drop('c', 'a');
    net.discardPending();
    let sent = 0;
    for (let i = 0; i < 100; i++) {
      net.propose('a', `v${i}`);
      sent += net.deliverOnce().filter((m) => m.type === 'append' && m.to === 'b' && m.entries.length > 0).length;
    }
    // The first append after the election probes; after that the window allows 4 in flight.
    expect(sent).toBeLessThanOrEqual(5);
  });

  it('tells a follower the commit when asked only where an append may go: once told, nothing is left to tell, whatever the windows', () => {
    // A driver asks again while hasCommitToTell holds: it must not hold after propagateCommit,
    // or the driver would ask at once, for ever (a follower whose window is full, or being
    // probed, gets the commit with its next append instead).
    const net = new TestNetwork(three, { config: { maxInflightMsgs: 1 } });
    net.elect('a');
    const leader = net.node('a');
    let told = 0;
    let seed = 7;
    const draw = (n: number): number => {
      seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0;
      return seed % n;
    };
    for (let step = 0; step < 400; step++) {
      const r = draw(10);
      if (r < 4) net.propose('a', `v${step}`);
      else if (r < 8) {
        // Some messages get lost on the way, so windows fill and followers get probed.
        const lost = draw(3) === 0 ? net.pending().filter(() => draw(2) === 0) : [];
        net.filter = lost.length === 0 ? null : (m) => !lost.includes(m);
        net.deliverOnce();
        net.filter = null;
      } else net.tick('a');
      net.flush();
      if (leader.hasCommitToTell) {
        told++;
        leader.propagateCommit();
        net.flush();
        expect(leader.hasCommitToTell).toBe(false);
      }
    }
    expect(told).toBeGreaterThan(0);
  });

  it('refuses proposals beyond the uncommitted-bytes bound and accepts again once they commit', () => {
    const net = new TestNetwork(three, { config: { maxUncommittedBytes: 10 } });
    net.elect('a');
    net.isolate('a');
    expect(net.propose('a', '12345678').kind).toBe('appended');
    expect(net.propose('a', '12345678')).toEqual({ kind: 'refused', reason: 'backpressure', leader: 'a' });
    net.recover();
    net.tickAll(2);
    expect(net.propose('a', '12345678').kind).toBe('appended');
  });

  it('refuses a proposal past maxEntryBytes, its own or forwarded, appending nothing of its batch: no append could carry it', () => {
    const net = new TestNetwork(three, { config: { maxEntryBytes: 8 } });
    net.elect('a');
    const last = net.node('a').log.lastIndex();
    expect(net.node('a').maxEntryBytes).toBe(8);
    expect(net.propose('a', '123456789')).toEqual({ kind: 'refused', reason: 'backpressure', leader: 'a' });
    // A batch with one too large keeps none of it.
    expect(net.node('a').propose([{ pid: 'a#x', data: new Uint8Array(1) }, { pid: 'a#y', data: new Uint8Array(9) }]).kind).toBe('refused');
    expect(net.propose('b', '123456789').kind).toBe('forwarded');
    net.stabilize();
    expect(net.member('b').forwarded.at(-1)).toMatchObject({ accepted: false });
    expect(net.node('a').log.lastIndex()).toBe(last);
    // Within the bound, appended and committed.
    expect(net.propose('a', '12345678').kind).toBe('appended');
    net.stabilize();
    expect(net.node('a').log.committed).toBe(last + 1);
  });

  it('keeps through keepData only the data of proposals it appends as leader, not of ones refused or forwarded', () => {
    const kept: string[] = [];
    const keepData = (data: Uint8Array): Uint8Array => {
      kept.push(Buffer.from(data).toString());
      return Uint8Array.from(data);
    };
    const net = new TestNetwork(three, { config: { maxUncommittedBytes: 10, keepData } });
    net.elect('a');
    kept.length = 0;
    net.isolate('a');
    expect(net.propose('a', 'appended').kind).toBe('appended');
    expect(net.propose('a', 'refused!').kind).toBe('refused');
    expect(net.propose('b', 'forwarded').kind).not.toBe('appended');
    expect(kept).toEqual(['appended']);
    // The log holds what keepData returned, not the caller's bytes.
    const entry = net.node('a').log.entry(net.node('a').log.lastIndex());
    expect(Buffer.from(entry?.data ?? new Uint8Array(0)).toString()).toBe('appended');
    net.recover();
    net.stabilize();
    // A proposal forwarded to the leader is appended there, and kept there.
    expect(net.propose('b', 'via b').kind).toBe('forwarded');
    net.stabilize();
    expect(kept).toEqual(['appended', 'via b']);
  });

  it("does not commit an earlier term's entry by counting replicas (figure 8)", () => {
    // One entry per append, so the leader can be stopped between replicating index 2 and 3.
    const net = new TestNetwork(['a', 'b', 'c', 'd', 'e'], { config: { maxEntriesPerAppend: 1 } });
    const committed = new Map<number, string>();
    const check = (): void => {
      for (const id of net.ids) {
        const log = net.node(id).log;
        for (let i = 1; i <= log.committed; i++) {
          const key = `${log.term(i)}`;
          expect(committed.get(i) ?? key, `index ${i} on ${id}`).toBe(key);
          committed.set(i, key);
        }
      }
    };
    net.elect('a');
    // (a) a, leading term 1, replicates index 2 to b only.
    net.cut('a', 'c');
    net.cut('a', 'd');
    net.cut('a', 'e');
    net.propose('a', 'x');
    net.stabilize();
    check();
    // (b) a crashes; e wins term 2 with c and d and appends its no-op at index 2, which goes nowhere.
    net.restart('a');
    net.isolate('a');
    net.filter = (m) => !(m.from === 'e' && m.type === 'append');
    net.forceElection('e');
    expect(net.node('e').role).toBe('leader');
    // (c) e crashes; a wins a later term and replicates its old index 2 (term 1) to c, not yet index 3.
    net.restart('e');
    net.recover();
    net.isolate('e');
    net.cut('a', 'd');
    const cHasOldIndex2 = (): boolean => net.node('c').log.term(2) === 1;
    net.filter = (m) => !(m.from === 'a' && m.to === 'c' && m.type === 'append' && cHasOldIndex2() && m.entries.some((en) => en.index >= 3));
    // The first attempt, at a term where c and d already voted for e, only teaches a the term.
    for (let i = 0; i < 3 && net.node('a').role !== 'leader'; i++) net.forceElection('a');
    expect(net.node('a').role).toBe('leader');
    expect(net.node('c').log.term(2)).toBe(1);
    // a, b and c hold index 2 of term 1: a majority, but a must not count it as committed.
    expect(net.node('a').log.committed).toBe(1);
    check();
    // (d) a crashes; e can still win (its last term 2 beats term 1) and overwrite index 2.
    net.restart('a');
    net.recover();
    net.isolate('a');
    net.cut('e', 'b');
    for (let i = 0; i < 3 && net.node('e').role !== 'leader'; i++) net.forceElection('e');
    expect(net.node('e').role).toBe('leader');
    net.tickAll(3);
    check();
    expect(net.node('c').log.term(2)).toBe(2);
  });
});

describe('restarts', () => {
  it('a restarted member keeps its term, vote and log, and catches up', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.propose('a', 'one');
    net.stabilize();
    const term = net.node('b').term;
    net.restart('b');
    expect(net.node('b').term).toBe(term);
    expect(net.node('b').vote).toBe('a');
    expect(net.node('b').log.lastIndex()).toBe(2);
    net.propose('a', 'two');
    net.stabilize();
    net.tickAll(2);
    // The restarted member re-applies its whole log from the start.
    expect(net.appliedTexts('b')).toEqual(['one', 'two']);
  });

  it('a restarted leader with a persisted vote cannot vote twice in its term', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.restart('a');
    const term = net.node('a').term;
    net.node('a').step({ type: 'vote', from: 'b', to: 'a', term, lastIndex: 10, lastTerm: term, transfer: false });
    const reply = net.pending().find((m) => m.type === 'vote-resp');
    expect(reply).toMatchObject({ reject: true });
  });

  it('a whole cluster restarted loses nothing committed', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    for (let i = 0; i < 5; i++) net.propose('a', `v${i}`);
    net.stabilize();
    for (const id of three) net.restart(id);
    net.tickAll(60);
    expect(net.leaders()).toHaveLength(1);
    net.tickAll(2);
    for (const id of three) expect(net.appliedTexts(id)).toEqual(['v0', 'v1', 'v2', 'v3', 'v4']);
  });
});

describe('linearizable reads', () => {
  it('the leader confirms leadership with a heartbeat round before answering', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.propose('a', 'x');
    net.stabilize();
    expect(net.node('a').readIndex(7)).toBe(true);
    expect(net.member('a').readStates).toEqual([]);
    net.stabilize();
    expect(net.member('a').readStates).toEqual([{ ctx: 7, index: 2 }]);
  });

  it('a leader cut off from the majority never answers a read', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.isolate('a');
    net.node('a').readIndex(1);
    net.stabilize();
    expect(net.member('a').readStates).toEqual([]);
  });

  it('a follower gets its read index from the leader', () => {
    const net = new TestNetwork(three);
    net.elect('a');
    net.propose('a', 'x');
    net.stabilize();
    expect(net.node('c').readIndex(3)).toBe(true);
    net.stabilize();
    expect(net.member('c').readStates).toEqual([{ ctx: 3, index: 2 }]);
  });

  it('a follower with no leader refuses at once', () => {
    const net = new TestNetwork(three);
    expect(net.node('c').readIndex(3)).toBe(false);
  });

  it('a single member answers at once', () => {
    const net = new TestNetwork(['a']);
    net.elect('a');
    net.node('a').readIndex(1);
    net.flush();
    expect(net.member('a').readStates).toEqual([{ ctx: 1, index: 1 }]);
  });
});

describe('entries', () => {
  it('a new leader appends a no-op of its term', () => {
    const net = new TestNetwork(three);
    net.elect('b');
    const e = net.node('b').log.entry(1) as Entry;
    expect(e.type).toBe(EntryType.Noop);
    expect(e.term).toBe(net.node('b').term);
  });
});
