import { describe, expect, it } from 'vitest';
import { simulate } from '../../simulations/simulate.js';
import { SIM_EPOCH_MS } from '../../simulations/scheduler.js';

/**
 * The production scheduler (planner, replicated state, runtime) on simulated time: a user's own
 * jobs, and bad ones refused. Under every fault (each slot claimed at most once, runs hold the
 * fencing token the log gave them, every instant is claimed or counted missed, and after healing
 * every slot runs on time) it runs in the CI sweeps (simulation-sweep-a.test.ts and
 * simulation-sweep-b.test.ts: the same options, 5 members among them, with slots missed, stale
 * starts and crashes required), which hold a run of 30 seeds of 30 simulated seconds many times over.
 */
describe('scheduler simulation', () => {
  it("simulates a user's own jobs and reports what became of them", async () => {
    const r = await simulate({
      seed: 42,
      members: 3,
      durationMs: 20_000,
      proposals: false,
      faults: { partitions: false, loss: false, crashes: false, clocks: false, pauses: false },
      jobs: [
        { name: 'report', spec: '*/2 * * * * *' },
        { name: 'cache', spec: { every: '500ms' }, options: { mode: 'all' } },
      ],
    });
    expect(r.violations).toEqual([]);
    const report = r.jobs.find((j) => j.name === 'report');
    const cache = r.jobs.find((j) => j.name === 'cache');
    // About 45 s of simulated time in all (faults, then the liveness phase): a slot every 2 s and every 0.5 s.
    expect(report?.claimed).toBeGreaterThan(15);
    // Every slot succeeded, but perhaps the last, whose run may still be going when the run ends.
    expect(report!.succeeded).toBeGreaterThanOrEqual(report!.claimed - 1);
    expect(cache?.succeeded).toBeGreaterThan(60);
    // Without faults, every slot starts at its instant: the assignee fires on its own timer, by
    // the cluster's time as it learned it through heartbeats, which is good to half a round
    // trip (links here take up to latencyMaxUs each way, at random).
    expect(report?.latenessMs?.max).toBeLessThan(r.drawn.latencyMaxUs! / 1000);
  }, 120_000);

  it('runs once an { at } job due before the cluster could register it, and accounts for its instant', async () => {
    // Due 50 ms in, before any leader: the registrations apply after it, under cluster version 1,
    // and the slot comes due as the cluster raises its version (the checker counts the instant then).
    const r = await simulate({
      seed: 7,
      members: 3,
      durationMs: 10_000,
      proposals: false,
      faults: { partitions: false, loss: false, crashes: false, clocks: false, pauses: false },
      jobs: [{ name: 'launch', spec: { at: new Date(SIM_EPOCH_MS + 50) } }],
    });
    expect(r.violations).toEqual([]);
    expect(r.jobs.find((j) => j.name === 'launch')).toMatchObject({ claimed: 1, runs: 1, succeeded: 1 });
  }, 120_000);

  it('refuses a bad job with an error that names it', async () => {
    await expect(simulate({ seed: 1, jobs: [{ name: 'bad', spec: 'not cron' }] })).rejects.toThrow(/jobs\[bad\]\.spec/);
    await expect(simulate({ seed: 1, jobs: [{ name: 'a', spec: { every: '1s' } }, { name: 'a', spec: { every: '2s' } }] })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'jobs[1].name' });
  });
});
