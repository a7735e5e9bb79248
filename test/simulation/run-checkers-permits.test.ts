import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { memberSettings } from '../../src/runtime/member-settings.js';
import type { RunRecord } from '../../src/runtime/scheduler/job-types.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { RunCheckers } from '../../simulations/checkers/index.js';
import { checkHandover } from '../../simulations/handover.js';
import type { SimJob } from '../../simulations/jobs.js';
import type { SimMember } from '../../simulations/member.js';
import { SchedulerChecker, type JobInfo, type SlotRecord } from '../../simulations/scheduler-checker.js';
import { SIM_EPOCH_MS } from '../../simulations/scheduler.js';

/** The lateness bound of the checks after healing. */
const MARGIN_MS = 50;

/** What the checkers ask of a member: whether its run of a slot is not over (waits to start, say), as a test sets it. */
function member(id: NodeId, waiting: Set<string>): SimMember {
  return { id, incarnation: 0, member: { scheduler: { unsettled: (job: string, slotMs: number) => waiting.has(`${job}@${slotMs - SIM_EPOCH_MS}`) } } } as unknown as SimMember;
}

/** The run checkers of members m1 and m2, whose maxConcurrent is `maxConcurrent`, over a log of two jobs of mode 'one'. */
function checkers(maxConcurrent: number): { runs: RunCheckers; slots: SchedulerChecker; waiting: Set<string> } {
  const slots = new SchedulerChecker(() => undefined);
  for (const [job, overlap] of [
    ['long', 'skip'],
    ['waits', 'replace'],
  ] as const) {
    const record: JobInfo = { spec: parseSpec({ every: '1s' }), mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' }, overlap }, anchorMs: SIM_EPOCH_MS, countFromMs: SIM_EPOCH_MS, claims: 0, missed: 0, highWaterMs: SIM_EPOCH_MS };
    slots.jobs.set(job, record);
  }
  const waiting = new Set<string>();
  const timing = { ...memberSettings().timing, maxConcurrent };
  const members = [member('m1', waiting), member('m2', new Set())];
  const runs = new RunCheckers({ report: () => undefined, slots, members, current: () => ['m1', 'm2'], timing, jobs: [], lastCut: () => undefined, sentAt: () => undefined });
  return { runs, slots, waiting };
}

/** A claim of `job`'s slot at `slotT` (true ms) under `token`, seen applied at `givenT`. */
function claim(slots: SchedulerChecker, job: string, slotT: number, token: number, assignees: readonly NodeId[], givenT = slotT - 500): SlotRecord {
  const slotMs = SIM_EPOCH_MS + slotT;
  const record: SlotRecord = {
    job,
    slotMs,
    token,
    assignees,
    attempt: 1,
    retried: 0,
    outcomes: new Map(),
    outcomeAt: new Map(),
    firstStartT: null,
    runs: 0,
    grants: new Set(assignees.map((m) => `${m} ${token}`)),
    givenAt: new Map(assignees.map((m) => [m, givenT])),
    cancelledToken: null,
  };
  slots.slots.set(`${job}@${slotMs}`, record);
  return record;
}

/** The slot moved to `member` under `token`, as the log's reassign seen applied at `givenT` records it. */
function move(slot: SlotRecord, member: NodeId, token: number, givenT: number): void {
  slot.token = token;
  slot.assignees = [member];
  slot.grants.add(`${member} ${token}`);
  slot.givenAt.set(member, givenT);
}

function run(job: string, slotT: number, token: number, member: NodeId): RunRecord {
  return { job, slotMs: SIM_EPOCH_MS + slotT, fencingToken: token, member, startedAtMs: 0, endedAtMs: 0, outcome: 'succeeded', attempt: 1, retriesLeft: 0 };
}

/**
 * A member whose jobs need more runs at once than its maxConcurrent works through a backlog: a
 * slot waits for a free run permit, late, or past the end of a run. A census of seeds with
 * maxConcurrent 1 and 2 (which no sweep set) found the checkers blaming such waits: the outcome
 * check, for a slot still waiting at the end behind other jobs' runs, and the lateness check, for
 * a slot that waited on a full member, failed there, and was moved to another that was not full.
 * The excuses hold only for what the member really did: a slot it says waits while it runs, and
 * a member that held as many runs at once as it may when the slot was due, and held the slot.
 */
describe('the run checkers, for a member at its maxConcurrent', () => {
  it('count a slot as underway while its member says its run waits and the member runs, and not otherwise', () => {
    const { runs, slots, waiting } = checkers(1);
    claim(slots, 'long', 1000, 10, ['m1']);
    claim(slots, 'waits', 2000, 11, ['m1']);
    runs.onRunStart(1000, 'm1', 0, run('long', 1000, 10, 'm1'));
    // m1 runs 'long', and has no run of 'waits' waiting: the slot was lost there, busy or not.
    expect(runs.underway(5000, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(false);
    waiting.add('waits@2000');
    expect(runs.underway(5000, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(true);
    runs.onRunEnd(6000, 'm1', 0, run('long', 1000, 10, 'm1'));
    // Its queue moved a moment ago.
    expect(runs.underway(6500, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(true);
    // Nothing ran for longer than a moving queue stands still, while the run waits (a permit
    // never given back): no excuse.
    expect(runs.underway(8000, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(false);
    // Members with no maxConcurrent wait for no permit: the excuse is theirs alone.
    const unlimited = checkers(Number.POSITIVE_INFINITY);
    claim(unlimited.slots, 'waits', 2000, 11, ['m1']);
    unlimited.waiting.add('waits@2000');
    unlimited.runs.onRunStart(1000, 'm1', 0, run('long', 1000, 10, 'm1'));
    expect(unlimited.runs.underway(5000, 'waits', SIM_EPOCH_MS + 2000, 'm1')).toBe(false);
  });

  it('excuse a slot late on a member full at its instant that held it then, though it moved since', () => {
    const { runs, slots } = checkers(1);
    claim(slots, 'long', 1000, 10, ['m1']);
    const waits = claim(slots, 'waits', 2000, 11, ['m1']);
    runs.onRunStart(1000, 'm1', 0, run('long', 1000, 10, 'm1'));
    // 'waits' waited on m1, failed there, and was moved to m2 (a retry): its current assignee.
    move(waits, 'm2', 20, 4000);
    expect(runs.excused('waits', SIM_EPOCH_MS + 2000, undefined, MARGIN_MS)).toBe(true);
  });

  it('excuse no slot for a member that was full at its instant but given it only later', () => {
    const { runs, slots } = checkers(1);
    claim(slots, 'long', 1000, 10, ['m2']);
    runs.onRunStart(1000, 'm2', 0, run('long', 1000, 10, 'm2'));
    // Claimed for m1, which ran nothing, then moved to m2, full at the instant.
    move(claim(slots, 'waits', 2000, 11, ['m1']), 'm2', 20, 4000);
    expect(runs.excused('waits', SIM_EPOCH_MS + 2000, undefined, MARGIN_MS)).toBe(false);
  });

  it('count runs one after the other as one at a time, not as a full member', () => {
    const { runs, slots } = checkers(2);
    claim(slots, 'long', 1000, 10, ['m1']);
    claim(slots, 'long', 1995, 12, ['m1']);
    claim(slots, 'waits', 2000, 11, ['m1']);
    // One run ends just before the slot's instant and the next starts just after: never two at
    // once, so a member that may run two had a permit free for the slot.
    runs.onRunStart(1000, 'm1', 0, run('long', 1000, 10, 'm1'));
    runs.onRunEnd(1980, 'm1', 0, run('long', 1000, 10, 'm1'));
    runs.onRunStart(2010, 'm1', 0, run('long', 1995, 12, 'm1'));
    expect(runs.excused('waits', SIM_EPOCH_MS + 2000, undefined, MARGIN_MS)).toBe(false);
    // A second run at once fills it.
    runs.onRunStart(2020, 'm1', 0, run('long', 1000, 13, 'm1'));
    expect(runs.excused('waits', SIM_EPOCH_MS + 2000, undefined, MARGIN_MS)).toBe(true);
  });
});

describe('the handover check, for a member at its maxConcurrent', () => {
  it('excuses a slot late behind a member full at its instant, and no other', () => {
    const { runs, slots } = checkers(1);
    const job: SimJob = { name: 'waits', spec: { every: '1s' } };
    const late = claim(slots, 'waits', 2000, 11, ['m1']);
    late.firstStartT = 3000;
    const said: string[] = [];
    const check = (waitedForPermit?: (job: string, slotMs: number) => boolean): void =>
      checkHandover(5000, (_t, _kind, what) => void said.push(what), slots, [job], { fromT: 1500, toT: 2500 }, [], waitedForPermit);
    const waited = (name: string, slotMs: number): boolean => runs.waitedForPermit(name, slotMs, undefined, MARGIN_MS);
    // m1 ran nothing at the slot's instant: late for no reason of its own.
    check(waited);
    expect(said).toEqual([expect.stringContaining('waits@2000 started 1000.0 ms late')]);
    said.length = 0;
    claim(slots, 'long', 1000, 10, ['m1']);
    runs.onRunStart(1000, 'm1', 0, run('long', 1000, 10, 'm1'));
    check(waited);
    expect(said).toEqual([]);
    // Without the excuse, as before: blamed.
    check();
    expect(said).toHaveLength(1);
  });
});
