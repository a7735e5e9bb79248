import type { NodeId } from '../raft/types.js';
import { encodeCommand } from '../runtime/commands.js';
import { driverStopped } from '../runtime/driver-options.js';
import type { Member } from '../runtime/member.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import type { LockRecord } from '../scheduler/records.js';
import { SCHEDULER_DEFAULTS } from '../scheduler/state.js';

/**
 * The most unanswered lock proposals a member watches for at once; past it, the oldest is
 * forgotten, and its lock, should it commit, expires at its atMostFor as a dead holder's does.
 */
export const MAX_UNANSWERED_LOCKS = 1024;

/**
 * The most locks granted to this member that it remembers at once, until each one's atMostFor
 * (see UnansweredLocks.answering): as many as the cluster keeps, so that every lock it holds at
 * once is remembered; past it, the oldest is forgotten.
 */
export const MAX_GRANTED_REMEMBERED = SCHEDULER_DEFAULTS.maxLocks;

/**
 * Tries of the unlock of a lock whose proposal went unanswered, `later` apart (the hooks give a
 * heartbeat interval, as runExclusive's own release): one that fails (no leader for a moment)
 * would otherwise leave the lock held with no task until its atMostFor.
 */
export const LET_GO_ATTEMPTS = 5;

/** Runs a try again later (a timer), or nothing: no more tries. */
export type Later = (run: () => void) => void;

/** A lock proposal watched: its name, stamp and end, as proposed. */
interface Watched {
  readonly name: string;
  readonly atMs: number;
  readonly untilMs: number;
}

/** A lock this member holds whose proposal went unanswered, to let go: its name, token, and stamp. */
export interface HeldUnanswered {
  readonly name: string;
  readonly token: number;
  readonly atMs: number;
}

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
 * A lock may also come in a snapshot from the leader (this member was behind, and the proposal
 * it covers is answered CRONRAFT_OUTCOME_UNKNOWN after it is installed): a restored state keeps
 * no stamp, so such a lock is known by its name, holder and end (heldUnanswered), only at or
 * below the index of a snapshot installed (a lock applied as a command is known by its stamp),
 * and never by the token of a lock this member was granted under the same name and end: that is
 * remembered as the lock applies, before its call hears of it (answering), so that a call that
 * goes unanswered in the same turn cannot take it for its own.
 * Bounded by MAX_UNANSWERED_LOCKS, MAX_GRANTED_REMEMBERED, and the calls in flight.
 */
export class UnansweredLocks {
  /** Locks proposed and not yet answered, by key. */
  readonly #inFlight = new Set<string>();
  /** `${atMs} ${name}` to the lock proposed: in the order added. */
  readonly #watched = new Map<string, Watched>();
  /** Per name, the token of the last lock of it granted to a call of this member in flight, and that lock's end: in the order added. */
  readonly #granted = new Map<string, { readonly token: number; readonly untilMs: number }>();
  /** The greatest index of a snapshot installed from a leader: a lock above it came as a command. */
  #installedThrough = 0;

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
    setNewest(this.#watched, key, { name: lock.name, atMs: lock.atMs, untilMs: lock.untilMs }, MAX_UNANSWERED_LOCKS);
  }

  /**
   * `lock`, applied here under `token` (its entry's index), is one a call of this member still
   * waits to hear of: its grant is remembered until the lock's end, so that heldUnanswered never
   * takes it for an unanswered lock of the same name and end (that would let go of a lock whose
   * task is about to run). Returns whether it was.
   */
  answering(lock: Extract<SchedulerCommand, { type: 'lock' }>, token: number): boolean {
    if (!this.#inFlight.has(keyOf(lock.name, lock.atMs))) return false;
    setNewest(this.#granted, lock.name, { token, untilMs: lock.untilMs }, MAX_GRANTED_REMEMBERED);
    return true;
  }

  /** A snapshot from the leader, of the log up to `index`, was installed here. */
  installed(index: number): void {
    this.#installedThrough = Math.max(this.#installedThrough, index);
  }

  /**
   * The locks of `locks` (the state as it stands) that this member holds and whose proposals went
   * unanswered, as they come in a snapshot installed (`installed`): each known by its name and end
   * (a restored state keeps no stamp), by a token at or below the snapshot's index, and by one no
   * call of this member was granted (`answering`). Each is forgotten here, and returned for the
   * caller to let go.
   */
  heldUnanswered(self: string, locks: ReadonlyMap<string, LockRecord>, nowMs: number): HeldUnanswered[] {
    this.#forgetEnded(nowMs);
    const held: HeldUnanswered[] = [];
    for (const [key, lock] of this.#watched) {
      const record = locks.get(lock.name);
      if (record === undefined || record.holder !== self || record.untilMs !== lock.untilMs || record.token > this.#installedThrough) continue;
      if (this.#granted.get(lock.name)?.token === record.token) continue;
      this.#watched.delete(key);
      held.push({ name: lock.name, token: record.token, atMs: lock.atMs });
    }
    return held;
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
    for (const [key, lock] of this.#watched) if (lock.untilMs <= nowMs) this.#watched.delete(key);
    for (const [name, lock] of this.#granted) if (lock.untilMs <= nowMs) this.#granted.delete(name);
  }
}

/** Sets `key` in `map` as its newest entry, first forgetting the oldest while `max` are kept. */
function setNewest<K, V>(map: Map<K, V>, key: K, value: V, max: number): void {
  map.delete(key);
  if (map.size >= max) map.delete(map.keys().next().value as K);
  map.set(key, value);
}

function keyOf(name: string, atMs: number): string {
  return `${atMs} ${name}`;
}

/**
 * A scheduler command applied on member `self` at `index`: when it is a lock this member took
 * whose proposal went unanswered (`unanswered`), an unlock of it is proposed at once, and tried
 * again `later` up to LET_GO_ATTEMPTS in all. If every try fails, the lock expires at its atMostFor.
 */
export function letGoIfUnanswered(
  self: string,
  index: number,
  command: SchedulerCommand,
  result: unknown,
  unanswered: UnansweredLocks,
  propose: (data: Uint8Array) => Promise<unknown>,
  later?: Later,
): void {
  if (command.type !== 'lock' || command.member !== self || (result as { ok?: boolean } | undefined)?.ok !== true) return;
  if (unanswered.answering(command, index)) return;
  if (!unanswered.taken(command.name, command.atMs)) return;
  letGo({ name: command.name, token: index, atMs: command.atMs }, propose, later);
}

/**
 * Lets go of the locks of `locks` this member (`self`) holds whose proposals went unanswered
 * (UnansweredLocks.heldUnanswered), an unlock of each proposed at once and tried again `later`
 * as letGoIfUnanswered does: called as a snapshot from the leader is installed, and as a
 * proposal goes unanswered (the snapshot that covered it came first).
 */
export function letGoHeldUnanswered(
  self: string,
  locks: ReadonlyMap<string, LockRecord>,
  unanswered: UnansweredLocks,
  nowMs: number,
  propose: (data: Uint8Array) => Promise<unknown>,
  later?: Later,
): void {
  for (const lock of unanswered.heldUnanswered(self, locks, nowMs)) letGo(lock, propose, later);
}

/**
 * The member hooks that let go of unanswered locks, as `Cluster` wires them (cluster-start.ts)
 * and the simulator too: `applied` for every scheduler command applied (letGoIfUnanswered),
 * `installed` for every snapshot installed from a leader (letGoHeldUnanswered), each unlock tried
 * again `later`. `member` is undefined until the member is built.
 */
export function unansweredLockHooks(
  self: NodeId,
  unanswered: UnansweredLocks,
  member: () => Pick<Member, 'driver' | 'scheduler'> | undefined,
  later: Later,
): { readonly applied: (index: number, command: SchedulerCommand, result: unknown) => void; readonly installed: (index: number) => void } {
  return {
    applied: (index, command, result) => {
      const m = member();
      if (m !== undefined) letGoIfUnanswered(self, index, command, result, unanswered, (data) => m.driver.propose(data), later);
    },
    installed: (index) => {
      unanswered.installed(index);
      const m = member();
      if (m !== undefined) letGoHeldUnanswered(self, m.scheduler.state.locks, unanswered, m.driver.clusterClock().now(), (data) => m.driver.propose(data), later);
    },
  };
}

/**
 * Proposes the end of `lock` at its stamp (at once, since it has no task), tried again `later`
 * while it fails, up to LET_GO_ATTEMPTS in all, unless the member stopped. An unlock applied
 * twice changes nothing.
 */
function letGo(lock: HeldUnanswered, propose: (data: Uint8Array) => Promise<unknown>, later?: Later): void {
  const unlock = encodeCommand({ kind: 'scheduler', command: { type: 'unlock', name: lock.name, token: lock.token, untilMs: lock.atMs } });
  const attempt = (tried: number): void => {
    propose(unlock).catch((error: unknown) => {
      if (later !== undefined && tried < LET_GO_ATTEMPTS && !driverStopped(error)) later(() => attempt(tried + 1));
    });
  };
  attempt(1);
}
