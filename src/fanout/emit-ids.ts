/**
 * The ids the items of emits a leader appends will take (issue 19), the leader's own and pure,
 * for its early leases (early-leases.ts). FanoutState gives ids in log order as emits apply,
 * each from `nextItemId` on, so a leader that saw every emit appended since the state's applied
 * index knows the ids of the next one: `nextItemId` and the items of the emits between. It
 * does not know them when entries before the first it was told of are not applied yet (a new
 * leader's log may hold emits of an earlier term; so may a gap in what it was told, while it did
 * not lead), nor past a requeue, whose count is the dead letters it finds at apply. A guess is
 * wrong when an emit between is refused (the topic full): the early lease then applies to fewer
 * items of its topic, or none, and never to another topic's (see early-leases.ts).
 */

/** Emits appended and not yet applied that the guess keeps: past it, it starts over, and guesses again once they applied. */
export const MAX_EMITS_AHEAD = 4096;

export class EmitIds {
  /** The first index seen in this term of leading; -1 before any. */
  #since = -1;
  /** The index after the last seen. */
  #next = 0;
  /** The emits appended since, not yet applied, in log order: their index and how many ids each takes (null: not known). */
  #ahead: Array<{ readonly index: number; readonly count: number | null }> = [];
  /** The ids the emits ahead take, of those whose count is known; and how many are not known. */
  #ids = 0;
  #unknown = 0;

  /** Forgets all: a new term of leading, or the end of one. */
  reset(): void {
    this.#since = -1;
    this.#ahead = [];
    this.#ids = 0;
    this.#unknown = 0;
  }

  /**
   * Entries `from` to `to` were appended, and their emits are told to `emitted` in log order.
   * Entries not told of before them (a gap: this member did not lead for a while) start over.
   */
  seen(from: number, to: number): void {
    if (this.#since >= 0 && from !== this.#next) this.reset();
    if (this.#since < 0) this.#since = from;
    this.#next = to + 1;
  }

  /**
   * An emit appended at `index` takes `count` ids (null for a requeue's unknown count). Returns
   * the first of its ids, or null when they are not known: `nextItemId` and `applied` are the
   * state's, as applied up to now.
   */
  emitted(index: number, count: number | null, nextItemId: number, applied: number): number | null {
    let skip = 0;
    for (; skip < this.#ahead.length; skip++) {
      const emit = this.#ahead[skip] as { readonly index: number; readonly count: number | null };
      if (emit.index > applied) break;
      if (emit.count === null) this.#unknown--;
      else this.#ids -= emit.count;
    }
    if (skip > 0) this.#ahead.splice(0, skip);
    if (this.#ahead.length >= MAX_EMITS_AHEAD) {
      // Guessed again once what follows applied: the emits since are no longer all known.
      this.reset();
      return null;
    }
    const known = this.#since >= 0 && applied >= this.#since - 1 && this.#unknown === 0;
    const first = known && count !== null ? nextItemId + this.#ids : null;
    this.#ahead.push({ index, count });
    if (count === null) this.#unknown++;
    else this.#ids += count;
    return first;
  }
}
