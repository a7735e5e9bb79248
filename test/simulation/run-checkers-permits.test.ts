import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { memberSettings } from '../../src/runtime/member-settings.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { RunCheckers } from '../../simulations/checkers/index.js';
import { SchedulerChecker, type SlotRecord } from '../../simulations/scheduler-checker.js';
import { SIM_EPOCH_MS } from '../../simulations/scheduler.js';

/** The lateness bound of the checks after healing. */
const MARGIN_MS = 50;

/** The run checkers of members whose maxConcurrent is `maxConcurrent`, over a log of two jobs of mode 'one'. */
function checkers(maxConcurrent: number): { runs: RunCheckers; slots: SchedulerChecker } {
  const slots = new SchedulerChecker(() => undefined);
  for (const [job, overlap] of [
    ['long', 'skip'],
    ['waits', 'replace'],
  ] as const) {
    slots.jobs.set(job, { spec: parseSpec({ every: '1s' }), mode: 'one', policy: { overlap }, anchorMs: SIM_EPOCH_MS, countFromMs: SIM_EPOCH_MS, claims: 0, missed: 0, highWaterMs: SIM_EPOCH_MS } as never);
  }
  const timing = { ...memberSettings().timing, maxConcurrent };
  const runs = new RunCheckers({ report: () => undefined, slots, members: [], current: () => ['m1', 'm2'], timing, jobs: [], lastCut: () => undefined, sentAt: () => undefined });
  return { runs, slots };
}

function claim(slots: SchedulerChecker, job: string, slotT: number, token: number, assignees: readonly NodeId[]): SlotRecord {
  const slotMs = SIM_EPOCH_MS + slotT;
  const record: SlotRecord = { job, slotMs, token, assignees, attempt: 1, retried: 0, outcomes: new Map(), outcomeAt: new Map(), firstStartT: null, runs: 0, grants: new Set(assignees.map((m) => `${m} ${token}`)), cancelledToken: null };
  slots.slots.set(`${job}@${slotMs}`, record);
  return record;
}

/**
 * A member whose jobs need more runs at once than its maxConcurrent works through a backlog: a
 * slot waits for a free run permit, late, or past the end of a run. A census of seeds with
 * maxConcurrent 1 and 2 (which no sweep set) found the checkers blaming such waits: the outcome
 * check, for a slot still waiting at the end behind other jobs' runs, and the lateness check, for
 * a slot that waited on a full member, failed there, and was moved to another that was not full.
 */
describe('the run checkers, for a member at its maxConcurrent', () => {
  it('count a slot waiting for a run permit on a member that has been running its fill as underway, and not otherwise', () => {
    const { runs, slots } = checkers(1);
    claim(slots, 'long', 1000, 10, ['m1']);
    claim(slots, 'waits', 2000, 11, ['m1']);
    runs.onRunStart(1000, 'm1', 0, { job: 'long', slotMs: SIM_EPOCH_MS + 1000, fencingToken: 10 });
    // Still running 'long': 'waits' waits for its permit.
    expect(runs.underway(5000, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(true);
    // Another member was never full: nothing keeps the slot waiting there.
    expect(runs.underway(5000, 'waits', SIM_EPOCH_MS + 2000, 'm2')).toBe(false);
    runs.onRunEnd(6000, 'm1', 0, { job: 'long', slotMs: SIM_EPOCH_MS + 1000, fencingToken: 10 } as never);
    expect(runs.underway(6500, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(true);
    // Idle for longer than a queue that moves stands still: the slot has no excuse.
    expect(runs.underway(8000, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(false);
    // Members with no maxConcurrent never wait for a permit.
    const unlimited = checkers(Number.POSITIVE_INFINITY);
    claim(unlimited.slots, 'long', 1000, 10, ['m1']);
    claim(unlimited.slots, 'waits', 2000, 11, ['m1']);
    unlimited.runs.onRunStart(1000, 'm1', 0, { job: 'long', slotMs: SIM_EPOCH_MS + 1000, fencingToken: 10 });
    expect(unlimited.runs.underway(5000, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(false);
  });

  it('excuse a slot late on a full member that it then moved away from, and not one no member it was given was full for', () => {
    const { runs, slots } = checkers(1);
    claim(slots, 'long', 1000, 10, ['m1']);
    const waits = claim(slots, 'waits', 2000, 11, ['m1']);
    claim(slots, 'waits', 9000, 12, ['m2']);
    runs.onRunStart(1000, 'm1', 0, { job: 'long', slotMs: SIM_EPOCH_MS + 1000, fencingToken: 10 });
    // 'waits' waited on m1, failed there, and was moved to m2 (a retry): its current assignee.
    waits.token = 20;
    waits.assignees = ['m2'];
    waits.grants.add('m2 20');
    expect(runs.excused('waits', SIM_EPOCH_MS + 2000, undefined, MARGIN_MS)).toBe(true);
    // A slot given to m2 alone, which ran nothing: late with no excuse.
    expect(runs.excused('waits', SIM_EPOCH_MS + 9000, undefined, MARGIN_MS)).toBe(false);
  });
});
