import { RunAbortedError } from '../../errors.js';
import { decideOverlap, runsInProgress } from '../../scheduler/overlap.js';
import { MAX_WAITING_RUNS } from '../../scheduler/run-queue.js';
import { claimKey, type ClaimRecord, type RunInProgress } from '../../scheduler/records.js';
import type { NodeId } from '../../raft/types.js';
import { PAUSED_REASON, type SchedulerCommand } from '../../scheduler/command.js';
import type { Armed } from './armed-claim.js';
import type { RunPermits } from './run-permits.js';
import type { RuntimeContext } from './runtime-context.js';

/** Another run of a slot's job in progress: this member's own, or another's per the log. */
export interface OtherRun {
  readonly slotMs: number;
  readonly startedAtMs: number | undefined;
  readonly local?: Armed;
  readonly remote?: RunInProgress;
}

/** What became of a slot that fired, before its handler could start. */
export type Admission = 'run' | 'dropped' | { readonly outcome: 'skipped' | 'replaced' | 'cancelled' | 'interrupted'; readonly reason: string };

/**
 * The admission of a slot that fired on this member: its job's overlap policy, over the job's
 * other runs in progress here and (mode 'one') elsewhere per the log, then a free run permit.
 */
export class RunAdmission {
  readonly #ctx: RuntimeContext;
  readonly #permits: RunPermits<Armed>;

  constructor(ctx: RuntimeContext, permits: RunPermits<Armed>) {
    this.#ctx = ctx;
    this.#permits = permits;
  }

  /**
   * Decides, as the slot fires, whether it runs now, waits, or is not run at all (its overlap
   * policy), then waits for a free run permit (maxConcurrent). Resolves with 'run' once the
   * run may start (it then counts against maxConcurrent).
   *
   * Other runs of the job are known from two sources. This member's own, at once. Other
   * members', from the log (`started` without an outcome), so a replication lag shows: a run
   * that started elsewhere less than a commit ago is not seen yet (both run), and one whose
   * outcome is not applied here yet still looks in progress (this slot is skipped, queued or
   * replaces it). The lag is a commit round, milliseconds, far below a slot's period.
   */
  async admit(armed: Armed): Promise<Admission> {
    // A paused job's slot is not run, and says why; a triggered one runs all the same (it was
    // asked for). Per the log as this member applied it: a pause applies on each member in turn.
    if (this.#paused(armed)) return { outcome: 'skipped', reason: PAUSED_REASON };
    // Decided at once, from what the log says now. (Waiting for news of another member's run
    // would let several waiting slots start together when it ends, before their own start
    // records reach one another: a burst that 'skip' is meant to prevent.)
    const others = this.othersInProgress(armed);
    const queuedOfJob = [...this.#permits.activeOf(armed.job)].filter((a) => a.phase === 'queued').length;
    const decision = decideOverlap(armed.overlap, armed.slotMs, others, queuedOfJob, undefined, () => this.waitingElsewhere(armed), () => this.earlierElsewhere(armed));
    if (decision.action === 'skip') return { outcome: 'skipped', reason: decision.reason };
    if (decision.action === 'run') for (const other of decision.replace) this.#replace(other, armed);
    armed.waited = decision.action === 'wait';
    const go = this.#permits.wait(armed, armed.waited ? 'queued' : 'ready');
    // An overloaded member hands the slot back, so that the leader may give it to another.
    if (go === null) return { outcome: 'interrupted', reason: `this member already had ${MAX_WAITING_RUNS} runs waiting for a free run permit` };
    const onAbort = (): void => this.#permits.drop(armed);
    armed.abort.signal.addEventListener('abort', onAbort, { once: true });
    this.#permits.pump();
    const started = await go;
    armed.abort.signal.removeEventListener('abort', onAbort);
    // A run that waited (behind another of its job, or for a permit) is not in progress yet: a
    // pause applied meanwhile skips it, as it does a slot that fires after it.
    if (started && this.#paused(armed)) {
      this.#permits.release(armed);
      return { outcome: 'skipped', reason: PAUSED_REASON };
    }
    if (started) return 'run';
    const reason: unknown = armed.abort.signal.reason;
    // Replaced or cancelled while it waited: it never runs, and says so.
    return reason instanceof RunAbortedError && (reason.reason === 'replaced' || reason.reason === 'cancelled') ? { outcome: reason.reason, reason: reason.message } : 'dropped';
  }

  /**
   * The job's other runs in progress: this member's own, and (mode 'one') other members' per the
   * log. A run this member started before a crash and now runs again (the log holds its start
   * under the same token) counts only the other members' runs that started before it, in the
   * order of their start records (at the same time: of an earlier slot). Counting the later ones
   * made two such runs, each late next to the other, wait for each other until their timeouts,
   * neither running (found by the simulator: seed 9400063, five members); an order has no cycle.
   * The price: a later run that is running indeed (its member started it while this one was cut
   * off, so it did not count this one) runs alongside the resumed one, which the log cannot tell
   * from a later run that waits. A resumed run is already at least once.
   */
  othersInProgress(armed: Armed): OtherRun[] {
    const o = this.#ctx.options;
    const state = this.#ctx.state;
    const out: OtherRun[] = [];
    for (const other of this.#permits.activeOf(armed.job)) if (other !== armed) out.push({ slotMs: other.slotMs, startedAtMs: other.startedAtMs, local: other });
    if (armed.mode === 'one') {
      const filter = { nowMs: o.clock.now(), timeoutMs: armed.timeoutMs, exceptSlotMs: armed.slotMs, exceptMember: o.self };
      const resumedFromMs = this.#resumedFromMs(armed);
      for (const run of runsInProgress(state, armed.job, filter)) {
        if (o.peerConnected?.(run.member) === false) continue;
        if (resumedFromMs !== undefined && !(run.startedAtMs < resumedFromMs || (run.startedAtMs === resumedFromMs && run.slotMs < armed.slotMs))) continue;
        out.push({ slotMs: run.slotMs, startedAtMs: run.startedAtMs, remote: run });
      }
    }
    return out;
  }

  /**
   * The instants of the job's other slots (mode 'one') that came already, claimed for another
   * member that has not started them per the log, nor reported them: each waits there, or
   * started so lately that its start is not applied here. The earlier slots, and, for a slot that
   * fires late (moved here, or its timer late), the later slots that came before it fired: those
   * fired without seeing this slot wait here, and may wait behind the same late runs (found by
   * the simulator's overlap-waited checker: a slot interrupted on a member that then waited
   * behind its own late run was moved to another, which waited behind that run too, and both
   * started as it ended: seed 3053, three members). A later slot that fired after this one came
   * here saw it and skipped, so both skip when that falls between this slot's move here and its
   * firing (the read barrier a late slot waits for): a run lost, never two at once. Not for a
   * run this member resumes after a restart (it already started once), nor for a member this
   * one is not connected to, as for the runs in progress. Reads every open claim: called only
   * when the slot would otherwise wait behind late runs. Not private, so that a test can plant
   * its loss.
   */
  waitingElsewhere(armed: Armed): number[] {
    const nowMs = this.#ctx.options.clock.now();
    const out: number[] = [];
    for (const [claim, assignee] of this.#claimsElsewhere(armed)) {
      if (claim.slotMs > nowMs || claim.starts.get(assignee)?.token === claim.token || claim.outcomes.get(assignee)?.token === claim.token) continue;
      out.push(claim.slotMs);
    }
    return out;
  }

  /**
   * Whether an earlier slot of the job (mode 'one') is claimed for another member and has not
   * ended there per the log: no outcome under its current token, not cancelled. Under overlap
   * 'queue' this slot waits for it, so that the job's slots run one at a time in slot order
   * across the members (decideOverlap). The planner keeps a queue job's slots on the member of
   * its latest unfinished run; once one goes elsewhere (that member could take no work for a
   * moment: a lease renewed late, a stop, a restart), the first member still runs its backlog,
   * each run starting as the last ended, and a slot waiting here only for the run in progress
   * started beside the next one there, run after run (a stranger saw two at once, in step, for
   * minutes). Not for a run this member resumes after a restart, nor for a member this one is
   * not connected to, as for the runs in progress; nor for this member's own slots, which it
   * knows at once. Reads every open claim: called only when nothing else holds the slot back.
   */
  earlierElsewhere(armed: Armed): boolean {
    for (const [claim, assignee] of this.#claimsElsewhere(armed)) {
      if (claim.slotMs < armed.slotMs && claim.outcomes.get(assignee)?.token !== claim.token) return true;
    }
    return false;
  }

  /**
   * The open claims of the slot's job (mode 'one') for another member this one is connected to,
   * not cancelled, but the slot's own, each with its assignee: none for a run this member
   * resumes after a restart (it already started once). What waitingElsewhere and
   * earlierElsewhere look through, each for its own slots.
   */
  *#claimsElsewhere(armed: Armed): Generator<[ClaimRecord, NodeId]> {
    const o = this.#ctx.options;
    if (armed.mode !== 'one' || this.#resumedFromMs(armed) !== undefined) return;
    for (const claim of this.#ctx.state.openClaims()) {
      if (claim.job !== armed.job || claim.slotMs === armed.slotMs || claim.cancelled?.token === claim.token) continue;
      const assignee = claim.assignees[0];
      if (assignee === undefined || assignee === o.self || o.peerConnected?.(assignee) === false) continue;
      yield [claim, assignee];
    }
  }

  /** When this member started the slot's run under its token before a restart, per the log (a run it resumes now), or undefined. */
  #resumedFromMs(armed: Armed): number | undefined {
    const ownStart = this.#ctx.state.claims.get(claimKey(armed.job, armed.slotMs))?.starts.get(this.#ctx.options.self);
    return ownStart?.token === armed.token ? ownStart.atMs : undefined;
  }

  /** Whether the slot's job is paused, per the log as this member applied it, and the slot no trigger's (one asked for runs all the same). */
  #paused(armed: Armed): boolean {
    const state = this.#ctx.state;
    return state.jobs.get(armed.job)?.paused === true && state.claims.get(claimKey(armed.job, armed.slotMs))?.trigger !== true;
  }

  /** Ends another run of the job for `by` (overlap 'replace'): here at once, elsewhere through the log. */
  #replace(other: { readonly local?: Armed; readonly remote?: RunInProgress }, by: Armed): void {
    const reason = `replaced by the run of slot ${new Date(by.slotMs).toISOString()}`;
    if (other.local !== undefined) {
      other.local.abort.abort(new RunAbortedError('replaced', reason));
      return;
    }
    const run = other.remote;
    if (run === undefined) return;
    const command: SchedulerCommand = { type: 'cancel', job: run.job, slotMs: run.slotMs, token: run.token, bySlotMs: by.slotMs, atMs: this.#ctx.options.clock.now() };
    // Not awaited: the new run starts now. Retried until applied or moot (the run ended or moved).
    this.#ctx.track(
      this.#ctx.proposeUntil(command, () => {
        const claim = this.#ctx.state.claims.get(claimKey(run.job, run.slotMs));
        return claim === undefined || claim.token !== run.token || claim.cancelled?.token === run.token || claim.outcomes.get(run.member)?.token === run.token;
      }),
    );
  }
}
