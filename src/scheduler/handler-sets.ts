import type { NodeId } from '../raft/types.js';

/**
 * Handler sets remembered having been made, the latest ones: enough for the few sets that the
 * jobs of a cluster go through as its members register them (one member, two, all of them).
 */
const MAX_RECENT_HANDLER_SETS = 16;

/**
 * The handlers of a job before its first registration: a new job's set is this one with its
 * member added (HandlerSets.with), found by identity rather than written out as a key.
 */
export const NO_HANDLERS: ReadonlySet<NodeId> = new Set();

/**
 * The handler sets of a SchedulerState's jobs, made once and shared. Sets are never changed once
 * made, so jobs share them: with a set per job, a state of many jobs held a set for each, and a
 * set costs more than the job's other fields together.
 */
export class HandlerSets {
  /** The sets made last, by their members in order (see of). */
  readonly #recent = new Map<string, ReadonlySet<NodeId>>();
  /** For the sets a member was added to last, the sets that made, by the member added (see with). */
  readonly #additions = new Map<ReadonlySet<NodeId>, Map<NodeId, ReadonlySet<NodeId>>>();

  /** Forgets every set made (a restore). */
  clear(): void {
    this.#recent.clear();
    this.#additions.clear();
  }

  /**
   * The set of `members`, in that order: one made lately if it holds the same members in the
   * same order (the order is state: a snapshot holds it), else a new one.
   */
  of(members: Iterable<NodeId>): ReadonlySet<NodeId> {
    const list = [...members];
    const key = JSON.stringify(list);
    const known = this.#recent.get(key);
    if (known !== undefined) return known;
    const set: ReadonlySet<NodeId> = new Set(list);
    if (this.#recent.size >= MAX_RECENT_HANDLER_SETS) this.#recent.delete(this.#recent.keys().next().value as string);
    this.#recent.set(key, set);
    return set;
  }

  /**
   * `set` with `member` added last (see of): one made lately from the same set and member if
   * there is one, found without listing the set and writing out its key, which every
   * registration but a job's first did.
   */
  with(set: ReadonlySet<NodeId>, member: NodeId): ReadonlySet<NodeId> {
    let added = this.#additions.get(set);
    const known = added?.get(member);
    if (known !== undefined) return known;
    const made = this.of([...set, member]);
    if (added === undefined) {
      if (this.#additions.size >= MAX_RECENT_HANDLER_SETS) this.#additions.delete(this.#additions.keys().next().value as ReadonlySet<NodeId>);
      this.#additions.set(set, (added = new Map()));
    }
    if (added.size >= MAX_RECENT_HANDLER_SETS) added.clear();
    added.set(member, made);
    return made;
  }
}
