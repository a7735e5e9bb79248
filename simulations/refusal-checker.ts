import type { NodeId } from '../src/raft/types.js';
import type { Member } from '../src/runtime/member.js';
import type { Report, ViolationKind } from './violations.js';

/**
 * What a member counts when it refuses an input, each a kind of violation of its own in a
 * simulation (violations.ts says what each counts). A production member drops and counts what a faulty or hostile peer sends, and
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
 *
 * An entry of the log that a member skipped as malformed is here too: every entry an honest
 * member proposes is a command it encoded (the simulator's application proposals are user
 * commands, as `Cluster.propose` writes them), so a skip means an encoder and the decoder
 * disagree. (Entries skipped as of a version not in force are the version checker's.)
 */
export const REFUSAL_COUNTERS = {
  'invalid-message': (m: Member): number => m.driver.invalidMessages,
  'protocol-violation': (m: Member): number => m.driver.node.protocolViolations,
  'unsendable-message': (m: Member): number => m.driver.unsendableMessages,
  'invalid-snapshot': (m: Member): number => m.driver.invalidSnapshots,
  'invalid-snapshot-chunk': (m: Member): number => m.driver.invalidSnapshotChunks,
  'invalid-clock-stamp': (m: Member): number => m.driver.invalidClockStamps,
  'malformed-entry': (m: Member): number => m.skippedEntries.malformed,
} as const satisfies Partial<Record<ViolationKind, (m: Member) => number>>;

export type RefusalKind = keyof typeof REFUSAL_COUNTERS;

const COUNTERS = Object.entries(REFUSAL_COUNTERS) as ReadonlyArray<[RefusalKind, (m: Member) => number]>;

/**
 * Reads every refusal counter of every member after each event, and reports each one that
 * moved, once per counter and process life (a restart begins at zero with a new assembly), with
 * the member and the count, so that a replay of the seed stops where it first moved.
 */
export class RefusalChecker {
  readonly #report: Report;
  /** Per member assembly (one per process life), the counters already reported, with the count first seen. */
  readonly #seen = new WeakMap<Member, Map<RefusalKind, number>>();

  constructor(report: Report) {
    this.#report = report;
  }

  /** `assembly`: the member's assembly in its current process life (its driver and state machine). */
  check(t: number, member: NodeId, assembly: Member): void {
    let seen = this.#seen.get(assembly);
    for (const [kind, read] of COUNTERS) {
      const count = read(assembly);
      if (count === 0 || seen?.has(kind) === true) continue;
      if (seen === undefined) {
        seen = new Map();
        this.#seen.set(assembly, seen);
      }
      seen.set(kind, count);
      this.#report(t, kind, `${member} counted ${count} (among honest members, only a bug moves this count)`);
    }
  }

  /** A member stopped after a fatal error. */
  onFatal(t: number, member: NodeId, error: unknown): void {
    this.#report(t, 'fatal', `${member} stopped: ${error instanceof Error ? error.message : String(error)}`);
  }
}
