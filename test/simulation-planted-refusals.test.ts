import { afterEach, describe, expect, it } from 'vitest';
import { InvariantError } from '../src/raft/invariant.js';
import { RaftLog } from '../src/raft/log.js';
import { RaftNode } from '../src/raft/node.js';
import { FATAL, hasViolationOf, type RefusalKind } from '../simulations/refusal-checker.js';
import { simulate, type SimulationOptions } from '../simulations/simulate.js';

/**
 * The simulator no longer looks away from what a member refuses or fails on: each test plants a
 * bug that production would only count (or stop one member on), and shows that the simulator
 * reports it as a violation of its own kind within a few seeds, at the event where it happened.
 * Before refusal-checker.ts, the count moved unread, and a run caught such a bug only through its
 * later effects, if it had any (a slot with no outcome, a member left behind).
 */
interface Plant {
  readonly kind: RefusalKind | typeof FATAL;
  readonly plant: () => () => void;
  /** The options of the sweep: Raft alone, or the scheduler's jobs. */
  readonly options: Omit<SimulationOptions, 'seed'>;
  /** Seeds swept at most; the catch rate measured is in each plant's comment. */
  readonly seeds: number;
}

const raftAlone: Omit<SimulationOptions, 'seed'> = { members: 3, durationMs: 10_000, jobs: [], faults: { clocks: false, pauses: false } };
const withJobs: Omit<SimulationOptions, 'seed'> = { members: 3, durationMs: 10_000, proposals: false, faults: { clocks: false } };

const plants: Record<string, Plant> = {
  // The log asserts more than the protocol promises: that no entry it holds is ever replaced,
  // when only committed ones are safe from a new leader. An honest leader's append replacing an
  // uncommitted suffix then breaks it; the member stops (fatal). Catch rate: from seed 1, in 24
  // of the first 30 seeds.
  'an invariant asserted beyond what the protocol promises': {
    kind: FATAL,
    options: raftAlone,
    seeds: 10,
    plant: () => {
      const original = RaftLog.prototype.maybeAppend;
      RaftLog.prototype.maybeAppend = function (this: RaftLog, prevIndex, entries) {
        for (const e of entries) {
          const term = this.term(e.index);
          if (term !== undefined && term !== e.term) throw new InvariantError(`entry ${e.index} conflicts with the log`);
        }
        return original.call(this, prevIndex, entries);
      };
      return () => {
        RaftLog.prototype.maybeAppend = original;
      };
    },
  },
  // A follower forwards its proposals without their data (the scheduler's records of runs go
  // from assignees to the leader this way): the leader's protocol throws on them, and production
  // counts them as a faulty peer's messages. Catch rate: from seed 1, in all of the first 30 seeds.
  'proposals forwarded without their data': {
    kind: 'invalid message',
    options: withJobs,
    seeds: 10,
    plant: () => {
      const original = RaftNode.prototype.propose;
      RaftNode.prototype.propose = function (this: RaftNode, proposals) {
        if (this.role === 'leader') return original.call(this, proposals);
        return original.call(this, proposals.map((p) => ({ pid: p.pid, data: undefined as unknown as Uint8Array })));
      };
      return () => {
        RaftNode.prototype.propose = original;
      };
    },
  },
};

let unplant: (() => void) | null = null;
afterEach(() => {
  unplant?.();
  unplant = null;
});

describe('planted bugs are reported by the kind of what the members refused', () => {
  for (const [name, { kind, plant, options, seeds }] of Object.entries(plants)) {
    it(`${name}: ${kind}`, async () => {
      unplant = plant();
      let caughtAt: number | null = null;
      for (let seed = 1; seed <= seeds && caughtAt === null; seed++) {
        const r = await simulate({ ...options, seed });
        if (hasViolationOf(r.violations, kind)) caughtAt = seed;
      }
      expect(caughtAt, `${name} was not reported as ${kind} in ${seeds} seeds`).not.toBeNull();
    }, 600_000);
  }
});
