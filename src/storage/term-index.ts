import type { Entry, SnapshotMeta } from '../raft/types.js';
import type { LogBounds } from './store-checks.js';

/**
 * The terms of the stored log, kept in memory by a store so that it can check a batch, and a
 * compaction, without reading anything back. One number per retained entry: the protocol keeps
 * the retained log in memory anyway.
 */
export class TermIndex implements LogBounds {
  private current: SnapshotMeta;
  /** terms[i] is the term of the entry at current.index + 1 + i. */
  private terms: number[];

  constructor(snapshot: SnapshotMeta, entries: readonly Entry[]) {
    this.current = { index: snapshot.index, term: snapshot.term };
    this.terms = entries.map((entry) => entry.term);
  }

  /** Where the retained log starts (the meta of the stored snapshot). */
  get snapshot(): SnapshotMeta {
    return this.current;
  }

  get firstIndex(): number {
    return this.current.index + 1;
  }

  get lastIndex(): number {
    return this.current.index + this.terms.length;
  }

  termAt(index: number): number {
    if (index === this.current.index) return this.current.term;
    const term = this.terms[index - this.firstIndex];
    if (term === undefined) throw new RangeError(`No entry at index ${index} (the log holds ${this.firstIndex}..${this.lastIndex})`);
    return term;
  }

  /** Records entries that a checked batch writes, dropping the replaced suffix. */
  apply(entries: readonly Entry[]): void {
    const first = entries[0];
    if (first === undefined) return;
    this.terms.length = first.index - this.firstIndex;
    for (const entry of entries) this.terms.push(entry.term);
  }

  /** Records a snapshot installed from the leader: it replaces the whole log, which is empty until entries follow. */
  install(snapshot: SnapshotMeta): void {
    this.current = { index: snapshot.index, term: snapshot.term };
    this.terms = [];
  }

  /**
   * Records a checked compaction: drops the terms up to `snapshot.index` in one splice, so that
   * folding thousands of entries into a snapshot costs one move of the retained ones, not one
   * shift per entry dropped.
   */
  compact(snapshot: SnapshotMeta): void {
    this.terms.splice(0, snapshot.index - this.current.index);
    this.current = { index: snapshot.index, term: snapshot.term };
  }
}
