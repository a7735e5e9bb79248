import { describe, expect, it } from 'vitest';
import { CLUSTER_DEFAULTS, resolveOptions } from '../../src/cluster-options.js';
import { memberSettings, type MemberSettings } from '../../src/runtime/member-settings.js';
import { simulate, type SimulationOptions } from '../../simulations/simulate.js';
import { drawSettings, SETTING_VARIATIONS, type VariedSetting } from '../../simulations/settings.js';

/** Where each varied setting lives in a member's settings. */
const WHERE: Record<VariedSetting, { readonly part?: 'timing' | 'compaction'; readonly field: string }> = {
  snapshotEveryEntries: { part: 'compaction', field: 'everyEntries' },
  snapshotRetainEntries: { part: 'compaction', field: 'retainEntries' },
  snapshotChunkBytes: { field: 'snapshotChunkBytes' },
  maxProposalBatch: { part: 'timing', field: 'maxProposalBatch' },
  maxProposalBatchBytes: { part: 'timing', field: 'maxProposalBatchBytes' },
  requestTimeoutMs: { part: 'timing', field: 'requestTimeoutMs' },
  maxPendingProposals: { part: 'timing', field: 'maxPendingProposals' },
  reassignHorizonMs: { part: 'timing', field: 'reassignHorizonMs' },
};

/** `settings` with `name` set to `value`. */
function withSetting(settings: MemberSettings, name: VariedSetting, value: number): MemberSettings {
  const { part, field } = WHERE[name];
  return part === undefined ? { ...settings, [field]: value } : { ...settings, [part]: { ...settings[part], [field]: value } };
}

describe("the simulator runs production's settings", () => {
  it("without variations, exactly what Cluster computes from its defaults, and says so", async () => {
    const r = await simulate({ seed: 1, members: 3, durationMs: 1000, jobs: [], vary: false });
    // What `new Cluster([])` runs with.
    const cluster = resolveOptions([], {}).member;
    expect(r.settings).toEqual(cluster);
    expect(r.varied).toEqual({});
    expect(r.violations).toEqual([]);
    // And those are the documented defaults.
    expect(r.settings.timing).toMatchObject({
      tickMs: CLUSTER_DEFAULTS.tickMs,
      requestTimeoutMs: CLUSTER_DEFAULTS.requestTimeoutMs,
      maxPendingProposals: CLUSTER_DEFAULTS.maxPendingProposals,
      maxProposalBatch: CLUSTER_DEFAULTS.maxProposalBatch,
      maxProposalBatchBytes: CLUSTER_DEFAULTS.maxProposalBatchBytes,
      maxPendingReads: CLUSTER_DEFAULTS.maxPendingReads,
    });
    expect(r.settings.compaction).toEqual({ everyEntries: CLUSTER_DEFAULTS.snapshotEveryEntries, retainEntries: CLUSTER_DEFAULTS.snapshotRetainEntries });
  });

  it('with variations, the defaults but for the settings the seed drew, each within its range, and reported', () => {
    const seen = new Set<VariedSetting>();
    for (let seed = 1; seed <= 50; seed++) {
      const { settings, varied } = drawSettings(seed, true);
      // The protocol's apply batch follows the compaction interval, as in Cluster.
      let expected = memberSettings({ snapshotEveryEntries: settings.compaction.everyEntries });
      for (const [name, value] of Object.entries(varied) as Array<[VariedSetting, number]>) {
        expect(value).toBeGreaterThanOrEqual(SETTING_VARIATIONS[name].min);
        expect(value).toBeLessThanOrEqual(SETTING_VARIATIONS[name].max);
        expected = withSetting(expected, name, value);
        seen.add(name);
      }
      expect(settings).toEqual(expected);
    }
    // Every variation is drawn in some of the seeds.
    expect([...seen].sort()).toEqual(Object.keys(SETTING_VARIATIONS).sort());
  });
});

describe('simulate() options', () => {
  it('refuses a seed past 32 bits, no members or more than a configuration holds, and a duration that is no whole number of milliseconds', async () => {
    // No members passed every liveness check vacuously; a NaN duration never ended; a seed past
    // 2^32 replayed a smaller one's faults.
    for (const [options, option] of [
      [{ seed: 2 ** 32 }, 'seed'],
      [{ seed: -1 }, 'seed'],
      [{ seed: 1, members: 0 }, 'members'],
      [{ seed: 1, members: 257 }, 'members'],
      [{ seed: 1, durationMs: Number.NaN }, 'durationMs'],
      [{ seed: 1, durationMs: 0 }, 'durationMs'],
    ] as const) {
      await expect(simulate(options), option).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option });
    }
  });

  it('refuses an option or a fault it does not know, a maxEmit no topic can hold, and jobs it cannot run as given (a stranger found each silently ignored)', async () => {
    const job = { name: 'tick', spec: { every: '1s' } };
    for (const [options, option] of [
      [{ seed: 1, memebrs: 3 }, 'memebrs'],
      // The CLI's fault names are singular; the API's switches are plural.
      [{ seed: 1, faults: { partition: false } }, 'faults.partition'],
      [{ seed: 1, maxEmit: 25_001 }, 'maxEmit'],
      [{ seed: 1, maxEmit: 0 }, 'maxEmit'],
      // The simulator runs a handler of its own (runMs, failRate): the app's would never be called.
      [{ seed: 1, jobs: [{ ...job, handler: () => undefined }] }, 'jobs[0].handler'],
      [{ seed: 1, jobs: [job, job] }, 'jobs[1].name'],
      [{ seed: 1, jobs: [{ ...job, failRate: 2 }] }, 'jobs[0].failRate'],
      [{ seed: 1, jobs: [{ ...job, runMs: [500, 10] }] }, 'jobs[0].runMs'],
    ] as const) {
      await expect(simulate(options as unknown as SimulationOptions), option).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option });
    }
  });
});
