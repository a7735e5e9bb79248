import { describe, expect, it } from 'vitest';
import type { RaftNode } from '../../src/raft/node.js';
import { PeerContact } from '../../src/runtime/peer-contact.js';

const TICK_MS = 10;

/** A follower of 'l' in term 1: all PeerContact reads of the protocol. */
const node = { role: 'follower', leader: 'l', term: 1 } as unknown as RaftNode;

describe('PeerContact.silence', () => {
  it('counts the time since a peer was last heard from, only while this member ticked', () => {
    const contact = new PeerContact(node, TICK_MS, 250);
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
    const contact = new PeerContact(node, TICK_MS, 250);
    contact.heard('l', 0);
    // A stall of a second with one tick: not the leader's silence.
    contact.tick();
    expect(contact.unreachableLeader(1000)).toBeNull();
    for (let i = 0; i < 25; i++) contact.tick();
    expect(contact.unreachableLeader(1260)?.code).toBe('CRONRAFT_NOT_LEADER');
  });
});
