import { isWellFormedConfChange, isWellFormedPeerId, peerIdOf, type ConfChange } from './conf-change.js';
import type { Configuration, NodeId, PeerIdBinding } from './types.js';

/**
 * The configuration's rules (after etcd-io/raft's confchange/ and tracker/, simple changes
 * only): which changes are allowed, and what a configuration looks like after one. Pure
 * functions over the plain `Configuration` of types.ts; the node holds the current one.
 */

/**
 * A configuration of these voters and learners, sorted, without repeats, and these members'
 * peer ids (sorted by member; a binding of a member not in the lists is dropped).
 */
export function configurationOf(voters: readonly NodeId[], learners: readonly NodeId[] = [], peerIds: readonly PeerIdBinding[] = []): Configuration {
  const members = new Set([...voters, ...learners]);
  const bound = new Map(peerIds.filter(([id]) => members.has(id)));
  return {
    voters: [...new Set(voters)].sort(),
    learners: [...new Set(learners)].sort(),
    peerIds: [...bound.keys()].sort().map((id): PeerIdBinding => [id, bound.get(id) as string]),
  };
}

/**
 * What is wrong with a configuration read from outside the node (a snapshot's), or null: lists
 * not sorted or with repeats, a member in both, no voter at all; a binding of a non-member, not
 * sorted by member, of a malformed peer id, or of a peer id bound to another member too.
 */
export function configurationProblem(conf: Configuration): string | null {
  for (const list of [conf.voters, conf.learners]) {
    for (let i = 1; i < list.length; i++) if ((list[i - 1] as NodeId) >= (list[i] as NodeId)) return 'a list is not sorted or repeats a member';
  }
  if (conf.voters.length === 0) return 'no voter';
  if (conf.learners.some((id) => conf.voters.includes(id))) return 'a member is both voter and learner';
  const seen = new Set<string>();
  for (let i = 0; i < conf.peerIds.length; i++) {
    const [id, peerId] = conf.peerIds[i] as PeerIdBinding;
    if (i > 0 && (conf.peerIds[i - 1] as PeerIdBinding)[0] >= id) return 'the peer ids are not sorted by member or repeat one';
    if (!isMember(conf, id)) return 'a peer id is bound to a non-member';
    if (!isWellFormedPeerId(peerId)) return 'a bound peer id is malformed';
    if (seen.has(peerId)) return 'a peer id is bound to two members';
    seen.add(peerId);
  }
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

/** The peer id bound to `id`, or null when it has none (yet). */
export function boundPeerId(conf: Configuration, id: NodeId): string | null {
  for (const [member, peerId] of conf.peerIds) if (member === id) return peerId;
  return null;
}

export function sameConfiguration(a: Configuration, b: Configuration): boolean {
  return (
    a.voters.join('\n') === b.voters.join('\n') &&
    a.learners.join('\n') === b.learners.join('\n') &&
    a.peerIds.map(([id, peerId]) => `${id} ${peerId}`).join('\n') === b.peerIds.map(([id, peerId]) => `${id} ${peerId}`).join('\n')
  );
}

/**
 * Why a change cannot apply to a configuration:
 * - `malformed`: not a change conf-change.ts can encode;
 * - `already-member`: adding a member that is a voter or learner already;
 * - `not-learner`: promoting one that is not a learner (a voter, or not a member);
 * - `not-member`: removing or binding one that is not a member;
 * - `last-voter`: removing the only voter, which would leave no one to elect a leader;
 * - `already-bound`: binding a member that has a peer id already, the same or another: a
 *   binding never changes (a member whose key changed is removed and joins again), and binding
 *   the same one again would be a void entry;
 * - `peer-id-taken`: binding (or adding) a member with a peer id bound to another member, which
 *   would let one key speak for two members;
 * - `too-many-members`: adding one to a configuration of MAX_MEMBERS already.
 */
export type ConfChangeProblem = 'malformed' | 'already-member' | 'not-learner' | 'not-member' | 'last-voter' | 'already-bound' | 'peer-id-taken' | 'too-many-members';

/**
 * The most members (voters and learners) a configuration holds. Anyone holding the cluster
 * secret may ask to join, and every member costs the leader a stream of appends and
 * heartbeats; past this many, a join is refused rather than let the configuration grow until
 * it no longer fits a frame (the transport's MAX_CONF_MEMBERS, 1,024, which the protocol may not
 * import) or the leader's time.
 */
export const MAX_MEMBERS = 256;

/** The configuration after `change`, or why the change is void or unsafe. */
export function applyChange(conf: Configuration, change: ConfChange): { readonly conf: Configuration } | { readonly problem: ConfChangeProblem } {
  if (!isWellFormedConfChange(change)) return { problem: 'malformed' };
  const { id } = change;
  const peerId = peerIdOf(change);
  if (peerId !== undefined && conf.peerIds.some(([member, bound]) => bound === peerId && member !== id)) return { problem: 'peer-id-taken' };
  const peerIds = peerId === undefined ? conf.peerIds : [...conf.peerIds, [id, peerId] as const];
  switch (change.type) {
    case 'add-learner':
      if (isMember(conf, id)) return { problem: 'already-member' };
      if (conf.voters.length + conf.learners.length >= MAX_MEMBERS) return { problem: 'too-many-members' };
      return { conf: configurationOf(conf.voters, [...conf.learners, id], peerIds) };
    case 'promote':
      if (!conf.learners.includes(id)) return { problem: 'not-learner' };
      return { conf: configurationOf([...conf.voters, id], conf.learners.filter((l) => l !== id), conf.peerIds) };
    case 'remove':
      if (!isMember(conf, id)) return { problem: 'not-member' };
      if (conf.voters.length === 1 && conf.voters[0] === id) return { problem: 'last-voter' };
      // configurationOf drops the removed member's binding with it.
      return { conf: configurationOf(conf.voters.filter((v) => v !== id), conf.learners.filter((l) => l !== id), conf.peerIds) };
    case 'bind':
      if (!isMember(conf, id)) return { problem: 'not-member' };
      if (boundPeerId(conf, id) !== null) return { problem: 'already-bound' };
      return { conf: configurationOf(conf.voters, conf.learners, peerIds) };
  }
}
