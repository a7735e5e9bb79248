import type { Entry, SnapshotMeta } from '../raft/types.js';
import type { LogBounds } from './store-checks.js';

/**
 * The terms of the stored log, kept in memory by a store so that it can check a batch and know
 * which stored entries a suffix replacement removes without reading anything back. One number
 * per entry: the protocol keeps the whole log in memory anyway.
 */
export class TermIndex implements LogBounds {
  readonly snapshot: SnapshotMeta;
  /** terms[i] is the term of the entry at snapshot.index + 1 + i. */
  private readonly terms: number[];

  constructor(snapshot: SnapshotMeta, entries: readonly Entry[]) {
    this.snapshot = { index: snapshot.index, term: snapshot.term };
    this.terms = entries.map((entry) => entry.term);
  }

  get firstIndex(): number {
    return this.snapshot.index + 1;
  }

  get lastIndex(): number {
    return this.snapshot.index + this.terms.length;
  }

  termAt(index: number): number {
    if (index === this.snapshot.index) return this.snapshot.term;
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
}
