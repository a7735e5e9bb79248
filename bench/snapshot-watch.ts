/**
 * Part of the jobs bench (bench/jobs-registered-run.ts): the longest step of every snapshot the
 * members take while watched, not only of each member's last. `state().log` shows a member's
 * last snapshot alone, so the watch is shown every `state()` the bench reads anyway (reading more
 * often would build the views of state().jobs in reads that are not timed, and the timed ones
 * would find them built). A snapshot of ten thousand jobs takes dozens of steps, one a turn of
 * the event loop, so two seldom end between two reads of a member, and `snapshotsTaken` tells
 * when they did (`missed`).
 */
import type { ClusterState } from '../src/index.js';

export interface SnapshotsWatched {
  /** Snapshots the members took while watched, all together. */
  readonly taken: number;
  /** Of those, the ones that ended between two reads after another one had: their steps were not seen. */
  readonly missed: number;
  /** The longest step of those seen (the step that hands a snapshot to storage, and one taken at once, included). */
  readonly longestStepMs: number;
}

export class SnapshotWatch {
  readonly #takenAtStart: number[];
  readonly #takenSeen: number[];
  #missed = 0;
  #longestStepMs = 0;

  /** `logs`: each member's `state().log` as the watch begins. */
  constructor(logs: ReadonlyArray<ClusterState['log']>) {
    this.#takenAtStart = logs.map((log) => log.snapshotsTaken);
    this.#takenSeen = [...this.#takenAtStart];
  }

  /** Member `i`'s `state().log`, as read now. */
  look(i: number, log: ClusterState['log']): void {
    const before = this.#takenSeen[i] ?? 0;
    if (log.snapshotsTaken > before + 1) this.#missed += log.snapshotsTaken - before - 1;
    this.#takenSeen[i] = Math.max(before, log.snapshotsTaken);
    // A snapshot's timing grows once storage has it (its last step): the longest read counts.
    if (log.lastSnapshot !== null && log.snapshotsTaken > (this.#takenAtStart[i] ?? 0)) this.#longestStepMs = Math.max(this.#longestStepMs, log.lastSnapshot.longestStepMs);
  }

  result(): SnapshotsWatched {
    const taken = this.#takenSeen.reduce((sum, n, i) => sum + n - (this.#takenAtStart[i] ?? 0), 0);
    return { taken, missed: this.#missed, longestStepMs: this.#longestStepMs };
  }
}
