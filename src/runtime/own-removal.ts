import { decodeConfChange } from '../raft/conf-change.js';
import { boundPeerId, isMember } from '../raft/configuration.js';
import { EntryType, type Configuration, type Entry, type NodeId } from '../raft/types.js';

/**
 * Which member this process is beyond its id (its address, which a machine replaced or a
 * member removed and started again empty takes again): the peer id its key proves, and whether
 * it joined a running cluster rather than founded it. A joiner is added bound to its peer id; a
 * founder is one of the founding voters, unbound until the leader binds it.
 */
export interface Incarnation {
  readonly peerId: string;
  readonly joined: boolean;
}

/**
 * Whether `conf` holds this member as `incarnation` is: it holds `self`, bound to this peer id,
 * or unbound while this member is a founder. Without an incarnation, holding `self` is enough.
 */
export function holdsSelf(conf: Configuration, self: NodeId, incarnation: Incarnation | undefined): boolean {
  return isMember(conf, self) && ownBinding(boundPeerId(conf, self), incarnation);
}

/** Whether a member bound to `peerId` (null or undefined: unbound) is `incarnation`. */
function ownBinding(peerId: string | null | undefined, incarnation: Incarnation | undefined): boolean {
  if (incarnation === undefined) return true;
  return peerId === null || peerId === undefined ? !incarnation.joined : peerId === incarnation.peerId;
}

/**
 * Whether a Ready removed this member, `self`, from the configuration, and at which index; null
 * when it did not. `wasMember`: whether the configuration held it before the Ready (holdsSelf);
 * `committed`: the Ready's entries handed out, in order; `conf`: the configuration after it;
 * `fallbackIndex`: the index to name when no entry does (a snapshot's, or the applied index).
 *
 * A member the configuration held and no longer holds was removed. So is a joiner whose addition
 * and removal it applied in the same Ready: the configuration held it at no Ready's end, and
 * only the entries tell of the removal. A removal of this member's id while the configuration
 * held another member of it is none: its log replays the removal of an earlier member of the
 * same address (added, or bound, with another peer id, or a founder's place unbound before this
 * member joined), before its own addition.
 */
export function ownRemoval(self: NodeId, wasMember: boolean, committed: readonly Entry[], conf: Configuration, fallbackIndex: number, incarnation?: Incarnation): number | null {
  let member = wasMember;
  for (const entry of committed) {
    if (entry.type !== EntryType.ConfChange) continue;
    const change = decodeConfChange(entry.data);
    if (change === null || change.id !== self) continue;
    if (change.type === 'add-learner') member = ownBinding(change.peerId, incarnation);
    // A binding tells which member holds the id only to one that knows its own peer id.
    else if (change.type === 'bind' && incarnation !== undefined) member = ownBinding(change.peerId, incarnation);
    else if (change.type === 'remove' && member) return entry.index;
  }
  if (wasMember && !holdsSelf(conf, self, incarnation)) return committed[committed.length - 1]?.index ?? fallbackIndex;
  return null;
}

/**
 * This member's place in the configuration, Ready after Ready: whether the configuration holds
 * it (holdsSelf), which a joiner starts outside of (the founding voters it is given are not its
 * configuration), and the removal a Ready brings (ownRemoval).
 */
export class SelfInConfiguration {
  readonly #self: NodeId;
  readonly #incarnation: Incarnation | undefined;
  #held: boolean;

  constructor(self: NodeId, conf: Configuration, incarnation: Incarnation | undefined) {
    this.#self = self;
    this.#incarnation = incarnation;
    this.#held = holdsSelf(conf, self, incarnation);
  }

  /** The index of this member's removal by a Ready of `committed` entries that left `conf`; null when it brought none. */
  removal(committed: readonly Entry[], conf: Configuration, fallbackIndex: number): number | null {
    const at = ownRemoval(this.#self, this.#held, committed, conf, fallbackIndex, this.#incarnation);
    this.#held = holdsSelf(conf, this.#self, this.#incarnation);
    return at;
  }
}
