import { SNAPSHOT_SHARES_VERSION } from '../version/versions.js';
import type { SchedulerCommand } from './command.js';
import { lockBytes } from './job-footprint.js';
import type { ApplyResult, LockRecord } from './records.js';

/**
 * The named locks a SchedulerState keeps (runExclusive), bounded by their number and, from
 * SNAPSHOT_SHARES_VERSION, by what they take in a snapshot (job-footprint.ts lockBytes): an
 * expired lock stays until taken again, and the oldest expired ones make room for a new one.
 * Pure, like the state it is part of.
 */
export class KeptLocks {
  /** The locks by name, in the order they were first taken (a snapshot keeps it). */
  readonly byName = new Map<string, LockRecord>();
  readonly #maxLocks: number;
  readonly #maxBytes: number;
  /** What the locks take in a snapshot, at most (lockBytes, summed as they change). */
  #bytes = 0;

  constructor(maxLocks: number, maxBytes: number) {
    this.#maxLocks = maxLocks;
    this.#maxBytes = maxBytes;
  }

  /** What the locks take in a snapshot, at most, which maxBytes bounds from SNAPSHOT_SHARES_VERSION. */
  get bytes(): number {
    return this.#bytes;
  }

  /** Replaces the locks with a snapshot's, in their order. */
  restore(locks: Iterable<readonly [string, LockRecord]>): void {
    this.byName.clear();
    this.#bytes = 0;
    for (const [name, lock] of locks) {
      this.byName.set(name, lock);
      this.#bytes += lockBytes(name, lock);
    }
  }

  /** Applies a `lock`, the entry at `index`, under cluster version `version`. */
  lock(index: number, command: Extract<SchedulerCommand, { type: 'lock' }>, version: number): ApplyResult {
    const held = this.byName.get(command.name);
    if (held !== undefined && held.untilMs > command.atMs) return { ok: false, reason: 'locked' };
    if (held === undefined && this.byName.size >= this.#maxLocks) this.#dropExpired(command.atMs);
    // Held by nobody, but no room: told apart from a lock another member holds.
    if (held === undefined && this.byName.size >= this.#maxLocks) return { ok: false, reason: 'too-many-locks' };
    const lock: LockRecord = { holder: command.member, token: index, untilMs: command.untilMs };
    const bytes = lockBytes(command.name, lock) - (held === undefined ? 0 : lockBytes(command.name, held));
    if (version >= SNAPSHOT_SHARES_VERSION) {
      // Expired locks make room, oldest first, as at the count (the lock taken again is not
      // among them: it keeps its place).
      while (this.#bytes + bytes > this.#maxBytes && this.#dropExpired(command.atMs, command.name));
      if (this.#bytes + bytes > this.#maxBytes) return { ok: false, reason: 'too-many-locks' };
    }
    this.byName.set(command.name, lock);
    this.#bytes += bytes;
    return { ok: true, lock };
  }

  /** Applies an `unlock`: the lock under its token ends no later than asked (its bytes count its time at the most a number takes). */
  unlock(command: Extract<SchedulerCommand, { type: 'unlock' }>): ApplyResult {
    const held = this.byName.get(command.name);
    if (held === undefined || held.token !== command.token) return { ok: false, reason: 'stale-token' };
    held.untilMs = Math.min(held.untilMs, command.untilMs);
    return { ok: true, lock: held };
  }

  /** Forgets one expired lock other than `spare` (the oldest in insertion order), to make room; says whether it did. */
  #dropExpired(atMs: number, spare?: string): boolean {
    for (const [name, lock] of this.byName) {
      if (lock.untilMs <= atMs && name !== spare) {
        this.byName.delete(name);
        this.#bytes -= lockBytes(name, lock);
        return true;
      }
    }
    return false;
  }
}
