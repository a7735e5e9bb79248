import type { NodeId } from '../src/raft/types.js';
import type { RaftDriver } from '../src/runtime/driver.js';

/**
 * What a member counts when it refuses an input, each a kind of violation of its own in a
 * simulation. A production member drops and counts what a faulty or hostile peer sends, and
 * carries on; the simulator has no fault that forges or corrupts a message, so among its
 * members every one of these counts a message an honest member sent and another refused: a
 * bug on one side or the other, which a count alone would hide.
 *
 * Not here, because honest members move them under the simulator's faults: chunks of snapshots
 * dropped as duplicates or as a deposed leader's late ones (a network that duplicates and
 * reorders; SnapshotAssembler.dropped less its `invalid`), snapshots partly received that
 * expired (their leader crashed or moved on: `expired`), and clock samples discarded as too
 * imprecise (a slow or clogged link: ClockSync.discardedSamples). The simulated transport
 * encodes nothing, so the codec's own drops (`transport.stats()`) cannot move in a simulation.
 */
export const REFUSAL_COUNTERS = {
  /** A message threw inside the protocol (RaftDriver.invalidMessages; not a broken invariant, which is `fatal`). */
  'invalid message': (d: RaftDriver): number => d.invalidMessages,
  /** A message the protocol ignored as contradicting it, e.g. a second leader in one term (RaftNode.protocolViolations). */
  'protocol violation': (d: RaftDriver): number => d.node.protocolViolations,
  /** A message the transport refused to send (RaftDriver.unsendableMessages). */
  'unsendable message': (d: RaftDriver): number => d.unsendableMessages,
  /** A leader's snapshot the state machine could not read (RaftDriver.invalidSnapshots). */
  'invalid snapshot': (d: RaftDriver): number => d.invalidSnapshots,
  /** A chunk of a snapshot no honest leader sends (RaftDriver.invalidSnapshotChunks). */
  'invalid snapshot chunk': (d: RaftDriver): number => d.invalidSnapshotChunks,
  /** A clock stamp malformed, out of bounds or inconsistent (RaftDriver.invalidClockStamps). */
  'invalid clock stamp': (d: RaftDriver): number => d.invalidClockStamps,
} as const;

/** A member stopped after a fatal error (a broken invariant, a failed write): its own kind of violation. */
export const FATAL = 'fatal';

export type RefusalKind = keyof typeof REFUSAL_COUNTERS;

const COUNTERS = Object.entries(REFUSAL_COUNTERS) as ReadonlyArray<[RefusalKind, (d: RaftDriver) => number]>;

/** Whether one of `violations` (as SafetyChecker keeps them: `t=…ms: kind: …`) is of `kind`. */
export function hasViolationOf(violations: readonly string[], kind: RefusalKind | typeof FATAL): boolean {
  return violations.some((v) => v.replace(/^t=[\d.]+ms: /, '').startsWith(`${kind}: `));
}

/**
 * Reads every refusal counter of every member after each event, and reports each one that
 * moved, once per counter and process life (a restart begins at zero with a new driver), with
 * the member and the count, so that a replay of the seed stops where it first moved.
 */
export class RefusalChecker {
  readonly #report: (t: number, what: string) => void;
  /** Per driver (one per process life), the counters already reported, with the count first seen. */
  readonly #seen = new WeakMap<RaftDriver, Map<RefusalKind, number>>();

  constructor(report: (t: number, what: string) => void) {
    this.#report = report;
  }

  check(t: number, member: NodeId, driver: RaftDriver): void {
    let seen = this.#seen.get(driver);
    for (const [kind, read] of COUNTERS) {
      const count = read(driver);
      if (count === 0 || seen?.has(kind) === true) continue;
      if (seen === undefined) {
        seen = new Map();
        this.#seen.set(driver, seen);
      }
      seen.set(kind, count);
      this.#report(t, `${kind}: ${member} counted ${count} (among honest members, only a bug moves this count)`);
    }
  }

  /** A member stopped after a fatal error. */
  onFatal(t: number, member: NodeId, error: unknown): void {
    this.#report(t, `${FATAL}: ${member} stopped: ${error instanceof Error ? error.message : String(error)}`);
  }
}
