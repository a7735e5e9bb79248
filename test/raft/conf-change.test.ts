import { describe, expect, it } from 'vitest';
import { decodeConfChange, encodeConfChange, isWellFormedConfChange, MAX_CONF_CHANGE_ID_BYTES, type ConfChange } from '../../src/raft/conf-change.js';
import { applyChange, configurationOf, configurationProblem } from '../../src/raft/configuration.js';

describe('the encoding of a conf change', () => {
  it('reads back every kind of change, ids of any script included', () => {
    for (const change of [
      { type: 'add-learner', id: '10.0.0.4:7001' },
      { type: 'promote', id: 'é' },
      { type: 'remove', id: 'x'.repeat(MAX_CONF_CHANGE_ID_BYTES) },
    ] as const) {
      expect(decodeConfChange(encodeConfChange(change))).toEqual(change);
    }
  });

  it('refuses to encode a change it could not read back', () => {
    for (const change of [
      { type: 'join', id: 'd' },
      { type: 'remove', id: '' },
      { type: 'remove', id: 'x'.repeat(MAX_CONF_CHANGE_ID_BYTES + 1) },
      { type: 'remove', id: '\ud800' },
      { type: 'remove', id: 7 },
    ]) {
      expect(isWellFormedConfChange(change as unknown as ConfChange)).toBe(false);
      expect(() => encodeConfChange(change as unknown as ConfChange)).toThrow(TypeError);
    }
  });

  it('reads nothing but what it writes', () => {
    const good = encodeConfChange({ type: 'remove', id: 'c' });
    const bad = [
      new Uint8Array(0),
      good.subarray(0, 2), // no id
      Uint8Array.of(2, ...good.subarray(1)), // another format
      Uint8Array.of(1, 3, ...good.subarray(2)), // an unknown kind
      Uint8Array.of(1, 2, 0xff, 0xfe), // not UTF-8
      new Uint8Array(3 + MAX_CONF_CHANGE_ID_BYTES).fill(1), // an id too long
    ];
    for (const data of bad) expect(decodeConfChange(data)).toBeNull();
  });
});

describe('the rules of a configuration', () => {
  const conf = configurationOf(['b', 'a', 'c'], ['d']);

  it('is sorted, and each change moves one member', () => {
    expect(conf).toEqual({ voters: ['a', 'b', 'c'], learners: ['d'] });
    expect(applyChange(conf, { type: 'add-learner', id: 'e' })).toEqual({ conf: { voters: ['a', 'b', 'c'], learners: ['d', 'e'] } });
    expect(applyChange(conf, { type: 'promote', id: 'd' })).toEqual({ conf: { voters: ['a', 'b', 'c', 'd'], learners: [] } });
    expect(applyChange(conf, { type: 'remove', id: 'b' })).toEqual({ conf: { voters: ['a', 'c'], learners: ['d'] } });
    expect(applyChange(conf, { type: 'remove', id: 'd' })).toEqual({ conf: { voters: ['a', 'b', 'c'], learners: [] } });
  });

  it('refuses a void or unsafe change, saying why', () => {
    expect(applyChange(conf, { type: 'add-learner', id: 'a' })).toEqual({ problem: 'already-member' });
    expect(applyChange(conf, { type: 'add-learner', id: 'd' })).toEqual({ problem: 'already-member' });
    expect(applyChange(conf, { type: 'promote', id: 'a' })).toEqual({ problem: 'not-learner' });
    expect(applyChange(conf, { type: 'promote', id: 'z' })).toEqual({ problem: 'not-learner' });
    expect(applyChange(conf, { type: 'remove', id: 'z' })).toEqual({ problem: 'not-member' });
    expect(applyChange(configurationOf(['a'], ['d']), { type: 'remove', id: 'a' })).toEqual({ problem: 'last-voter' });
    expect(applyChange(conf, { type: 'demote', id: 'a' } as unknown as ConfChange)).toEqual({ problem: 'malformed' });
  });

  it("finds what is wrong with a configuration read from outside (a snapshot's)", () => {
    expect(configurationProblem(conf)).toBeNull();
    expect(configurationProblem({ voters: [], learners: ['d'] })).toBe('no voter');
    expect(configurationProblem({ voters: ['b', 'a'], learners: [] })).toMatch(/sorted/);
    expect(configurationProblem({ voters: ['a', 'a'], learners: [] })).toMatch(/repeats/);
    expect(configurationProblem({ voters: ['a', 'b'], learners: ['b'] })).toMatch(/both/);
  });
});
