import type { NodeId } from './types.js';

/** How many votes of `size` voters make a majority. */
export function quorumSize(size: number): number {
  return Math.floor(size / 2) + 1;
}

/** The highest index that a majority of voters has: the commit candidate. */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  const matches = voters.map(matchOf).sort((a, b) => b - a);
  return matches[quorumSize(voters.length) - 1] ?? 0;
}

export type VoteResult = 'won' | 'lost' | 'pending';

/** The outcome of an election from the votes received so far. */
export function tallyVotes(voters: readonly NodeId[], votes: ReadonlyMap<NodeId, boolean>): VoteResult {
  let granted = 0;
  let rejected = 0;
  for (const id of voters) {
    const v = votes.get(id);
    if (v === true) granted++;
    else if (v === false) rejected++;
  }
  const q = quorumSize(voters.length);
  if (granted >= q) return 'won';
  if (rejected > voters.length - q) return 'lost';
  return 'pending';
}
