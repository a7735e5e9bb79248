import type { Entry, NodeId } from '../src/raft/types.js';
import type { RaftLog } from '../src/raft/log.js';
import type { ViolationKind } from './violations.js';

const decoder = new TextDecoder();

/** An entry's bytes as text, as the checker keys applied entries: to compare an entry with a proposal's bytes. */
export function entryText(data: Uint8Array): string {
  return decoder.decode(data);
}

/**
 * Raft's safety properties, checked as the simulation runs: at most one leader per term; the
 * same entry applied at each index on every member; applied indexes never skip or go back
 * within a process's life; every new leader holds every entry committed in an earlier term
 * (leader completeness);
 * every acknowledged proposal stays in the log where it was acknowledged, and none that a client
 * was told was dropped ever commits.
 */
export class SafetyChecker {
  readonly violations: string[] = [];
  /** Every kind reported, in the order first seen (also those past the violations kept). */
  readonly kinds: ViolationKind[] = [];
  readonly #leaderOfTerm = new Map<number, NodeId>();
  /** index -> "term|pid|data" of the entry applied there (the committed log). */
  readonly #committed = new Map<number, string>();
  /** member -> last applied index in its current life. */
  readonly #lastApplied = new Map<NodeId, number>();
  /** Acknowledged proposals by index: the text proposed, and its entry's bytes as text (entryText). */
  readonly #acked = new Map<number, { readonly text: string; readonly entry: string }>();
  /**
   * Proposals a client was told were dropped (they will never commit): their entry's bytes as
   * text, to the text proposed; and how many times each entry was proposed (the liveness marker
   * is proposed again until it applies, and only a proposal made once is judged).
   */
  readonly #dropped = new Map<string, string>();
  readonly #proposed = new Map<string, number>();
  #maxCommitted = 0;
  /** The highest term any leader was seen in so far. */
  #maxLeaderTerm = 0;
  /**
   * Per committed index, the highest leader term seen when it was first applied: it was
   * committed in that term or an earlier one. Leader completeness binds only leaders of later
   * terms (a leader of an older term, e.g. one whose votes arrived after a stall, need not have
   * it: it can commit nothing, since a majority has moved on).
   */
  readonly #committedBy = new Map<number, number>();

  /** Records a violation (the first 20 are kept, and every kind). */
  report(atMs: number, kind: ViolationKind, what: string): void {
    if (!this.kinds.includes(kind)) this.kinds.push(kind);
    if (this.violations.length < 20) this.violations.push(`t=${atMs.toFixed(1)}ms: [${kind}] ${what}`);
  }

  /** A member (re)started: its applied index starts again from its snapshot. */
  onStart(member: NodeId, snapshotIndex: number): void {
    this.#lastApplied.set(member, snapshotIndex);
  }

  onApplied(atMs: number, member: NodeId, entry: Entry): void {
    const last = this.#lastApplied.get(member) ?? 0;
    if (entry.index !== last + 1) this.report(atMs, 'apply-order', `${member} applied index ${entry.index} after ${last}`);
    this.#lastApplied.set(member, entry.index);
    const key = `${entry.term}|${entry.pid}|${entryText(entry.data)}`;
    const known = this.#committed.get(entry.index);
    if (known === undefined) {
      const text = entryText(entry.data);
      const dropped = this.#dropped.get(text);
      if (dropped !== undefined && this.#proposed.get(text) === 1) this.report(atMs, 'dropped-committed', `"${dropped}", whose client was told it was dropped and would never commit, committed at ${entry.index}`);
      this.#committed.set(entry.index, key);
      this.#committedBy.set(entry.index, this.#maxLeaderTerm);
      if (entry.index > this.#maxCommitted) this.#maxCommitted = entry.index;
    } else if (known !== key) {
      this.report(atMs, 'divergence', `index ${entry.index} applied as ${known} elsewhere and as ${key} on ${member}`);
    }
  }

  /** The member that became leader of `term`, if one did so far. */
  leaderOf(term: number): NodeId | undefined {
    return this.#leaderOfTerm.get(term);
  }

  onLeader(atMs: number, member: NodeId, term: number, log: RaftLog): void {
    const prior = this.#leaderOfTerm.get(term);
    if (prior !== undefined && prior !== member) this.report(atMs, 'two-leaders', `two leaders in term ${term}: ${prior} and ${member}`);
    this.#leaderOfTerm.set(term, member);
    this.#maxLeaderTerm = Math.max(this.#maxLeaderTerm, term);
    for (let index = log.firstIndex(); index <= this.#maxCommitted; index++) {
      const key = this.#committed.get(index);
      const entry = log.entry(index);
      if (key === undefined || (this.#committedBy.get(index) ?? 0) >= term) continue;
      if (entry === undefined || !key.startsWith(`${entry.term}|${entry.pid}|`)) {
        this.report(atMs, 'leader-completeness', `new leader ${member} of term ${term} lacks committed entry ${index} (${key})`);
        return;
      }
    }
  }

  /** An application proposal of entry `data` is made. */
  onProposed(data: Uint8Array): void {
    const entry = entryText(data);
    this.#proposed.set(entry, (this.#proposed.get(entry) ?? 0) + 1);
  }

  /** A client was told its proposal `text`, entry `data`, was dropped: it must never commit (nor have committed), if proposed once. */
  onDropped(atMs: number, text: string, data: Uint8Array): void {
    const entry = entryText(data);
    this.#dropped.set(entry, text);
    if (this.#proposed.get(entry) !== 1) return;
    for (const [index, key] of this.#committed) if (key.endsWith(`|${entry}`)) this.report(atMs, 'dropped-committed', `"${text}" committed at ${index}, yet its client was then told it was dropped and would never commit`);
  }

  /** A client was told its proposal `text`, entry `data`, committed at `index`. */
  onAck(atMs: number, index: number, text: string, data: Uint8Array): void {
    const entry = entryText(data);
    this.#acked.set(index, { text, entry });
    const key = this.#committed.get(index);
    if (key !== undefined && !key.endsWith(`|${entry}`)) this.report(atMs, 'lost-ack', `acknowledged "${text}" at ${index}, but ${key} is there`);
  }

  /** At the end: every acknowledged proposal is where it was acknowledged. */
  checkAcknowledged(atMs: number): void {
    for (const [index, { text, entry }] of this.#acked) {
      const key = this.#committed.get(index);
      if (key === undefined || !key.endsWith(`|${entry}`)) this.report(atMs, 'lost-ack', `acknowledged "${text}" at ${index} is lost (${key ?? 'nothing'} there)`);
    }
  }

  get committedCount(): number {
    return this.#maxCommitted;
  }
}
