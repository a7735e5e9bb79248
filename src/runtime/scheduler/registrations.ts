import type { CatchUp } from '../../scheduler/planner.js';
import type { JobSpec } from '../../scheduler/spec.js';
import { DEFAULT_OVERLAP, type JobPolicy, type SchedulerCommand } from '../../scheduler/command.js';
import type { JobHandler, JobOptions } from './job-types.js';
import type { RuntimeContext } from './runtime-context.js';

const DEFAULT_RETRY_DELAY_MS = 1000;
/**
 * Registrations one member has proposed and not yet seen answered; the others wait their turn.
 * An app that schedules thousands of jobs at start would otherwise propose them all at once:
 * they would fill the member's bound on pending proposals (maxPendingProposals), which claims
 * and run records need too, and while no leader answers (or answers late) they would all fail
 * and all be proposed again on every plan interval, each failure an error built and thrown away.
 */
export const MAX_REGISTRATIONS_IN_FLIGHT = 512;

/** A job this member has a handler for. */
export interface LocalJob {
  readonly spec: JobSpec;
  readonly handler: JobHandler;
  readonly options: JobOptions;
}

/**
 * The jobs this member has handlers for, and their registration through the log: `register`
 * until a leader takes it (a bounded number in flight), `unregister` once unscheduled.
 */
export class Registrations {
  readonly #ctx: RuntimeContext;
  readonly #jobs = new Map<string, LocalJob>();
  /**
   * Jobs of #jobs whose registration is to be proposed: new ones, and those whose last proposal
   * failed. A job leaves it while its proposal is in flight, so that no registration is proposed
   * again before the last one is answered.
   */
  readonly #toRegister = new Set<string>();
  /** Registrations proposed and not yet answered: at most MAX_REGISTRATIONS_IN_FLIGHT. */
  #registrationsInFlight = 0;

  constructor(ctx: RuntimeContext) {
    this.#ctx = ctx;
  }

  /** The job's handler and options on this member, if it has one. */
  get(name: string): LocalJob | undefined {
    return this.#jobs.get(name);
  }

  /** Keeps the job's handler and proposes its registration (now, or once it may be). */
  add(name: string, spec: JobSpec, handler: JobHandler, options: JobOptions): void {
    this.#jobs.set(name, { spec, handler, options });
    this.#toRegister.add(name);
    if (this.#ctx.options.clockReady?.() === false) this.#registerOne(name);
    else this.registerSome();
  }

  /** Forgets the job's handler; false if this member had none. */
  remove(name: string): boolean {
    return this.#jobs.delete(name);
  }

  /** Proposes `unregister` until it is applied (the leader then stops assigning the job here). */
  unregister(name: string): Promise<void> {
    const self = this.#ctx.options.self;
    return this.#ctx.proposeUntil({ type: 'unregister', job: name, member: self }, () => this.#jobs.has(name) || this.#ctx.state.jobs.get(name)?.handlers.has(self) !== true);
  }

  /** Registrations proposed and not yet answered. */
  get inFlight(): number {
    return this.#registrationsInFlight;
  }

  /** Whether the log has this member handle no job. */
  handlesNone(): boolean {
    const self = this.#ctx.options.self;
    for (const job of this.#ctx.state.jobs.values()) if (job.handlers.has(self)) return false;
    return true;
  }

  /**
   * Proposes `unregister` for every job the log has this member handle (a graceful stop: no
   * leader gives it more work), at most MAX_REGISTRATIONS_IN_FLIGHT at once; resolves once each
   * is applied or given up. The handlers stay: runs in progress go on.
   */
  async unregisterAll(): Promise<void> {
    const self = this.#ctx.options.self;
    const state = this.#ctx.state;
    const names = [...state.jobs.values()].filter((job) => job.handlers.has(self)).map((job) => job.name);
    for (let i = 0; i < names.length && !this.#ctx.stopped; i += MAX_REGISTRATIONS_IN_FLIGHT) {
      await Promise.all(
        names.slice(i, i + MAX_REGISTRATIONS_IN_FLIGHT).map((name) => this.#ctx.proposeUntil({ type: 'unregister', job: name, member: self }, () => state.jobs.get(name)?.handlers.has(self) !== true)),
      );
    }
  }

  /**
   * Proposes the registrations waiting (#toRegister), as many as MAX_REGISTRATIONS_IN_FLIGHT
   * lets. Called on every plan interval, and when a job is scheduled or a registration succeeds
   * while this member knows the cluster's time (until then most jobs wait, see #registerOne, and
   * looking through them all on every call would cost the square of their number); not as
   * registrations fail, so that while no leader answers they are tried once a plan interval.
   */
  registerSome(): void {
    for (const name of this.#toRegister) {
      if (this.#registrationsInFlight >= MAX_REGISTRATIONS_IN_FLIGHT) return;
      this.#registerOne(name);
    }
  }

  /** Proposes the job's registration if it may be now; it stays in #toRegister if not. */
  #registerOne(name: string): void {
    if (this.#registrationsInFlight >= MAX_REGISTRATIONS_IN_FLIGHT) return;
    const job = this.#jobs.get(name);
    // A member that drains (stops gracefully) unregisters its jobs: none is registered again.
    if (job === undefined || this.#ctx.stopped || this.#ctx.draining) {
      this.#toRegister.delete(name);
      return;
    }
    const o = this.#ctx.options;
    // The first registration's time anchors the job's slots on every member: a member that has
    // not learned the cluster's time would stamp its own clock, perhaps a minute off, and put
    // every slot that far away. It joins a job already registered at once (its time is then
    // unused); it creates one only once synced. The next plan interval tries again.
    if (o.clockReady?.() === false && !this.#ctx.state.jobs.has(name)) return;
    const command: SchedulerCommand = { type: 'register', job: name, spec: job.spec, mode: job.options.mode ?? 'one', policy: policyOf(job.options), member: o.self, atMs: o.clock.now() };
    this.#toRegister.delete(name);
    this.#registrationsInFlight++;
    o.propose(command).then(
      () => {
        this.#registrationsInFlight--;
        if (o.clockReady?.() !== false) this.registerSome();
      },
      () => {
        this.#registrationsInFlight--;
        // No leader yet, or it changed: the next plan interval tries again (unless the job was
        // unscheduled, or scheduled anew, meanwhile).
        if (this.#jobs.get(name) === job) this.#toRegister.add(name);
      },
    );
  }
}

/** The replicated form of a job's options (what the leader plans by). */
function policyOf(options: JobOptions): JobPolicy {
  const c = options.catchUp;
  const catchUp: CatchUp = c === undefined || c === 'latest' ? { policy: 'latest' } : c === 'none' ? { policy: 'none' } : { policy: 'all', windowMs: c.windowMs, maxSlots: c.maxSlots };
  return { retries: options.retries ?? 0, retryDelayMs: options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, catchUp, overlap: options.overlap ?? DEFAULT_OVERLAP };
}
