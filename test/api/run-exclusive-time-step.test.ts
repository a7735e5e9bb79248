import { describe, expect, it } from 'vitest';
import { runExclusive } from '../../src/api/run-exclusive.js';
import { FOUNDERS, MembershipSim, SETTINGS } from '../fixtures/membership-sim.js';
import { exclusiveContextOf as ctxOf } from '../fixtures/sim-exclusive.js';

const HOUR = 3_600_000;

/**
 * runExclusive on members over simulated time, clocks and network (MembershipSim), whose
 * cluster's time steps: the holder's signal aborts by the cluster's time as well as by its timer.
 */
describe('runExclusive across a correction of a majority of clocks', () => {
  it('aborts the holder’s signal as soon as the cluster’s time, put right forward, reaches its abort point, before another member is granted the lock (it ran on unaborted beside the other’s task, its timer not due)', async () => {
    const sim = new MembershipSim(7, SETTINGS, []);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('synced', () => (FOUNDERS.every((id) => sim.get(id).driver?.clockSynced === true) ? true : undefined));
    await sim.run(3000);
    // Two of three clocks (a majority) are an hour behind: the cluster's time is an hour behind.
    sim.get('m2').clock.jump(-HOUR);
    sim.get('m3').clock.jump(-HOUR);
    await sim.run(3000);
    const [a, b] = [sim.get('m1'), sim.get('m2')];
    expect(a.driver!.clusterClock().now()).toBeLessThan(a.clock.now() - HOUR / 2);

    let aRunning = false;
    let aAborted = false;
    const holding = runExclusive(ctxOf(sim, a), 'reindex', { atMostFor: 60_000 }, ({ signal }) => {
      aRunning = true;
      signal.addEventListener('abort', () => (aAborted = true), { once: true });
      // A task of 30 s, well within atMostFor (60 s); it stops when told to.
      return new Promise<void>((resolve) => {
        const t = sim.scheduler.after(30_000, resolve);
        signal.addEventListener('abort', () => (t.cancelled = true, resolve()), { once: true });
      });
    });
    await sim.until('a runs its task', () => (aRunning ? true : undefined));
    await sim.run(2000);
    // The operator puts the two clocks right.
    sim.get('m2').clock.jump(HOUR);
    sim.get('m3').clock.jump(HOUR);
    await sim.run(2000);
    let bRan = false;
    const bGot = await sim.settle(runExclusive(ctxOf(sim, b), 'reindex', { atMostFor: 60_000 }, () => void (bRan = true)));
    const overlap = bRan && aRunning && !aAborted;
    await sim.settle(holding);
    // b may be granted the lock (its end has come on the corrected time), but only once a's
    // task was told to stop: before, its signal waited for its timer, 58 s after the grant.
    expect({ bGot, overlap, aAborted }).toEqual({ bGot: true, overlap: false, aAborted: true });
  }, 60_000);
});
