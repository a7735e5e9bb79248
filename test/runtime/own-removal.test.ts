/**
 * A member learns of its own removal from the configuration after a Ready (ownRemoval), also when
 * it never saw a configuration that held it: a stranger's attack found a joiner removed at once,
 * whose addition and removal it took in together, running on for good.
 */
import { describe, expect, it } from 'vitest';
import { encodeConfChange, type ConfChange } from '../../src/raft/conf-change.js';
import { EntryType, type Configuration, type Entry } from '../../src/raft/types.js';
import { ownRemoval } from '../../src/runtime/own-removal.js';

const conf = (voters: string[], learners: string[] = []): Configuration => ({ voters, learners, peerIds: [] });
const change = (index: number, c: ConfChange): Entry => ({ index, term: 1, type: EntryType.ConfChange, data: encodeConfChange(c), pid: '' });
const normal = (index: number): Entry => ({ index, term: 1, type: EntryType.Normal, data: new Uint8Array(0), pid: '' });
const FOUNDERS = conf(['a', 'b', 'c']);

describe('ownRemoval', () => {
  it('a member held before and not after was removed, at the last entry or the fallback', () => {
    expect(ownRemoval('c', true, [normal(7), change(8, { type: 'remove', id: 'c' })], conf(['a', 'b']), 3)).toBe(8);
    expect(ownRemoval('c', true, [], conf(['a', 'b']), 12)).toBe(12);
    expect(ownRemoval('c', true, [normal(7)], FOUNDERS, 3)).toBeNull();
  });

  it('a joiner added and removed in one Ready was removed, at the removal', () => {
    expect(ownRemoval('d', false, [change(9, { type: 'add-learner', id: 'd' }), normal(10), change(11, { type: 'remove', id: 'd' })], FOUNDERS, 3)).toBe(11);
  });

  it("a removal of its address before its own addition is an earlier member's: none", () => {
    expect(ownRemoval('d', false, [change(4, { type: 'remove', id: 'd' }), change(9, { type: 'add-learner', id: 'd' })], conf(['a', 'b', 'c'], ['d']), 3)).toBeNull();
    expect(ownRemoval('d', false, [change(4, { type: 'remove', id: 'd' })], FOUNDERS, 3)).toBeNull();
    // Another member's removal is not this one's.
    expect(ownRemoval('d', true, [change(4, { type: 'remove', id: 'c' })], conf(['a', 'b'], ['d']), 3)).toBeNull();
  });
});
