import { describe, expect, it } from 'vitest';
import { simulate } from '../../simulations/simulate.js';

/**
 * The production Raft node and driver on simulated time, network and disks, with partitions,
 * loss, duplication, reordering and crashes that lose unsynced writes; safety checked after
 * every event, then liveness after healing. A failure names the seed that reproduces it.
 */
/**
 * Short seeds per count of members: the start of a cluster under every fault, which the CI
 * sweep's long seeds pass through once each. Sixteen of each keep CI's run well under its bound.
 */
const SHORT_SEEDS = 16;

describe('simulation', () => {
  it('replays a seed exactly', async () => {
    const a = await simulate({ seed: 7, durationMs: 5000 });
    const b = await simulate({ seed: 7, durationMs: 5000 });
    expect(a.traceHash).toBe(b.traceHash);
    expect(a.committed).toBeGreaterThan(0);
    const c = await simulate({ seed: 8, durationMs: 5000 });
    expect(c.traceHash).not.toBe(a.traceHash);
  });

  for (const members of [3, 5]) {
    it(`${members} members: ${SHORT_SEEDS} seeds of 30 simulated seconds stay safe and live`, async () => {
      const failures: string[] = [];
      let committed = 0;
      for (let seed = 1; seed <= SHORT_SEEDS; seed++) {
        const r = await simulate({ seed: seed * 1000 + members, members, durationMs: 30_000 });
        committed += r.committed;
        if (r.violations.length > 0) failures.push(`seed ${r.seed}: ${r.violations.slice(0, 3).join('; ')}`);
      }
      expect(failures).toEqual([]);
      // Not vacuous: the workload really committed entries through all those faults.
      expect(committed).toBeGreaterThan(SHORT_SEEDS * 30);
    }, 300_000);
  }
});
