import type { NodeId } from '../../src/raft/types.js';
import type { LockEvent } from '../locks.js';
import type { Report } from '../violations.js';
import type { MemberWatch } from './members.js';

/** A task's deadline is its lock's atMostFor from its start, plus this much rounding (ms). */
const SLACK_MS = 1;

/** A task under a lock, from its start until it ends (its signal aborted, or it returned). */
interface Holding {
  readonly member: NodeId;
  readonly incarnation: number;
  readonly token: number;
  readonly startT: number;
  readonly atMostFor: number;
}

/**
 * runExclusive's promises, from what the tasks tell (locks.ts), in true time:
 * - `lock-overlap`: a task starts under a lock while another task under the same name still
 *   runs: not ended, its signal not aborted, its process life going on, and its process not
 *   stalled then (a stalled process runs nothing; once it resumes its overdue abort comes first,
 *   at that instant, and only the fencing token protects what a task writes across a stall,
 *   README).
 * - `lock-deadline`: a task runs on past its lock's atMostFor from its start, unaborted (its lock
 *   was stamped before it was granted, and its signal aborts before the end by the member's
 *   monotonic clock, or sooner by the cluster's time), unless a stall of its process covered
 *   that instant: then past the stall's end.
 * - `lock-token`: a task starts under a token not greater than the last one a task of the same
 *   name started under (each grant is a later log entry, and its task starts after the last
 *   one's ended).
 * Bounded by the tasks that run at once.
 */
export class LockChecker {
  readonly #report: Report;
  readonly #watch: MemberWatch;
  /** Per name, the tasks under it that have not ended, their lives going on. */
  readonly #running = new Map<string, Holding[]>();
  /** Per name, the greatest token a task started under. */
  readonly #lastToken = new Map<string, number>();
  /** No task's deadline comes before this true time: tasks are looked at only once it passed (deadlines only move later). */
  #nextCheckT = Number.POSITIVE_INFINITY;
  /** Tasks started, in all, and those whose signal aborted before they returned. */
  started = 0;
  aborted = 0;

  constructor(report: Report, watch: MemberWatch) {
    this.#report = report;
    this.#watch = watch;
  }

  onLock(t: number, member: NodeId, incarnation: number, event: LockEvent): void {
    const { name, token } = event;
    const running = this.#live(name);
    if (event.type === 'end') {
      if (event.aborted) this.aborted++;
      this.#set(
        name,
        running.filter((h) => !(h.member === member && h.incarnation === incarnation && h.token === token)),
      );
      return;
    }
    this.started++;
    const other = running.find((h) => !this.#watch.paused(h.member, t));
    if (other !== undefined) {
      this.#report(t, 'lock-overlap', `${member} started a task under "${name}" (token ${token}) while ${other.member}'s, started at ${other.startT.toFixed(1)} ms under token ${other.token}, ran unaborted`);
    }
    const last = this.#lastToken.get(name) ?? 0;
    if (token <= last) this.#report(t, 'lock-token', `${member} started a task under "${name}" with token ${token}, not greater than the last one started under it (${last})`);
    this.#lastToken.set(name, Math.max(last, token));
    this.#set(name, [...running, { member, incarnation, token, startT: t, atMostFor: event.atMostFor }]);
    this.#nextCheckT = Math.min(this.#nextCheckT, t + event.atMostFor + SLACK_MS);
  }

  /** After every event: a task past its deadline is reported, once. */
  afterEvent(t: number): void {
    if (t <= this.#nextCheckT) return;
    let next = Number.POSITIVE_INFINITY;
    for (const name of [...this.#running.keys()]) {
      const left: Holding[] = [];
      for (const h of this.#live(name)) {
        const deadlineT = Math.max(h.startT + h.atMostFor, this.#watch.pauseEnd(h.member)) + SLACK_MS;
        if (t <= deadlineT) {
          left.push(h);
          next = Math.min(next, deadlineT);
        } else {
          this.#report(t, 'lock-deadline', `${h.member}'s task under "${name}" (token ${h.token}), started at ${h.startT.toFixed(1)} ms with an atMostFor of ${h.atMostFor} ms, ran on unaborted`);
        }
      }
      this.#set(name, left);
    }
    this.#nextCheckT = next;
  }

  /** The tasks under `name` not ended whose lives go on. */
  #live(name: string): Holding[] {
    return (this.#running.get(name) ?? []).filter((h) => !this.#watch.isOver(h.member, h.incarnation));
  }

  #set(name: string, running: Holding[]): void {
    if (running.length === 0) this.#running.delete(name);
    else this.#running.set(name, running);
  }
}
