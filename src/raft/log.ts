import { InvariantError } from './invariant.js';
import type { Entry, SnapshotMeta } from './types.js';

/**
 * The Raft log held in memory. The log is small (claims of cron slots, compacted behind a
 * snapshot), so the protocol reads it from here synchronously and storage is write-behind:
 * `unstableFrom` marks the first entry not yet handed to storage.
 */
export class RaftLog {
  /** entries[i] has index snapshot.index + 1 + i. */
  #entries: Entry[];
  #snapshot: SnapshotMeta;
  /** Highest index known to be committed. */
  committed: number;
  /** Highest index handed to the state machine and acknowledged by advance(). */
  applied: number;
  /** Highest index handed out for applying but not yet acknowledged. */
  applying: number;
  /** First index not yet handed to storage; lastIndex + 1 when everything is handed out. */
  #unstableFrom: number;
  /**
   * Highest index known to be durable in this member's storage. Lowered when the log is
   * truncated: a replaced suffix is no longer on disk as it was, and a leader must never count
   * its own copy of an entry before that copy is durable.
   */
  stable: number;

  constructor(snapshot: SnapshotMeta, entries: readonly Entry[], committed: number) {
    this.#snapshot = snapshot;
    this.#entries = [...entries];
    // A snapshot holds only committed state; a commit point saved before it was taken may lag.
    this.committed = Math.max(committed, snapshot.index);
    this.applied = snapshot.index;
    this.applying = snapshot.index;
    this.#unstableFrom = this.lastIndex() + 1;
    this.stable = this.lastIndex();
  }

  firstIndex(): number {
    return this.#snapshot.index + 1;
  }

  lastIndex(): number {
    return this.#snapshot.index + this.#entries.length;
  }

  lastTerm(): number {
    return this.term(this.lastIndex()) ?? 0;
  }

  snapshot(): SnapshotMeta {
    return this.#snapshot;
  }

  /** The term of the entry at `index`; undefined when it is compacted away or beyond the end. */
  term(index: number): number | undefined {
    if (index === this.#snapshot.index) return this.#snapshot.term;
    return this.#entries[index - this.#snapshot.index - 1]?.term;
  }

  entry(index: number): Entry | undefined {
    return this.#entries[index - this.#snapshot.index - 1];
  }

  matchTerm(index: number, term: number): boolean {
    return this.term(index) === term;
  }

  /** Whether a candidate whose log ends at (lastIndex, lastTerm) is at least as up to date as ours (Raft paper, 5.4.1). */
  isUpToDate(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex >= this.lastIndex());
  }

  /** Whether a log that ends at (lastIndex, lastTerm) holds more than ours: strictly more up to date. */
  isBehind(lastIndex: number, lastTerm: number): boolean {
    const ourTerm = this.lastTerm();
    return lastTerm > ourTerm || (lastTerm === ourTerm && lastIndex > this.lastIndex());
  }

  /**
   * Entries in [lo, hi), stopping early once `maxBytes` of data is reached (at least one entry is
   * returned when any is available, so that a large entry cannot stall replication).
   */
  slice(lo: number, hi: number, maxBytes = Number.POSITIVE_INFINITY, maxCount = Number.POSITIVE_INFINITY): Entry[] {
    const from = Math.max(lo, this.firstIndex());
    const to = Math.min(hi, this.lastIndex() + 1);
    const out: Entry[] = [];
    let bytes = 0;
    for (let index = from; index < to && out.length < maxCount; index++) {
      const entry = this.#entries[index - this.#snapshot.index - 1] as Entry;
      bytes += entry.data.byteLength;
      if (out.length > 0 && bytes > maxBytes) break;
      out.push(entry);
    }
    return out;
  }

  /** Appends entries that follow the last one. Returns the new last index. */
  append(entries: readonly Entry[]): number {
    for (const entry of entries) this.#entries.push(entry);
    return this.lastIndex();
  }

  /**
   * The follower's half of AppendEntries: given entries that follow a matching `prevIndex`,
   * finds the first conflicting or new entry and replaces the log's suffix from there.
   * Returns the index of the last new entry. Never truncates committed entries.
   */
  maybeAppend(prevIndex: number, entries: readonly Entry[]): number {
    const lastNew = prevIndex + entries.length;
    for (let i = 0; i < entries.length; i++) {
      const entry = entries[i] as Entry;
      const existing = this.term(entry.index);
      if (existing === entry.term) continue;
      if (existing !== undefined) {
        if (entry.index <= this.committed) {
          throw new InvariantError(`entry ${entry.index} conflicts with the committed log (committed ${this.committed})`);
        }
        this.#truncateFrom(entry.index);
      }
      this.append(entries.slice(i));
      break;
    }
    return lastNew;
  }

  #truncateFrom(index: number): void {
    this.#entries.length = index - this.#snapshot.index - 1;
    if (this.#unstableFrom > index) this.#unstableFrom = index;
    if (this.stable >= index) this.stable = index - 1;
    if (this.applying >= index) this.applying = index - 1;
  }

  /**
   * The largest index <= `index` whose term is <= `term`: the probe position for fast
   * back-off after a rejected append (etcd's findConflictByTerm).
   */
  findConflictByTerm(index: number, term: number): number {
    let at = Math.min(index, this.lastIndex());
    while (at > this.#snapshot.index) {
      const t = this.term(at);
      if (t === undefined || t <= term) break;
      at--;
    }
    return at;
  }

  commitTo(index: number): boolean {
    if (index <= this.committed) return false;
    if (index > this.lastIndex()) {
      throw new InvariantError(`commit ${index} is beyond the last index ${this.lastIndex()}`);
    }
    this.committed = index;
    return true;
  }

  /** Entries not yet handed to storage; marks them handed out. */
  takeUnstable(): Entry[] {
    const out = this.slice(this.#unstableFrom, this.lastIndex() + 1);
    this.#unstableFrom = this.lastIndex() + 1;
    return out;
  }

  hasUnstable(): boolean {
    return this.#unstableFrom <= this.lastIndex();
  }

  /**
   * Committed entries not yet handed to the state machine, at most `maxCount` and none past
   * `ceiling`; marks them applying.
   */
  takeCommitted(maxCount: number, ceiling = Number.POSITIVE_INFINITY): Entry[] {
    const out = this.slice(this.applying + 1, Math.min(this.committed, ceiling) + 1, Number.POSITIVE_INFINITY, maxCount);
    const last = out[out.length - 1];
    if (last !== undefined) this.applying = last.index;
    return out;
  }

  hasCommittedToApply(ceiling = Number.POSITIVE_INFINITY): boolean {
    return Math.min(this.committed, ceiling) > this.applying;
  }

  /**
   * Records that a write ending at (index, term) is durable. Writes complete in order, so
   * everything before it is durable too. A write whose last entry was replaced meanwhile
   * proves nothing: the replacement's own write will.
   */
  stableTo(index: number, term: number): boolean {
    if (this.term(index) !== term || index <= this.stable) return false;
    this.stable = index;
    return true;
  }

  appliedTo(index: number): void {
    if (index > this.applied) this.applied = index;
  }

  /**
   * Drops the entries up to `index`, which a snapshot now stands for. They must be applied
   * (the snapshot holds their effect) and durable (a write still in flight checks the term of
   * its last entry against the log's, which needs that entry kept).
   */
  compact(index: number): void {
    if (index <= this.#snapshot.index) return;
    if (index > this.applied || index > this.stable) {
      throw new InvariantError(`compaction to ${index} past the applied (${this.applied}) or durable (${this.stable}) index`);
    }
    const term = this.term(index) as number;
    this.#entries.splice(0, index - this.#snapshot.index);
    this.#snapshot = { index, term };
  }

  /**
   * Replaces the whole log with a leader's snapshot: the log is empty after it, committed and
   * handed out for applying up to it. Nothing of it is durable yet: `stable` falls back to the
   * previous snapshot, which is on disk, until the snapshot's write completes.
   */
  restore(snapshot: SnapshotMeta): void {
    const durable = this.#snapshot.index;
    this.#entries = [];
    this.#snapshot = { index: snapshot.index, term: snapshot.term };
    this.committed = snapshot.index;
    this.applying = snapshot.index;
    this.#unstableFrom = snapshot.index + 1;
    this.stable = Math.min(this.stable, durable);
  }

  /** Records that a restored snapshot is durable (stableTo for a snapshot rather than an entry). */
  snapshotStable(snapshot: SnapshotMeta): void {
    if (this.#snapshot.index === snapshot.index && this.#snapshot.term === snapshot.term && this.stable < snapshot.index) this.stable = snapshot.index;
  }
}
