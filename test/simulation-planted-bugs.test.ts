import { afterEach, describe, expect, it } from 'vitest';
import { RaftLog } from '../src/raft/log.js';
import { SchedulerState, type SchedulerCommand } from '../src/scheduler/state.js';
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

/** Wraps SchedulerState.apply: `before` may change the state first, `after` the result's effect. */
function patchApply(around: (state: SchedulerState, index: number, command: SchedulerCommand, apply: () => ReturnType<SchedulerState['apply']>) => ReturnType<SchedulerState['apply']>): () => void {
  const original = SchedulerState.prototype.apply;
  SchedulerState.prototype.apply = function (this: SchedulerState, index: number, command: SchedulerCommand) {
    return around(this, index, command, () => original.call(this, index, command));
  };
  return () => {
    SchedulerState.prototype.apply = original;
  };
}

const schedulerPlants: Record<string, Patch> = {
  // The state machine forgets its high-water mark checks (the mark and the mark the claim was
  // planned from): a slot re-proposed by a new leader, which plans before it has applied its
  // predecessor's claims, is claimed again.
  'a claim applied without the high-water mark checks': () =>
    patchApply((state, _index, command, apply) => {
      const job = command.type === 'claim' ? state.jobs.get(command.job) : undefined;
      if (job === undefined || command.type !== 'claim') return apply();
      const mark = job.highWaterMs;
      job.highWaterMs = command.fromMs ?? Math.min(mark, command.slotMs - 1);
      const result = apply();
      job.highWaterMs = Math.max(mark, job.highWaterMs);
      return result;
    }),
  // A reassignment moves the slot but keeps the old fencing token.
  'a reassignment that keeps the old fencing token': () =>
    patchApply((_state, _index, command, apply) => {
      const result = apply();
      if (command.type === 'reassign' && result.ok && result.claim !== undefined) result.claim.token = command.fromToken;
      return result;
    }),
  // Some outcomes are acknowledged but never recorded, so their slots never settle.
  'an outcome acknowledged but not recorded': () =>
    patchApply((_state, _index, command, apply) => (command.type === 'outcome' && command.slotMs % 3000 < 1000 ? { ok: true } : apply())),
};

let unplant: (() => void) | null = null;
afterEach(() => {
  unplant?.();
  unplant = null;
});

describe('planted scheduler bugs are caught', () => {
  for (const [name, plant] of Object.entries(schedulerPlants)) {
    it(name, async () => {
      unplant = plant();
      let caughtAt: number | null = null;
      for (let seed = 1; seed <= 300 && caughtAt === null; seed++) {
        const r = await simulate({ seed, members: 3, durationMs: 10_000, proposals: false, faults: { clocks: false } });
        if (r.violations.length > 0) caughtAt = seed;
      }
      expect(caughtAt, `${name} was not caught in 300 seeds`).not.toBeNull();
    }, 600_000);
  }
});

describe('planted bugs are caught', () => {
  for (const [name, plant] of Object.entries(plants)) {
    it(name, async () => {
      unplant = plant();
      let caughtAt: number | null = null;
      for (let seed = 1; seed <= 300 && caughtAt === null; seed++) {
        // Raft alone, with the faults these bugs need (the scheduler's jobs and clock faults add nothing here).
        const r = await simulate({ seed, members: 3, durationMs: 10_000, jobs: [], faults: { clocks: false, pauses: false } });
        if (r.violations.length > 0) caughtAt = seed;
      }
      expect(caughtAt, `${name} was not caught in 300 seeds`).not.toBeNull();
    }, 600_000);
  }
});
