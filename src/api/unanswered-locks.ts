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
 * once of one that commits, each until its atMostFor, after which it would have expired anyway.
 * A lock is known by its name and the time stamped on it, which `proposing` keeps apart from
 * every other lock of that name this member has in flight or watches (two calls in one
 * millisecond would share a stamp, and the one granted be let go for the other's lost answer).
 * Bounded by MAX_UNANSWERED_LOCKS, and the calls in flight.
 */
export class UnansweredLocks {
  /** Locks proposed and not yet answered, by key. */
  readonly #inFlight = new Set<string>();
  /** `${atMs} ${name}` to when the lock would end: in the order added. */
  readonly #watched = new Map<string, number>();

  /**
   * The stamp of a lock of `name` about to be proposed at `atMs`: `atMs`, or the first
   * millisecond after it that no lock of that name this member has in flight or watches uses
   * (at most as many as those). The lock counts as in flight until `settled`.
   */
  proposing(name: string, atMs: number): number {
    let ms = atMs;
    while (this.#inFlight.has(keyOf(name, ms)) || this.#watched.has(keyOf(name, ms))) ms++;
    this.#inFlight.add(keyOf(name, ms));
    return ms;
  }

  /**
   * The proposal of `lock` settled, at `nowMs` on the cluster's time: answered, or not
   * (`answered` false: watched from now on).
   */
  settled(lock: Extract<SchedulerCommand, { type: 'lock' }>, answered: boolean, nowMs: number): void {
    const key = keyOf(lock.name, lock.atMs);
    this.#inFlight.delete(key);
    this.#forgetEnded(nowMs);
    if (answered || lock.untilMs <= nowMs) return;
    if (this.#watched.size >= MAX_UNANSWERED_LOCKS) {
      const oldest = this.#watched.keys().next().value;
      if (oldest !== undefined) this.#watched.delete(oldest);
    }
    this.#watched.set(key, lock.untilMs);
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
