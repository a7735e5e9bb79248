import { describe, expect, it } from 'vitest';
import { decodeConfChange, encodeConfChange, isWellFormedConfChange, MAX_CONF_CHANGE_ID_BYTES, MAX_PEER_ID_LENGTH, type ConfChange } from '../../src/raft/conf-change.js';
import { applyChange, configurationOf, configurationProblem, MAX_MEMBERS } from '../../src/raft/configuration.js';
import type { Configuration } from '../../src/raft/types.js';

describe('the encoding of a conf change', () => {
  it('reads back every kind of change, ids of any script included', () => {
    for (const change of [
      { type: 'add-learner', id: '10.0.0.4:7001' },
      { type: 'promote', id: 'é' },
      { type: 'remove', id: 'x'.repeat(MAX_CONF_CHANGE_ID_BYTES) },
      { type: 'add-learner', id: '10.0.0.5:7001', peerId: '12D3KooWHkvU1Zo6a' },
      { type: 'bind', id: 'x'.repeat(MAX_CONF_CHANGE_ID_BYTES), peerId: 'P'.repeat(MAX_PEER_ID_LENGTH) },
    ] as const) {
      const data = encodeConfChange(change);
      expect(data[0]).toBe(2);
      expect(decodeConfChange(data)).toStrictEqual(change);
    }
  });

  it('still reads format 1, which had no peer id and no bind', () => {
    const utf8 = (s: string): number[] => [...new TextEncoder().encode(s)];
    expect(decodeConfChange(Uint8Array.of(1, 0, ...utf8('10.0.0.4:7001')))).toStrictEqual({ type: 'add-learner', id: '10.0.0.4:7001' });
    expect(decodeConfChange(Uint8Array.of(1, 1, ...utf8('é')))).toStrictEqual({ type: 'promote', id: 'é' });
    expect(decodeConfChange(Uint8Array.of(1, 2, ...utf8('c')))).toStrictEqual({ type: 'remove', id: 'c' });
    expect(decodeConfChange(Uint8Array.of(1, 3, ...utf8('c')))).toBeNull();
  });

  it('refuses to encode a change it could not read back', () => {
    for (const change of [
      { type: 'join', id: 'd' },
      { type: 'remove', id: '' },
      { type: 'remove', id: 'x'.repeat(MAX_CONF_CHANGE_ID_BYTES + 1) },
      { type: 'remove', id: '\ud800' },
      { type: 'remove', id: 7 },
      { type: 'bind', id: 'a' },
      { type: 'bind', id: 'a', peerId: '' },
      { type: 'bind', id: 'a', peerId: 'not a peer id' },
      { type: 'bind', id: 'a', peerId: 'P'.repeat(MAX_PEER_ID_LENGTH + 1) },
      { type: 'add-learner', id: 'a', peerId: 'é' },
      { type: 'remove', id: 'a', peerId: 'P' },
    ]) {
      expect(isWellFormedConfChange(change as unknown as ConfChange)).toBe(false);
      expect(() => encodeConfChange(change as unknown as ConfChange)).toThrow(TypeError);
    }
  });

  it('reads nothing but what it writes', () => {
    const good = encodeConfChange({ type: 'remove', id: 'c' });
    const bind = encodeConfChange({ type: 'bind', id: 'c', peerId: 'P1' });
    const bad = [
      new Uint8Array(0),
      good.subarray(0, 4), // no id
      bind.subarray(0, 5), // a bind without its peer id
      Uint8Array.of(...good, 0x50), // a remove with a peer id
      Uint8Array.of(3, ...good.subarray(1)), // another format
      Uint8Array.of(2, 4, ...good.subarray(2)), // an unknown kind
      Uint8Array.of(2, 2, 0, 5, ...good.subarray(4)), // an id longer than the data
      Uint8Array.of(2, 2, 0, 2, 0xff, 0xfe), // not UTF-8
      Uint8Array.of(2, 3, 0, 1, 0x63, 0x20, 0x50), // a peer id with a space
      Uint8Array.of(2, 2, 1, 45, ...new Uint8Array(MAX_CONF_CHANGE_ID_BYTES + 1).fill(0x61)), // an id too long
      Uint8Array.of(1, 2), // format 1: no id
      Uint8Array.of(1, 2, 0xff, 0xfe), // format 1: not UTF-8
      new Uint8Array(3 + MAX_CONF_CHANGE_ID_BYTES).fill(1), // format 1: an id too long
    ];
    for (const data of bad) expect(decodeConfChange(data)).toBeNull();
  });
});

describe('the rules of a configuration', () => {
  const conf = configurationOf(['b', 'a', 'c'], ['d']);

  it('is sorted, and each change moves one member', () => {
    expect(conf).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'], peerIds: [] });
    expect(applyChange(conf, { type: 'add-learner', id: 'e' })).toEqual({ conf: { voters: ['a', 'b', 'c'], learners: ['d', 'e'], peerIds: [] } });
    expect(applyChange(conf, { type: 'promote', id: 'd' })).toEqual({ conf: { voters: ['a', 'b', 'c', 'd'], learners: [], peerIds: [] } });
    expect(applyChange(conf, { type: 'remove', id: 'b' })).toEqual({ conf: { voters: ['a', 'c'], learners: ['d'], peerIds: [] } });
    expect(applyChange(conf, { type: 'remove', id: 'd' })).toEqual({ conf: { voters: ['a', 'b', 'c'], learners: [], peerIds: [] } });
  });

  it('binds a peer id with add-learner or bind, keeps it through promote, and drops it with remove', () => {
    const bound = configurationOf(['a', 'b', 'c'], ['d'], [['d', 'PD'], ['b', 'PB']]);
    expect(bound.peerIds).toEqual([['b', 'PB'], ['d', 'PD']]);
    expect(applyChange(bound, { type: 'add-learner', id: 'e', peerId: 'PE' })).toEqual({ conf: { ...bound, learners: ['d', 'e'], peerIds: [['b', 'PB'], ['d', 'PD'], ['e', 'PE']] } });
    expect(applyChange(bound, { type: 'bind', id: 'a', peerId: 'PA' })).toEqual({ conf: { ...bound, peerIds: [['a', 'PA'], ['b', 'PB'], ['d', 'PD']] } });
    expect(applyChange(bound, { type: 'promote', id: 'd' })).toEqual({ conf: { voters: ['a', 'b', 'c', 'd'], learners: [], peerIds: bound.peerIds } });
    expect(applyChange(bound, { type: 'remove', id: 'b' })).toEqual({ conf: { voters: ['a', 'c'], learners: ['d'], peerIds: [['d', 'PD']] } });
    expect(applyChange(bound, { type: 'remove', id: 'd' })).toEqual({ conf: { voters: ['a', 'b', 'c'], learners: [], peerIds: [['b', 'PB']] } });
  });

  it('refuses a void or unsafe change, saying why', () => {
    const bound = configurationOf(['a', 'b', 'c'], ['d'], [['b', 'PB']]);
    expect(applyChange(conf, { type: 'add-learner', id: 'a' })).toEqual({ problem: 'already-member' });
    expect(applyChange(conf, { type: 'add-learner', id: 'd' })).toEqual({ problem: 'already-member' });
    expect(applyChange(conf, { type: 'promote', id: 'a' })).toEqual({ problem: 'not-learner' });
    expect(applyChange(conf, { type: 'promote', id: 'z' })).toEqual({ problem: 'not-learner' });
    expect(applyChange(conf, { type: 'remove', id: 'z' })).toEqual({ problem: 'not-member' });
    expect(applyChange(configurationOf(['a'], ['d']), { type: 'remove', id: 'a' })).toEqual({ problem: 'last-voter' });
    expect(applyChange(conf, { type: 'demote', id: 'a' } as unknown as ConfChange)).toEqual({ problem: 'malformed' });
    expect(applyChange(conf, { type: 'bind', id: 'z', peerId: 'PZ' })).toEqual({ problem: 'not-member' });
    // A binding never changes, nor is it made twice.
    expect(applyChange(bound, { type: 'bind', id: 'b', peerId: 'PX' })).toEqual({ problem: 'already-bound' });
    expect(applyChange(bound, { type: 'bind', id: 'b', peerId: 'PB' })).toEqual({ problem: 'already-bound' });
    // One key never speaks for two members.
    expect(applyChange(bound, { type: 'bind', id: 'a', peerId: 'PB' })).toEqual({ problem: 'peer-id-taken' });
    expect(applyChange(bound, { type: 'add-learner', id: 'e', peerId: 'PB' })).toEqual({ problem: 'peer-id-taken' });
    // Anyone with the secret may ask to join: the configuration stops at MAX_MEMBERS.
    const full = configurationOf(['a', 'b', 'c'], Array.from({ length: MAX_MEMBERS - 3 }, (_, i) => `l${i}`));
    expect(applyChange(full, { type: 'add-learner', id: 'z' })).toEqual({ problem: 'too-many-members' });
    expect(applyChange(configurationOf(full.voters, full.learners.slice(1)), { type: 'add-learner', id: 'z' })).toHaveProperty('conf');
    // Promotion and removal go on at the bound.
    expect(applyChange(full, { type: 'promote', id: 'l0' })).toHaveProperty('conf');
    expect(applyChange(full, { type: 'remove', id: 'l0' })).toHaveProperty('conf');
  });

  it("finds what is wrong with a configuration read from outside (a snapshot's)", () => {
    const of = (voters: string[], learners: string[], peerIds: [string, string][] = []): Configuration => ({ voters, learners, peerIds });
    expect(configurationProblem(conf)).toBeNull();
    expect(configurationProblem(of(['a', 'b'], ['c'], [['a', 'PA'], ['c', 'PC']]))).toBeNull();
    expect(configurationProblem(of([], ['d']))).toBe('no voter');
    expect(configurationProblem(of(['b', 'a'], []))).toMatch(/sorted/);
    expect(configurationProblem(of(['a', 'a'], []))).toMatch(/repeats/);
    expect(configurationProblem(of(['a', 'b'], ['b']))).toMatch(/both/);
    expect(configurationProblem(of(['a', 'b'], [], [['b', 'PB'], ['a', 'PA']]))).toMatch(/not sorted/);
    expect(configurationProblem(of(['a', 'b'], [], [['a', 'PA'], ['a', 'PB']]))).toMatch(/repeat/);
    expect(configurationProblem(of(['a'], [], [['z', 'PZ']]))).toMatch(/non-member/);
    expect(configurationProblem(of(['a'], [], [['a', '']]))).toMatch(/malformed/);
    expect(configurationProblem(of(['a'], [], [['a', 'P'.repeat(MAX_PEER_ID_LENGTH + 1)]]))).toMatch(/malformed/);
    expect(configurationProblem(of(['a', 'b'], [], [['a', 'P'], ['b', 'P']]))).toMatch(/two members/);
  });
});
