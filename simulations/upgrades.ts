import type { Random } from '../src/time/random.js';
import { SeededRandom } from '../src/time/random.js';
import { VersionNotActiveError } from '../src/errors.js';
import type { SimMember } from './member.js';
import type { SimScheduler } from './scheduler.js';

/**
 * What releases a run's members run: `same`, all this release (SUPPORTED) throughout; `upgrade`,
 * all start on it and a rolling upgrade (faults.ts, injectUpgrades) moves each in turn to the
 * test-only next release (version/test-next-version.ts) during the other faults.
 */
export type VersionsMode = 'same' | 'upgrade';

/** The share of seeds that draw a rolling upgrade. */
export const UPGRADE_SHARE = 0.25;

/**
 * Draws a run's versions mode from `seed`, on a stream of its own, so that no other draw moves
 * with it: a run of `same` is the run it was before upgrades existed.
 */
export function drawVersionsMode(seed: number): VersionsMode {
  return new SeededRandom(seed * 48_271 + 11).int(0, 999) < UPGRADE_SHARE * 1000 ? 'upgrade' : 'same';
}

/** The stream a rolling upgrade draws from (its order and moments), apart from every other fault's. */
export function upgradeRandom(seed: number): Random {
  return new SeededRandom(seed * 69_621 + 7);
}

/** The stream the test-note workload draws from (which member proposes), apart from every other. */
export function notesRandom(seed: number): Random {
  return new SeededRandom(seed * 16_807 + 13);
}

/** How often the test-note workload proposes a note (ms), the whole run long. */
export const NOTE_EVERY_MS = 250;

/** The feature name a test note is proposed under (the gate's error names it). */
export const TEST_NOTE_FEATURE = 'test-note';

/** What the test-note workload saw, for the checkers and the run's result. */
export interface NoteEvents {
  /** A note was refused at once by the gate (VersionNotActiveError), by `member`, whose version in force was `active`. */
  readonly onRefused: (t: number, member: SimMember, active: number) => void;
  /** A note proposed by `member` while its version in force was `active` committed at `index`. */
  readonly onCommitted: (t: number, member: SimMember, index: number, active: number) => void;
}

/**
 * The test-note workload: every NOTE_EVERY_MS, a member that runs a release reading `version`
 * proposes a note (`member.proposeVersioned`), as an application of the next release would use
 * its new command. Until the version is active the gate must refuse it at once; after, it
 * commits. Draws only from `random`, its own stream.
 */
export function startNotes(scheduler: SimScheduler, members: readonly SimMember[], version: number, random: Random, events: NoteEvents): void {
  let count = 0;
  const propose = (): void => {
    const ready = members.filter((m) => m.member !== null && m.versions.stateMachine.max >= version);
    const m = ready.length > 0 ? ready[random.int(0, ready.length - 1)] : undefined;
    const member = m?.member;
    if (m !== undefined && member !== undefined && member !== null) {
      const active = member.versions.active;
      const text = `note-${++count}`;
      try {
        member.proposeVersioned(TEST_NOTE_FEATURE, version, { type: 'test-note', text }).then(
          ({ index }) => events.onCommitted(scheduler.nowMs, m, index, active),
          () => undefined,
        );
      } catch (error) {
        if (!(error instanceof VersionNotActiveError)) throw error;
        events.onRefused(scheduler.nowMs, m, active);
      }
    }
    scheduler.after(NOTE_EVERY_MS, propose);
  };
  scheduler.after(NOTE_EVERY_MS, propose);
}
