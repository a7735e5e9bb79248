import { NotRunningError, RunAbortedError, thrownMessage } from '../../errors.js';
import { claimKey, retriesLeft, type ClaimRecord } from '../../scheduler/records.js';
import type { RunOutcome } from '../../scheduler/command.js';
import { emitKeyOf } from '../../fanout/items.js';
import { isReason, NO_LEASE_AT_INSTANT, type Armed } from './armed-claim.js';
import type { JobContext, RunRecord } from './job-types.js';
import type { LocalJob } from './registrations.js';
import type { RunPermits } from './run-permits.js';
import type { RunRecords } from './run-records.js';
import type { RuntimeContext } from './runtime-context.js';

/**
 * The run of an admitted slot on this member: its handler called with its context and signal,
 * under its timeout and this member's lease, its start and outcome recorded, and its run permit
 * given back as it ends.
 */
export class RunExecution {
  readonly #ctx: RuntimeContext;
  readonly #permits: RunPermits<Armed>;
  readonly #records: RunRecords;
  /** Forgets the armed claim under `key`, if it is still the one `abort` belongs to. */
  readonly #forget: (key: string, abort: AbortController) => void;

  constructor(ctx: RuntimeContext, permits: RunPermits<Armed>, records: RunRecords, forget: (key: string, abort: AbortController) => void) {
    this.#ctx = ctx;
    this.#permits = permits;
    this.#records = records;
    this.#forget = forget;
  }

  /** Runs the handler of an admitted run, then records its outcome. */
  async execute(claim: ClaimRecord, job: LocalJob, armed: Armed): Promise<void> {
    const o = this.#ctx.options;
    const key = claimKey(claim.job, claim.slotMs);
    const abort = armed.abort;
    // Without its lease this member cannot know it still holds the claim: do not start.
    if ((job.options.mode ?? 'one') === 'one' && !o.holdsLease()) {
      abort.abort(new RunAbortedError('interrupted', NO_LEASE_AT_INSTANT));
    }
    const timeoutMs = armed.timeoutMs;
    const timeout = o.timers.setTimeout(() => abort.abort(new RunAbortedError('timeout', `the run exceeded its timeout of ${timeoutMs} ms`)), timeoutMs);
    const startedAtMs = o.clock.now();
    let outcome: RunOutcome = 'succeeded';
    let error: string | undefined;
    let ended = false;
    try {
      if (abort.signal.aborted) throw abort.signal.reason as Error;
      // The handler starts first, synchronously up to its first await: recording the start
      // proposes through the driver, whose turn would otherwise run before the handler.
      const origin = { job: claim.job, slotMs: claim.slotMs };
      // Only while the run holds its claim: an attempt timed out, moved or replaced, whose retry
      // or new holder emits the same work, must not emit it too (a context kept past its run's
      // end no more than that).
      // Asked at the call, and again before each entry of an emit under way.
      const stopped = (): Error | null =>
        abort.signal.aborted ? (abort.signal.reason as Error) : ended ? new RunAbortedError('ended', `the run of ${claim.job} for its slot ${new Date(claim.slotMs).toISOString()} has ended: ctx.emit emits only while the run goes on`) : null;
      const emit: JobContext['emit'] = async (topic, items, options) => {
        const why = stopped();
        if (why !== null) throw why;
        if (o.emitItems === undefined) throw new NotRunningError('fan-out is not available here');
        return o.emitItems(topic, items, emitKeyOf(options), origin, stopped);
      };
      const calledAt = o.timers.now();
      const handled = (async () => job.handler({ job: claim.job, slot: new Date(claim.slotMs), fencingToken: claim.token, attempt: claim.attempt, signal: abort.signal, emit }))();
      o.loopBlocks?.handler(o.timers.now() - calledAt, () => ({ kind: 'run', job: claim.job, slot: new Date(claim.slotMs), fencingToken: claim.token }));
      try {
        o.onRunStart?.({ job: claim.job, slotMs: claim.slotMs, fencingToken: claim.token, member: o.self, startedAtMs, waited: armed.waited });
      } catch {
        // A listener's error must not keep the run going unrecorded.
      }
      // Not awaited: the handler runs now, and the log learns of it a commit later.
      this.#ctx.track(this.#records.recordStart(claim, startedAtMs));
      await Promise.race([handled, new Promise((_, reject) => abort.signal.addEventListener('abort', () => reject(abort.signal.reason as Error), { once: true }))]);
    } catch (e) {
      const reason: unknown = abort.signal.reason;
      // A cancelled run ends here as soon as its signal aborts, whether or not its handler
      // heeds it, as a run whose lease was lost does: the outcome is recorded now.
      // A member stopping ended it, not the job: its slot moves at once, as an interrupted one.
      outcome = isReason(reason, 'interrupted') || isReason(reason, 'stopping') ? 'interrupted' : isReason(reason, 'replaced') ? 'replaced' : isReason(reason, 'cancelled') ? 'cancelled' : abort.signal.aborted ? 'aborted' : 'failed';
      error = thrownMessage(e);
    } finally {
      ended = true;
      o.timers.clearTimeout(timeout);
      this.#records.ended(key, claim.token);
      this.#forget(key, abort);
      // Its run permit is free, and the job's queued runs may go, before the outcome commits.
      this.#permits.release(armed);
    }
    // Never before its start: the cluster's time may step back while the run goes (clock sync
    // refreshing its correction), and the log would then say the run ended before it started.
    const endedAtMs = Math.max(startedAtMs, o.clock.now());
    const record: RunRecord = {
      job: claim.job,
      slotMs: claim.slotMs,
      fencingToken: claim.token,
      member: o.self,
      startedAtMs,
      endedAtMs,
      outcome,
      ...(error === undefined ? {} : { error }),
      attempt: claim.attempt,
      retriesLeft: retriesLeft(this.#ctx.state.jobs.get(claim.job), claim),
    };
    try {
      o.onRun?.(record);
    } catch {
      // A listener's error must not keep the outcome from being recorded.
    }
    try {
      await this.#records.recordOutcome({ ...record, outcome });
    } finally {
      this.#records.outcomeRecorded(key, claim.token);
    }
  }
}
