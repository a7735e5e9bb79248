import type { ClaimRecord } from '../../scheduler/records.js';
import { runError, type RunOutcome, type SchedulerCommand } from '../../scheduler/command.js';
import { claimKey } from '../../scheduler/records.js';
import type { RunRecord } from './job-types.js';
import { RecordBatcher } from './record-batcher.js';
import type { RuntimeContext } from './runtime-context.js';

/** A run's start or outcome waiting to be proposed, and how to tell it no longer needs to be. */
interface HeldRecord {
  readonly command: SchedulerCommand;
  readonly settled: () => boolean;
  readonly done: () => void;
}

/**
 * What this member records in the log of its runs: a run's start, its outcome, and a slot it did
 * not run (interrupted, skipped or replaced), each proposed until applied or moot; starts and
 * outcomes held while slot instants are near (record-batcher.ts). It also knows which runs
 * ended here and wait for their outcome to be recorded.
 */
export class RunRecords {
  readonly #ctx: RuntimeContext;
  /** Starts and outcomes of runs, held while slot instants are near (record-batcher.ts). */
  readonly #batcher: RecordBatcher<HeldRecord>;
  /**
   * Runs that ended here and whose outcome is not recorded yet, by claim key, with their token:
   * a snapshot installed meanwhile may not hold the outcome, and must not arm them again.
   * Bounded by the runs in flight (each leaves once its outcome is recorded or given up).
   */
  readonly #unrecorded = new Map<string, number>();

  /** `msUntilQuiet`: milliseconds until no slot instant is near (0: none is), at most `limitMs`. */
  constructor(ctx: RuntimeContext, msUntilQuiet: (limitMs: number) => number) {
    this.#ctx = ctx;
    this.#batcher = new RecordBatcher<HeldRecord>({
      timers: ctx.options.timers,
      msUntilQuiet,
      send: (r) => void ctx.proposeUntil(r.command, r.settled).then(r.done),
    });
  }

  /** Proposes every record held, now (the member drains or stops). */
  flush(): void {
    this.#batcher.flush();
  }

  /** A run of the claim ended here; its outcome is on its way. */
  ended(key: string, token: number): void {
    this.#unrecorded.set(key, token);
  }

  /** Whether a run of the claim under `token` ended here and its outcome is still on its way. */
  endedUnrecorded(key: string, token: number): boolean {
    return this.#unrecorded.get(key) === token;
  }

  /**
   * Whether the log shows this member's run of the claim under `token`: its start or its
   * outcome applied, or the claim gone or moved on (a leader then moves it nowhere because of
   * this run).
   */
  announced(key: string, token: number): boolean {
    const self = this.#ctx.options.self;
    const current = this.#ctx.state.claims.get(key);
    return current === undefined || current.token !== token || current.starts.get(self)?.token === token || current.outcomes.get(self)?.token === token;
  }

  /** Whether every run that ended here with its outcome on its way shows in the log (see announced). */
  endedAnnounced(): boolean {
    for (const [key, token] of this.#unrecorded) if (!this.announced(key, token)) return false;
    return true;
  }

  /** Whether this member already reported a run of this claim (same token). */
  alreadyReported(claim: ClaimRecord): boolean {
    return this.#ctx.state.claims.get(claimKey(claim.job, claim.slotMs))?.outcomes.get(this.#ctx.options.self)?.token === claim.token;
  }

  /** Records in the log that the run started, until applied or moot (the run ended or moved). */
  recordStart(claim: ClaimRecord, startedAtMs: number): Promise<void> {
    const self = this.#ctx.options.self;
    const key = claimKey(claim.job, claim.slotMs);
    const command: SchedulerCommand = { type: 'started', job: claim.job, slotMs: claim.slotMs, token: claim.token, member: self, atMs: startedAtMs };
    return this.#recordSoon(command, () => {
      const current = this.#ctx.state.claims.get(key);
      return current === undefined || current.token !== claim.token || current.starts.get(self)?.token === claim.token || current.outcomes.get(self)?.token === claim.token;
    });
  }

  /** The outcome of a run that ended here under `token` is recorded (or given up): it no longer waits. */
  outcomeRecorded(key: string, token: number): void {
    if (this.#unrecorded.get(key) === token) this.#unrecorded.delete(key);
  }

  /**
   * Records a slot this member did not run: interrupted (the leader moves it), skipped or
   * replaced (its overlap policy; never run again), or cancelled (an operator's cancel); as of
   * now, or of `atMs` (a claim found past the horizon: see Assignee.#reportPastHorizon).
   */
  report(claim: ClaimRecord, outcome: 'interrupted' | 'skipped' | 'replaced' | 'cancelled', reason: string, atMs = this.#ctx.options.clock.now()): Promise<void> {
    return this.recordOutcome({ job: claim.job, slotMs: claim.slotMs, fencingToken: claim.token, member: this.#ctx.options.self, startedAtMs: atMs, endedAtMs: atMs, outcome, error: reason });
  }

  /**
   * Proposes a run's record (as RuntimeContext.proposeUntil does) once no slot instant is near,
   * within MAX_RECORD_DELAY_MS: see record-batcher.ts. While draining, at once.
   */
  #recordSoon(command: SchedulerCommand, settled: () => boolean): Promise<void> {
    if (this.#ctx.draining || this.#ctx.stopped) return this.#ctx.proposeUntil(command, settled);
    return new Promise<void>((done) => this.#batcher.hold({ command, settled, done }));
  }

  /** Records a run's outcome, until applied or moot (the claim moved on): at once if interrupted, else held as a start is. */
  async recordOutcome(run: Omit<RunRecord, 'outcome' | 'attempt' | 'retriesLeft'> & { readonly outcome: RunOutcome }): Promise<void> {
    const command: SchedulerCommand = {
      type: 'outcome',
      job: run.job,
      slotMs: run.slotMs,
      token: run.fencingToken,
      member: run.member,
      outcome: run.outcome,
      // A whole millisecond: a fixed-delay job's next slot counts from it, and falls on it so.
      atMs: Math.floor(run.endedAtMs),
      ...(run.error === undefined ? {} : { error: runError(run.error) }),
    };
    // Retried until the log has it, the claim moved on, or the member stops: an outcome that is
    // never recorded would leave its slot waiting. Recording twice is harmless (first one wins).
    const settled = (): boolean => {
      const current = this.#ctx.state.claims.get(claimKey(run.job, run.slotMs));
      return current === undefined || current.token !== run.fencingToken || current.outcomes.get(run.member)?.token === run.fencingToken;
    };
    // An interrupted run is one the leader must move to another member: that waits for nothing.
    await (run.outcome === 'interrupted' ? this.#ctx.proposeUntil(command, settled) : this.#recordSoon(command, settled));
  }
}
