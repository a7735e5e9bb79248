import { runsOf, type RunInProgress } from './records.js';
import type { OverlapPolicy } from './command.js';
import type { SchedulerState } from './state.js';

/**
 * Bound on a job's runs waiting on one member for another run of the job to end (overlap
 * 'queue'): a slot that fires with this many already waiting is recorded as skipped.
 */
export const MAX_QUEUED_RUNS_PER_JOB = 16;

/**
 * A run that started this long after its slot's instant is late (a retry, a slot moved after
 * its member died): under 'skip', it makes a slot that fires meanwhile wait rather than skip.
 */
export const LATE_RUN_MS = 100;

/**
 * The job's runs in progress according to the log: started under their claim's current token,
 * with no outcome from their member, not replaced, and started within `timeoutMs` of `nowMs`
 * (a run older than its timeout has been aborted by its member, even if its outcome was lost).
 * Runs of `exceptSlotMs` and on `exceptMember` are left out: a member knows its own runs better
 * than the log does. Pure.
 */
export function runsInProgress(
  state: SchedulerState,
  job: string,
  filter: { readonly nowMs: number; readonly timeoutMs: number; readonly exceptSlotMs?: number; readonly exceptMember?: string },
): RunInProgress[] {
  const out: RunInProgress[] = [];
  for (const claim of state.claimsInProgress(job)) {
    if (claim.slotMs === filter.exceptSlotMs) continue;
    for (const run of runsOf(claim)) {
      if (run.member === filter.exceptMember || run.startedAtMs + filter.timeoutMs <= filter.nowMs) continue;
      out.push(run);
    }
  }
  return out;
}

export type OverlapDecision<T> =
  /** Run now; first replace (abort) these runs, if any. */
  | { readonly action: 'run'; readonly replace: readonly T[] }
  /** Do not run the slot: its outcome is recorded as skipped, with this reason. */
  | { readonly action: 'skip'; readonly reason: string }
  /** Wait until the other runs of the job end (overlap 'queue'). */
  | { readonly action: 'wait' };

/**
 * What a slot that fires does, given the job's other runs in progress (on any member, each with
 * its slot and, once it started, when) and how many of the job's runs already wait on this
 * member. Pure.
 *
 * Under 'skip', the slot is skipped for a run of the job that is on schedule: one that started
 * at its own instant and is still going. If every other run is late (it began after this slot's
 * instant, or more than LATE_RUN_MS after its own: a retry, or a slot that a failover moved),
 * the slot waits for them to end instead, so that the late slot does not cost the next one its
 * run. Both then run, one after the other, never at once. A run that waits here and has not
 * started yet makes the slot skip, whether it is late or not: at most one slot waits behind
 * late runs, so that a job whose runs outlast its period, or a failover that moved several of
 * its slots to one member at once, leaves no backlog that would make the slots on schedule
 * late. (Letting late slots wait in turn instead ran the five cron-5s slots a failover had
 * moved one after another, for 12 s, and the slot due 10 s after the faults healed started
 * 1.8 s late: seed 5009, five members, 30 s.) Such a slot is recorded as skipped, its reason
 * naming the run that waits. So is one that would wait while another slot that came already,
 * claimed for another member (`waitingElsewhere`: their instants, read only then; an earlier
 * slot, or a later one that came before this one fired late), has not started per the log: it
 * waits there, behind the same late runs, or started on schedule, its start not applied here yet.
 *
 * Under 'queue', the slot also waits, with no other run in progress, while an earlier slot of
 * the job claimed for another member has not ended there (`earlierElsewhere`, mode 'one': it
 * waits in that member's queue, or its start is not applied here yet): the job's slots run one
 * at a time in slot order across the members, as they do on one member.
 *
 * Under 'replace', a run of an earlier slot is replaced; if a later slot's run is already in
 * progress (this one is a late retry, or fired late), this slot is the stale one and is skipped.
 */
export function decideOverlap<T extends { readonly slotMs: number; readonly startedAtMs?: number | undefined }>(
  policy: OverlapPolicy,
  slotMs: number,
  others: readonly T[],
  queuedOfJob: number,
  maxQueued: number = MAX_QUEUED_RUNS_PER_JOB,
  waitingElsewhere: () => readonly number[] = () => [],
  earlierElsewhere: () => boolean = () => false,
): OverlapDecision<T> {
  if (policy === 'allow') return { action: 'run', replace: [] };
  if (others.length === 0 && (policy !== 'queue' || !earlierElsewhere())) return { action: 'run', replace: [] };
  const slots = (runs: readonly T[]): string => runs.map((o) => new Date(o.slotMs).toISOString()).join(', ');
  // Waiting behind the other runs, as 'queue' does (and 'skip' behind late runs), up to the bound.
  const queue = (): OverlapDecision<T> =>
    queuedOfJob >= maxQueued ? { action: 'skip', reason: `overlap: ${queuedOfJob} runs of the job were already queued (at most ${maxQueued})` } : { action: 'wait' };
  switch (policy) {
    case 'skip': {
      const running = others.filter((o) => o.startedAtMs !== undefined && o.startedAtMs <= slotMs && o.startedAtMs - o.slotMs <= LATE_RUN_MS);
      if (running.length > 0) return { action: 'skip', reason: `overlap: a run of the job (slot ${slots(running)}) was still in progress` };
      const waiting = others.filter((o) => o.startedAtMs === undefined);
      if (waiting.length > 0) return { action: 'skip', reason: `overlap: a run of the job (slot ${slots(waiting)}) was already waiting to run` };
      // Every other run is late: this slot would wait behind them, unless another slot already
      // waits on another member, behind the same runs. Its member sees this slot no more than
      // this one sees it, so both would start as the late runs end, and each of theirs would be
      // late in turn for the next slots, on two members at once for good.
      const elsewhere = waitingElsewhere();
      if (elsewhere.length > 0) return { action: 'skip', reason: `overlap: a run of the job (slot ${elsewhere.map((ms) => new Date(ms).toISOString()).join(', ')}) was already waiting to run on another member` };
      return queue();
    }
    case 'queue':
      return queue();
    case 'replace': {
      const later = others.filter((o) => o.slotMs > slotMs);
      if (later.length > 0) return { action: 'skip', reason: `overlap: a run of a later slot (${slots(later)}) was in progress` };
      return { action: 'run', replace: others };
    }
  }
}
