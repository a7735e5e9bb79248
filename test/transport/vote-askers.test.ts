import { describe, expect, it } from 'vitest';
import { isVoteAnswer, isVoteRequest, MAX_VOTE_ASKERS, VOTE_ANSWER_WINDOW_MS, VoteAskers } from '../../src/transport/vote-askers.js';
import { messageTypes } from '../../src/raft/types.js';
import { messageExamples } from '../fixtures/message-examples.js';

describe('VoteAskers', () => {
  it('gives the way back to an asker within the window after its latest request, and forgets it after', () => {
    const askers = new VoteAskers<string>();
    askers.asked('m4', 'conn-1', 1_000);
    expect(askers.routeTo('m4', 1_000 + VOTE_ANSWER_WINDOW_MS)).toBe('conn-1');
    // Asked again: renewed, on the connection of the latest request.
    askers.asked('m4', 'conn-2', 4_000);
    expect(askers.routeTo('m4', 4_000 + VOTE_ANSWER_WINDOW_MS)).toBe('conn-2');
    expect(askers.routeTo('m4', 4_001 + VOTE_ANSWER_WINDOW_MS)).toBeUndefined();
    expect(askers.size).toBe(0);
    expect(askers.routeTo('m5', 0)).toBeUndefined();
  });

  it('keeps at most MAX_VOTE_ASKERS, forgetting the one that asked longest ago', () => {
    const askers = new VoteAskers<number>();
    for (let i = 0; i <= MAX_VOTE_ASKERS; i++) askers.asked(`s${i}`, i, i);
    expect(askers.size).toBe(MAX_VOTE_ASKERS);
    expect(askers.routeTo('s0', MAX_VOTE_ASKERS)).toBeUndefined();
    expect(askers.routeTo('s1', MAX_VOTE_ASKERS)).toBe(1);
    // s1 asks again: s2 is now the oldest.
    askers.asked('s1', 1, 100);
    askers.asked('new', 99, 101);
    expect(askers.routeTo('s1', 101)).toBe(1);
    expect(askers.routeTo('s2', 101)).toBeUndefined();
    askers.forget('s1');
    expect(askers.routeTo('s1', 101)).toBeUndefined();
  });

  it('lets only vote and pre-vote requests in, and only their answers out', () => {
    const examples = messageExamples({ from: 'a', to: 'b', term: 1 });
    const requests = messageTypes.filter((type) => isVoteRequest(examples[type]));
    const answers = messageTypes.filter((type) => isVoteAnswer(examples[type]));
    expect(requests.sort()).toEqual(['prevote', 'vote']);
    expect(answers.sort()).toEqual(['prevote-resp', 'vote-resp']);
  });
});
