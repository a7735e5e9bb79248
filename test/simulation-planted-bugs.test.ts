import { afterEach, describe, expect, it } from 'vitest';
import { RaftLog } from '../src/raft/log.js';
import { simulate } from '../simulations/simulate.js';

/**
 * The checkers are not vacuous: each test plants a known bug in the protocol (by patching the
 * log the production node uses), then shows the simulator catches it within a bounded sweep
 * of seeds. Without the bug the same seeds pass (test/simulation.test.ts).
 */
type Patch = () => () => void;

const plants: Record<string, Patch> = {
  // A voter grants its vote without checking that the candidate's log is up to date.
  'vote granted without the log check': () => {
    const original = RaftLog.prototype.isUpToDate;
    RaftLog.prototype.isUpToDate = (): boolean => true;
    return () => {
      RaftLog.prototype.isUpToDate = original;
    };
  },
  // A write that was overtaken by a truncation still counts as durable (the bug fixed in log.ts).
  'a replaced suffix still counted as durable': () => {
    const original = RaftLog.prototype.stableTo;
    RaftLog.prototype.stableTo = function (this: RaftLog, index: number): boolean {
      if (index <= this.stable) return false;
      this.stable = index;
      return true;
    };
    return () => {
      RaftLog.prototype.stableTo = original;
    };
  },
  // A follower commits whatever the leader says, beyond the entries it has checked.
  'a commit index taken beyond the matching log': () => {
    const original = RaftLog.prototype.commitTo;
    RaftLog.prototype.commitTo = function (this: RaftLog, index: number): boolean {
      return original.call(this, Math.min(this.lastIndex(), index + 3));
    };
    return () => {
      RaftLog.prototype.commitTo = original;
    };
  },
};

let unplant: (() => void) | null = null;
afterEach(() => {
  unplant?.();
  unplant = null;
});

describe('planted bugs are caught', () => {
  for (const [name, plant] of Object.entries(plants)) {
    it(name, async () => {
      unplant = plant();
      let caughtAt: number | null = null;
      for (let seed = 1; seed <= 300 && caughtAt === null; seed++) {
        const r = await simulate({ seed, members: 3, durationMs: 10_000 });
        if (r.violations.length > 0) caughtAt = seed;
      }
      expect(caughtAt, `${name} was not caught in 300 seeds`).not.toBeNull();
    }, 600_000);
  }
});
