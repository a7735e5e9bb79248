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
  /**
   * Whether the configuration it holds came from its storage or a leader: false for a member
   * that started with an empty log, whose configuration is the founding voters it was given
   * until a leader's entries or snapshot tell it one.
   */
  #learned: boolean;

  /** `empty`: the member starts with an empty log. */
  constructor(self: NodeId, conf: Configuration, incarnation: Incarnation | undefined, empty = false) {
    this.#self = self;
    this.#incarnation = incarnation;
    this.#held = holdsSelf(conf, self, incarnation);
    this.#learned = !empty;
  }

  /**
   * The index of this member's removal by a Ready of `committed` entries that left `conf`; null
   * when it brought none. `snapshot`: the configuration of the leader's snapshot the Ready
   * installed first (null: none; undefined: one without a configuration, the founding one).
   *
   * A member started empty at an address the founding voters list, after the member there was
   * removed (README, "Recovering a member"), joins as a new member; when the leader's log no
   * longer holds the removal, it learns the configuration from a snapshot taken before its own
   * addition, which does not hold it. Its founding voters were never its configuration: that
   * snapshot is none of its removal (a stranger found such a member stopped as removed every time):
   * the snapshot's configuration is where it starts from, and a removal in the entries after it
   * is its own.
   */
  removal(committed: readonly Entry[], conf: Configuration, fallbackIndex: number, snapshot: Configuration | null | undefined = null): number | null {
    const was = this.#learned || snapshot === null || snapshot === undefined ? this.#held : holdsSelf(snapshot, this.#self, this.#incarnation);
    const at = ownRemoval(this.#self, was, committed, conf, fallbackIndex, this.#incarnation);
    this.#held = holdsSelf(conf, this.#self, this.#incarnation);
    if (snapshot !== null || committed.length > 0) this.#learned = true;
    return at;
  }
}
