import { describe, expect, it } from 'vitest';
import { JobStates } from '../../src/api/job-states.js';
import { JOB_VIEWS_WARM_BUILDS_PER_TURN, JOB_VIEWS_WARM_EVERY_MS, JOB_VIEWS_WARM_IDLE_MS, JobViewsWarmer } from '../../src/api/job-views-warmer.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');

function registerJobs(s: SchedulerState, count: number, from = 0): void {
  for (let i = from; i < from + count; i++) {
    s.apply(s.changes + 1, {
      type: 'register',
      job: `job${i}`,
      spec: parseSpec({ every: '1h' }),
      mode: 'one',
      policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } },
      member: 'a',
      atMs: T0,
    });
  }
}

/** Timers whose clock moves on a millisecond at each read, as on a loop busy while code runs. */
class BusyTimers extends ManualTimers {
  #reads = 0;

  override now(): number {
    return super.now() + this.#reads++;
  }
}

describe('the warmer of the views of state().jobs', () => {
  it('does nothing until armed, then builds the views of jobs that change, a bounded turn at a time, turn after turn while any are left', () => {
    const timers = new ManualTimers();
    const s = new SchedulerState();
    const views = new JobStates();
    const warmer = new JobViewsWarmer(timers, views, () => ({ state: s, nowMs: T0 + timers.now() }));
    registerJobs(s, 2 * JOB_VIEWS_WARM_BUILDS_PER_TURN + 10);
    timers.advance(10 * JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(0);
    expect(timers.pending).toBe(0);

    warmer.arm();
    warmer.arm();
    expect(timers.pending).toBe(1);
    timers.advance(JOB_VIEWS_WARM_EVERY_MS - 1);
    expect(views.builds).toBe(0);
    // The first turn builds its bound; the ones left follow at once (no time passes).
    timers.advance(1);
    expect(views.builds).toBe(2 * JOB_VIEWS_WARM_BUILDS_PER_TURN + 10);
    // Then a look every interval, building nothing while nothing changed.
    timers.advance(5 * JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(2 * JOB_VIEWS_WARM_BUILDS_PER_TURN + 10);
    registerJobs(s, 3, 10_000);
    timers.advance(JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(2 * JOB_VIEWS_WARM_BUILDS_PER_TURN + 13);
    // The next call of state() builds none of them.
    const list = views.of(s, T0 + timers.now());
    expect(views.builds).toBe(2 * JOB_VIEWS_WARM_BUILDS_PER_TURN + 13);
    expect(list).toEqual(new JobStates().of(s, T0 + timers.now()));
    expect(timers.pending).toBe(1);

    warmer.stop();
    expect(timers.pending).toBe(0);
    warmer.arm();
    expect(timers.pending).toBe(0);
  });

  it('builds one turn of views at a time: a turn is bounded', () => {
    const s = new SchedulerState();
    const views = new JobStates();
    const warmer = new JobViewsWarmer(new ManualTimers(), views, () => ({ state: s, nowMs: T0 }));
    registerJobs(s, JOB_VIEWS_WARM_BUILDS_PER_TURN + 1);
    expect(warmer.turn()).toBe(false);
    expect(views.builds).toBe(JOB_VIEWS_WARM_BUILDS_PER_TURN);
    expect(warmer.turn()).toBe(true);
    expect(views.builds).toBe(JOB_VIEWS_WARM_BUILDS_PER_TURN + 1);
  });

  it('waits, looking every interval, while the member does not run', () => {
    const timers = new ManualTimers();
    let source: SchedulerState | null = null;
    const views = new JobStates();
    const warmer = new JobViewsWarmer(timers, views, () => (source === null ? null : { state: source, nowMs: T0 }));
    warmer.arm();
    timers.advance(3 * JOB_VIEWS_WARM_EVERY_MS);
    expect(timers.pending).toBe(1);
    source = new SchedulerState();
    registerJobs(source, 4);
    timers.advance(JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(4);
    warmer.stop();
  });

  it('stops once nobody read the jobs for JOB_VIEWS_WARM_IDLE_MS, and goes on at the next read', () => {
    const timers = new ManualTimers();
    const s = new SchedulerState();
    const views = new JobStates();
    const warmer = new JobViewsWarmer(timers, views, () => ({ state: s, nowMs: T0 + timers.now() }));
    warmer.arm();
    timers.advance(JOB_VIEWS_WARM_IDLE_MS - JOB_VIEWS_WARM_EVERY_MS);
    registerJobs(s, 2);
    timers.advance(JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(2);
    // Idle past the bound: no timer left, and changes wait for the next read.
    timers.advance(2 * JOB_VIEWS_WARM_EVERY_MS);
    expect(timers.pending).toBe(0);
    registerJobs(s, 3, 100);
    timers.advance(10 * JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(2);
    warmer.arm();
    timers.advance(JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(5);
    warmer.stop();
  });

  it('takes a turn at once when told jobs changed, while armed only, and sets one timer for many changes', () => {
    const timers = new ManualTimers();
    const s = new SchedulerState();
    const views = new JobStates();
    const warmer = new JobViewsWarmer(timers, views, () => ({ state: s, nowMs: T0 + timers.now() }));
    registerJobs(s, 3);
    // Not armed: nothing.
    warmer.changed();
    expect(timers.pending).toBe(0);
    warmer.arm();
    timers.advance(JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(3);
    // Armed: changes bring the turn at once (the next tick), not at the next look.
    registerJobs(s, 2, 100);
    for (let i = 0; i < 5; i++) warmer.changed();
    expect(timers.pending).toBe(1);
    timers.advance(0);
    expect(views.builds).toBe(5);
    // Then looks every interval again.
    registerJobs(s, 1, 200);
    timers.advance(JOB_VIEWS_WARM_EVERY_MS - 1);
    expect(views.builds).toBe(5);
    timers.advance(1);
    expect(views.builds).toBe(6);
    warmer.stop();
    warmer.changed();
    expect(timers.pending).toBe(0);
  });

  it('takes a bounded turn as soon as the code that changed the jobs returns, before any timer: a read right after finds their views built', async () => {
    const timers = new ManualTimers();
    const s = new SchedulerState();
    const views = new JobStates();
    const warmer = new JobViewsWarmer(timers, views, () => ({ state: s, nowMs: T0 + timers.now() }));
    registerJobs(s, 3);
    warmer.arm();
    timers.advance(JOB_VIEWS_WARM_EVERY_MS);
    expect(views.builds).toBe(3);
    registerJobs(s, 2, 100);
    warmer.changed();
    warmer.changed();
    // Not within the code that applied them, which goes on applying.
    expect(views.builds).toBe(3);
    await Promise.resolve();
    // No timer ran: the views were built once that code returned.
    expect(views.builds).toBe(5);
    expect(views.of(s, T0 + timers.now())).toEqual(new JobStates().of(s, T0 + timers.now()));
    expect(views.builds).toBe(5);
    // One bounded turn; the rest at the turn at once.
    registerJobs(s, JOB_VIEWS_WARM_BUILDS_PER_TURN + 5, 1000);
    warmer.changed();
    await Promise.resolve();
    expect(views.builds).toBe(5 + JOB_VIEWS_WARM_BUILDS_PER_TURN);
    timers.advance(0);
    expect(views.builds).toBe(5 + JOB_VIEWS_WARM_BUILDS_PER_TURN + 5);
    // Stopped before the code returned: no turn.
    registerJobs(s, 1, 9000);
    warmer.changed();
    warmer.stop();
    await Promise.resolve();
    expect(views.builds).toBe(5 + JOB_VIEWS_WARM_BUILDS_PER_TURN + 5);
  });

  it('builds a view for each command applied in the turn right after them, whatever the time: a call after a busy apply builds none', async () => {
    const timers = new BusyTimers();
    const s = new SchedulerState();
    const views = new JobStates();
    const warmer = new JobViewsWarmer(timers, views, () => ({ state: s, nowMs: T0 }));
    warmer.arm();
    // 3,000 registrations applied in one go, each told as the member tells it.
    registerJobs(s, 3000);
    for (let i = 0; i < 3000; i++) warmer.changed();
    await Promise.resolve();
    expect(views.builds).toBe(3000);
    views.of(s, T0);
    expect(views.builds).toBe(3000);
    // One command that changed many jobs: the turn builds its one view, then stops on its time
    // bound (the clock moved past it), leaving the rest to the turns after.
    registerJobs(s, 3000, 10_000);
    warmer.changed();
    await Promise.resolve();
    expect(views.builds - 3000).toBeGreaterThan(0);
    expect(views.builds - 3000).toBeLessThan(200);
    warmer.stop();
  });
});
