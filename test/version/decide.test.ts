import { describe, expect, it } from 'vitest';
import type { MemberVersions } from '../../src/version/cluster-version.js';
import { nextActivation, type ActivationInput } from '../../src/version/decide.js';
import { protocolOf } from '../../src/version/versions.js';

/** A member that reads cluster versions `min` to `max`, and the protocols they need. */
const reads = (max: number, min = 1): MemberVersions => ({ protocol: { min: 1, max: protocolOf(max) }, stateMachine: { min, max } });
const voters = ['a', 'b', 'c'];

function input(over: Partial<ActivationInput> = {}): ActivationInput {
  return { active: 1, voters, announced: new Map(voters.map((id) => [id, reads(3)])), live: () => true, ...over };
}

describe('nextActivation', () => {
  it('raises the version one step once every voter is live and announced it reads the next', () => {
    expect(nextActivation(input())).toEqual({ kind: 'activate', from: 1, to: 2 });
    // Each member reads up to 3: still one step at a time, from the version in force.
    expect(nextActivation(input({ active: 2 }))).toEqual({ kind: 'activate', from: 2, to: 3 });
  });

  it('waits for a voter that announced nothing: silence is "not yet", never "yes"', () => {
    const announced = new Map([['a', reads(2)], ['b', reads(2)]]);
    expect(nextActivation(input({ announced }))).toEqual({ kind: 'waiting', waitingFor: ['c'] });
  });

  it('waits for a voter that reads the next version but not its protocol (protocol 2 comes with version 2)', () => {
    const announced = new Map([['a', reads(2)], ['b', { ...reads(2), protocol: { min: 1, max: 1 } }], ['c', reads(2)]]);
    expect(nextActivation(input({ announced }))).toEqual({ kind: 'waiting', waitingFor: ['b'] });
  });

  it('waits for a voter that is not live, whatever it announced', () => {
    expect(nextActivation(input({ live: (id) => id !== 'b' }))).toEqual({ kind: 'waiting', waitingFor: ['b'] });
  });

  it('stays current while a voter announced a highest version below the next, live or not', () => {
    const announced = new Map([['a', reads(2)], ['b', reads(1)], ['c', reads(2)]]);
    expect(nextActivation(input({ announced }))).toEqual({ kind: 'current' });
    expect(nextActivation(input({ announced, live: (id) => id !== 'b' }))).toEqual({ kind: 'current' });
    expect(nextActivation(input({ active: 3 }))).toEqual({ kind: 'current' });
  });

  it('waits for a voter whose lowest version read is past the next', () => {
    const announced = new Map([['a', reads(3)], ['b', reads(3, 3)], ['c', reads(3)]]);
    expect(nextActivation(input({ announced }))).toEqual({ kind: 'waiting', waitingFor: ['b'] });
  });

  it('reads announcements of voters only', () => {
    const announced = new Map([['a', reads(2)], ['b', reads(2)], ['c', reads(2)], ['outsider', reads(1)]]);
    expect(nextActivation(input({ announced }))).toEqual({ kind: 'activate', from: 1, to: 2 });
  });
});
