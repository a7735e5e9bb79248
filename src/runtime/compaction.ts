import type { RaftNode } from '../raft/node.js';
import type { Snapshot } from '../raft/types.js';
import type { TimerHandle, Timers } from '../time/clock.js';
import type { SnapshotSteps, StateMachine } from './state-machine.js';

/**
 * When a member compacts its log: once this many entries were applied since its last snapshot,
 * it takes a new one and drops the log behind it, keeping `retainEntries` so that a follower a
 * little behind still gets entries rather than the whole state. Together they bound the log
 * kept in memory and on disk.
 */
export interface CompactionOptions {
  readonly everyEntries: number;
  readonly retainEntries: number;
}

export const COMPACTION_DEFAULTS: CompactionOptions = {
  everyEntries: 10_000,
  retainEntries: 1_000,
};

/**
 * How long the last snapshot this member took of its own state held its event loop: its steps,
 * and once it is handed to storage (after the steps, behind the writes before it), that call,
 * counted as one more step.
 */
export interface SnapshotTiming {
  /** Every step together, in ms. */
  readonly loopMs: number;
  /** The longest step, in ms: the longest the loop stood still for it at once (the steps taken together when it was finished at once, see Compactor.finishNow). */
  readonly longestStepMs: number;
  readonly steps: number;
  /** The snapshot's size, in bytes. */
  readonly bytes: number;
}

export interface CompactorOptions {
  readonly node: RaftNode;
  readonly stateMachine: StateMachine;
  readonly timers: Timers;
  /** @default COMPACTION_DEFAULTS */
  readonly compaction: CompactionOptions | undefined;
  /** Whether the member still runs: a snapshot in steps goes no further once it stops. */
  readonly running: () => boolean;
  /** Runs the driver's loop soon: a snapshot taken in steps is complete (see compactTaken). */
  readonly kick: () => void;
  /** A step of the state machine's snapshot threw: the member stops. */
  readonly fail: (error: unknown) => void;
  /**
   * Writes the compaction behind every earlier write: the node's log is already compacted to
   * `snapshot` in memory. The driver does it, as it orders every write, and tells `held` how
   * long handing it to storage held the event loop.
   */
  readonly store: (snapshot: Snapshot, held: (ms: number) => void) => void;
}

/** A snapshot being taken in steps: of the state at `index`, its next step's timer, and its timing so far. */
interface SnapshotInSteps {
  readonly index: number;
  readonly term: number;
  readonly steps: SnapshotSteps;
  timer: TimerHandle | null;
  loopMs: number;
  longestStepMs: number;
  count: number;
}

/**
 * Takes snapshots of a member's own state and compacts its log behind them: when enough entries
 * were applied, at once or in steps (one per turn of the event loop), with how long each held
 * the loop. The driver calls `maybeCompact` after each Ready and `compactTaken` once it has
 * handled every Ready; the write itself is the driver's (`store`).
 */
export class Compactor {
  readonly #o: CompactorOptions;
  /** Snapshots this member took of its own state. */
  #taken = 0;
  /** How long the last snapshot taken here held the event loop; null before the first. */
  #lastTiming: SnapshotTiming | null = null;
  /** A snapshot taken in steps and complete, for the loop to compact to once it has handled every Ready. */
  #snapshotTaken: Snapshot | null = null;
  /** The snapshot being taken in steps for a compaction, if any (see maybeCompact). */
  #snapshotting: SnapshotInSteps | null = null;

  constructor(options: CompactorOptions) {
    this.#o = options;
  }

  /** Snapshots this member took of its own state (compactions). */
  get snapshotsTaken(): number {
    return this.#taken;
  }

  /** How long the last snapshot taken here held the event loop; null before the first. */
  get lastSnapshot(): SnapshotTiming | null {
    return this.#lastTiming;
  }

  /**
   * Takes a snapshot of the state machine at the applied index and compacts the log behind it,
   * once `everyEntries` were applied since the last snapshot (see CompactionOptions).
   */
  maybeCompact(): void {
    if (this.#snapshotting !== null || this.#snapshotTaken !== null) return;
    const { everyEntries } = this.#o.compaction ?? COMPACTION_DEFAULTS;
    const node = this.#o.node;
    const index = node.log.applied;
    if (index - node.latestSnapshot.index < everyEntries) return;
    const term = node.log.term(index);
    if (term === undefined) return;
    // The state machine's own snapshot is not read back here (that would double the time the
    // loop stands still): every value in it came through a checked command or snapshot.
    if (this.#o.stateMachine.snapshotInSteps === undefined) {
      const started = this.#o.timers.now();
      const data = this.#o.stateMachine.snapshot();
      const ms = this.#o.timers.now() - started;
      this.#lastTiming = { loopMs: ms, longestStepMs: ms, steps: 1, bytes: data.byteLength };
      this.#compactTo({ index, term, data });
      return;
    }
    // In steps, one per turn of the event loop (a timer), so that messages, proposals and slot
    // timers are served between them; the snapshot still stands for `index`.
    const steps = this.#o.stateMachine.snapshotInSteps();
    this.#snapshotting = { index, term, steps, timer: null, loopMs: 0, longestStepMs: 0, count: 0 };
    // The log is not compacted until the snapshot is complete, while entries go on committing
    // and applying. Past two intervals after the last snapshot, applying holds, and the driver
    // has the rest of the snapshot taken at once (finishNow), so the log kept stays within its
    // bound (member-bounds.ts) however slowly the steps go; only when that much commits during
    // the steps (a member catching up) does the event loop wait for a whole snapshot.
    node.holdApplyingAbove(node.latestSnapshot.index + 2 * everyEntries);
    this.#snapshotStep();
  }

  /**
   * Takes the rest of the snapshot in progress, if any, at once: applying reached its hold (see
   * maybeCompact). The loop compacts to it as it does to one taken in steps (compactTaken).
   */
  finishNow(): void {
    const s = this.#snapshotting;
    if (s === null || !this.#o.running()) return;
    if (s.timer !== null) this.#o.timers.clearTimeout(s.timer);
    s.timer = null;
    const started = this.#o.timers.now();
    while (this.#snapshotting === s && !this.#step(s));
    // The loop stood still for every step taken here at once: its longest step is all of them.
    const timing = this.#lastTiming;
    if (this.#snapshotTaken !== null && timing !== null) this.#lastTiming = { ...timing, longestStepMs: Math.max(timing.longestStepMs, this.#o.timers.now() - started) };
  }

  /**
   * Compacts to a snapshot taken in steps, once every Ready so far is handled (its entries handed
   * to storage). Returns whether it did: entries held from applying meanwhile are ready now.
   */
  compactTaken(): boolean {
    const snapshot = this.#snapshotTaken;
    if (snapshot === null || !this.#o.running()) return false;
    this.#snapshotTaken = null;
    this.#o.node.holdApplyingAbove(null);
    this.#compactTo(snapshot);
    return true;
  }

  /** Drops the snapshot in progress, if any: the member stops, or a leader's snapshot replaces the state. */
  abandon(): void {
    this.#snapshotTaken = null;
    this.#o.node.holdApplyingAbove(null);
    const s = this.#snapshotting;
    if (s === null) return;
    if (s.timer !== null) this.#o.timers.clearTimeout(s.timer);
    this.#snapshotting = null;
  }

  /** Takes one step of the snapshot in progress, and the next on a later turn until it is complete. */
  #snapshotStep(): void {
    const s = this.#snapshotting;
    if (s === null || !this.#o.running()) return;
    s.timer = null;
    if (!this.#step(s) && this.#snapshotting === s) s.timer = this.#o.timers.setTimeout(() => this.#snapshotStep(), 0);
  }

  /** One step of snapshot `s`, timed. Returns true once the snapshot is complete, or its step threw (the member stops). */
  #step(s: SnapshotInSteps): boolean {
    const started = this.#o.timers.now();
    let data: Uint8Array | null;
    try {
      data = s.steps.step();
    } catch (error) {
      this.#o.fail(error);
      return true;
    }
    const ms = this.#o.timers.now() - started;
    s.loopMs += ms;
    s.longestStepMs = Math.max(s.longestStepMs, ms);
    s.count++;
    if (data === null) return false;
    this.#snapshotting = null;
    this.#lastTiming = { loopMs: s.loopMs, longestStepMs: s.longestStepMs, steps: s.count, bytes: data.byteLength };
    // Compacted from the loop, not from this timer: messages stepped since the last Ready may
    // have moved the node's commit point past what storage has been handed, and the compaction
    // writes that commit point (see compactTaken).
    this.#snapshotTaken = { index: s.index, term: s.term, data };
    this.#o.kick();
    return true;
  }

  /** Compacts the log behind a snapshot of this member's state, in memory and then in storage. */
  #compactTo(snapshot: Snapshot): void {
    const { everyEntries, retainEntries } = this.#o.compaction ?? COMPACTION_DEFAULTS;
    // False when a leader's snapshot newer than this one was installed meanwhile.
    if (!this.#o.node.compact(snapshot, retainEntries, everyEntries)) return;
    this.#taken++;
    // The store's part of the timing is this snapshot's, unless a later one was taken by then.
    const timing = this.#lastTiming;
    const held = (ms: number): void => {
      if (timing === null || this.#lastTiming !== timing) return;
      this.#lastTiming = { loopMs: timing.loopMs + ms, longestStepMs: Math.max(timing.longestStepMs, ms), steps: timing.steps + 1, bytes: timing.bytes };
    };
    // The node's snapshot, not the one given: it holds the configuration as of its index.
    this.#o.store(this.#o.node.latestSnapshot, held);
  }
}
