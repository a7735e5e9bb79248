import { describe, expect, it } from 'vitest';
import type { Entry } from '../../src/raft/types.js';
import { EntryType } from '../../src/raft/types.js';
import { decodeCommand, encodeCommand } from '../../src/runtime/commands.js';
import type { StateMachine } from '../../src/runtime/state-machine.js';
import { decodeMemberSnapshot, encodeClusterPart, encodeMemberSnapshot } from '../../src/runtime/member-snapshot.js';
import { ClusterVersionState } from '../../src/version/cluster-version.js';
import { SUPPORTED } from '../../src/version/versions.js';
import { memberStateMachine } from '../../src/runtime/member-state-machine.js';
import { CATCH_UP_PER_STEP, MAX_ENTRIES_HELD, MAX_PIECES_PER_STEP, SNAPSHOT_BYTES_PER_STEP, SNAPSHOT_STEP_BUDGET_MS, SchedulerMirror } from '../../src/runtime/scheduler-mirror.js';
import type { SchedulerRuntime } from '../../src/runtime/scheduler/scheduler-runtime.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { SNAPSHOT_RECORDS_PER_STEP, encodeSchedulerSnapshot, restoreSchedulerSnapshot, schedulerSnapshotSteps } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import type { SchedulerStateParts } from '../../src/scheduler/records.js';
import { expectSameBytes } from '../fixtures/bytes.js';
import { AT_CATCH_UP_VERSION, FIRST_CLUSTER_VERSION, JOB_ROOM_VERSION } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const MEMBERS = ['a', 'b', 'c'];
const JOBS = 20;

/** The part of a scheduler runtime a member's state machine uses, over a real state. */
/** The cluster's part of every snapshot here: a fresh cluster's. */
const CLUSTER = encodeClusterPart(new ClusterVersionState(SUPPORTED, () => true).save());

function liveScheduler(): SchedulerRuntime {
  const state = new SchedulerState();
  return {
    state,
    apply: (index: number, command: SchedulerCommand, version?: number) => state.apply(index, command, version),
    versionRaised: (version: number) => state.versionRaised(version),
    restore: (snapshot: Uint8Array | SchedulerStateParts) => (snapshot instanceof Uint8Array ? restoreSchedulerSnapshot(state, snapshot) : state.restoreFrom(snapshot)),
  } as unknown as SchedulerRuntime;
}

function withLiveScheduler(): StateMachine {
  const live = liveScheduler();
  return memberStateMachine(() => live, new ClusterVersionState(SUPPORTED, () => true));
}

/** Feeds scheduler commands to a state machine as log entries, numbering them. */
class Log {
  index = 0;
  constructor(readonly sm: StateMachine) {}

  apply(command: SchedulerCommand): void {
    this.index++;
    const entry: Entry = { index: this.index, term: 1, type: EntryType.Normal, data: encodeCommand({ kind: 'scheduler', command }), pid: `p${this.index}` };
    this.sm.apply(entry);
  }

  register(): void {
    for (let j = 0; j < JOBS; j++) {
      this.apply({ type: 'register', job: `job${j}`, spec: parseSpec({ every: '1s' }), mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: MEMBERS[j % 3]!, atMs: T0 });
    }
  }

  /** Claims, starts and ends the runs of `count` slots, after those run before (slot n is job n % JOBS at second n / JOBS). */
  runs(from: number, count: number): void {
    for (let n = from; n < from + count; n++) {
      const job = `job${n % JOBS}`;
      const slotMs = T0 + 1000 * (Math.floor(n / JOBS) + 1);
      const member = MEMBERS[n % 3]!;
      this.apply({ type: 'claim', job, slotMs, assignees: [member] });
      const token = this.index;
      this.apply({ type: 'started', job, slotMs, token, member, atMs: slotMs + 1 });
      this.apply({ type: 'outcome', job, slotMs, token, member, outcome: 'succeeded', atMs: slotMs + 5 });
    }
  }
}

/** Steps a snapshot in progress until it is complete; the steps that returned nothing, and the data. */
function finish(steps: { step(): Uint8Array | null }): { incomplete: number; data: Uint8Array } {
  for (let incomplete = 0; ; incomplete++) {
    const data = steps.step();
    if (data !== null) return { incomplete, data };
  }
}

/**
 * A state machine with the runs of `runs` slots applied, and a snapshot of it begun, one step
 * in (the runs take several steps), with what it must come to.
 */
function begunAfter(runs: number): { sm: StateMachine; log: Log; steps: { step(): Uint8Array | null }; atBegin: Uint8Array } {
  const sm = withLiveScheduler();
  const log = new Log(sm);
  log.register();
  log.runs(0, runs);
  const atBegin = sm.snapshot();
  const steps = sm.snapshotInSteps!();
  expect(steps.step()).toBeNull();
  return { sm, log, steps, atBegin };
}

describe('snapshots in steps, of the scheduler mirror', () => {
  it('stand for the index they began at while entries go on applying, and the mirror catches up after', () => {
    const { sm, log, steps, atBegin } = begunAfter(3 * SNAPSHOT_RECORDS_PER_STEP);
    // New runs, and the live records of earlier ones change: none of it may show in the snapshot.
    log.runs(3 * SNAPSHOT_RECORDS_PER_STEP, 50);
    const { incomplete, data } = finish(steps);
    expect(incomplete).toBeGreaterThan(0);
    expect(data).toEqual(atBegin);
    expect(data).not.toEqual(sm.snapshot());
    // The entries held back were applied: the next snapshot is of the live state again.
    expectSameBytes(finish(sm.snapshotInSteps!()).data, sm.snapshot());
  });

  it('are void once the state is restored from another snapshot, and the mirror follows the restore', () => {
    const other = withLiveScheduler();
    const otherLog = new Log(other);
    otherLog.register();
    otherLog.runs(0, 40);
    const replacement = other.snapshot();

    const { sm, steps } = begunAfter(2 * SNAPSHOT_RECORDS_PER_STEP);
    sm.restore(replacement);
    expect(() => steps.step()).toThrow(/void/);
    expectSameBytes(finish(sm.snapshotInSteps!()).data, replacement);
  });

  it('finish at once when MAX_ENTRIES_HELD entries were held back', () => {
    const { sm, log, steps, atBegin } = begunAfter(3 * SNAPSHOT_RECORDS_PER_STEP);
    log.runs(3 * SNAPSHOT_RECORDS_PER_STEP, Math.ceil(MAX_ENTRIES_HELD / 3));
    expect(steps.step()).toEqual(atBegin);
    expectSameBytes(finish(sm.snapshotInSteps!()).data, sm.snapshot());
  });
});

describe('the end of a snapshot in steps, at scale', () => {
  /** A state of `runs` slots run, applied to a mirror (with the clock `now`, if given) and to a state of its own. */
  function mirrored(runs: number, now?: () => number): { mirror: SchedulerMirror; state: SchedulerState; apply: (command: SchedulerCommand) => void } {
    const state = new SchedulerState();
    const mirror = new SchedulerMirror(() => state.limits, now);
    let index = 0;
    const apply = (command: SchedulerCommand): void => {
      index++;
      state.apply(index, command);
      mirror.apply(index, command);
    };
    const sm = { apply: (entry: Entry) => apply((decodeCommand(entry.data) as { command: SchedulerCommand }).command) } as unknown as StateMachine;
    const log = new Log(sm);
    log.register();
    log.runs(0, runs);
    return { mirror, state, apply };
  }

  it(`joins the bytes of a large snapshot over steps of at most ${SNAPSHOT_BYTES_PER_STEP} bytes, not at once`, () => {
    const { mirror, state } = mirrored(6000);
    let yields = 0;
    const encoding = schedulerSnapshotSteps(state);
    while (encoding.next().done !== true) yields++;
    const { incomplete, data } = finish(mirror.snapshotInSteps(CLUSTER));
    expect(data.byteLength).toBeGreaterThan(2 * SNAPSHOT_BYTES_PER_STEP);
    expect(incomplete).toBe(yields + Math.ceil(data.byteLength / SNAPSHOT_BYTES_PER_STEP) - 1);
    expectSameBytes(data, encodeMemberSnapshot(encodeSchedulerSnapshot(state), CLUSTER));
  });

  it(`catches up on the entries it held back before the snapshot counts as taken, ${CATCH_UP_PER_STEP} a step and two for each entry applied meanwhile`, () => {
    const { mirror, state, apply } = mirrored(300);
    let yields = 0;
    const encoding = schedulerSnapshotSteps(state);
    while (encoding.next().done !== true) yields++;
    const atBegin = encodeMemberSnapshot(encodeSchedulerSnapshot(state), CLUSTER);
    const steps = mirror.snapshotInSteps(CLUSTER);
    const held = 3 * CATCH_UP_PER_STEP + 100;
    for (let j = 0; j < held; j++) apply({ type: 'unregister', job: `job${j % JOBS}`, member: 'nobody' });
    expect(mirror.behind).toBe(held);
    let incomplete = 0;
    while (mirror.behind === held) {
      expect(steps.step()).toBeNull();
      incomplete++;
    }
    // Encoded and joined, the first step of catching up went.
    expect(incomplete).toBe(yields + 1);
    expect(mirror.behind).toBe(held - CATCH_UP_PER_STEP);
    for (let n = 1; n <= 10; n++) {
      apply({ type: 'unregister', job: 'job0', member: 'nobody' });
      expect(mirror.behind).toBe(held - CATCH_UP_PER_STEP - n);
    }
    const rest = finish(steps);
    expect(rest.incomplete).toBe(Math.ceil((held - CATCH_UP_PER_STEP - 10) / CATCH_UP_PER_STEP) - 1);
    expectSameBytes(rest.data, atBegin);
    expect(mirror.behind).toBe(0);
    expectSameBytes(finish(mirror.snapshotInSteps(CLUSTER)).data, encodeMemberSnapshot(encodeSchedulerSnapshot(state), CLUSTER));
  });

  it(`given a clock, does pieces of work a step until ${SNAPSHOT_STEP_BUDGET_MS} ms are spent, at most ${MAX_PIECES_PER_STEP}`, () => {
    const pieces = finish(mirrored(9000).mirror.snapshotInSteps(CLUSTER)).incomplete + 1;
    expect(pieces).toBeGreaterThan(2 * MAX_PIECES_PER_STEP);
    // A clock that stands still (a simulation's): the bound on pieces.
    const still = finish(mirrored(9000, () => 0).mirror.snapshotInSteps(CLUSTER));
    expect(still.incomplete + 1).toBe(Math.ceil(pieces / MAX_PIECES_PER_STEP));
    // A clock that moves a millisecond a reading: the budget is spent after this many pieces.
    let t = 0;
    const moving = finish(mirrored(9000, () => t++).mirror.snapshotInSteps(CLUSTER));
    expect(moving.incomplete + 1).toBe(Math.ceil(pieces / SNAPSHOT_STEP_BUDGET_MS));
    expectSameBytes(moving.data, still.data);
  });

  it('applies a held registration at the cap of jobs as the live state did, making room or not', () => {
    const limits = { maxClaimsKept: 16, maxClaimBytes: 1 << 20, maxJobs: 2, maxJobBytes: 1 << 20, maxLocks: 2, maxLockBytes: 1 << 20 };
    const live = new SchedulerState(limits);
    const mirror = new SchedulerMirror(() => limits);
    let index = 0;
    const both = (command: SchedulerCommand, makesRoom: boolean): void => {
      const version = makesRoom ? JOB_ROOM_VERSION : FIRST_CLUSTER_VERSION;
      live.apply(++index, command, version);
      mirror.apply(index, command, version);
    };
    const register = (job: string): SchedulerCommand => ({ type: 'register', job, spec: parseSpec({ every: '1s' }), mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: 'a', atMs: T0 });
    both(register('j1'), true);
    both(register('j2'), true);
    both({ type: 'unregister', job: 'j1', member: 'a' }, true);
    // A snapshot holds the mirror back; meanwhile one registration at the cap before the
    // version that makes room, one after.
    const steps = mirror.snapshotInSteps(CLUSTER);
    both(register('j3'), false);
    both(register('j4'), true);
    expect(mirror.behind).toBe(2);
    finish(steps);
    expect(mirror.behind).toBe(0);
    expect([...live.jobs.keys()]).toEqual(['j2', 'j4']);
    expectSameBytes(finish(mirror.snapshotInSteps(CLUSTER)).data, encodeMemberSnapshot(encodeSchedulerSnapshot(live), CLUSTER, null));
  });
});

describe('a cluster version raised while a snapshot of the mirror is under way', () => {
  it('changes the mirror as it changed the live state, at its place among the commands held back', () => {
    // Applied under version 1 (a new cluster starts there): an { at } job registered after its
    // instant, whose slot the raise to AT_CATCH_UP_VERSION makes due; then jobs for the mirror to hold back.
    const sm = withLiveScheduler();
    const log = new Log(sm);
    log.apply({ type: 'register', job: 'launch', spec: parseSpec({ at: T0 - 1000 }), mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: 'a', atMs: T0 });
    log.register();
    log.runs(0, 3 * SNAPSHOT_RECORDS_PER_STEP);
    const steps = sm.snapshotInSteps!();
    expect(steps.step()).toBeNull();
    log.index++;
    sm.apply({ index: log.index, term: 1, type: EntryType.Normal, data: encodeCommand({ kind: 'cluster', command: { type: 'announce', member: 'a', protocol: [1, SUPPORTED.protocol.max], stateMachine: [1, SUPPORTED.stateMachine.max] } }), pid: `p${log.index}` });
    for (let v = 1; v < AT_CATCH_UP_VERSION; v++) {
      log.index++;
      sm.apply({ index: log.index, term: 1, type: EntryType.Normal, data: encodeCommand({ kind: 'cluster', command: { type: 'activate', from: v, to: v + 1 } }), pid: `p${log.index}` });
    }
    log.runs(3 * SNAPSHOT_RECORDS_PER_STEP, 10);
    finish(steps);
    // The next snapshot, of the mirror once it caught up, is the live state's, the job's slot due in both.
    const mirrored = finish(sm.snapshotInSteps!()).data;
    expectSameBytes(mirrored, sm.snapshot());
    const restored = new SchedulerState();
    restoreSchedulerSnapshot(restored, decodeMemberSnapshot(mirrored)!.scheduler);
    expect(restored.jobs.get('launch')?.highWaterMs).toBe(T0 - 1001);
  });
});
