import { encodeCommand } from '../runtime/commands.js';
import type { SchedulerCommand } from '../scheduler/command.js';

/**
 * The most unanswered lock proposals a member watches for at once; past it, the oldest is
 * forgotten, and its lock, should it commit, expires at its atMostFor as a dead holder's does.
 */
export const MAX_UNANSWERED_LOCKS = 1024;

/**
 * runExclusive's lock proposals that failed without an answer (`CRONRAFT_TIMEOUT`, or
 * `CRONRAFT_OUTCOME_UNKNOWN` when the leader changed): each may still commit, and would then
 * hold its lock with no task until its atMostFor, the cluster locked out of it meanwhile (ten
 * minutes for a lock of ten minutes), and the caller, told the call failed, refused when it
 * tried again. The member watches for them as its state machine applies locks, and lets go at
 * once of one that commits. A lock is known by its name and the time stamped on it, which this
 * member's stamp clock never repeats for one name; each is watched until its atMostFor, after
 * which it would have expired anyway. Bounded by MAX_UNANSWERED_LOCKS.
 */
export class UnansweredLocks {
  /** `${atMs} ${name}` to when the lock would end: in the order added. */
  readonly #watched = new Map<string, number>();

  /** The lock proposed as `lock` failed without an answer, at `nowMs` on the cluster's time. */
  add(lock: Extract<SchedulerCommand, { type: 'lock' }>, nowMs: number): void {
    this.#forgetEnded(nowMs);
    if (lock.untilMs <= nowMs) return;
    if (this.#watched.size >= MAX_UNANSWERED_LOCKS) {
      const oldest = this.#watched.keys().next().value;
      if (oldest !== undefined) this.#watched.delete(oldest);
    }
    this.#watched.set(keyOf(lock.name, lock.atMs), lock.untilMs);
  }

  /**
   * Whether the lock `name` stamped `atMs`, taken by this member as a command applied, is one
   * whose proposal went unanswered: then it is forgotten, and the caller lets it go.
   */
  taken(name: string, atMs: number): boolean {
    return this.#watched.delete(keyOf(name, atMs));
  }

  /** Locks watched now. */
  get size(): number {
    return this.#watched.size;
  }

  #forgetEnded(nowMs: number): void {
    for (const [key, untilMs] of this.#watched) if (untilMs <= nowMs) this.#watched.delete(key);
  }
}

function keyOf(name: string, atMs: number): string {
  return `${atMs} ${name}`;
}

/**
 * A scheduler command applied on member `self` at `index`: when it is a lock this member took
 * whose proposal went unanswered (`unanswered`), an unlock of it is proposed at once, once. If
 * that fails too, the lock expires at its atMostFor.
 */
export function letGoIfUnanswered(
  self: string,
  index: number,
  command: SchedulerCommand,
  result: unknown,
  unanswered: UnansweredLocks,
  propose: (data: Uint8Array) => Promise<unknown>,
): void {
  if (command.type !== 'lock' || command.member !== self || (result as { ok?: boolean } | undefined)?.ok !== true) return;
  if (!unanswered.taken(command.name, command.atMs)) return;
  const unlock = encodeCommand({ kind: 'scheduler', command: { type: 'unlock', name: command.name, token: index, untilMs: command.atMs } });
  propose(unlock).catch(() => undefined);
}
