import type { CompactionOptions } from '../src/runtime/compaction.js';
import { memberSettings, type MemberSettings } from '../src/runtime/member-settings.js';
import { SeededRandom } from '../src/time/random.js';

/**
 * The settings a simulation varies from production's defaults on purpose, each drawn from the
 * seed, with the range it is drawn from. Every other setting is `Cluster`'s default
 * (memberSettings()), so that simulations run what clusters run.
 *
 * - Compaction, in every run: far more often than production's 10,000 entries, so that members
 *   install snapshots and restart from them in a run of seconds (compaction must not change what
 *   the checkers see), and snapshots travel in small chunks, several per snapshot, some lost.
 * - In about half the runs each: smaller proposal batches (in count and bytes), so that queued
 *   proposals are split over several batches; a shorter request timeout, so that proposals and
 *   barriers time out while a leader is cut off or a disk stalls; and fewer pending proposals,
 *   so that a burst of the scheduler's commands meets backpressure; and a reassignment horizon
 *   of seconds to two minutes rather than ten, so that claims pass it within a run (moves stop,
 *   claims nobody ran are recorded missed, assignees no longer arm them) while faults go on.
 *
 * Not varied: the timing of ticks, heartbeats and elections, and the bound on clock skew (the
 * fault models, pauses and clock jumps, and the checkers' bounds are set against production's),
 * the scheduler's planning (its interval and look-ahead, which the lateness bound is set against),
 * and pending reads (the scheduler waits on at most a few barriers at once).
 */
export const SETTING_VARIATIONS = {
  snapshotEveryEntries: { min: 200, max: 3000, share: 1 },
  snapshotRetainEntries: { min: 0, max: 300, share: 1 },
  snapshotChunkBytes: { min: 512, max: 64 * 1024, share: 1 },
  maxProposalBatch: { min: 1, max: 64, share: 0.5 },
  maxProposalBatchBytes: { min: 64, max: 16 * 1024, share: 0.5 },
  requestTimeoutMs: { min: 500, max: 5000, share: 0.5 },
  maxPendingProposals: { min: 64, max: 1024, share: 0.5 },
  reassignHorizonMs: { min: 15_000, max: 120_000, share: 0.5 },
} as const;

export type VariedSetting = keyof typeof SETTING_VARIATIONS;

/** The settings a run's members share, and those the seed drew away from the defaults. */
export interface DrawnSettings {
  readonly settings: MemberSettings;
  /** Each setting the seed drew, with its value; empty for a run of the defaults alone. */
  readonly varied: Partial<Record<VariedSetting, number>>;
}

/**
 * Draws a run's settings from `seed`, on a stream of its own so that the faults drawn after do
 * not depend on which settings vary. With `vary` false, the defaults alone. `compaction` and
 * `given`, when given, are used as they are rather than drawn (a test that needs a setting, a
 * short horizon say, in every seed); `maxConcurrent` is the option of that name.
 */
export function drawSettings(seed: number, vary: boolean, compaction?: CompactionOptions, maxConcurrent?: number, given: Partial<Record<VariedSetting, number>> = {}): DrawnSettings {
  const varied: Partial<Record<VariedSetting, number>> = {};
  if (vary) {
    const random = new SeededRandom(seed * 2_654_435 + 17);
    for (const [name, v] of Object.entries(SETTING_VARIATIONS) as Array<[VariedSetting, (typeof SETTING_VARIATIONS)[VariedSetting]]>) {
      // Both draws are made whatever the share, so that each setting's value depends on the seed alone.
      const chosen = random.int(0, 999) < v.share * 1000;
      const value = random.int(v.min, v.max);
      if (chosen) varied[name] = value;
    }
  }
  if (compaction !== undefined) {
    varied.snapshotEveryEntries = compaction.everyEntries;
    varied.snapshotRetainEntries = compaction.retainEntries;
  }
  Object.assign(varied, given);
  const base = memberSettings({
    maxConcurrent,
    snapshotEveryEntries: varied.snapshotEveryEntries,
    snapshotRetainEntries: varied.snapshotRetainEntries,
    requestTimeoutMs: varied.requestTimeoutMs,
    maxPendingProposals: varied.maxPendingProposals,
  });
  // Not options of Cluster, so set past memberSettings: its defaults are what production runs.
  const settings: MemberSettings = {
    ...base,
    timing: {
      ...base.timing,
      maxProposalBatch: varied.maxProposalBatch ?? base.timing.maxProposalBatch,
      maxProposalBatchBytes: varied.maxProposalBatchBytes ?? base.timing.maxProposalBatchBytes,
      reassignHorizonMs: varied.reassignHorizonMs ?? base.timing.reassignHorizonMs,
    },
    snapshotChunkBytes: varied.snapshotChunkBytes ?? base.snapshotChunkBytes,
  };
  return { settings, varied };
}
