import type { NodeId } from '../../src/raft/types.js';
import type { WireMessage } from '../../src/transport/envelope.js';
import type { MemberTiming } from '../../src/runtime/member.js';
import type { RunRecord } from '../../src/runtime/scheduler/job-types.js';
import { DEFAULT_TIMEOUT_MS } from '../../src/runtime/scheduler/assignee.js';
import { claimKey, type ApplyResult } from '../../src/scheduler/records.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import type { HandlerEvent, SimJob } from '../jobs.js';
import type { LockEvent } from '../locks.js';
import type { SimMember } from '../member.js';
import type { SchedulerChecker } from '../scheduler-checker.js';
import { SIM_EPOCH_MS } from '../scheduler.js';
import type { Report } from '../violations.js';
import { MemberWatch } from './members.js';
import { DoubleRunChecker } from './double-runs.js';
import { ModeAllChecker } from './mode-all.js';
import { LockChecker } from './locks.js';
import { ConcurrencyChecker } from './overlap.js';
import { RetryChecker } from './retries.js';
import { RunContextChecker } from './run-context.js';
import { RunDeadlines } from './run-deadlines.js';
import { RunsInProgress } from './runs.js';
import { WaitedRunsChecker } from './waited-runs.js';

/** A queue whose member ran its job this recently is still being worked through (ms). */
const QUEUE_MOVING_MS = 1000;

export interface RunCheckersSetup {
  readonly report: Report;
  /** The committed log's view of jobs and slots. */
  readonly slots: SchedulerChecker;
  readonly members: readonly SimMember[];
  /** The members of the committed configuration now: those whose work the end of a run checks. */
  readonly current: () => readonly NodeId[];
  readonly timing: MemberTiming;
  /** The jobs as every member schedules them (their local options: timeoutMs). */
  readonly jobs: readonly SimJob[];
  /** The latest true time a link to or from a member was blocked (SimNetwork.lastCut). */
  readonly lastCut: (id: NodeId) => number | undefined;
  /** The true time a message was sent (SimNetwork.sentAt). */
  readonly sentAt: (m: WireMessage) => number | undefined;
}

/**
 * The checkers of runs, as their members and handlers report them, beside the scheduler
 * checker's view of the log: what a handler is given and why its signal aborts
 * (run-context.ts), what ends a run and by when (run-deadlines.ts), what a member runs at once
 * (overlap.ts), what runs on two members at once (double-runs.ts, and waited-runs.ts for
 * 'skip'), retries (retries.ts) and mode 'all' (mode-all.ts); and runExclusive's tasks
 * (locks.ts), judged by the same watch of the members. hooks.ts feeds them.
 */
export class RunCheckers {
  readonly #slots: SchedulerChecker;
  readonly #timing: MemberTiming;
  readonly #runs = new RunsInProgress();
  readonly #watch: MemberWatch;
  readonly #deadlines: RunDeadlines;
  readonly #context: RunContextChecker;
  readonly #concurrency: ConcurrencyChecker;
  readonly #doubleRuns: DoubleRunChecker;
  readonly #waitedRuns: WaitedRunsChecker;
  readonly #sentAt: (m: WireMessage) => number | undefined;
  readonly #retries: RetryChecker;
  readonly #modeAll: ModeAllChecker;
  /** runExclusive's tasks (locks.ts), which share the member watch. */
  readonly locks: LockChecker;

  constructor(setup: RunCheckersSetup) {
    const { report, slots, members, timing } = setup;
    this.#slots = slots;
    this.#timing = timing;
    this.#sentAt = setup.sentAt;
    this.#watch = new MemberWatch(members);
    const timeouts = new Map(setup.jobs.map((j) => [j.name, j.options?.timeoutMs ?? DEFAULT_TIMEOUT_MS]));
    const facts = {
      mode: (job: string) => slots.jobs.get(job)?.mode,
      overlap: (job: string) => slots.jobs.get(job)?.policy.overlap ?? (slots.jobs.has(job) ? 'skip' : undefined),
      timeoutMs: (job: string) => timeouts.get(job) ?? DEFAULT_TIMEOUT_MS,
    };
    this.#deadlines = new RunDeadlines(report, this.#runs, this.#watch, { ...facts, electionTimeoutMs: timing.electionTimeoutMs, planIntervalMs: timing.planIntervalMs });
    this.#context = new RunContextChecker(report, slots, this.#watch, facts);
    this.#concurrency = new ConcurrencyChecker(report, this.#runs, this.#watch, facts.overlap, timing.maxConcurrent ?? Number.POSITIVE_INFINITY);
    const lease = { electionTimeoutMs: timing.electionTimeoutMs, planIntervalMs: timing.planIntervalMs, lastCut: setup.lastCut };
    this.#doubleRuns = new DoubleRunChecker(report, this.#runs, this.#watch, { mode: facts.mode, ...lease });
    this.#waitedRuns = new WaitedRunsChecker(report, this.#runs, this.#watch, { mode: facts.mode, overlap: facts.overlap, ...lease });
    this.#retries = new RetryChecker(report, slots, setup.current, timing.reassignHorizonMs);
    this.#modeAll = new ModeAllChecker(report, slots, setup.current);
    this.locks = new LockChecker(report, this.#watch);
  }

  /** A member joined the run (a configuration change added it). */
  addMember(m: SimMember): void {
    this.#watch.add(m);
  }

  /** `member` applied a scheduler command, under cluster version `version`; `first` when no member had applied its index before. */
  onApplied(t: number, member: NodeId, index: number, command: SchedulerCommand, result: ApplyResult, first: boolean, version: number): void {
    if (first) {
      this.#context.onFirstApplied(index, command, result);
      this.#retries.onFirstApplied(t, command, result, version);
    }
    this.#deadlines.onApplied(t, member, index, command, result);
  }

  onHandler(t: number, member: NodeId, incarnation: number, event: HandlerEvent): void {
    if (event.type === 'start') this.#context.onStart(t, member, incarnation, event.ctx);
    else this.#context.onAbort(t, member, incarnation, event.ctx, event.reason);
  }

  onRunStart(t: number, member: NodeId, incarnation: number, run: { readonly job: string; readonly slotMs: number; readonly fencingToken: number; readonly waited?: boolean }): void {
    this.#runs.start(t, member, incarnation, run);
    this.#deadlines.onRunStart(t, run.job);
    this.#concurrency.onRunStart(t);
    this.#doubleRuns.onRunStart(t, member, run);
    this.#waitedRuns.onRunStart(t, member, incarnation, run);
    this.#context.onRunStart(t, member, incarnation, run);
    this.#modeAll.onRunStart(t, member, run);
  }

  onLock(t: number, member: NodeId, incarnation: number, event: LockEvent): void {
    this.locks.onLock(t, member, incarnation, event);
  }

  onRunEnd(t: number, member: NodeId, incarnation: number, run: RunRecord): void {
    this.#runs.end(t, member, incarnation, run);
    this.#retries.onRunEnd(t, member, run);
  }

  onReceived(t: number, member: NodeId, m: WireMessage): void {
    this.#watch.onReceived(t, member, m.from, this.#sentAt(m));
  }

  /** `member`'s current process life stops now (a crash: the simulator stops it first). */
  onStop(t: number, member: NodeId): void {
    const incarnation = this.#watch.member(member)?.incarnation ?? 0;
    this.#watch.onStop(member, incarnation);
    this.#deadlines.onStop(t, member, incarnation);
  }

  /** `member` stopped for good in its current process life (removed, or a fatal error). */
  onFatal(member: NodeId): void {
    this.#watch.onFatal(member, this.#watch.member(member)?.incarnation ?? 0);
  }

  /** From true time `t` on, nothing is injected and clocks have settled. */
  calmFrom(t: number): void {
    this.#retries.calmFrom(t);
  }

  afterEvent(t: number): void {
    this.#watch.observe(t);
    this.#deadlines.afterEvent(t);
    this.#context.afterEvent();
    this.#concurrency.afterEvent(t);
    this.#waitedRuns.afterEvent(t);
    this.locks.afterEvent(t);
  }

  /**
   * Whether a slot had reason to start late or not at all (on `member`, when given): another
   * run of its job was in progress around its instant (its overlap policy makes it wait or
   * skip), a member it was given to was at its maxConcurrent, or it was recorded skipped,
   * replaced or cancelled.
   */
  excused(job: string, slotMs: number, member: NodeId | undefined, marginMs: number): boolean {
    const slotT = slotMs - SIM_EPOCH_MS;
    const slot = this.#slots.slots.get(claimKey(job, slotMs));
    if (slot !== undefined && [...slot.outcomes].some(([by, outcome]) => by.endsWith(` ${slot.token}`) && (outcome === 'skipped' || outcome === 'replaced' || outcome === 'cancelled'))) return true;
    const mode = this.#slots.jobs.get(job)?.mode;
    if (this.#runs.busyAt(job, slotMs, slotT, marginMs, mode === 'all' ? member : undefined)) return true;
    return this.waitedForPermit(job, slotMs, member, marginMs);
  }

  /**
   * Whether a member that held the slot by its instant (`member`, when given) was running as
   * many runs at once as its maxConcurrent then, within `marginMs`: the slot waited there for a
   * free run permit. That member may have started it late, failed, and seen it moved since (found
   * by a census with maxConcurrent 2: its current assignee was not the one that kept it waiting);
   * one given it after its instant did not keep it waiting.
   */
  waitedForPermit(job: string, slotMs: number, member: NodeId | undefined, marginMs: number): boolean {
    const max = this.#timing.maxConcurrent;
    if (max === undefined || !Number.isFinite(max)) return false;
    const slotT = slotMs - SIM_EPOCH_MS;
    const slot = this.#slots.slots.get(claimKey(job, slotMs));
    const given = member === undefined ? [...(slot?.givenAt ?? [])].filter(([, t]) => t <= slotT + marginMs).map(([id]) => id) : [member];
    return given.some((id) => this.#runs.mostAtOnce(id, slotT - marginMs, slotT + marginMs) >= max);
  }

  /**
   * Whether the slot's run on `member` is still underway at true time `t`: it is running, or it
   * waits its turn behind runs being worked through, one after the other, which may outlast the
   * simulation. Under 'queue', a queue that a fault filled (up to MAX_QUEUED_RUNS_PER_JOB slots
   * moved to one member at once) while the member ran the job until a moment ago; under 'skip',
   * in mode 'one', a late slot (moved or retried after its run was interrupted) that waits for
   * the job's other late runs to end, on any member (README "Overlap"), while some member ran
   * the job until a moment ago. On members with a maxConcurrent, whatever the policy, a slot
   * whose run its member says is not over (`SchedulerRuntime.unsettled`: waiting to start,
   * running, or its outcome on its way), while that member runs, or ran until a moment ago: jobs
   * whose runs need more than its maxConcurrent give it a backlog that it works through in
   * priority order, which may outlast the simulation (found by a census with maxConcurrent 1,
   * where a slot of 'all-members' waited behind other jobs' runs for seconds). A member that
   * runs nothing while runs wait (a permit never given back) excuses none of them.
   */
  underway(t: number, job: string, slotMs: number, member: NodeId): boolean {
    const token = this.#slots.slots.get(claimKey(job, slotMs))?.token;
    const watched = this.#watch.member(member);
    const incarnation = watched?.incarnation ?? 0;
    if (token !== undefined && this.#runs.get(RunsInProgress.idOf(member, incarnation, { job, slotMs, fencingToken: token })) !== undefined) return true;
    const max = this.#timing.maxConcurrent;
    const limited = max !== undefined && Number.isFinite(max);
    if (limited && token !== undefined && watched?.member?.scheduler.unsettled(job, slotMs, token) === true && this.#runs.ranLately(member, incarnation, t, QUEUE_MOVING_MS)) return true;
    const spec = this.#slots.jobs.get(job);
    const overlap = spec?.policy.overlap;
    let last: number | undefined;
    if (overlap === 'queue') last = this.#runs.lastRan(member, job, t);
    else if (overlap === 'skip' && spec?.mode === 'one') last = this.#runs.lastRan(undefined, job, t);
    return last !== undefined && t - last <= QUEUE_MOVING_MS;
  }

  finish(t: number, window: { readonly fromT: number; readonly toT: number; readonly latenessMs: number; readonly settledT: number }): void {
    this.#retries.finish(t, window.settledT);
    this.#modeAll.finish(t, { ...window, excused: (job, slotMs, member) => this.excused(job, slotMs, member, window.latenessMs) });
  }
}
