import { MISSED } from '../src/scheduler/command.js';
import type { SchedulerChecker, SlotRecord } from './scheduler-checker.js';
import { SIM_EPOCH_MS } from './scheduler.js';

/**
 * Histogram buckets of lateness, by upper bound (exclusive): negative lateness means the
 * slot started early (its member's clock ran ahead).
 */
export const LATENESS_BUCKETS: ReadonlyArray<{ readonly label: string; readonly belowMs: number }> = [
  { label: 'early', belowMs: 0 },
  { label: '0–10ms', belowMs: 10 },
  { label: '10–100ms', belowMs: 100 },
  { label: '0.1–1s', belowMs: 1000 },
  { label: '1–10s', belowMs: 10_000 },
  { label: '≥10s', belowMs: Number.POSITIVE_INFINITY },
];

/**
 * What became of one job's slots in a run: the run result's `jobs` (and so the `--json` output
 * of `cronraft simulate`) and the HTML report's table both show this, computed once from the
 * scheduler checker, which saw every slot (the timeline the report draws is bounded).
 *
 * A slot's **lateness** is the true time its first run started, under any of its claims and
 * whatever that run's outcome, minus the slot's instant. That is what the scheduler controls
 * (when an assignee fires) and what it promises: a slot "starts within 50 ms of its instant"
 * (docs/PROMISES.md, `lateness`), which the scheduler checker measures the same way. A run that
 * started on time and then failed was on time; its failure is the handler's, and is counted
 * below by outcome.
 */
export interface JobSummary {
  readonly name: string;
  /** The job's spec as reports show it. */
  readonly spec: string;
  /** Slots claimed that were due by the end of the run (those claimed ahead for later are `pending`). */
  readonly claimed: number;
  /** Runs started, under any of the slots' claims: retries and runs of moved slots count too. */
  readonly runs: number;
  /** Slots with a successful run under any of their claims, as the log recorded it. */
  readonly succeeded: number;
  /**
   * The other claimed slots by the outcome the log recorded under their current claim:
   * `failed`; `aborted` (its timeout) or `interrupted` (the cluster ended it) count as `aborted`.
   */
  readonly failed: number;
  readonly aborted: number;
  /** Slots not run because their overlap policy skipped them or a later slot's run replaced them. */
  readonly skipped: number;
  /** Slots the leader recorded as missed (`expire`): nobody ran them before the reassignment horizon. */
  readonly expired: number;
  /** Slots with no outcome recorded under their current claim by the end of the run (the last slots' runs may still be going). */
  readonly noOutcome: number;
  /** Slots claimed ahead for after the end of the run: they never had their turn and are not counted above. */
  readonly pending: number;
  /** Slots dropped by the catch-up policy, never claimed. */
  readonly missed: number;
  /** Slots claimed again after their first claim (moved off a lost assignee, or retried). */
  readonly reassigned: number;
  /** Lateness (see above) of the slots that started, true ms: nearest-rank p50 and p99, and max; null if none started. */
  readonly latenessMs: { readonly p50: number; readonly p99: number; readonly max: number } | null;
  /** Slots that started, by lateness bucket (LATENESS_BUCKETS). */
  readonly histogram: readonly number[];
}

type SlotResult = 'succeeded' | 'failed' | 'aborted' | 'skipped' | 'expired' | 'noOutcome';

/**
 * Summaries of `jobs` (in their order) from what the checker saw. Slots due after `endT` (true
 * ms) were claimed ahead and never had their turn: they are only counted as `pending`.
 */
export function summarizeJobs(jobs: ReadonlyArray<{ readonly name: string; readonly spec: string }>, checker: SchedulerChecker, endT: number): JobSummary[] {
  const slotsOf = new Map<string, SlotRecord[]>(jobs.map((j) => [j.name, []]));
  for (const slot of checker.slots.values()) slotsOf.get(slot.job)?.push(slot);
  return jobs.map(({ name, spec }) => {
    const counts: Record<SlotResult, number> = { succeeded: 0, failed: 0, aborted: 0, skipped: 0, expired: 0, noOutcome: 0 };
    const lateness: number[] = [];
    let pending = 0;
    let runs = 0;
    let reassigned = 0;
    for (const slot of slotsOf.get(name) ?? []) {
      const slotT = slot.slotMs - SIM_EPOCH_MS;
      if (slotT > endT) {
        pending++;
        continue;
      }
      counts[resultOf(slot)]++;
      runs += slot.runs;
      if (slot.attempt > 1) reassigned++;
      if (slot.firstStartT !== null) lateness.push(slot.firstStartT - slotT);
    }
    lateness.sort((a, b) => a - b);
    const histogram = LATENESS_BUCKETS.map(() => 0);
    for (const ms of lateness) {
      const bucket = LATENESS_BUCKETS.findIndex((b) => ms < b.belowMs);
      histogram[bucket] = (histogram[bucket] ?? 0) + 1;
    }
    const claimed = Object.values(counts).reduce((a, b) => a + b, 0);
    return {
      name,
      spec,
      claimed,
      runs,
      ...counts,
      pending,
      missed: checker.jobs.get(name)?.missed ?? 0,
      reassigned,
      latenessMs: lateness.length === 0 ? null : { p50: percentile(lateness, 0.5), p99: percentile(lateness, 0.99), max: lateness[lateness.length - 1] ?? 0 },
      histogram,
    };
  });
}

/**
 * A slot succeeded once a run of it succeeded under any claim (a success whose outcome was
 * committed after the slot had moved on still did the work). Otherwise it is what the log
 * recorded under its current claim, from its first assignee that has an outcome there.
 */
function resultOf(slot: SlotRecord): SlotResult {
  for (const outcome of slot.outcomes.values()) if (outcome === 'succeeded') return 'succeeded';
  const outcome = slot.assignees.map((member) => slot.outcomes.get(`${member} ${slot.token}`)).find((o) => o !== undefined);
  switch (outcome) {
    case undefined:
      return 'noOutcome';
    case 'failed':
      return 'failed';
    case 'skipped':
    case 'replaced':
      return 'skipped';
    case MISSED:
      return 'expired';
    default:
      return 'aborted';
  }
}

/** Nearest-rank percentile (q in 0..1) of a sorted array: a value that actually occurred; 0 when empty. */
function percentile(sorted: readonly number[], q: number): number {
  const rank = Math.max(1, Math.ceil(q * sorted.length));
  return sorted[Math.min(rank, sorted.length) - 1] ?? 0;
}

/** What the run's runExclusive tasks did, as they told it. */
export interface LocksSummary {
  readonly names: readonly string[];
  /** Tasks started under a lock, and of them those whose signal aborted before they returned. */
  readonly tasks: number;
  readonly aborted: number;
}

/** What a run's fan-out did: its topics, and the items the log recorded as emitted, done and dead. */
export interface FanoutSummary {
  readonly topics: readonly string[];
  readonly emitted: number;
  readonly succeeded: number;
  readonly dead: number;
}
