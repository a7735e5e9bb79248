import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { committedIndex, quorumSize } from '../../src/raft/quorum.js';

describe('committedIndex', () => {
  it('is the highest index held by a majority: the quorum-th largest match', () => {
    fc.assert(
      fc.property(fc.array(fc.nat({ max: 1000 }), { minLength: 1, maxLength: 9 }), (matches) => {
        const voters = matches.map((_, i) => `v${i}`);
        const matchOf = (id: string): number => matches[Number(id.slice(1))] as number;
        const sorted = [...matches].sort((a, b) => b - a);
        expect(committedIndex(voters, matchOf)).toBe(sorted[quorumSize(matches.length) - 1]);
      }),
    );
  });

  it('is 0 with no voters', () => {
    expect(committedIndex([], () => 5)).toBe(0);
  });
});
