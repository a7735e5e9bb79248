import { restoreSchedulerSnapshot, schedulerSnapshotSteps } from '../scheduler/state-snapshot.js';
import { SchedulerState, type SchedulerCommand } from '../scheduler/state.js';
import type { SnapshotSteps } from './driver.js';
import { encodeMemberSnapshot } from './member-snapshot.js';

/**
 * Entries a mirror holds back while a snapshot of it is being taken. Past this many, the rest
 * of the snapshot is taken at once: a member applying entries faster than the steps go would
 * otherwise hold ever more of them.
 */
export const MAX_ENTRIES_HELD = 10_000;

/**
 * A second copy of the scheduler's replicated state, kept level with the live one by applying
 * the same entries, so that a snapshot can be taken in steps while the live state moves on.
 *
 * A snapshot of the live state must be encoded at once: its records change as entries apply,
 * and a snapshot stands for one log index. At the state's bounds (10,000 claims) that held a
 * member's event loop for 40 to 170 ms under load, and a slot due meanwhile fired that late.
 * The mirror instead holds still while its snapshot is encoded, a step at a time (see
 * schedulerSnapshotSteps), and holds back the entries applied meanwhile; it applies them once
 * the snapshot is complete. The cost is the state's records twice in memory, and every
 * scheduler command applied twice: by the same code, so the two cannot disagree. The command is
 * the one the live state applied, decoded once: the two states share what it holds (names,
 * member ids, specs), which neither changes.
 */
export class SchedulerMirror {
  readonly #limits: () => SchedulerState['limits'];
  #state: SchedulerState | null = null;
  /** Commands applied to the live state since a snapshot in progress began; null when none is. */
  #held: Array<{ readonly index: number; readonly command: SchedulerCommand }> | null = null;
  /** Bumped by every snapshot begun and every restore: a snapshot of an older one is void. */
  #generation = 0;

  /** `limits`: the live state's, read when the mirror is first used (it starts empty, as the live state does). */
  constructor(limits: () => SchedulerState['limits']) {
    this.#limits = limits;
  }

  /** A scheduler command the live state applied, at its entry's index. */
  apply(index: number, command: SchedulerCommand): void {
    if (this.#held === null) {
      this.#mirror().apply(index, command);
      return;
    }
    this.#held.push({ index, command });
  }

  /** The live state was replaced by a snapshot's scheduler state (its bytes): so is the mirror, and a snapshot in progress is void. */
  restore(schedulerBytes: Uint8Array): void {
    this.#generation++;
    this.#held = null;
    restoreSchedulerSnapshot(this.#mirror(), schedulerBytes);
  }

  /** Begins a member snapshot of the state as applied so far (see StateMachine.snapshotInSteps); it voids one in progress. */
  snapshotInSteps(): SnapshotSteps {
    this.#release();
    const generation = ++this.#generation;
    this.#held = [];
    const steps = schedulerSnapshotSteps(this.#mirror());
    return {
      step: () => {
        if (generation !== this.#generation) throw new Error('Raft driver invariant violated: a step of a snapshot that a restore or a later snapshot made void');
        // Held back this much, the mirror finishes now rather than hold more.
        const atOnce = (this.#held?.length ?? 0) >= MAX_ENTRIES_HELD;
        let next = steps.next();
        while (next.done !== true && atOnce) next = steps.next();
        if (next.done !== true) return null;
        this.#release();
        return encodeMemberSnapshot(next.value);
      },
    };
  }

  /** Applies the entries held back, and holds none from now on. */
  #release(): void {
    const held = this.#held;
    this.#held = null;
    for (const entry of held ?? []) this.#mirror().apply(entry.index, entry.command);
  }

  #mirror(): SchedulerState {
    this.#state ??= new SchedulerState(this.#limits());
    return this.#state;
  }
}
