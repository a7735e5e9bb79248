import type { CatchUp } from '../../scheduler/planner.js';
import type { JobSpec } from '../../scheduler/spec.js';
import type { JobRecord } from '../../scheduler/records.js';
import { DEFAULT_OVERLAP, sameForm, type JobPolicy, type RegistrationForm, type SchedulerCommand } from '../../scheduler/command.js';
import { chunks, MAX_COMMANDS_PER_BATCH } from '../command-batch.js';
import type { JobHandler, JobOptions } from './job-types.js';
import type { RuntimeContext } from './runtime-context.js';

const DEFAULT_RETRY_DELAY_MS = 1000;
/**
 * Registrations one member has proposed and not yet seen answered; the others wait their turn.
 * An app that schedules thousands of jobs at start would otherwise propose them all at once:
 * they would fill the member's bound on pending proposals (maxPendingProposals), which claims
 * and run records need too, and while no leader answers (or answers late) they would all fail
 * and all be proposed again on every plan interval, each failure an error built and thrown away.
 * Four batches: one being appended, others being replicated and applied meanwhile.
 */
export const MAX_REGISTRATIONS_IN_FLIGHT = 4 * MAX_COMMANDS_PER_BATCH;

/**
 * Registration forms kept for sharing (see #formOf): an app's jobs come in a few forms. Past this
 * many, the oldest is dropped: sharing saves work and bytes, it never changes a registration.
 */
const MAX_SHARED_FORMS = 16;

/** A job this member has a handler for. */
export interface LocalJob {
  /**
   * Its registration's spec, mode and policy: one object for the jobs scheduled alike, since a
   * batch of registrations writes each form once, telling them apart by identity
   * (command-batch.ts).
   */
  readonly form: RegistrationForm;
  readonly handler: JobHandler;
  readonly options: JobOptions;
}

/**
 * The jobs this member has handlers for, and their registration through the log: `register`
 * until a leader takes it (a bounded number in flight), `unregister` once unscheduled.
 */
export class Registrations {
  readonly #ctx: RuntimeContext;
  readonly #runsAnnounced: (job: string) => boolean;
  /** Since when (the timers' time) each registration of another form has waited for this member's runs of its job to show in the log (see #ready). */
  readonly #holding = new Map<string, number>();
  readonly #jobs = new Map<string, LocalJob>();
  /**
   * Jobs of #jobs whose registration is to be proposed: new ones, and those whose last proposal
   * failed. A job leaves it while its proposal is in flight, so that no registration is proposed
   * again before the last one is answered.
   */
  readonly #toRegister = new Set<string>();
  /** Registrations proposed and not yet answered: at most MAX_REGISTRATIONS_IN_FLIGHT. */
  #registrationsInFlight = 0;
  /** Whether a registerSome is queued for the end of this turn (see add). */
  #flushQueued = false;
  /** The forms of the jobs scheduled lately, the one made last first (see #formOf). */
  readonly #forms: RegistrationForm[] = [];

  /**
   * `runsAnnounced`: whether every run of the job started here shows in the log (Assignee), which
   * a registration of another form waits for (see #ready).
   */
  constructor(ctx: RuntimeContext, runsAnnounced: (job: string) => boolean) {
    this.#ctx = ctx;
    this.#runsAnnounced = runsAnnounced;
  }

  /** The job's handler and options on this member, if it has one. */
  get(name: string): LocalJob | undefined {
    return this.#jobs.get(name);
  }

  /**
   * Keeps the job's handler and proposes its registration (at the end of this turn, with the
   * others scheduled in it, or once it may be).
   */
  add(name: string, spec: JobSpec, handler: JobHandler, options: JobOptions): void {
    this.#jobs.set(name, { form: this.#formOf(spec, options), handler, options });
    this.#toRegister.add(name);
    this.#flushSoon();
  }

  /**
   * The job lost its last handler (an unregistration applied). A member with a handler for it
   * of another form, refused as a conflict while members had the old one (a rolling deploy that
   * changes its spec), registers it again: from JOB_TAKEOVER_VERSION that registration takes the
   * job over (job-takeover.ts). Before, it stayed refused, and the job ran no more.
   */
  orphaned(name: string): void {
    const local = this.#jobs.get(name);
    const job = this.#ctx.state.jobs.get(name);
    // A mode of its own is never taken over (job-takeover.ts): registered again, it would be refused again.
    if (local === undefined || job === undefined || job.handlers.size !== 0 || sameForm(job, local.form) || job.mode !== local.form.mode) return;
    this.#toRegister.add(name);
    this.#flushSoon();
  }

  #flushSoon(): void {
    if (this.#flushQueued) return;
    // An app schedules its jobs one call after another as it starts: gathered to the end of the
    // turn, they go in batches (one entry for many, see registerSome) rather than one by one.
    this.#flushQueued = true;
    queueMicrotask(() => {
      this.#flushQueued = false;
      this.registerSome();
    });
  }

  /** The form of a job scheduled with `spec` and `options`: one made lately if equal, else a new one. */
  #formOf(spec: JobSpec, options: JobOptions): RegistrationForm {
    const form = registrationForm(spec, options);
    const known = this.#forms.find((f) => sameForm(f, form));
    if (known !== undefined) return known;
    if (this.#forms.length >= MAX_SHARED_FORMS) this.#forms.pop();
    this.#forms.unshift(form);
    return form;
  }

  /** Forgets the job's handler; false if this member had none. */
  remove(name: string): boolean {
    return this.#jobs.delete(name);
  }

  /** Proposes `unregister` until it is applied (the leader then stops assigning the job here). */
  unregister(name: string): Promise<void> {
    const self = this.#ctx.options.self;
    return this.#ctx.proposeUntil({ type: 'unregister', job: name, member: self }, () => this.#jobs.has(name) || !this.#named(name));
  }

  /**
   * Whether the log names this member for the job: as a handler, or by a conflict, which a take-over
   * of the job would make a handler (job-takeover.ts), so an unregistration takes it off too.
   */
  #named(name: string): boolean {
    const job = this.#ctx.state.jobs.get(name);
    return job !== undefined && this.#names(job);
  }

  #names(job: JobRecord): boolean {
    const self = this.#ctx.options.self;
    return job.handlers.has(self) || job.conflicts.has(self);
  }

  /**
   * orphaned() for each job this member has a handler for: the state was restored from a snapshot,
   * which may hold an unregistration this member never applied, or the version rose to
   * JOB_TAKEOVER_VERSION, under which a conflict of its own may take the job over.
   */
  orphanedAll(): void {
    for (const name of this.#jobs.keys()) this.orphaned(name);
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
   * leader gives it more work), at most MAX_REGISTRATIONS_IN_FLIGHT at once, in batches once the
   * cluster reads them; resolves once each is applied or given up. The handlers stay: runs in
   * progress go on.
   */
  async unregisterAll(): Promise<void> {
    const self = this.#ctx.options.self;
    const names = [...this.#ctx.state.jobs.values()].filter((job) => this.#names(job)).map((job) => job.name);
    const unregistered = (name: string): boolean => !this.#named(name);
    for (let i = 0; i < names.length && !this.#ctx.stopped; i += MAX_REGISTRATIONS_IN_FLIGHT) {
      const some = names.slice(i, i + MAX_REGISTRATIONS_IN_FLIGHT);
      // Batches first; whatever a batch did not settle (no leader, a lost answer) goes one by one.
      if (this.#ctx.options.proposeBatch !== undefined) {
        await Promise.all(
          chunks(some, MAX_COMMANDS_PER_BATCH).map(async (chunk) => this.#ctx.options.proposeBatch?.(chunk.map((job) => ({ type: 'unregister', job, member: self })))?.catch(() => undefined)),
        );
      }
      await Promise.all(some.filter((name) => !unregistered(name)).map((name) => this.#ctx.proposeUntil({ type: 'unregister', job: name, member: self }, () => unregistered(name))));
    }
  }

  /**
   * Proposes the registrations waiting (#toRegister), as many as MAX_REGISTRATIONS_IN_FLIGHT
   * lets, in batches of up to MAX_COMMANDS_PER_BATCH once the cluster reads them (one by one
   * before). Called on every plan interval, at the end of a turn that scheduled jobs, and when
   * registrations succeed while this member knows the cluster's time (until then most jobs
   * wait, see #ready, and looking through them all on every call would cost the square of their
   * number); not as registrations fail, so that while no leader answers they are tried once a
   * plan interval.
   */
  registerSome(): void {
    const ready: Array<{ readonly name: string; readonly command: Extract<SchedulerCommand, { type: 'register' }> }> = [];
    // One time for all: a batch holds registrations made at one time. A whole millisecond: a
    // new job's anchor is this time, and an { every } job's slots fell a fraction of a
    // millisecond past their instants, where ctx.slot (a Date) holds none (a stranger's
    // RunRecord.slotMs and ctx.slot.getTime() of one run differed).
    const atMs = Math.floor(this.#ctx.options.clock.now());
    for (const name of this.#toRegister) {
      if (this.#registrationsInFlight + ready.length >= MAX_REGISTRATIONS_IN_FLIGHT) break;
      const command = this.#ready(name, atMs);
      if (command !== null) ready.push({ name, command });
    }
    for (const batch of chunks(ready, MAX_COMMANDS_PER_BATCH)) {
      const jobs = batch.map(({ name }) => this.#jobs.get(name));
      for (const { name } of batch) this.#toRegister.delete(name);
      this.#registrationsInFlight += batch.length;
      const proposed = this.#ctx.options.proposeBatch?.(batch.map(({ command }) => command)) ?? null;
      if (proposed !== null) {
        proposed.then(
          () => this.#answered(batch.length, true),
          () => {
            this.#answered(batch.length, false);
            batch.forEach(({ name }, i) => this.#retryLater(name, jobs[i]));
          },
        );
        continue;
      }
      // A cluster that does not read batches yet (version 1): one entry each.
      batch.forEach(({ name, command }, i) => {
        this.#ctx.options.propose(command).then(
          () => this.#answered(1, true),
          () => {
            this.#answered(1, false);
            this.#retryLater(name, jobs[i]);
          },
        );
      });
    }
  }

  /** The registration to propose for the job at `atMs`, or null if it may not be proposed now (it stays in #toRegister unless it is gone). */
  #ready(name: string, atMs: number): Extract<SchedulerCommand, { type: 'register' }> | null {
    const job = this.#jobs.get(name);
    // A member that drains (stops gracefully) unregisters its jobs: none is registered again.
    if (job === undefined || this.#ctx.stopped || this.#ctx.draining) {
      this.#toRegister.delete(name);
      this.#holding.delete(name);
      return null;
    }
    const o = this.#ctx.options;
    // The first registration's time anchors the job's slots on every member, and so does a
    // take-over's (job-takeover.ts): a member that has not learned the cluster's time would
    // stamp its own clock, perhaps a minute off, and put every slot that far away. It joins a
    // job already registered in its form at once (its time is then unused); it creates one, or
    // registers another form, which may take the job over, only once synced. The next plan
    // interval tries again.
    const existing = this.#ctx.state.jobs.get(name);
    const anotherForm = existing !== undefined && !sameForm(existing, job.form);
    if (o.clockReady?.() === false && (existing === undefined || anotherForm)) return null;
    // Another form takes this member off the job's handlers (a conflict), and a leader then
    // moves a claim of its whose run's start the log does not show (planner.ts, released): it
    // waits until its runs of the job show there, as an unregistration does
    // (SchedulerRuntime#unregister), or the slot would run here and where the move sends it;
    // for a reassignment horizon at most, as that one does.
    if (anotherForm && existing.handlers.has(o.self) && !this.#runsAnnounced(name)) {
      const since = this.#holding.get(name) ?? o.timers.now();
      this.#holding.set(name, since);
      if (o.timers.now() - since < o.reassignHorizonMs) return null;
    }
    this.#holding.delete(name);
    const { spec, mode, policy } = job.form;
    return { type: 'register', job: name, spec, mode, policy, member: o.self, atMs };
  }

  #answered(count: number, ok: boolean): void {
    this.#registrationsInFlight -= count;
    if (ok && this.#ctx.options.clockReady?.() !== false) this.registerSome();
  }

  /**
   * No leader yet, or it changed: the next plan interval tries again (unless the job was
   * unscheduled, or scheduled anew, meanwhile).
   */
  #retryLater(name: string, job: LocalJob | undefined): void {
    if (job !== undefined && this.#jobs.get(name) === job) this.#toRegister.add(name);
  }
}

/** What a registration of a job scheduled with `spec` and `options` says of it besides its name. */
export function registrationForm(spec: JobSpec, options: JobOptions): RegistrationForm {
  return { spec, mode: options.mode ?? 'one', policy: policyOf(options) };
}

/** The replicated form of a job's options (what the leader plans by). */
export function policyOf(options: JobOptions): JobPolicy {
  const c = options.catchUp;
  const catchUp: CatchUp = c === undefined || c === 'latest' ? { policy: 'latest' } : c === 'none' ? { policy: 'none' } : { policy: 'all', windowMs: c.windowMs, maxSlots: c.maxSlots };
  return { retries: options.retries ?? 0, retryDelayMs: options.retryDelayMs ?? DEFAULT_RETRY_DELAY_MS, catchUp, overlap: options.overlap ?? DEFAULT_OVERLAP };
}
