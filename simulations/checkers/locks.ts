import type { NodeId } from '../../src/raft/types.js';
import type { LockEvent } from '../locks.js';
import type { Report } from '../violations.js';
import type { MemberWatch } from './members.js';

/** A task under a lock, from its start until it ends (its signal aborted, or it returned). */
interface Holding {
  readonly member: NodeId;
  readonly incarnation: number;
  readonly token: number;
  readonly startT: number;
}

/**
 * runExclusive's promises, from what the tasks tell (locks.ts), in true time:
 * - `lock-overlap`: a task starts under a lock while another member's (or life's) task under the
 *   same name still runs: not ended, its signal not aborted, its process life not over. A task
 *   whose process stalled after it started is left out (a stall can outlast any lock: only the
 *   fencing token protects what the task writes, README), as is one whose life is over.
 * - `lock-token`: a task starts under a token not greater than the last one a task of the same
 *   name started under (each grant is a later log entry, and its task starts after the last
 *   one's ended).
 * Bounded by the lock names the run draws.
 */
export class LockChecker {
  readonly #report: Report;
  readonly #watch: MemberWatch;
  /** Per name, the task that last started under it, while it runs. */
  readonly #holding = new Map<string, Holding>();
  /** Per name, the greatest token a task started under. */
  readonly #lastToken = new Map<string, number>();
  /** Tasks started, in all, and those whose signal aborted before they returned. */
  started = 0;
  aborted = 0;

  constructor(report: Report, watch: MemberWatch) {
    this.#report = report;
    this.#watch = watch;
  }

  onLock(t: number, member: NodeId, incarnation: number, event: LockEvent): void {
    const { name, token } = event;
    if (event.type === 'end') {
      if (event.aborted) this.aborted++;
      const h = this.#holding.get(name);
      if (h !== undefined && h.member === member && h.incarnation === incarnation && h.token === token) this.#holding.delete(name);
      return;
    }
    this.started++;
    const prior = this.#holding.get(name);
    if (prior !== undefined && this.#runs(prior)) {
      this.#report(t, 'lock-overlap', `${member} started a task under "${name}" (token ${token}) while ${prior.member}'s, started at ${prior.startT.toFixed(1)} ms under token ${prior.token}, ran unaborted`);
    }
    const last = this.#lastToken.get(name) ?? 0;
    if (token <= last) this.#report(t, 'lock-token', `${member} started a task under "${name}" with token ${token}, not greater than the last one started under it (${last})`);
    this.#lastToken.set(name, Math.max(last, token));
    this.#holding.set(name, { member, incarnation, token, startT: t });
  }

  /** Whether the task still runs as the checker can hold it to: its life goes on, and its process did not stall since it started. */
  #runs(h: Holding): boolean {
    return !this.#watch.isOver(h.member, h.incarnation) && this.#watch.pauseEnd(h.member) <= h.startT;
  }
}
