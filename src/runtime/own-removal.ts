import { decodeConfChange } from '../raft/conf-change.js';
import { isMember } from '../raft/configuration.js';
import { EntryType, type Configuration, type Entry, type NodeId } from '../raft/types.js';

/**
 * Whether a Ready removed this member, `self`, from the configuration, and at which index; null
 * when it did not. `wasMember`: whether the configuration held it before the Ready; `committed`:
 * the Ready's entries handed out, in order; `conf`: the configuration after it; `fallbackIndex`:
 * the index to name when no entry does (a snapshot's, or the applied index).
 *
 * A member the configuration held and no longer holds was removed. So is a joiner whose addition
 * and removal it applied in the same Ready: the configuration held it at no Ready's end, and
 * only the entries tell of the removal. A removal of this member before any addition of it (its
 * log replays the removal of an earlier member of the same address, before its own addition) is
 * none.
 */
export function ownRemoval(self: NodeId, wasMember: boolean, committed: readonly Entry[], conf: Configuration, fallbackIndex: number): number | null {
  let member = wasMember;
  for (const entry of committed) {
    if (entry.type !== EntryType.ConfChange) continue;
    const change = decodeConfChange(entry.data);
    if (change === null || change.type === 'bind' || change.id !== self) continue;
    if (change.type === 'add-learner') member = true;
    else if (change.type === 'remove' && member) return entry.index;
  }
  if (wasMember && !isMember(conf, self)) return committed[committed.length - 1]?.index ?? fallbackIndex;
  return null;
}
