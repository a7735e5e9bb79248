import { describe, expect, it } from 'vitest';
import type { RaftNode } from '../../src/raft/node.js';
import type { WireMessage } from '../../src/transport/envelope.js';
import { MAX_ANSWERS_WAITING, PeerContact } from '../../src/runtime/peer-contact.js';

const TICK_MS = 10;

/** A follower of 'l' in term 1: all PeerContact reads of the protocol. */
const node = { role: 'follower', leader: 'l', term: 1 } as unknown as RaftNode;

describe('PeerContact.silence', () => {
  it('counts the time since a peer was last heard from, only while this member ticked', () => {
    const contact = new PeerContact(node, TICK_MS, 250, 0);
    expect(contact.silence('p', 0)).toBe(Number.POSITIVE_INFINITY);
    contact.heard('p', 1000);
    for (let i = 0; i < 30; i++) contact.tick();
    // Its loop ran all along: the wall clock's silence.
    expect(contact.silence('p', 1300)).toBe(300);
    // Its loop then stood still for a second (one tick fired for it): the peer's messages may be
    // waiting on its socket, and the silence it saw is its own.
    contact.tick();
    expect(contact.silence('p', 2300)).toBe(310);
    contact.heard('p', 2300);
    expect(contact.silence('p', 2300)).toBe(0);
  });

  it('refuses to forward to a leader silent past the bound only once this member ticked through the silence', () => {
    const contact = new PeerContact(node, TICK_MS, 250, 0);
    contact.heard('l', 0);
    // A stall of a second with one tick: not the leader's silence.
    contact.tick();
    expect(contact.unreachableLeaderError(1000)).toBeNull();
    for (let i = 0; i < 25; i++) contact.tick();
    expect(contact.unreachableLeaderError(1260)?.code).toBe('CRONRAFT_NOT_LEADER');
  });
});

describe('PeerContact.leaderHeardMe', () => {
  const hb = (heardAt: number | undefined, commit = 0, from = 'l', term = 1): WireMessage => ({
    type: 'heartbeat',
    from,
    to: 'f',
    term,
    commit,
    readCtx: 0,
    clock: heardAt === undefined ? { sentAt: 5 } : { sentAt: 5, heardAt },
  });

  it("counts from the latest of this member's own answers its leader said it took in, not from the leader's message", () => {
    const contact = new PeerContact(node, TICK_MS, 250, 100);
    contact.stepped(hb(undefined), 200, 0);
    // The leader's message came, and says nothing of this member's answers.
    expect(contact.leaderContact).toBe(200);
    expect(contact.leaderHeardMe(0)).toBeUndefined();
    contact.stepped(hb(150), 300, 0);
    expect(contact.leaderContact).toBe(300);
    expect(contact.leaderHeardMe(0)).toBe(150);
    // An older answer, said later (heartbeats reordered), takes nothing back.
    contact.stepped(hb(120), 310, 0);
    expect(contact.leaderHeardMe(0)).toBe(150);
  });

  it('counts an answer only once this member applied up to the commit index of the heartbeat that told of it', () => {
    const contact = new PeerContact(node, TICK_MS, 250, 100);
    contact.stepped(hb(150, 7), 200, 7);
    expect(contact.leaderHeardMe(7)).toBe(150);
    // After a silence the leader tells of an answer only with the moves of this member's work
    // committed: until it applied them, the answer renews nothing.
    contact.stepped(hb(400, 12), 450, 7);
    expect(contact.leaderHeardMe(11)).toBe(150);
    expect(contact.leaderHeardMe(12)).toBe(400);
    // A later answer told before the one waiting counts: the waiting one counts as it is replaced.
    contact.stepped(hb(500, 20), 550, 12);
    contact.stepped(hb(560, 21), 600, 20);
    expect(contact.leaderHeardMe(20)).toBe(500);
    expect(contact.leaderHeardMe(21)).toBe(560);
  });

  it("takes no answer from this member's future, from before it started (another life's clock), or from a leader it does not follow", () => {
    const contact = new PeerContact(node, TICK_MS, 250, 100);
    contact.stepped(hb(400), 300, 0);
    contact.stepped(hb(99), 300, 0);
    contact.stepped(hb(250, 0, 'x'), 300, 0);
    contact.stepped(hb(250, 0, 'l', 2), 300, 0);
    expect(contact.leaderHeardMe(0)).toBeUndefined();
    contact.stepped(hb(300), 300, 0);
    expect(contact.leaderHeardMe(0)).toBe(300);
  });

  it('renews while this member applies steadily more than a heartbeat behind the commits the heartbeats carry: each answer waiting counts once applied, rather than give way to the next', () => {
    const contact = new PeerContact(node, TICK_MS, 250, 0);
    // Heartbeat n at 100 + 50n tells of an answer sent 10 ms before it and carries commit 10n;
    // this member has applied commit 10n only 80 ms after that heartbeat came, so as each
    // heartbeat comes it has applied the one before the last.
    let renewed: number | undefined;
    for (let n = 1; n <= 20; n++) {
      const at = 100 + 50 * n;
      contact.stepped(hb(at - 10, 10 * n), at, Math.max(0, 10 * (n - 2)));
      // 30 ms on, the commit of the heartbeat before is applied.
      renewed = contact.leaderHeardMe(10 * (n - 1));
    }
    // The answer told by heartbeat 19 counts: a lease counted from it still runs.
    expect(renewed).toBe(100 + 50 * 19 - 10);
  });

  it('keeps at most MAX_ANSWERS_WAITING answers waiting, the oldest first', () => {
    const contact = new PeerContact(node, TICK_MS, 250, 0);
    for (let n = 1; n <= MAX_ANSWERS_WAITING + 5; n++) contact.stepped(hb(100 + n, n), 200 + n, 0);
    // The newest gave way once it was full: what the oldest waiting counts comes first.
    expect(contact.leaderHeardMe(1)).toBe(101);
    expect(contact.leaderHeardMe(MAX_ANSWERS_WAITING - 1)).toBe(100 + MAX_ANSWERS_WAITING - 1);
    expect(contact.leaderHeardMe(MAX_ANSWERS_WAITING + 5)).toBe(100 + MAX_ANSWERS_WAITING + 5);
  });
});
