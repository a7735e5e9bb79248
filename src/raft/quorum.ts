import type { NodeId } from './types.js';

/** How many votes of `size` voters make a majority. */
export function quorumSize(size: number): number {
  return Math.floor(size / 2) + 1;
}

/**
 * The highest index that a majority of voters has: the commit candidate. Counted, not sorted:
 * the leader asks on every acknowledgement, and sorting even three numbers allocated about
 * 800 bytes a call (measured), a good part of the garbage of the commit path.
 */
export function committedIndex(voters: readonly NodeId[], matchOf: (id: NodeId) => number): number {
  const q = quorumSize(voters.length);
  let best = 0;
  for (const candidate of voters) {
    const index = matchOf(candidate);
    if (index <= best) continue;
    let holding = 0;
    for (const other of voters) if (matchOf(other) >= index) holding++;
    if (holding >= q) best = index;
  }
  return best;
}

/** Whether `members` holds a majority of `voters` (members that are not voters count for nothing). */
export function hasQuorum(voters: readonly NodeId[], members: ReadonlySet<NodeId>): boolean {
  let n = 0;
  for (const id of voters) if (members.has(id)) n++;
  return n >= quorumSize(voters.length);
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
