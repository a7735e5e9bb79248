/**
 * The segments a LevelLogStorage holds (see level-layout.ts): the key each starts at and the
 * last index written in it, in key order. A store keeps them in memory, beside its terms, so that
 * it knows which keys a suffix replacement, a compaction or an installed snapshot removes without
 * reading anything back. At most one pair per retained entry, and one per save in practice.
 *
 * A segment's written end can lie past the entries it holds for readers: a later segment that
 * starts within it replaced the rest. Such a tail comes back if the later segment is removed
 * alone, so a segment whose written end is past a new snapshot is removed in the snapshot's own
 * write, never in the background with the keys that hold only entries below it.
 */
export class StoredSegments {
  private starts: number[] = [];
  private ends: number[] = [];

  /** `segments` in key order, as read from the store. */
  constructor(segments: readonly { readonly start: number; readonly end: number }[]) {
    for (const { start, end } of segments) {
      this.starts.push(start);
      this.ends.push(end);
    }
  }

  /** The keys held, lowest first (a copy). */
  keys(): number[] {
    return [...this.starts];
  }

  /**
   * Records a segment written at `start`, up to `end`: the keys after it go, since it replaces
   * every entry from `start` on, and one at `start` is overwritten. Returns the keys to delete.
   */
  write(start: number, end: number): number[] {
    const removed = this.removeFrom(this.firstAfter(start));
    if (this.starts.at(-1) === start) this.ends[this.ends.length - 1] = end;
    else {
      this.starts.push(start);
      this.ends.push(end);
    }
    return removed;
  }

  /**
   * Records a snapshot installed at `index`, which replaces the whole log. Returns the keys to
   * delete in the snapshot's write: every segment written past `index`. The others hold only
   * entries at or below it: the caller removes keys up to `index` once the snapshot is durable.
   */
  install(index: number): number[] {
    const now = this.starts.filter((_, i) => (this.ends[i] as number) > index);
    this.starts = [];
    this.ends = [];
    return now;
  }

  /**
   * Records a compaction up to `index` of a log that ends at `lastIndex`. The segment holding
   * `index + 1` stays, and those after it. Of those before it, the ones written past `index`
   * are returned in `now`, to delete in the snapshot's write; every key up to `staleTo` may be
   * removed once the snapshot is durable (null: none).
   */
  compact(index: number, lastIndex: number): { now: number[]; staleTo: number | null } {
    // The last segment starting at or before index + 1 holds it; none stays past the log's end.
    const keep = index < lastIndex ? Math.max(0, this.firstAfter(index + 1) - 1) : this.starts.length;
    if (keep === 0) return { now: [], staleTo: null };
    const now: number[] = [];
    for (let i = 0; i < keep; i++) if ((this.ends[i] as number) > index) now.push(this.starts[i] as number);
    const staleTo = keep === this.starts.length ? index : (this.starts[keep] as number) - 1;
    this.starts.splice(0, keep);
    this.ends.splice(0, keep);
    return { now, staleTo };
  }

  /** The position of the first key above `index`. */
  private firstAfter(index: number): number {
    let at = this.starts.length;
    while (at > 0 && (this.starts[at - 1] as number) > index) at--;
    return at;
  }

  private removeFrom(position: number): number[] {
    this.ends.splice(position);
    return this.starts.splice(position);
  }
}
