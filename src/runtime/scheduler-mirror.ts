import { StepwiseConcat } from '../bytes/concat-bytes.js';
import { restoreSchedulerSnapshot, schedulerSnapshotSteps } from '../scheduler/state-snapshot.js';
import { SchedulerState } from '../scheduler/state.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import type { SnapshotSteps } from './state-machine.js';
import { memberSnapshotPieces } from './member-snapshot.js';
import { FIRST_CLUSTER_VERSION } from '../version/versions.js';

/**
 * Entries a mirror holds back while a snapshot of it is being taken. Past this many, the rest
 * of the snapshot is taken at once: a member applying entries faster than the steps go would
 * otherwise hold ever more of them.
 */
export const MAX_ENTRIES_HELD = 10_000;

/**
 * Bytes of a finished snapshot joined into one buffer per piece of a step: its pieces joined at
 * once held the event loop for the copy and for the faults of the fresh memory's pages, at ten
 * thousand jobs longer than any step of the encoding. A step goes on past its budget by the
 * piece under way, so a piece is kept a small part of the budget (the faults cost more than the
 * copy).
 */
export const SNAPSHOT_BYTES_PER_STEP = 64 * 1024;

/**
 * Entries held back that the mirror applies per piece of a step once a snapshot is encoded and
 * joined: it catches up before the snapshot counts as taken, a bounded number at a time, rather
 * than all at once (up to MAX_ENTRIES_HELD of them in one turn of the loop), and holds no
 * entries after. A registration applied costs a few microseconds: a piece of this many is a
 * small part of SNAPSHOT_STEP_BUDGET_MS, by which a step may go past its budget.
 */
export const CATCH_UP_PER_STEP = 100;

/**
 * Entries held back that the mirror applies for every entry applied while it catches up: it
 * catches up faster than entries come, however seldom the steps go.
 */
const CATCH_UP_PER_ENTRY = 2;

/**
 * How long a step goes on, by the clock the mirror is given: pieces of work (records encoded,
 * bytes joined, entries caught up, each bounded as above) are done one after the other until it
 * is spent. A step is one turn of the event loop, and a turn under load is long (a batch of
 * entries applied, messages): a piece of work a turn, a snapshot of ten thousand jobs took long
 * enough to hold MAX_ENTRIES_HELD entries back, and was then finished at once.
 */
export const SNAPSHOT_STEP_BUDGET_MS = 2;

/**
 * Bound on the pieces of work of one step, whatever the clock says (a simulation's stands still):
 * as many records, bytes or entries a step at most as before the pieces were made smaller.
 */
export const MAX_PIECES_PER_STEP = 40;

/**
 * A command the live state applied while the mirror held still, as the live state applied it;
 * or (command null) the cluster version the live state was told was raised to `version`.
 */
interface HeldCommand {
  readonly index: number;
  readonly command: SchedulerCommand | null;
  readonly version: number;
}

/**
 * A second copy of the scheduler's replicated state, kept level with the live one by applying
 * the same entries, so that a snapshot can be taken in steps while the live state moves on.
 *
 * A snapshot of the live state must be encoded at once: its records change as entries apply,
 * and a snapshot stands for one log index. At the state's bounds (10,000 claims) that held a
 * member's event loop for far longer than a slot may be late, and a slot due meanwhile fired
 * that late.
 * The mirror instead holds still while its snapshot is encoded, a step at a time (see
 * schedulerSnapshotSteps), and holds back the entries applied meanwhile; once it is encoded, it
 * applies them a bounded number a step (and a few for each new one), and the snapshot is taken
 * once it caught up. The cost is the state's records twice in memory, and every scheduler
 * command applied twice: by the same code, so the two cannot disagree. The command is the one
 * the live state applied, decoded once: the two states share what it holds (names, member ids,
 * specs), which neither changes.
 */
export class SchedulerMirror {
  readonly #limits: () => SchedulerState['limits'];
  /** A monotonic clock, ms: see SNAPSHOT_STEP_BUDGET_MS. Without one, a step is one piece of work. */
  readonly #now: (() => number) | undefined;
  #state: SchedulerState | null = null;
  /** Commands the live state applied and the mirror not yet, from #heldFrom on. */
  #held: HeldCommand[] = [];
  #heldFrom = 0;
  /** Whether a snapshot is being taken: every command is held until it is complete. */
  #holding = false;
  /** Bumped by every snapshot begun and every restore: a snapshot of an older one is void. */
  #generation = 0;

  /** `limits`: the live state's, read when the mirror is first used (it starts empty, as the live state does). */
  constructor(limits: () => SchedulerState['limits'], now?: () => number) {
    this.#limits = limits;
    this.#now = now;
  }

  /** Commands the live state applied that the mirror has not yet (held back by a snapshot, or since one). */
  get behind(): number {
    return this.#held.length - this.#heldFrom;
  }

  /** A scheduler command the live state applied, at its entry's index, as it applied it (under the cluster version `version`, see SchedulerState.apply). */
  apply(index: number, command: SchedulerCommand, version: number = FIRST_CLUSTER_VERSION): void {
    if (!this.#holding && this.#heldFrom === this.#held.length) {
      this.#mirror().apply(index, command, version);
      return;
    }
    this.#held.push({ index, command, version });
    if (!this.#holding) this.#catchUp(CATCH_UP_PER_ENTRY);
  }

  /** The cluster version in force became `version` at the entry `index`, as the live state was told (SchedulerState.versionRaised). */
  versionRaised(index: number, version: number): void {
    if (!this.#holding && this.#heldFrom === this.#held.length) {
      this.#mirror().versionRaised(version);
      return;
    }
    this.#held.push({ index, command: null, version });
    if (!this.#holding) this.#catchUp(CATCH_UP_PER_ENTRY);
  }

  /** The live state was replaced by a snapshot's scheduler state (its bytes): so is the mirror, and a snapshot in progress is void. */
  restore(schedulerBytes: Uint8Array): void {
    this.#generation++;
    this.#holding = false;
    this.#held = [];
    this.#heldFrom = 0;
    restoreSchedulerSnapshot(this.#mirror(), schedulerBytes);
  }

  /** Begins a member snapshot of the state as applied so far (see StateMachine.snapshotInSteps); it voids one in progress. */
  snapshotInSteps(cluster: Uint8Array, fanout: Generator<null, Uint8Array[], void> | null = null): SnapshotSteps {
    this.#holding = false;
    this.#catchUp(Number.POSITIVE_INFINITY);
    const generation = ++this.#generation;
    this.#holding = true;
    const steps = schedulerSnapshotSteps(this.#mirror());
    let joining: StepwiseConcat | null = null;
    let scheduler: Uint8Array[] | null = null;
    let fanoutPieces: Uint8Array[] | null = null;
    let data: Uint8Array | null = null;
    /** One piece of work: the snapshot's data once complete, else null. */
    const piece = (): Uint8Array | null => {
      // Held back this much, the mirror finishes now rather than hold more.
      const atOnce = this.behind >= MAX_ENTRIES_HELD;
      if (joining === null) {
        if (scheduler === null) {
          let next = steps.next();
          while (next.done !== true && atOnce) next = steps.next();
          if (next.done !== true) return null;
          scheduler = next.value;
        }
        // Fan-out's part, taken at the same index (its generator took its records as it was made), encoded after.
        if (fanout !== null && fanoutPieces === null) {
          let next = fanout.next();
          while (next.done !== true && atOnce) next = fanout.next();
          if (next.done !== true) return null;
          fanoutPieces = next.value;
        }
        joining = new StepwiseConcat(memberSnapshotPieces(scheduler, cluster, fanoutPieces));
      }
      data ??= joining.copy(atOnce ? Number.POSITIVE_INFINITY : SNAPSHOT_BYTES_PER_STEP);
      if (data === null) return null;
      this.#holding = false;
      this.#catchUp(atOnce ? Number.POSITIVE_INFINITY : CATCH_UP_PER_STEP);
      return this.behind === 0 ? data : null;
    };
    return {
      step: () => {
        if (generation !== this.#generation) throw new Error('Raft driver invariant violated: a step of a snapshot that a restore or a later snapshot made void');
        const now = this.#now;
        if (now === undefined) return piece();
        const until = now() + SNAPSHOT_STEP_BUDGET_MS;
        for (let pieces = 1; ; pieces++) {
          const done = piece();
          if (done !== null || pieces >= MAX_PIECES_PER_STEP || now() >= until) return done;
        }
      },
    };
  }

  /** Applies at most `count` of the commands held back, oldest first. */
  #catchUp(count: number): void {
    const until = Math.min(this.#held.length, this.#heldFrom + count);
    for (; this.#heldFrom < until; this.#heldFrom++) {
      const { index, command, version } = this.#held[this.#heldFrom] as HeldCommand;
      if (command === null) this.#mirror().versionRaised(version);
      else this.#mirror().apply(index, command, version);
    }
    if (this.#heldFrom === this.#held.length) {
      this.#held = [];
      this.#heldFrom = 0;
    }
  }

  #mirror(): SchedulerState {
    // Nobody reads which of the mirror's jobs changed (state() reads the live state's).
    this.#state ??= new SchedulerState(this.#limits(), { tracksChanges: false });
    return this.#state;
  }
}
