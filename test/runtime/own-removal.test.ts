/**
 * A member learns of its own removal from the configuration after a Ready (ownRemoval), also when
 * it never saw a configuration that held it: a stranger's attack found a joiner removed at once,
 * whose addition and removal it took in together, running on for good.
 */
import { describe, expect, it } from 'vitest';
import { encodeConfChange, type ConfChange } from '../../src/raft/conf-change.js';
import { EntryType, type Configuration, type Entry } from '../../src/raft/types.js';
import { holdsSelf, ownRemoval, SelfInConfiguration } from '../../src/runtime/own-removal.js';

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

/**
 * A member removed, then started again empty at the same address (a machine replaced, a member
 * recovered, a scale-in and out): a stranger's attack found it stopped as removed every time the
 * leader's log still held its earlier removal, as it replayed that removal. It is a new member
 * of the same id, with a new peer id: the removals of the earlier ones are not its own.
 */
describe('ownRemoval of a member that knows its incarnation', () => {
  const OLD = '12D3KooWOldKeyOfThisAddress';
  const NEW = '12D3KooWNewKeyOfThisAddress';
  const joiner = { peerId: NEW, joined: true };
  const founder = { peerId: NEW, joined: false };
  const bound = (voters: string[], learners: string[], peerIds: Array<[string, string]>): Configuration => ({ voters, learners, peerIds });

  it("a joiner at a founder's address does not take the founder's removal for its own", () => {
    // The founders' configuration holds c, unbound: not this joiner, which is added bound to its key.
    expect(holdsSelf(FOUNDERS, 'c', joiner)).toBe(false);
    const log = [change(5, { type: 'bind', id: 'c', peerId: OLD }), change(8, { type: 'remove', id: 'c' }), change(12, { type: 'add-learner', id: 'c', peerId: NEW })];
    const after = bound(['a', 'b'], ['c'], [['c', NEW]]);
    expect(ownRemoval('c', false, log, after, 3, joiner)).toBeNull();
    expect(holdsSelf(after, 'c', joiner)).toBe(true);
    // Replayed in Readies of their own: the removal is still the earlier member's.
    expect(ownRemoval('c', false, log.slice(0, 2), bound(['a', 'b'], [], []), 3, joiner)).toBeNull();
    // Without knowing its incarnation, it took the removal for its own (the defect).
    expect(ownRemoval('c', true, log, after, 3)).toBe(8);
  });

  it('a joiner at the address of an earlier joiner does not take its removal for its own, and learns of its own', () => {
    const earlier = [change(4, { type: 'add-learner', id: 'd', peerId: OLD }), change(6, { type: 'remove', id: 'd' })];
    const own = change(9, { type: 'add-learner', id: 'd', peerId: NEW });
    const after = bound(['a', 'b', 'c'], ['d'], [['d', NEW]]);
    expect(ownRemoval('d', false, [...earlier, own], after, 3, joiner)).toBeNull();
    expect(ownRemoval('d', false, [...earlier, own, change(11, { type: 'remove', id: 'd' })], FOUNDERS, 3, joiner)).toBe(11);
    expect(ownRemoval('d', true, [change(11, { type: 'remove', id: 'd' })], FOUNDERS, 3, joiner)).toBe(11);
    expect(ownRemoval('d', true, [], FOUNDERS, 12, joiner)).toBe(12);
  });

  it('a founder holds its place unbound and bound to its own key, and learns of its removal either way', () => {
    expect(holdsSelf(FOUNDERS, 'c', founder)).toBe(true);
    expect(holdsSelf(bound(['a', 'b', 'c'], [], [['c', NEW]]), 'c', founder)).toBe(true);
    expect(holdsSelf(bound(['a', 'b', 'c'], [], [['c', OLD]]), 'c', founder)).toBe(false);
    expect(ownRemoval('c', true, [change(8, { type: 'remove', id: 'c' })], conf(['a', 'b']), 3, founder)).toBe(8);
    expect(ownRemoval('c', true, [change(5, { type: 'bind', id: 'c', peerId: NEW }), change(8, { type: 'remove', id: 'c' })], conf(['a', 'b']), 3, founder)).toBe(8);
  });
});

describe('SelfInConfiguration', () => {
  const NEW = '12D3KooWNewKeyOfThisAddress';
  const founder = { peerId: NEW, joined: false };

  it('a member started empty among the founding voters does not take a first snapshot without it for its removal, and learns of its own after', () => {
    // Its address was a founder's, removed before it started; the leader added it anew, after
    // the snapshot it sends.
    const self = new SelfInConfiguration('c', FOUNDERS, founder, true);
    expect(self.removal([], conf(['a', 'b']), 40, conf(['a', 'b']))).toBeNull();
    expect(self.removal([change(45, { type: 'add-learner', id: 'c', peerId: NEW })], { voters: ['a', 'b'], learners: ['c'], peerIds: [['c', NEW]] }, 45)).toBeNull();
    expect(self.removal([change(50, { type: 'remove', id: 'c' })], conf(['a', 'b']), 50)).toBe(50);
  });

  it('a member that started with data, or learned its configuration already, was removed by a snapshot without it', () => {
    expect(new SelfInConfiguration('c', FOUNDERS, founder).removal([], conf(['a', 'b']), 40, conf(['a', 'b']))).toBe(40);
    const learned = new SelfInConfiguration('c', FOUNDERS, founder, true);
    expect(learned.removal([normal(1)], FOUNDERS, 1)).toBeNull();
    expect(learned.removal([], conf(['a', 'b']), 40, conf(['a', 'b']))).toBe(40);
    // A first snapshot that holds it, then its removal in the same Ready: its own (a reviewer
    // found it missed, the member stopping only once it asked, 15 s later).
    expect(new SelfInConfiguration('c', FOUNDERS, founder, true).removal([normal(41), change(45, { type: 'remove', id: 'c' })], conf(['a', 'b']), 40, FOUNDERS)).toBe(45);
    // Its founding voters' removal of it in the entries it replays from the start is its own.
    expect(new SelfInConfiguration('c', FOUNDERS, founder, true).removal([normal(1), change(8, { type: 'remove', id: 'c' })], conf(['a', 'b']), 8)).toBe(8);
  });
});
