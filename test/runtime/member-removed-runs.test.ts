import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import type { SimJob } from '../../simulations/jobs.js';
import { FOUNDERS, MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';

/** Mode 'one' jobs whose runs last 1.5 to 2.5 s. */
const JOBS: SimJob[] = Array.from({ length: 6 }, (_, i) => ({ name: `one${i}`, spec: { every: '1s' }, runMs: [1500, 2500], options: {} }));

/**
 * A live, connected member removed while it runs a slot. The removed member's run must end as
 * it applies its own removal (its signal aborted), not once its lease runs out (about 0.6 s
 * later, before the fix), or one mode 'one' slot runs on two members at once. One that never
 * learns of its removal (it hears nothing more) keeps its claim at the leader until it has been
 * silent for its lease and a plan interval, as a silent member does: before, the leader moved
 * it as it applied the removal, while the run went on until the member's lease ran out (seed 6
 * of the default swarm, its partitions quiet).
 */
describe('removing a live member while it runs a slot', () => {
  for (const deaf of [false, true]) {
    const title = deaf ? ', though the member hears nothing more (it never learns of its removal)' : '';
    it(`never has the slot running on the removed member and on another at once${title}`, async () => {
      const sim = new MembershipSim(1, SETTINGS, JOBS);
      const now = (): number => sim.scheduler.nowMs;
      const runs = new Map<string, Array<{ id: NodeId; token: number; from: number; to: number }>>();
      const key = (job: string, slotMs: number): string => `${job}@${slotMs}`;
      sim.onRunStart = (id, _inc, run) => {
        const k = key(run.job, run.slotMs);
        runs.set(k, [...(runs.get(k) ?? []), { id, token: Number(run.fencingToken), from: now(), to: Number.POSITIVE_INFINITY }]);
      };
      // The handler's end: its outcome (succeeded, or interrupted once its signal aborted).
      sim.onRun = (id, _inc, run) => {
        const r = runs.get(key(run.job, run.slotMs))?.find((x) => x.id === id && x.token === Number(run.fencingToken));
        if (r !== undefined) r.to = now();
      };
      for (const id of FOUNDERS) await sim.start(id);
      await sim.until('version 3', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === 3) ? true : undefined));
      await sim.run(3000);
      const leader = sim.leader();
      if (leader === undefined) throw new Error('no leader');
      const victim = FOUNDERS.find((id) => id !== leader.id) as NodeId;
      await sim.until('the victim runs a slot', () => ([...runs.values()].some((rs) => rs.some((r) => r.id === victim && r.to === Number.POSITIVE_INFINITY && now() - r.from > 10)) ? true : undefined));
      // Deaf: what is sent to the victim is lost, its connections open (a partition as it begins).
      if (deaf) for (const id of FOUNDERS) if (id !== victim) sim.network.mute(id, victim);
      await sim.settle(leader.member!.proposeConfChange({ type: 'remove', id: victim }));
      await sim.run(4000);
      if (!deaf) expect(sim.fatal.get(victim)).toMatchObject({ code: 'CRONRAFT_REMOVED' });
      const overlaps: string[] = [];
      for (const [k, rs] of runs) {
        for (const a of rs) for (const b of rs) {
          if (a.id < b.id && a.from < b.to && b.from < a.to) overlaps.push(`${k}: ${a.id}#${a.token} [${a.from.toFixed(1)}, ${a.to.toFixed(1)}] and ${b.id}#${b.token} [${b.from.toFixed(1)}, ${b.to.toFixed(1)}]`);
        }
      }
      expect(overlaps).toEqual([]);
    });
  }
});
