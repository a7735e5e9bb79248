import { describe, expect, it } from 'vitest';
import { changedJobs, DEPLOY_DROP_SHARE, DEPLOY_SHARE, DEPLOYED_SIM_JOBS, drawDeployDrop, drawDeployMode } from '../../simulations/deploys.js';
import { DEFAULT_SIM_JOBS, type SimJob } from '../../simulations/jobs.js';
import { simulate } from '../../simulations/simulate.js';

/**
 * A rolling deploy that changes jobs' specs and policies, in the fault swarm: each member in
 * turn restarts with DEPLOYED_SIM_JOBS (simulations/deploys.ts), and once every member runs
 * them each changed job must have taken its new form, handled by every member (`deploy`), and
 * run on time (`lateness`). The plants that show the checker is not vacuous are in
 * test/fixtures/plants.ts.
 */
describe('a rolling deploy of changed jobs in the simulator', () => {
  for (const members of [3, 5]) {
    it(`${members} members: 3 seeds of 30 simulated seconds take every changed job over, with no violation`, async () => {
      for (let seed = 1; seed <= 3; seed++) {
        const r = await simulate({ seed, members, durationMs: 30_000, deploy: true });
        expect(r.violations, `seed ${seed}`).toEqual([]);
        const all = ['every-second', 'cron-5s', 'all-members', 'flaky'];
        expect(r.deploy).toEqual({ jobsChanged: all, jobsTakenOver: all, jobsDropped: [] });
        // And ran on time after healing, by the new specs' instants (the lateness checker reads the log's form).
        expect(r.jobs.find((j) => j.name === 'every-second')?.claimed).toBeGreaterThan(0);
      }
    }, 300_000);
  }

  it("runs a user's own deploy, and takes only the jobs it changed over", async () => {
    const jobs: SimJob[] = [
      { name: 'report', spec: { every: '1s' } },
      { name: 'cleanup', spec: { every: '3s' }, options: { retries: 1 } },
    ];
    const deployed: SimJob[] = [jobs[0] as SimJob, { name: 'cleanup', spec: { every: '2s' }, options: { retries: 2 } }];
    const r = await simulate({ seed: 4, members: 3, durationMs: 20_000, jobs, deploy: deployed });
    expect(r.violations).toEqual([]);
    expect(r.deploy).toEqual({ jobsChanged: ['cleanup'], jobsTakenOver: ['cleanup'], jobsDropped: [] });
  }, 120_000);

  it('runs a deploy that drops a job: every member, killed with it and started again without it, takes itself off it, and no checker expects its slots', async () => {
    const jobs: SimJob[] = [
      { name: 'report', spec: { every: '1s' } },
      { name: 'cleanup', spec: { every: '2s' } },
    ];
    for (const [seed, members] of [[4, 3], [5, 5]] as const) {
      const r = await simulate({ seed, members, durationMs: 20_000, jobs, deploy: [jobs[0] as SimJob] });
      expect(r.violations, `seed ${seed}`).toEqual([]);
      expect(r.deploy).toEqual({ jobsChanged: [], jobsTakenOver: [], jobsDropped: ['cleanup'] });
    }
  }, 120_000);

  it('refuses a deploy that changes what a take-over keeps or which jobs run', async () => {
    const modeChanged = DEFAULT_SIM_JOBS.map((j) => (j.name === 'every-second' ? { ...j, options: { mode: 'all' as const } } : j));
    await expect(simulate({ seed: 1, durationMs: 1000, deploy: modeChanged })).rejects.toThrow(/spec and policy only/);
    const timeoutChanged = DEFAULT_SIM_JOBS.map((j) => (j.name === 'cron-5s' ? { ...j, options: { ...j.options, timeoutMs: 1000 } } : j));
    await expect(simulate({ seed: 1, durationMs: 1000, deploy: timeoutChanged })).rejects.toThrow(/spec and policy only/);
    await expect(simulate({ seed: 1, durationMs: 1000, deploy: [...DEFAULT_SIM_JOBS, { name: 'new', spec: { every: '1s' } }] })).rejects.toThrow(/not add them/);
    await expect(simulate({ seed: 1, durationMs: 1000, deploy: [] })).rejects.toThrow(/at least one/);
    await expect(simulate({ seed: 1, durationMs: 1000, jobs: [{ name: 'a', spec: { every: '1s' } }], deploy: true })).rejects.toThrow(/give the jobs to deploy/);
  });

  it('deploys nothing without being asked when the jobs are the user’s, and nothing when told not to', async () => {
    expect((await simulate({ seed: 1, members: 3, durationMs: 2000, jobs: [{ name: 'a', spec: { every: '1s' } }] })).deploy).toBeNull();
    expect((await simulate({ seed: 1, members: 3, durationMs: 2000, deploy: false })).deploy).toBeNull();
  });

  it(`draws a deploy in about ${DEPLOY_SHARE * 100}% of seeds, of every default job changed`, () => {
    let drawn = 0;
    for (let seed = 1; seed <= 1000; seed++) if (drawDeployMode(seed)) drawn++;
    expect(drawn).toBeGreaterThan(1000 * DEPLOY_SHARE * 0.8);
    expect(drawn).toBeLessThan(1000 * DEPLOY_SHARE * 1.2);
    expect(changedJobs(DEFAULT_SIM_JOBS, DEPLOYED_SIM_JOBS).map((j) => j.name)).toEqual(DEFAULT_SIM_JOBS.map((j) => j.name));
  });

  it(`drops 'flaky' in about ${DEPLOY_DROP_SHARE * 100}% of the drawn deploys, and the swarm's checkers hold`, async () => {
    const dropping: number[] = [];
    let drawn = 0;
    for (let seed = 1; seed <= 1000; seed++) {
      if (!drawDeployMode(seed)) continue;
      drawn++;
      if (drawDeployDrop(seed)) dropping.push(seed);
    }
    expect(dropping.length).toBeGreaterThan(drawn * DEPLOY_DROP_SHARE * 0.8);
    expect(dropping.length).toBeLessThan(drawn * DEPLOY_DROP_SHARE * 1.2);
    // The first seed that drops, with every fault drawn: the other jobs taken over, 'flaky' dropped.
    const seed = dropping[0] as number;
    const r = await simulate({ seed, members: 3, durationMs: 30_000 });
    expect(r.violations, `seed ${seed}`).toEqual([]);
    const changed = ['every-second', 'cron-5s', 'all-members'];
    expect(r.deploy).toEqual({ jobsChanged: changed, jobsTakenOver: changed, jobsDropped: ['flaky'] });
  }, 120_000);
});
