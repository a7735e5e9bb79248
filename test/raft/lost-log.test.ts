import { describe, expect, it } from 'vitest';
import { Progress } from '../../src/raft/progress.js';
import { REJECT_LOST_LOG, type Entry, type Message } from '../../src/raft/types.js';
import { TestNetwork } from './network.js';

const three = ['a', 'b', 'c'];
const texts = (prefix: string, n: number): string[] => Array.from({ length: n }, (_, i) => `${prefix}${i}`);

const HEARTBEAT_TICKS = 2;
const MAX_INFLIGHT = 4;
const ENTRIES_PER_APPEND = 4;
/** Entries the leader holds when c loses its log. */
const ENTRIES = 100;

/**
 * Messages between the leader and one follower in a tick, at most, when every tick carries
 * each message one hop: a window of appends in flight, plus one each for the heartbeat, the
 * commit the leader propagates once a tick, the append a heartbeat's answer sends and the
 * rejection that says a log was lost, each way. A follower probed in a loop exceeds it.
 */
const MAX_MESSAGES_PER_TICK = 2 * (MAX_INFLIGHT + 4);

/**
 * Ticks for c, which lost its log, to commit what the leader did, at most: a heartbeat and
 * its answer tell the leader, a probe and its answer restart replication, then a window of
 * appends a round trip (two ticks) until the log is sent, and a tick to spare.
 */
const CATCH_UP_TICKS = HEARTBEAT_TICKS + 2 + 2 + 2 * Math.ceil(ENTRIES / (MAX_INFLIGHT * ENTRIES_PER_APPEND)) + 1;

function network(ids: string[] = three): TestNetwork {
  return new TestNetwork(ids, {
    electionTicks: 10,
    heartbeatTicks: HEARTBEAT_TICKS,
    config: { maxInflightMsgs: MAX_INFLIGHT, maxEntriesPerAppend: ENTRIES_PER_APPEND },
  });
}

/** a leads and every member holds and commits `ENTRIES` entries (the no-op and the texts). */
function replicated(): TestNetwork {
  const net = network();
  net.elect('a');
  for (const t of texts('x', ENTRIES - 1)) expect(net.propose('a', t).kind).toBe('appended');
  net.stabilize();
  // The leader tells followers of its commit index once a tick.
  net.tickAll(1);
  for (const id of three) expect(net.node(id).log.committed).toBe(ENTRIES);
  return net;
}

/** a leads term 1 and commits three entries (indexes 2 to 4) everywhere, then b leads term 2. */
function aThenB(): TestNetwork {
  const net = network();
  net.elect('a');
  for (const t of texts('x', 3)) net.propose('a', t);
  net.stabilize();
  net.forceElection('b');
  return net;
}

const betweenAAndC = (m: Message): boolean => (m.from === 'a' && m.to === 'c') || (m.from === 'c' && m.to === 'a');

/** Whether c holds and commits all a does. */
function cCaughtUp(net: TestNetwork): boolean {
  const a = net.node('a').log;
  const c = net.node('c').log;
  return c.lastIndex() === a.lastIndex() && c.committed === a.committed;
}

/**
 * Ticks every member once and carries the messages queued one hop, `ticks` times, calling
 * `each` before every tick. Returns the most messages exchanged between a and c in a tick,
 * and the first tick after which `caughtUp` held (null if it never did).
 */
function run(
  net: TestNetwork,
  ticks: number,
  options: { each?: (tick: number) => void; caughtUp?: () => boolean } = {},
): { maxPerTick: number; caughtUpAt: number | null } {
  const caughtUp = options.caughtUp ?? ((): boolean => cCaughtUp(net));
  let maxPerTick = 0;
  let caughtUpAt: number | null = null;
  for (let t = 1; t <= ticks; t++) {
    options.each?.(t);
    const before = net.delivered.length;
    for (const id of net.ids) net.tick(id);
    net.deliverOnce();
    maxPerTick = Math.max(maxPerTick, net.delivered.slice(before).filter(betweenAAndC).length);
    if (caughtUpAt === null && caughtUp()) caughtUpAt = t;
  }
  return { maxPerTick, caughtUpAt };
}

describe('a follower that lost its log (a member restarted on storage: memory)', () => {
  it('is caught up with entries while the cluster is idle, and the leader counts the loss once', () => {
    const net = replicated();
    net.wipe('c');
    expect(net.node('a').progressOf('c')!.match).toBe(ENTRIES);
    const { maxPerTick, caughtUpAt } = run(net, 3 * CATCH_UP_TICKS);
    expect(caughtUpAt).not.toBeNull();
    expect(caughtUpAt!).toBeLessThanOrEqual(CATCH_UP_TICKS);
    expect(maxPerTick).toBeLessThanOrEqual(MAX_MESSAGES_PER_TICK);
    expect(net.appliedTexts('c')).toEqual(texts('x', ENTRIES - 1));
    expect(net.node('a').followerLogsLost).toBe(1);
    expect(net.count('snapshot')).toBe(0);
  });

  it('is caught up while proposals keep coming, and the messages it exchanges with the leader stay bounded', () => {
    const net = replicated();
    net.wipe('c');
    const proposed: string[] = [];
    const ticks = 3 * CATCH_UP_TICKS;
    const { maxPerTick, caughtUpAt } = run(net, ticks, {
      // One proposal a tick, but for the last ticks, so that the commit index holds still.
      each: (t) => {
        if (t > ticks - 5) return;
        proposed.push(`y${t}`);
        expect(net.propose('a', `y${t}`).kind).toBe('appended');
      },
      // While entries keep coming, c trails a by the hop they travel: it has caught up once it
      // commits what a had when c lost its log.
      caughtUp: () => net.node('c').log.committed >= ENTRIES,
    });
    expect(maxPerTick).toBeLessThanOrEqual(MAX_MESSAGES_PER_TICK);
    expect(caughtUpAt).not.toBeNull();
    expect(caughtUpAt!).toBeLessThanOrEqual(CATCH_UP_TICKS);
    expect(cCaughtUp(net)).toBe(true);
    expect(net.appliedTexts('c')).toEqual([...texts('x', ENTRIES - 1), ...proposed]);
    expect(net.node('a').followerLogsLost).toBe(1);
  });

  it('is sent the snapshot when the entries it lacks are compacted away', () => {
    const net = replicated();
    expect(net.compact('a')).toBe(true);
    expect(net.node('a').log.firstIndex()).toBe(ENTRIES + 1);
    net.wipe('c');
    const { maxPerTick, caughtUpAt } = run(net, 3 * CATCH_UP_TICKS);
    expect(caughtUpAt).not.toBeNull();
    expect(caughtUpAt!).toBeLessThanOrEqual(CATCH_UP_TICKS);
    expect(maxPerTick).toBeLessThanOrEqual(MAX_MESSAGES_PER_TICK);
    expect(net.count('snapshot')).toBe(1);
    expect(net.member('c').disk.snapshot.index).toBe(ENTRIES);
    expect(net.appliedTexts('c')).toEqual(texts('x', ENTRIES - 1));
    expect(net.node('a').followerLogsLost).toBe(1);
  });

  it('is probed no faster than heartbeats while nothing commits, and caught up once something does', () => {
    // Five members; a's no-op reaches c only, so nothing commits, and a's heartbeats carry
    // commit 0 (never more than a knows committed): they cannot show c that it lost its log.
    // Probed at the entry it acknowledged, c refuses it: the probe goes again on the answer to
    // the next heartbeat, not at once.
    const net = network(['a', 'b', 'c', 'd', 'e']);
    net.filter = (m) => !(m.type === 'append' && m.from === 'a' && m.to !== 'c');
    net.elect('a');
    expect(net.node('a').progressOf('c')!.match).toBe(1);
    expect(net.node('a').log.committed).toBe(0);
    net.wipe('c');
    expect(net.propose('a', 'after').kind).toBe('appended');
    const stuck = run(net, CATCH_UP_TICKS, { caughtUp: () => false });
    expect(stuck.maxPerTick).toBeLessThanOrEqual(MAX_MESSAGES_PER_TICK);
    // The others get the entries, so they commit, and the heartbeats then tell c.
    net.filter = null;
    const { maxPerTick, caughtUpAt } = run(net, 3 * CATCH_UP_TICKS);
    expect(maxPerTick).toBeLessThanOrEqual(MAX_MESSAGES_PER_TICK);
    expect(caughtUpAt).not.toBeNull();
    expect(caughtUpAt!).toBeLessThanOrEqual(CATCH_UP_TICKS);
    expect(net.appliedTexts('c')).toEqual(['after']);
    expect(net.node('a').followerLogsLost).toBe(1);
  });

  it('commits nothing from a heartbeat beyond its log: what it still holds may not be what was committed', () => {
    // b leads term 2 and replaced index 5 with its no-op; c acknowledged all of it. c's disk
    // then loses its last writes and gives back an older entry at 5, of term 1, never committed.
    const net = aThenB();
    for (const t of texts('y', 3)) net.propose('b', t);
    net.stabilize();
    const b = net.node('b');
    expect(b.log.term(5)).toBe(2);
    const kept: Entry[] = net.member('c').disk.entries.filter((e) => e.index <= 4);
    const stale: Entry = { index: 5, term: 1, type: 0, data: new TextEncoder().encode('stale'), pid: 'stale' };
    const c = net.member('c');
    c.disk = { hardState: { term: 2, vote: 'b', commit: 0 }, snapshot: { index: 0, term: 0, data: new Uint8Array(0) }, entries: [...kept, stale] };
    net.restart('c');
    net.tickAll(CATCH_UP_TICKS);
    expect(net.appliedTexts('c')).toEqual(net.appliedTexts('b'));
    expect(net.appliedTexts('c')).not.toContain('stale');
    expect(b.followerLogsLost).toBe(1);
  });
});

describe('a leader that learns nothing of a lost log', () => {
  it('from the reply a member of a later term sent it while it was a stale leader', () => {
    // a led term 1, b term 2, and a leads term 3. c, at term 3, answers an append a sent in
    // term 1; the reply, of term 3, reaches a as a leader of term 3.
    const net = aThenB();
    net.forceElection('a');
    const a = net.node('a');
    expect(a.role).toBe('leader');
    expect(a.term).toBe(3);
    const match = a.progressOf('c')!.match;
    expect(match).toBe(a.log.lastIndex());
    net.node('c').step({ type: 'append', from: 'a', to: 'c', term: 1, prevIndex: 1, prevTerm: 1, entries: [], commit: 1 });
    net.stabilize();
    expect(a.followerLogsLost).toBe(0);
    expect(a.progressOf('c')!.match).toBe(match);
  });
});

describe("the leader's progress of a follower that lost its log", () => {
  function replicating(match: number): Progress {
    const pr = new Progress(1, MAX_INFLIGHT, 1 << 20);
    pr.maybeUpdate(match);
    pr.becomeReplicate();
    return pr;
  }

  it('forgets the match when the follower reports its log ends below it, and probes from there', () => {
    const pr = replicating(10);
    expect(pr.maybeForgetMatch(REJECT_LOST_LOG, 3, 3)).toBe(true);
    expect({ match: pr.match, next: pr.next, state: pr.state }).toEqual({ match: 0, next: 4, state: 'probe' });
  });

  it('ignores such a report when the follower still holds its match (a duplicate of one already acted on)', () => {
    const pr = replicating(10);
    expect(pr.maybeForgetMatch(REJECT_LOST_LOG, 10, 10)).toBe(false);
    expect(pr.match).toBe(10);
  });

  it('does not probe again at once when a probe at the match is refused', () => {
    const pr = replicating(10);
    pr.becomeProbe();
    expect(pr.maybeForgetMatch(10, 0, 0)).toBe(false);
    expect(pr.maybeDecrTo(10, 0)).toBe(false);
    expect({ match: pr.match, next: pr.next }).toEqual({ match: 10, next: 11 });
  });

  it('takes a rejection of an append at or below the match for a stale one, as etcd does', () => {
    // Reordering delivers the rejection of an append that arrived before its predecessor after
    // the acknowledgement that the predecessor's arrival caused.
    const pr = replicating(10);
    expect(pr.maybeForgetMatch(10, 5, 5)).toBe(false);
    expect(pr.maybeForgetMatch(8, 5, 5)).toBe(false);
    expect(pr.maybeDecrTo(10, 5)).toBe(false);
    expect({ match: pr.match, state: pr.state }).toEqual({ match: 10, state: 'replicate' });
  });

  it('probes below the old match, whatever the leader made of the hint', () => {
    const pr = replicating(10);
    expect(pr.maybeForgetMatch(REJECT_LOST_LOG, 5, 50)).toBe(true);
    expect(pr.next).toBe(10);
  });
});
