import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { memberSettings } from '../../src/runtime/member-settings.js';
import type { SimJob } from '../../simulations/jobs.js';
import { MembershipSim } from '../fixtures/membership-sim.js';

const VOTERS = ['m1', 'm2', 'm3', 'm4', 'm5'];
const SETTINGS = memberSettings();
/** A slot every 15 s, each run 12 s. */
const JOB: SimJob = { name: 'long', spec: { every: '15s' }, runMs: [12_000, 12_000], options: { mode: 'one' } };
/** A clog this long is a partition that closes no connection, as a real one does not at first. */
const FOREVER_MS = 3_600_000;

interface RunEvent {
  readonly id: NodeId;
  readonly slotMs: number;
  readonly t: number;
}

// Found by a reviewing helper: the old leader, cut off with a follower X running a slot, went on
// leading X until CheckQuorum deposed it, and each heartbeat renewed X's lease; the new leader,
// which had never heard from X, moved X's claim after its grace of two heartbeats, and the slot
// ran on two members at once until X's lease ran out.
describe('a new leader that has not heard from a member since it began to lead', () => {
  it("moves the member's claims only once the lease the deposed leader renewed has run out", async () => {
    for (const seed of [1, 2, 3]) {
      const sim = new MembershipSim(seed, SETTINGS, [JOB], VOTERS);
      for (const id of VOTERS) await sim.start(id);
      const starts: RunEvent[] = [];
      const ends: RunEvent[] = [];
      sim.onRunStart = (id, _incarnation, run) => starts.push({ id, slotMs: run.slotMs, t: sim.scheduler.nowMs });
      sim.onRun = (id, _incarnation, run) => ends.push({ id, slotMs: run.slotMs, t: sim.scheduler.nowMs });
      // A run on a follower X, under leader L.
      let x: RunEvent | undefined;
      let leader: NodeId | undefined;
      for (let slot = 0; slot < 10 && x === undefined; slot++) {
        const from = starts.length;
        await sim.until('the next run starts', () => (starts.length > from ? true : undefined));
        const run = starts[starts.length - 1]!;
        leader = sim.leader()?.id;
        if (leader !== undefined && leader !== run.id) x = run;
      }
      expect(x).toBeDefined();
      await sim.run(2000);
      // L and X cut off from the other three, no connection closed.
      const minority = [leader!, x!.id];
      for (const a of minority) {
        for (const b of VOTERS.filter((id) => !minority.includes(id))) {
          sim.network.clog(a, b, FOREVER_MS);
          sim.network.clog(b, a, FOREVER_MS);
        }
      }
      await sim.run(10_000);
      const again = starts.filter((s) => s.slotMs === x!.slotMs && s.id !== x!.id);
      const xEnded = ends.find((e) => e.slotMs === x!.slotMs && e.id === x!.id);
      // The slot moved to the majority's side, and X's run ended (aborted) before it started there.
      expect(again.length, `seed ${seed}`).toBe(1);
      expect(xEnded, `seed ${seed}`).toBeDefined();
      expect(again[0]!.t, `seed ${seed}: X's run ended at ${xEnded!.t}`).toBeGreaterThanOrEqual(xEnded!.t);
    }
  }, 120_000);
});
