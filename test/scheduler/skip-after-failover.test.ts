import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import type { SimJob } from '../../simulations/jobs.js';
import { FOUNDERS, MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';

/** A job whose runs outlast its period, on the default overlap 'skip'. */
const SLOW: SimJob = { name: 'slow', spec: { every: '3s' }, runMs: [10_000, 10_000], options: { timeoutMs: 60_000 } };

interface Run {
  readonly id: NodeId;
  readonly incarnation: number;
  readonly slotMs: number;
  readonly startT: number;
  /** Whether its member reported that it waited behind another run of the job (the simulator's checker asks). */
  readonly waited: boolean;
  endT: number | null;
}

/**
 * Three members scheduling SLOW; once a run has gone a while, its member is killed, so that its
 * slot moves to another member and runs there late. Returns every run, and when the kill was.
 */
async function killTheRunner(seed: number, job: SimJob = SLOW, founders: readonly NodeId[] = FOUNDERS): Promise<{ readonly runs: readonly Run[]; readonly killedAt: number }> {
  const sim = new MembershipSim(seed, SETTINGS, [job], founders);
  const runs: Run[] = [];
  sim.onRunStart = (id, incarnation, run) => void runs.push({ id, incarnation, slotMs: run.slotMs, startT: sim.scheduler.nowMs, waited: run.waited, endT: null });
  sim.onRun = (id, incarnation, record) => {
    const run = runs.find((r) => r.id === id && r.incarnation === incarnation && r.slotMs === record.slotMs && r.endT === null);
    if (run !== undefined) run.endT = sim.scheduler.nowMs;
  };
  for (const id of founders) await sim.start(id);
  await sim.until('a run of the job going for 2 s', () => (runs.some((r) => r.endT === null && sim.scheduler.nowMs - r.startT > 2_000) ? true : undefined));
  const victim = runs.find((r) => r.endT === null) as Run;
  const killedAt = sim.scheduler.nowMs;
  sim.get(victim.id).crash();
  victim.endT = killedAt;
  await sim.run(60_000);
  return { runs, killedAt };
}

/** The most runs of the job going at once, over every member, after `fromT`. */
function mostAtOnce(runs: readonly Run[], fromT: number): number {
  let most = 0;
  for (const run of runs) {
    if (run.startT < fromT) continue;
    const going = runs.filter((r) => r.startT <= run.startT && (r.endT === null || r.endT > run.startT));
    most = Math.max(most, going.length);
  }
  return most;
}

describe("overlap 'skip' after a failover", () => {
  it('runs one run of a job at a time across the members after its runner is killed and its slot moves (before, two members each waited behind the moved run and started together, every run thereafter, for good)', async () => {
    for (const seed of [1, 2, 3]) {
      const { runs, killedAt } = await killTheRunner(seed);
      const after = runs.filter((r) => r.startT > killedAt);
      // Not vacuous: the moved slot ran late, and runs went on after it, waiting behind it.
      expect(after.length, `seed ${seed}`).toBeGreaterThanOrEqual(4);
      expect(after.filter((r) => r.waited).length, `seed ${seed}`).toBeGreaterThanOrEqual(1);
      // Before the kill every run started on schedule.
      expect(runs.filter((r) => r.startT <= killedAt && r.waited), `seed ${seed}`).toEqual([]);
      expect(mostAtOnce(runs, killedAt), `seed ${seed}`).toBe(1);
    }
  }, 120_000);

  it('does so on five members, and for a job of another period and run time', async () => {
    const other: SimJob = { name: 'other', spec: { every: '2s' }, runMs: [7_000, 7_000], options: { timeoutMs: 60_000 } };
    for (const seed of [4, 5, 6]) {
      for (const [job, founders] of [
        [SLOW, ['m1', 'm2', 'm3', 'm4', 'm5']],
        [other, FOUNDERS],
      ] as const) {
        const { runs, killedAt } = await killTheRunner(seed, job, founders);
        expect(runs.filter((r) => r.startT > killedAt).length, `seed ${seed}, ${job.name}, ${founders.length} members`).toBeGreaterThanOrEqual(4);
        expect(mostAtOnce(runs, killedAt), `seed ${seed}, ${job.name}, ${founders.length} members`).toBe(1);
      }
    }
  }, 120_000);
});
