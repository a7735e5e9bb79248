import { describe, expect, it } from 'vitest';
import type { Ready } from '../../src/raft/ready.js';
import type { Message } from '../../src/raft/types.js';
import { TestNetwork } from './network.js';

/** The types of a list of messages, with their addressee: what a test compares. */
function sent(messages: readonly Message[]): string[] {
  return messages.map((m) => `${m.type}>${m.to}`).sort();
}

/** A Ready's messages both ways: those that may leave now, and those that wait for its write. */
function split(rd: Ready): { readonly now: string[]; readonly afterWrite: string[] } {
  return { now: sent(rd.messages), afterWrite: sent(rd.messagesAfterWrite) };
}

/**
 * a, told to campaign (no pre-vote), asks b for its vote, and b grants it: the Readies of both,
 * none of them acknowledged durable yet.
 */
function electionUnwritten(net: TestNetwork): { readonly campaign: Ready; readonly vote: Ready } {
  const a = net.node('a');
  const b = net.node('b');
  a.step({ type: 'timeout-now', from: 'b', to: 'a', term: 0 });
  const campaign = a.ready();
  b.step(campaign.messagesAfterWrite.find((m) => m.to === 'b') as Message);
  return { campaign, vote: b.ready() };
}

/**
 * Which of a Ready's messages may leave before its write is durable (ready.ts): the protocol
 * decides, from what the driver acknowledged durable (`writeDurable`). The Readies here are
 * taken by hand, without the harness's flush, which would make every write durable at once.
 */
describe('write, then send', () => {
  it("holds a candidate's vote requests and a follower's vote until their writes are durable", () => {
    const { campaign, vote } = electionUnwritten(new TestNetwork(['a', 'b', 'c']));
    // A new term and a vote for itself.
    expect(campaign.mustSync).toBe(true);
    expect(split(campaign)).toEqual({ now: [], afterWrite: ['vote>b', 'vote>c'] });
    expect(vote.mustSync).toBe(true);
    expect(vote.hardState).toMatchObject({ term: 1, vote: 'a' });
    expect(split(vote)).toEqual({ now: [], afterWrite: ['vote-resp>a'] });
    expect(vote.messagesAfterWrite[0]).toMatchObject({ type: 'vote-resp', reject: false });
  });

  it("holds a new leader's first appends until its term is durable, then sends its heartbeats at once while its write is in flight", () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    const a = net.node('a');
    const { campaign, vote } = electionUnwritten(net);
    // The vote arrives before the candidate's own write of its term is durable.
    a.step(vote.messagesAfterWrite[0] as Message);
    expect(a.role).toBe('leader');
    const lead = a.ready();
    expect(lead.entries).toHaveLength(1);
    expect(lead.mustSync).toBe(true);
    expect(split(lead)).toEqual({ now: [], afterWrite: ['append>b', 'append>c'] });

    // The term is durable now; the leader's no-op entry is still being written.
    a.writeDurable(campaign);
    expect(a.writesInFlight).toBe(1);
    a.tick();
    const beat = a.ready();
    expect(beat.mustSync).toBe(false);
    expect(split(beat)).toEqual({ now: ['heartbeat>b', 'heartbeat>c'], afterWrite: [] });
  });

  it("sends a leader's appends at once once its term is durable, and holds a follower's answers to appends, not to heartbeats, while its write is in flight", () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const a = net.node('a');
    const b = net.node('b');
    net.propose('a', 'x');
    const append = a.ready();
    expect(append.mustSync).toBe(true);
    expect(append.entries).toHaveLength(1);
    expect(split(append)).toEqual({ now: ['append>b', 'append>c'], afterWrite: [] });

    b.step(append.messages.find((m) => m.to === 'b') as Message);
    const ack = b.ready();
    expect(ack.mustSync).toBe(true);
    expect(split(ack)).toEqual({ now: [], afterWrite: ['append-resp>a'] });
    // Its entries are not durable yet, its term is: the answer to a heartbeat, which says nothing
    // of its log, leaves at once, so that a follower whose disk is slow is still heard from.
    a.tick();
    b.step(a.ready().messages.find((m) => m.to === 'b') as Message);
    const early = b.ready();
    expect(early.mustSync).toBe(false);
    expect(split(early)).toEqual({ now: ['heartbeat-resp>a'], afterWrite: [] });

    // Once durable, nothing is in flight: a follower with nothing to write answers at once.
    b.advance(ack);
    expect(b.writesInFlight).toBe(0);
    a.tick();
    b.step(a.ready().messages.find((m) => m.to === 'b') as Message);
    const answer = b.ready();
    expect(answer.mustSync).toBe(false);
    expect(split(answer)).toEqual({ now: ['heartbeat-resp>a'], afterWrite: [] });
  });

  it("holds a follower's answer to a heartbeat of a new term until that term is durable", () => {
    const net = new TestNetwork(['a', 'b', 'c']);
    net.elect('a');
    const b = net.node('b');
    // A heartbeat of a later term (a leader b has not heard of yet): b adopts the term, which it must write first.
    b.step({ type: 'heartbeat', from: 'c', to: 'b', term: 5, commit: 0, readCtx: 0 });
    const adopt = b.ready();
    expect(adopt.mustSync).toBe(true);
    expect(split(adopt)).toEqual({ now: [], afterWrite: ['heartbeat-resp>c'] });
  });
});
