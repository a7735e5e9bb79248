import { describe, expect, it } from 'vitest';
import { JOB_STATES_CLOCK_STEP_MS, JOB_STATES_HORIZON_MS, JobStates, WARM_LOOKS_PER_BUILD } from '../../src/api/job-states.js';
import { CHANGE_LOG_KEPT } from '../../src/scheduler/change-log.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { decodeSchedulerSnapshot, encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import type { JobPolicy, SchedulerCommand } from '../../src/scheduler/command.js';
import { FIRST_CLUSTER_VERSION, JOB_ROOM_VERSION } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const POLICY: JobPolicy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } };

function register(job: string, member: string, every = '1s'): SchedulerCommand {
  return { type: 'register', job, spec: parseSpec({ every }), mode: 'one', policy: POLICY, member, atMs: T0 };
}

/** A state of `count` jobs every second, registered by a and b, and an applier that numbers entries. */
function stateOf(count: number, limits: { maxClaimsKept?: number } = {}): { s: SchedulerState; apply: (command: SchedulerCommand) => number } {
  const s = new SchedulerState(limits);
  let index = 0;
  const apply = (command: SchedulerCommand): number => {
    s.apply(++index, command);
    return index;
  };
  for (let i = 0; i < count; i++) for (const member of ['a', 'b']) apply(register(`job${i}`, member));
  return { s, apply };
}

describe('the jobs of state()', () => {
  it('are built once: a later call hands out the same views, building none', () => {
    const { s } = stateOf(100);
    const views = new JobStates();
    const first = views.of(s, T0 + 100);
    expect(views.builds).toBe(100);
    const second = views.of(s, T0 + 200);
    expect(views.builds).toBe(100);
    second.forEach((view, i) => expect(view).toBe(first[i]));
    // Nothing changed and no next slot came: the very list, frozen like its entries.
    expect(second).toBe(first);
    expect(Object.isFrozen(first)).toBe(true);
    expect(Object.isFrozen(first[0])).toBe(true);
    expect(Object.isFrozen(first[0]!.handlers)).toBe(true);
    // A command for no job (a lock) keeps the very list, through warm() as through a call.
    s.apply(1000, { type: 'lock', name: 'l', member: 'a', atMs: T0, untilMs: T0 + 5 });
    expect(views.of(s, T0 + 300)).toBe(first);
    s.apply(1001, { type: 'lock', name: 'm', member: 'a', atMs: T0, untilMs: T0 + 5 });
    expect(views.warm(s, T0 + 300, 10)).toBe(true);
    expect(views.of(s, T0 + 300)).toBe(first);
    expect(views.builds).toBe(100);
    // A change of a job is another list, with that job's view built again.
    s.apply(1002, { type: 'claim', job: 'job5', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    const third = views.of(s, T0 + 300);
    expect(third).not.toBe(first);
    expect(views.builds).toBe(101);
    expect(third).toEqual(new JobStates().of(s, T0 + 300));
  });

  it('are built again for the jobs that changed only, and show what changed', () => {
    const { s, apply } = stateOf(100);
    const views = new JobStates();
    const before = views.of(s, T0 + 100);
    const token = apply({ type: 'claim', job: 'job7', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    const after = views.of(s, T0 + 100);
    expect(views.builds).toBe(101);
    after.forEach((view, i) => (i === 7 ? expect(view).not.toBe(before[i]) : expect(view).toBe(before[i])));
    expect(after[7]!.lastClaim).toEqual({ slot: new Date(T0 + 1000), fencingToken: token, assignees: ['a'], outcomes: {} });
    // Typed as history() types them, so that an app reads them without a cast (they were unknown).
    const outcome: string | undefined = after[7]!.lastClaim?.outcomes['a']?.outcome;
    expect(outcome).toBeUndefined();
    expect(after[7]!.nextSlot).toEqual(new Date(T0 + 2000));
  });

  it('always equal views built afresh, whatever the change: runs, outcomes, skips, handlers, conflicts, claims forgotten', () => {
    const { s, apply } = stateOf(4, { maxClaimsKept: 3 });
    const views = new JobStates();
    const check = (nowMs: number): void => {
      expect(views.of(s, nowMs)).toEqual(new JobStates().of(s, nowMs));
    };
    check(T0 + 100);
    const token = apply({ type: 'claim', job: 'job0', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    check(T0 + 100);
    apply({ type: 'started', job: 'job0', slotMs: T0 + 1000, token, member: 'a', atMs: T0 + 1001 });
    check(T0 + 1002);
    apply({ type: 'outcome', job: 'job0', slotMs: T0 + 1000, token, member: 'a', outcome: 'failed', atMs: T0 + 1005, error: 'boom' });
    check(T0 + 1010);
    apply({ type: 'skip', job: 'job1', throughMs: T0 + 5000, fromMs: T0, count: 5 });
    check(T0 + 5100);
    apply({ type: 'unregister', job: 'job2', member: 'b' });
    check(T0 + 5100);
    apply(register('job3', 'c', '5s'));
    check(T0 + 5100);
    // A handler added later on, past job3's next slot and before it (a view keeps its next slot
    // while its mark stays and the time has not reached that slot).
    apply(register('job3', 'c'));
    check(T0 + 5500);
    apply(register('job2', 'b'));
    check(T0 + 6000);
    // Claims of other jobs push job0's out (3 kept): its view loses it.
    for (const job of ['job1', 'job2', 'job3']) apply({ type: 'claim', job, slotMs: T0 + 6000, assignees: ['a'] });
    expect(s.claims.size).toBe(3);
    check(T0 + 5100);
    expect(views.of(s, T0 + 5100)[0]!.lastClaim).toBeNull();
  });

  it('keep the Date of a next slot that did not move: another member registering a job rebuilds its view, not its slot', () => {
    const { s, apply } = stateOf(3);
    const views = new JobStates();
    const before = views.of(s, T0 + 100);
    apply(register('job1', 'c'));
    const after = views.of(s, T0 + 100);
    expect(after[1]).not.toBe(before[1]);
    expect(after[1]!.handlers).toEqual(['a', 'b', 'c']);
    expect(after[1]!.nextSlot).toBe(before[1]!.nextSlot);
    // A slot that moved is a new Date.
    apply({ type: 'claim', job: 'job1', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    expect(views.of(s, T0 + 100)[1]!.nextSlot).toEqual(new Date(T0 + 2000));
  });

  it("are built again once the time reaches a job's next slot, which then moves on", () => {
    const { s } = stateOf(2);
    const views = new JobStates();
    expect(views.of(s, T0 + 100)[0]!.nextSlot).toEqual(new Date(T0 + 1000));
    expect(views.of(s, T0 + 999)[0]!.nextSlot).toEqual(new Date(T0 + 1000));
    expect(views.builds).toBe(2);
    // Unclaimed (no leader planned it), the slot passed: the next one shows.
    expect(views.of(s, T0 + 1500)[0]!.nextSlot).toEqual(new Date(T0 + 2000));
    expect(views.builds).toBe(4);
  });

  /** Counts the jobs a call looks at: it asks each for its last change. */
  function countLooks(s: SchedulerState): { readonly count: () => number } {
    const changeOf = s.changeOf.bind(s);
    let looks = 0;
    s.changeOf = (job) => {
      looks++;
      return changeOf(job);
    };
    return { count: () => looks };
  }

  it('are not built again when the time steps back a little (clock sync), and are once it steps back further', () => {
    const { s } = stateOf(1000);
    const views = new JobStates();
    const list = views.of(s, T0 + 500);
    expect(views.builds).toBe(1000);
    // Each step back from the latest time seen, less than the bound: the same list, nothing built.
    expect(views.of(s, T0 + 499.6)).toBe(list);
    expect(views.of(s, T0 + 500 - JOB_STATES_CLOCK_STEP_MS + 1)).toBe(list);
    expect(views.warm(s, T0 + 499, 100)).toBe(true);
    expect(views.builds).toBe(1000);
    // Further back: every view is built at the earlier time.
    const before = views.of(s, T0 + 500 - JOB_STATES_CLOCK_STEP_MS - 1);
    expect(views.builds).toBe(2000);
    expect(before).toEqual(new JobStates().of(s, T0 + 500 - JOB_STATES_CLOCK_STEP_MS - 1));
    // Close to a slot's instant, stepped back across it, a view shows the slot after it for that long.
    const views2 = new JobStates();
    expect(views2.of(s, T0 + 1000)[0]!.nextSlot).toEqual(new Date(T0 + 2000));
    expect(views2.of(s, T0 + 999)[0]!.nextSlot).toEqual(new Date(T0 + 2000));
  });

  it("leave the call nothing to build once warm() passed a next slot, though a fixed-delay job's next slot stays in the past", () => {
    for (const overdue of [false, true]) {
      const { s, apply } = stateOf(1000);
      // A fixed-delay job no member handles: nobody claims it, its next slot stays at T0 + 1.
      if (overdue) {
        apply({ type: 'register', job: 'orphan', spec: parseSpec({ delayAfterCompletion: '1s' }), mode: 'one', policy: POLICY, member: 'a', atMs: T0 });
        apply({ type: 'unregister', job: 'orphan', member: 'a' });
      }
      const views = new JobStates();
      views.of(s, T0 + 100);
      // Every job's slot at T0 + 1000 came: the warmer builds their views again.
      let turns = 0;
      while (!views.warm(s, T0 + 1500, 64)) turns++;
      expect(turns).toBeGreaterThan(0);
      const before = views.builds;
      expect(views.of(s, T0 + 1500)).toEqual(new JobStates().of(s, T0 + 1500));
      expect(views.builds).toBe(before);
      // Nor does the warmer build them again and again: nothing came since.
      expect(views.warm(s, T0 + 1600, 64)).toBe(true);
      expect(views.builds).toBe(before);
    }
  });

  it('hold a list no longer than its soonest next slot, a job of an earlier one added or changed since', () => {
    // Every 10 s and every hour: the soonest next slot is T0 + 10 s.
    const { s, apply } = stateOf(0);
    for (let i = 0; i < 50; i++) apply(register(`slow${i}`, 'a', i % 2 === 0 ? '10s' : '1h'));
    const views = new JobStates();
    views.of(s, T0 + 100);
    // A job every second comes: its next slot, T0 + 1 s, is sooner than any the list showed.
    apply(register('tick', 'a'));
    while (!views.warm(s, T0 + 200, 8));
    expect(views.of(s, T0 + 300).find((j) => j.name === 'tick')?.nextSlot).toEqual(new Date(T0 + 1000));
    // Past it, the tick shows its next one, at once.
    expect(views.of(s, T0 + 1500).find((j) => j.name === 'tick')?.nextSlot).toEqual(new Date(T0 + 2000));
    expect(views.of(s, T0 + 1500)).toEqual(new JobStates().of(s, T0 + 1500));
    // The soonest job claimed (its next slot moves on) and the list holds until the next soonest.
    apply({ type: 'claim', job: 'tick', slotMs: T0 + 2000, assignees: ['a'], fromMs: T0 + 1000 });
    expect(views.of(s, T0 + 1600)).toEqual(new JobStates().of(s, T0 + 1600));
    expect(views.of(s, T0 + 3500)).toEqual(new JobStates().of(s, T0 + 3500));
  });

  it('never show a job forgotten to make room for another', () => {
    const s = new SchedulerState({ maxJobs: 3 });
    for (let i = 0; i < 3; i++) s.apply(i + 1, register(`job${i}`, 'a'));
    s.apply(4, { type: 'unregister', job: 'job1', member: 'a' });
    const views = new JobStates();
    views.of(s, T0 + 100);
    s.apply(5, register('new', 'a'), JOB_ROOM_VERSION);
    expect(s.jobsForgotten).toBe(1);
    expect(views.of(s, T0 + 200).map((v) => v.name)).toEqual(['job0', 'job2', 'new']);
    expect(views.of(s, T0 + 200)).toEqual(new JobStates().of(s, T0 + 200));
  });

  it('are looked at only if they changed since the last call, new jobs last', () => {
    const { s, apply } = stateOf(1000);
    const views = new JobStates();
    views.of(s, T0 + 100);
    const looks = countLooks(s);
    apply({ type: 'claim', job: 'job7', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    apply(register('new', 'a'));
    apply(register('new', 'b'));
    const after = views.of(s, T0 + 100);
    // job7 once, the new job once per change (its second registration).
    expect(looks.count()).toBe(3);
    expect(after.map((j) => j.name).slice(-2)).toEqual(['job999', 'new']);
    expect(after).toEqual(new JobStates().of(s, T0 + 100));
  });

  it("are looked at, once a next slot came, only if their next slots come soon, until the horizon; then all, right", () => {
    // Every hour, registered at T0: next slots at T0 + 1 h. Two every second beside them.
    const { s, apply } = stateOf(0);
    for (let i = 0; i < 1000; i++) for (const member of ['a', 'b']) apply(register(`hourly${i}`, member, '1h'));
    for (let i = 0; i < 2; i++) apply(register(`tick${i}`, 'a'));
    const views = new JobStates();
    views.of(s, T0 + 100);
    const looks = countLooks(s);
    /** The list at `atMs`, and how many jobs it looked at (a list built afresh to compare with is not counted). */
    const lookAt = (atMs: number): { list: ReturnType<JobStates['of']>; looked: number } => {
      const before = looks.count();
      const list = views.of(s, atMs);
      const looked = looks.count() - before;
      expect(list).toEqual(new JobStates().of(s, atMs));
      return { list, looked };
    };
    // Past the ticks' next slot: only they are looked at, and show their next.
    const later = lookAt(T0 + 1500);
    expect(later.looked).toBe(2);
    expect(later.list.find((j) => j.name === 'tick0')?.nextSlot).toEqual(new Date(T0 + 2000));
    // A change meanwhile, and the ticks' next slot again: the job changed, and the ticks.
    apply({ type: 'claim', job: 'hourly7', slotMs: T0 + 3_600_000, assignees: ['a'], fromMs: T0 });
    expect(lookAt(T0 + 2500).looked).toBe(3);
    // A change before the next slot: the job changed only.
    apply({ type: 'claim', job: 'hourly8', slotMs: T0 + 3_600_000, assignees: ['a'], fromMs: T0 });
    expect(lookAt(T0 + 2600).looked).toBe(1);
    // Past the horizon: every job, and each shows its next slot (the hourly ones' came).
    expect(lookAt(T0 + 100 + JOB_STATES_HORIZON_MS).looked).toBe(1002);
    const hourPast = lookAt(T0 + 3_600_500);
    expect(hourPast.list.find((j) => j.name === 'hourly0')?.nextSlot).toEqual(new Date(T0 + 7_200_000));
  });

  it('are all looked at again once more changed since the last call than the state remembers', () => {
    const { s, apply } = stateOf(10);
    const views = new JobStates();
    views.of(s, T0 + 100);
    const looks = countLooks(s);
    // Registrations repeated: each is a change of its job.
    for (let i = 0; i <= 2 * CHANGE_LOG_KEPT; i++) apply(register(`job${i % 10}`, 'a'));
    apply(register('new', 'a'));
    const after = views.of(s, T0 + 100);
    expect(looks.count()).toBe(11);
    expect(after).toEqual(new JobStates().of(s, T0 + 100));
  });

  it('are built ahead by warm(), a bounded number at a time: the next call builds none and places them, new jobs last', () => {
    const { s, apply } = stateOf(100);
    const views = new JobStates();
    views.of(s, T0 + 100);
    for (let i = 0; i < 30; i++) apply({ type: 'claim', job: `job${i}`, slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    for (let i = 0; i < 5; i++) apply(register(`new${i}`, 'a'));
    const before = views.builds;
    // 35 to build, 16 a turn: three turns, the last finds none left.
    expect(views.warm(s, T0 + 200, 16)).toBe(false);
    expect(views.builds - before).toBe(16);
    expect(views.warm(s, T0 + 200, 16)).toBe(false);
    expect(views.warm(s, T0 + 200, 16)).toBe(true);
    expect(views.builds - before).toBe(35);
    // Nothing changed since: nothing to do.
    expect(views.warm(s, T0 + 200, 16)).toBe(true);
    const list = views.of(s, T0 + 300);
    expect(views.builds - before).toBe(35);
    expect(list).toEqual(new JobStates().of(s, T0 + 300));
    expect(list.map((j) => j.name).slice(-5)).toEqual(['new0', 'new1', 'new2', 'new3', 'new4']);
  });

  it('are built ahead by warm() with no call before, and for a state changed during a pass, up to its last change', () => {
    const { s, apply } = stateOf(50);
    const views = new JobStates();
    expect(views.warm(s, T0 + 100, 20)).toBe(false);
    // A change in the middle of the pass: the pass ends at the change it began at, then the next takes it.
    apply({ type: 'claim', job: 'job3', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    expect(views.warm(s, T0 + 100, 20)).toBe(false);
    expect(views.warm(s, T0 + 100, 20)).toBe(false);
    expect(views.warm(s, T0 + 100, 20)).toBe(true);
    expect(views.builds).toBe(51);
    expect(views.of(s, T0 + 100)).toEqual(new JobStates().of(s, T0 + 100));
    expect(views.builds).toBe(51);
  });

  it("are built ahead by warm() once a next slot the last list shows came: its soon jobs, once", () => {
    const { s, apply } = stateOf(0);
    for (let i = 0; i < 100; i++) apply(register(`hourly${i}`, 'a', '1h'));
    for (let i = 0; i < 3; i++) apply(register(`tick${i}`, 'a'));
    const views = new JobStates();
    views.of(s, T0 + 100);
    const looks = countLooks(s);
    const built = views.builds;
    expect(views.warm(s, T0 + 500, 100)).toBe(true);
    expect(views.builds).toBe(built);
    // Past the ticks' next slot: they are built again, the hourly ones not looked at.
    expect(views.warm(s, T0 + 1500, 100)).toBe(true);
    expect(views.builds - built).toBe(3);
    expect(looks.count()).toBe(3);
    expect(views.warm(s, T0 + 1600, 100)).toBe(true);
    expect(looks.count()).toBe(3);
    const list = views.of(s, T0 + 1700);
    expect(views.builds - built).toBe(3);
    expect(list).toEqual(new JobStates().of(s, T0 + 1700));
  });

  it('bound the jobs a warm() turn looks at, when most are built already', () => {
    const { s, apply } = stateOf(100);
    const views = new JobStates();
    views.of(s, T0 + 100);
    // One job changed 100 times: the changes name it once each, and only the first look builds.
    for (let i = 0; i < 100; i++) apply(register('job0', i % 2 === 0 ? 'c' : 'a'));
    const looks = countLooks(s);
    // Two builds allowed, so 2 * WARM_LOOKS_PER_BUILD looks at most: one build, then looks that build nothing.
    const built = views.builds;
    expect(views.warm(s, T0 + 100, 2)).toBe(false);
    expect(views.builds - built).toBe(1);
    expect(looks.count()).toBe(2 * WARM_LOOKS_PER_BUILD);
    expect(views.of(s, T0 + 100)).toEqual(new JobStates().of(s, T0 + 100));
  });

  it('are handed out as warm() made the list: a call after it looks at no job', () => {
    const { s, apply } = stateOf(1000);
    const views = new JobStates();
    views.of(s, T0 + 100);
    for (let i = 0; i < 500; i++) apply({ type: 'claim', job: `job${i}`, slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    apply(register('new', 'a'));
    let turns = 1;
    while (!views.warm(s, T0 + 200, 64)) turns++;
    expect(turns).toBe(8);
    const looks = countLooks(s);
    const list = views.of(s, T0 + 300);
    expect(looks.count()).toBe(0);
    expect(list).toEqual(new JobStates().of(s, T0 + 300));
    expect(list.at(-1)?.name).toBe('new');
    // A list warm() left under way is finished by the next call, which looks only at what it had left.
    for (let i = 500; i < 600; i++) apply({ type: 'claim', job: `job${i}`, slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    const looked = looks.count();
    expect(views.warm(s, T0 + 400, 30)).toBe(false);
    expect(looks.count() - looked).toBe(30);
    const after = views.of(s, T0 + 500);
    expect(looks.count() - looked).toBe(100);
    expect(after).toEqual(new JobStates().of(s, T0 + 500));
  });

  it('never change a list handed out: the lists warm() makes after it take over the array behind it, not the copy', () => {
    const { s, apply } = stateOf(100);
    const views = new JobStates();
    const first = views.of(s, T0 + 100);
    const before = [...first];
    for (let round = 0; round < 3; round++) {
      for (let i = 0; i < 10; i++) apply({ type: 'claim', job: `job${10 * round + i}`, slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
      apply(register(`new${round}`, 'a'));
      while (!views.warm(s, T0 + 200, 4));
    }
    const second = views.of(s, T0 + 300);
    expect(Object.isFrozen(first)).toBe(true);
    expect(first.length).toBe(100);
    first.forEach((view, i) => expect(view).toBe(before[i]));
    expect(second.length).toBe(103);
    expect(second).toEqual(new JobStates().of(s, T0 + 300));
    expect(views.of(s, T0 + 300)).toBe(second);
  });

  it('drop a list under way once its state is restored: the next is made anew', () => {
    const { s, apply } = stateOf(100);
    const views = new JobStates();
    views.of(s, T0 + 100);
    for (let i = 0; i < 50; i++) apply({ type: 'claim', job: `job${i}`, slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    expect(views.warm(s, T0 + 200, 10)).toBe(false);
    // Restored with fewer jobs: a list went on from the old records would hold the old jobs.
    const { s: other } = stateOf(3);
    s.restoreFrom(decodeSchedulerSnapshot(encodeSchedulerSnapshot(other)));
    expect(views.of(s, T0 + 300)).toEqual(new JobStates().of(s, T0 + 300));
    expect(views.of(s, T0 + 300).map((j) => j.name)).toEqual(['job0', 'job1', 'job2']);
    // The same through warm(): the pass under way is dropped, the next one looks at every job.
    apply({ type: 'claim', job: 'job1', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    expect(views.warm(s, T0 + 400, 1)).toBe(false);
    s.restoreFrom(decodeSchedulerSnapshot(encodeSchedulerSnapshot(stateOf(2).s)));
    while (!views.warm(s, T0 + 500, 1));
    expect(views.of(s, T0 + 500)).toEqual(new JobStates().of(s, T0 + 500));
  });

  it('are built anew for a state restored from a snapshot (its records are new)', () => {
    const { s } = stateOf(3);
    const views = new JobStates();
    views.of(s, T0 + 100);
    s.restoreFrom(decodeSchedulerSnapshot(encodeSchedulerSnapshot(s)));
    expect(views.of(s, T0 + 100)).toEqual(new JobStates().of(s, T0 + 100));
    expect(views.builds).toBe(6);
    // A state restored with other jobs, fewer of them: its own views, none of the jobs gone.
    const { s: other, apply } = stateOf(1);
    apply(register('job9', 'a'));
    s.restoreFrom(decodeSchedulerSnapshot(encodeSchedulerSnapshot(other)));
    expect(views.of(s, T0 + 100).map((v) => [v.name, v.handlers])).toEqual([
      ['job0', ['a', 'b']],
      ['job9', ['a']],
    ]);
    expect(views.builds).toBe(8);
  });

  it('equal views built afresh at every call, whatever mix of changes, warm() turns and time steps comes between (seeded)', () => {
    for (let seed = 1; seed <= 40; seed++) {
      let x = seed;
      const next = (n: number): number => {
        x = (x * 1103515245 + 12345) % 2147483648;
        return x % n;
      };
      const s = new SchedulerState({ maxJobs: 40 });
      let index = 0;
      const apply = (command: SchedulerCommand, version = FIRST_CLUSTER_VERSION): void => void s.apply(++index, command, version);
      const specs = ['1s', '10s', '1h'];
      for (let i = 0; i < 30; i++) apply(register(`job${i}`, 'a', specs[i % 3]));
      const views = new JobStates();
      let nowMs = T0 + 100;
      let latestMs = nowMs;
      const handedOut: Array<{ list: ReturnType<JobStates['of']>; copy: readonly unknown[] }> = [];
      for (let step = 0; step < 150; step++) {
        const what = next(10);
        const job = `job${next(45)}`;
        if (what === 0) apply(register(job, ['a', 'b', 'c'][next(3)]!, specs[next(3)]), next(2) === 0 ? JOB_ROOM_VERSION : FIRST_CLUSTER_VERSION);
        else if (what === 1) apply({ type: 'claim', job, slotMs: nowMs - next(2000), assignees: ['a'], fromMs: nowMs - 3000 });
        else if (what === 2) apply({ type: 'lock', name: `l${step}`, member: 'a', atMs: nowMs, untilMs: nowMs + 5 });
        else if (what === 3) apply({ type: 'unregister', job, member: 'a' });
        else if (what === 4) views.warm(s, nowMs, 1 + next(4));
        else if (what === 5) nowMs += next(3000);
        else if (what === 6) nowMs -= next(2) === 0 ? next(JOB_STATES_CLOCK_STEP_MS) : 100 + next(2000);
        else if (what === 7) nowMs += JOB_STATES_HORIZON_MS * next(2);
        else {
          const list = views.of(s, nowMs);
          // The time the views are looked at: the latest seen, through a small step back.
          latestMs = nowMs < latestMs && nowMs > latestMs - JOB_STATES_CLOCK_STEP_MS ? latestMs : nowMs;
          expect(list).toEqual(new JobStates().of(s, latestMs));
          handedOut.push({ list, copy: [...list] });
        }
        if (what === 4) latestMs = nowMs < latestMs && nowMs > latestMs - JOB_STATES_CLOCK_STEP_MS ? latestMs : nowMs;
      }
      // No list handed out changed since.
      for (const { list, copy } of handedOut) list.forEach((view, i) => expect(view).toBe(copy[i]));
    }
  });
});
