import { isWellFormedConfChange, type ConfChange } from './conf-change.js';
import type { Configuration, NodeId } from './types.js';

/**
 * The configuration's rules (after etcd-io/raft's confchange/ and tracker/, simple changes
 * only): which changes are allowed, and what a configuration looks like after one. Pure
 * functions over the plain `Configuration` of types.ts; the node holds the current one.
 */

/** A configuration of these voters and learners: sorted, without repeats. */
export function configurationOf(voters: readonly NodeId[], learners: readonly NodeId[] = []): Configuration {
  return { voters: [...new Set(voters)].sort(), learners: [...new Set(learners)].sort() };
}

/**
 * What is wrong with a configuration read from outside the node (a snapshot's), or null: lists
 * not sorted or with repeats, a member in both, or no voter at all.
 */
export function configurationProblem(conf: Configuration): string | null {
  for (const list of [conf.voters, conf.learners]) {
    for (let i = 1; i < list.length; i++) if ((list[i - 1] as NodeId) >= (list[i] as NodeId)) return 'a list is not sorted or repeats a member';
  }
  if (conf.voters.length === 0) return 'no voter';
  if (conf.learners.some((id) => conf.voters.includes(id))) return 'a member is both voter and learner';
  return null;
}

export function isVoter(conf: Configuration, id: NodeId): boolean {
  return conf.voters.includes(id);
}

export function isMember(conf: Configuration, id: NodeId): boolean {
  return conf.voters.includes(id) || conf.learners.includes(id);
}

/** Voters then learners. */
export function membersOf(conf: Configuration): NodeId[] {
  return [...conf.voters, ...conf.learners];
}

export function sameConfiguration(a: Configuration, b: Configuration): boolean {
  return a.voters.join('\n') === b.voters.join('\n') && a.learners.join('\n') === b.learners.join('\n');
}

/**
 * Why a change cannot apply to a configuration:
 * - `malformed`: not a change conf-change.ts can encode;
 * - `already-member`: adding a member that is a voter or learner already;
 * - `not-learner`: promoting one that is not a learner (a voter, or not a member);
 * - `not-member`: removing one that is not a member;
 * - `last-voter`: removing the only voter, which would leave no one to elect a leader.
 */
export type ConfChangeProblem = 'malformed' | 'already-member' | 'not-learner' | 'not-member' | 'last-voter';

/** The configuration after `change`, or why the change is void or unsafe. */
export function applyChange(conf: Configuration, change: ConfChange): { readonly conf: Configuration } | { readonly problem: ConfChangeProblem } {
  if (!isWellFormedConfChange(change)) return { problem: 'malformed' };
  const { id } = change;
  switch (change.type) {
    case 'add-learner':
      if (isMember(conf, id)) return { problem: 'already-member' };
      return { conf: configurationOf(conf.voters, [...conf.learners, id]) };
    case 'promote':
      if (!conf.learners.includes(id)) return { problem: 'not-learner' };
      return { conf: configurationOf([...conf.voters, id], conf.learners.filter((l) => l !== id)) };
    case 'remove':
      if (!isMember(conf, id)) return { problem: 'not-member' };
      if (conf.voters.length === 1 && conf.voters[0] === id) return { problem: 'last-voter' };
      return { conf: configurationOf(conf.voters.filter((v) => v !== id), conf.learners.filter((l) => l !== id)) };
  }
}
