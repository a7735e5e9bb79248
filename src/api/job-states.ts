import type { ClusterState } from './state.js';
import { nextInstantFrom } from '../scheduler/next-instant.js';
import { nextDelaySlot } from '../scheduler/planner.js';
import { MIN_EVERY_MS, specKey } from '../scheduler/spec.js';
import { claimKey, runsOf, type ClaimRecord, type JobRecord } from '../scheduler/records.js';
import type { SchedulerState } from '../scheduler/state.js';

export type JobState = ClusterState['jobs'][number];

/**
 * A job's view as built, and what it was built from: one per job record, updated in place as
 * the view is built again (a view is rebuilt for each of a job's changes, and a registration is
 * one: a record made per rebuild, and put in the map again, cost more than the view).
 */
interface Built {
  view: JobState;
  /** The job's SchedulerState.changeOf() then. */
  change: number;
  /** The cluster's time it was built at, and the next slot it shows (ms): see #holds. */
  atMs: number;
  nextMs: number | null;
  /** The job's high-water mark then: the next slot of a job whose mark did not move holds as long as the view does. */
  highWaterMs: number;
  /** Where the view is in the list handed out (the job's place in SchedulerState.jobs). */
  index: number;
}

/**
 * The jobs of `state()`, each built once and kept until its job changes, rather than built anew
 * for every job on every call: with thousands of jobs, building them all held the event loop for
 * each call, and made garbage for the collector to hold it again. A list is made from the last
 * one: it looks at the jobs changed since (SchedulerState.jobsChangedSince) and, once a job's
 * next slot came, at the jobs whose next slots come within JOB_STATES_HORIZON_MS of the last list
 * that looked at every job; at every job when the state cannot say which changed, or past that
 * horizon. It builds the views of those that changed. warm() makes the next list a bounded step
 * at a time, between calls (job-views-warmer.ts), so that a call after many jobs changed finds
 * it made, or most of it, rather than looking at every job changed since the last call. The
 * views are frozen, since later calls hand out the same ones (their Dates too: a caller that
 * wants to change one copies it first).
 */
export class JobStates {
  /** Per job record: a restored state has new records, whose views are built anew. */
  readonly #built = new WeakMap<JobRecord, Built>();
  #builds = 0;
  /**
   * The last list made, and what it holds for: the same state, unchanged since
   * (SchedulerState.changes), at a time from `atMs` until the first next slot it shows. Until
   * `horizonMs`, the jobs whose next slot may come are `soon` (every job whose next slot is
   * before it): a list made after a next slot came looks at them and at the jobs changed, not at all.
   */
  #last: Last | null = null;
  /** The next list, under way: warm() stopped at its bound; the next warm() or call goes on with it. */
  #pass: Pass | null = null;
  /** The latest time a list was looked at at (see #timeOf). */
  #latestMs = -Infinity;

  /** Views built so far, in all (a test counts the work a call did). */
  get builds(): number {
    return this.#builds;
  }

  of(state: SchedulerState, atMs: number): ClusterState['jobs'] {
    const nowMs = this.#timeOf(atMs);
    // A list under way is finished first: the jobs it has left are among those a call looks at.
    const pass = this.#pass;
    this.#pass = null;
    if (pass !== null && goesOn(pass, state)) this.#finish(pass, nowMs, Infinity);
    const next = this.#next(state, nowMs);
    return handOut(isPass(next) ? (this.#finish(next, nowMs, Infinity) as Last) : next);
  }

  /**
   * Makes the next list ahead, between calls: the views of the jobs changed since the last list
   * (and, once a next slot that list shows came, of its soon jobs), at most `maxBuilds` of them
   * and `maxBuilds` * WARM_LOOKS_PER_BUILD looks at jobs, and none once `outOfTime()` says so
   * (asked every WARM_TIME_CHECK_EVERY looks); a list that stops there goes on at the next
   * warm(), or the next call finishes it. Returns whether nothing is left to do. The next call
   * then finds the list made, and hands it out.
   */
  warm(state: SchedulerState, atMs: number, maxBuilds: number, outOfTime: () => boolean = () => false): boolean {
    const nowMs = this.#timeOf(atMs);
    let pass = this.#pass !== null && goesOn(this.#pass, state) ? this.#pass : null;
    if (pass === null) {
      const next = this.#next(state, nowMs);
      if (!isPass(next)) return true;
      pass = next;
    }
    this.#pass = pass;
    if (this.#finish(pass, nowMs, maxBuilds, outOfTime) === null) return false;
    this.#pass = null;
    return pass.changes === state.changes;
  }

  /**
   * The time to look at the jobs at: `atMs`, or the latest time they were looked at when `atMs`
   * is less than JOB_STATES_CLOCK_STEP_MS before it. The cluster's time steps back a little now
   * and then, as a member recomputes it from the members' clocks; a list made at a later time
   * would then be made anew, every job's view built again (at ten thousand jobs, tens of
   * milliseconds in one call). Looked at that little late, a view shows the same next slot,
   * unless the time is that close to the slot's instant.
   */
  #timeOf(atMs: number): number {
    if (atMs < this.#latestMs && atMs > this.#latestMs - JOB_STATES_CLOCK_STEP_MS) return this.#latestMs;
    this.#latestMs = atMs;
    return atMs;
  }

  /**
   * The list of `state` at `nowMs`, as far as the last list tells without building a view: that
   * list itself, when nothing changed and no next slot it shows came, or only what is of no job
   * (a lock, say); else a pass to make, over the jobs changed since and, once a next slot the
   * list shows came, its soon jobs (each then shows a next slot after now: a fixed-delay job,
   * whose next slot may stay in the past, is never soon, so the list made holds past now); over
   * every job when there is no last list for it or the state no longer knows what changed.
   */
  #next(state: SchedulerState, nowMs: number): Last | Pass {
    const last = this.#lastFor(state, nowMs);
    if (last === null) return this.#begin(state, nowMs, state.jobs.keys(), null);
    const soonCame = nowMs >= last.untilMs;
    if (last.changes === state.changes && !soonCame) return last;
    const changed = last.changes === state.changes ? [] : state.jobsChangedSince(last.changes);
    if (changed === null) return this.#begin(state, nowMs, state.jobs.keys(), null);
    if (changed.length === 0 && !soonCame) return kept(last, state);
    return this.#begin(state, nowMs, soonCame ? [...last.soon, ...changed] : changed, last);
  }

  /** The last list, if it is of `state` as it is (no job forgotten since, no restore) and the time is within it. */
  #lastFor(state: SchedulerState, nowMs: number): Last | null {
    const last = this.#last;
    const same = last !== null && last.state === state && last.forgotten === state.jobsForgotten && last.restores === state.restores;
    return same && nowMs >= last.atMs && nowMs < last.horizonMs ? last : null;
  }

  /**
   * A list of the views of the jobs `names`: every job in order (`from` null), or the jobs
   * changed since the list `from` was made, in that list (new jobs come last, in the order their
   * names come, which is their order in SchedulerState.jobs). A list made from another takes its
   * array and its soon jobs over, rather than copying them (a list is made as often as a warm()
   * turn finds jobs changed): the list `from` is the last one, which no one reads while this one
   * is under way (a call finishes it first, and it is dropped only when that list no longer holds
   * either); what was handed out of it is a copy (handOut).
   */
  #begin(state: SchedulerState, nowMs: number, names: Iterable<string>, from: Last | null): Pass {
    return {
      state,
      changes: state.changes,
      forgotten: state.jobsForgotten,
      restores: state.restores,
      from,
      names: names[Symbol.iterator](),
      out: from === null ? [] : from.out,
      // The jobs looked at now are soon or not by the next slot they show; the others keep theirs.
      horizonMs: from === null ? nowMs + JOB_STATES_HORIZON_MS : from.horizonMs,
      soon: from === null ? new Set<string>() : from.soon,
      untilMs: from === null ? nowMs + JOB_STATES_HORIZON_MS : from.untilMs,
      untilJobs: from === null ? 0 : from.untilJobs,
      latestMs: nowMs,
    };
  }

  /**
   * Goes on with `pass`: looks at its jobs, building the views of those that changed since
   * (or no longer hold at `nowMs`), until `maxBuilds` were built or `outOfTime()`. Once it has
   * looked at every job, the list is made: it becomes the last one and is returned; else null.
   */
  #finish(pass: Pass, nowMs: number, maxBuilds: number, outOfTime?: () => boolean): Last | null {
    const { state, out, soon, horizonMs } = pass;
    pass.latestMs = Math.max(pass.latestMs, nowMs);
    const latest = new LatestClaims(state);
    const builds = this.#builds;
    const maxLooks = maxBuilds * WARM_LOOKS_PER_BUILD;
    for (let looks = 0; ; looks++) {
      if (this.#builds - builds >= maxBuilds || looks >= maxLooks) return null;
      if (outOfTime !== undefined && looks % WARM_TIME_CHECK_EVERY === WARM_TIME_CHECK_EVERY - 1 && outOfTime()) return null;
      const next = pass.names.next();
      if (next.done === true) break;
      const name = next.value;
      const job = state.jobs.get(name);
      if (job === undefined) continue;
      const prior = this.#built.get(job);
      const priorNextMs = prior?.nextMs;
      const wasSoon = soon.has(name);
      const built = this.#ensure(state, job, nowMs, latest, prior);
      // A view of a new job has no place yet: it comes last.
      if (pass.from === null || built.index < 0) built.index = out.length;
      out[built.index] = built.view;
      // Soon: a next slot before the horizon that time alone brings (not a fixed-delay job's).
      const isSoon = built.nextMs !== null && built.nextMs < horizonMs && job.spec.kind !== 'delay';
      if (isSoon) soon.add(name);
      else soon.delete(name);
      // The list holds until the first next slot it shows, kept with the soon jobs that show it
      // as the jobs are looked at; only when none shows it any more are they looked over again
      // (jobs alike share their next slots, so that one of them claimed seldom needs it).
      if (wasSoon && priorNextMs === pass.untilMs) pass.untilJobs--;
      if (isSoon) showsUntil(pass, built.nextMs as number);
    }
    if (pass.untilJobs <= 0) {
      pass.untilMs = horizonMs;
      pass.untilJobs = 0;
      for (const name of soon) {
        const job = state.jobs.get(name);
        const nextMs = job === undefined ? null : (this.#built.get(job)?.nextMs ?? null);
        if (nextMs !== null) showsUntil(pass, nextMs);
      }
    }
    const untilMs = pass.untilMs;
    // A list made over several turns holds from the latest of them: a view built in an earlier
    // one may show a next slot that came since, which `soon` (and so untilMs) has.
    this.#last = { state, changes: pass.changes, forgotten: pass.forgotten, restores: pass.restores, atMs: pass.latestMs, untilMs, untilJobs: pass.untilJobs, horizonMs, soon, out, jobs: null };
    return this.#last;
  }

  /**
   * The job's view as built, built again first if the job changed since or the view no longer
   * holds at `nowMs` (counted in `builds`).
   */
  #ensure(state: SchedulerState, job: JobRecord, nowMs: number, latestClaims: LatestClaims, built = this.#built.get(job)): Built {
    const change = state.changeOf(job.name);
    // A fixed-delay job's next slot follows from the state alone: its view holds while the job is unchanged.
    const holding = built !== undefined && (job.spec.kind === 'delay' || holds(built, nowMs));
    if (holding && built.change === change) return built;
    const latest = latestClaimOf(state, job, latestClaims);
    // A job's spec and anchor never change: while its view holds and its mark did not move (a
    // registration, a run), its next slot is the same.
    const nextMs =
      holding && built.highWaterMs === job.highWaterMs && job.spec.kind !== 'delay'
        ? built.nextMs
        : job.spec.kind === 'delay'
          ? nextDelaySlot(state, job)
          : nextInstantFrom(job.spec, job.anchorMs, job.highWaterMs, nowMs);
    // A job whose next slot did not move (another member registered it) keeps its Date.
    const nextSlot = nextMs === null ? null : built?.nextMs === nextMs ? built.view.nextSlot : new Date(nextMs);
    const view = viewOf(state, job, latest, nextSlot, built?.view.spec);
    this.#builds++;
    if (built === undefined) {
      const made: Built = { view, change, atMs: nowMs, nextMs, highWaterMs: job.highWaterMs, index: -1 };
      this.#built.set(job, made);
      return made;
    }
    built.view = view;
    built.change = change;
    built.atMs = nowMs;
    built.nextMs = nextMs;
    built.highWaterMs = job.highWaterMs;
    return built;
  }
}

/**
 * How far ahead of a call that looks at every job the jobs whose next slot comes are kept
 * (JobStates.#last.soon): until then, a call after a next slot came looks at those jobs only.
 * Long enough that the jobs of every minute or more often are looked at on their own, short
 * enough that the jobs of every hour or longer that fall in it are few.
 */
export const JOB_STATES_HORIZON_MS = 60_000;

/**
 * How far back the cluster's time may step, at most, and the jobs' views still be looked at at
 * the latest time they were (JobStates.#timeOf): well above the steps clock sync makes (under a
 * millisecond on loopback), and a quarter of the shortest interval between two slots of a job.
 */
export const JOB_STATES_CLOCK_STEP_MS = MIN_EVERY_MS / 4;

/**
 * Jobs warm() may look at per view it builds (most of the jobs it looks at may have views built
 * already, as when a call came between): bounds a turn that builds few.
 */
export const WARM_LOOKS_PER_BUILD = 8;

/** warm() asks whether its time is up once every this many looks at jobs (asking costs a clock read). */
export const WARM_TIME_CHECK_EVERY = 32;

/** A list under way (JobStates.#begin): the names it has left, and the list as placed so far. */
interface Pass {
  readonly state: SchedulerState;
  /** The state's changes, jobs forgotten and restores when it began: the list is of that state. */
  readonly changes: number;
  readonly forgotten: number;
  readonly restores: number;
  readonly from: Last | null;
  readonly names: Iterator<string>;
  readonly out: JobState[];
  readonly horizonMs: number;
  readonly soon: Set<string>;
  /** The first next slot of a soon job so far, and how many soon jobs show it (none: it is looked for again at the end). */
  untilMs: number;
  untilJobs: number;
  /** The latest time it looked at jobs at. */
  latestMs: number;
}

/** A soon job of `pass` shows `nextMs`: the soonest next slot, and how many show it, taken on. */
function showsUntil(pass: Pass, nextMs: number): void {
  if (nextMs < pass.untilMs) {
    pass.untilMs = nextMs;
    pass.untilJobs = 1;
  } else if (nextMs === pass.untilMs) pass.untilJobs++;
}

function isPass(list: Last | Pass): list is Pass {
  return 'names' in list;
}

/** Whether a list under way is still of `state`: no job forgotten since (a hole in it) and no restore (new records). */
function goesOn(pass: Pass, state: SchedulerState): boolean {
  return pass.state === state && pass.forgotten === state.jobsForgotten && pass.restores === state.restores;
}

interface Last {
  readonly state: SchedulerState;
  /** Moved on by changes of no job (kept()). */
  changes: number;
  /** state.jobsForgotten and state.restores then. */
  readonly forgotten: number;
  readonly restores: number;
  readonly atMs: number;
  readonly untilMs: number;
  /** Soon jobs whose next slot is `untilMs`. */
  readonly untilJobs: number;
  readonly horizonMs: number;
  readonly soon: Set<string>;
  /** The views in order, which the next list made from this one takes over. */
  readonly out: JobState[];
  /** What calls hand out: a frozen copy of `out`, made by the first call that wants it. */
  jobs: ClusterState['jobs'] | null;
}

/** `last`, made the list of `state` as it is: only changes of no job came since. */
function kept(last: Last, state: SchedulerState): Last {
  last.changes = state.changes;
  return last;
}

/** The list `last` as calls hand it out: the same copy to every call until the next list. */
function handOut(last: Last): ClusterState['jobs'] {
  // slice() of an array not frozen copies it at once (of a frozen one, element by element).
  return (last.jobs ??= Object.freeze(last.out.slice()));
}

/**
 * Whether a view built at `built.atMs` still shows the right next slot at `nowMs`: until that
 * slot's instant (the next instant after the later of the high-water mark and the time is the
 * same from then until it), unless the time went back. (A fixed-delay job's view is not asked:
 * its next slot follows from the state alone, see #ensure.)
 */
function holds(built: Built, nowMs: number): boolean {
  return nowMs >= built.atMs && (built.nextMs === null || nowMs < built.nextMs);
}

/**
 * The job's latest claim: the one at its high-water mark when that is a claim (the mark is the
 * latest slot claimed or skipped); none while the mark is where the job's registration put it
 * (every claim and skip moves it past that); after a skip, or once it was forgotten, it is found
 * in one pass over the claims (`ofEachJob`), made once for all the jobs of a call.
 */
function latestClaimOf(state: SchedulerState, job: JobRecord, ofEachJob: LatestClaims): ClaimRecord | undefined {
  if (job.highWaterMs === job.anchorMs) return undefined;
  return state.claims.get(claimKey(job.name, job.highWaterMs)) ?? ofEachJob.of(job.name);
}

/** The latest claim of each job, found in one pass over the claims when a job first asks (see latestClaimOf). */
class LatestClaims {
  readonly #state: SchedulerState;
  #byJob: Map<string, ClaimRecord> | null = null;

  constructor(state: SchedulerState) {
    this.#state = state;
  }

  of(job: string): ClaimRecord | undefined {
    return (this.#byJob ??= latestClaimOfEachJob(this.#state)).get(job);
  }
}

function latestClaimOfEachJob(state: SchedulerState): Map<string, ClaimRecord> {
  const latest = new Map<string, ClaimRecord>();
  // In claim order, so the last one seen per job is its latest.
  for (const claim of state.claims.values()) latest.set(claim.job, claim);
  return latest;
}

/** What most jobs' views show: no conflicts, nothing running (shared, as the views are frozen). */
const NONE: Readonly<Record<string, string>> = Object.freeze({});
const NOTHING_RUNNING: JobState['running'] = Object.freeze([]);

/**
 * The sorted list of each handler set's members: jobs share their handler sets (see
 * scheduler/handler-sets.ts), so their views share the list, made once rather than per view.
 */
const handlerLists = new WeakMap<ReadonlySet<string>, JobState['handlers']>();
/** The set looked up last, and its list: jobs registered alike come one after another. */
let lastHandlers: { readonly set: ReadonlySet<string>; readonly list: JobState['handlers'] } | null = null;

function handlersOf(job: JobRecord): JobState['handlers'] {
  if (lastHandlers?.set === job.handlers) return lastHandlers.list;
  let list = handlerLists.get(job.handlers);
  if (list === undefined) handlerLists.set(job.handlers, (list = Object.freeze([...job.handlers].sort())));
  lastHandlers = { set: job.handlers, list };
  return list;
}

/** `spec`: the job's spec as text, when a view of it was built before (a record's spec never changes). */
function viewOf(state: SchedulerState, job: JobRecord, last: ClaimRecord | undefined, nextSlot: Date | null, spec = specKey(job.spec)): JobState {
  // A job never claimed (its mark where its registration put it, see latestClaimOf) runs nothing.
  const inProgress = job.highWaterMs === job.anchorMs ? null : state.claimsInProgress(job.name);
  const running = inProgress === null || inProgress.size === 0 ? [] : [...inProgress].flatMap(runsOf).sort((a, b) => a.slotMs - b.slotMs);
  return Object.freeze({
    name: job.name,
    spec,
    mode: job.mode,
    handlers: handlersOf(job),
    conflicts: job.conflicts.size === 0 ? NONE : Object.freeze(Object.fromEntries(job.conflicts)),
    nextSlot,
    lastClaim:
      last === undefined
        ? null
        : Object.freeze({
            slot: new Date(last.slotMs),
            fencingToken: last.token,
            assignees: Object.freeze([...last.assignees]),
            outcomes: Object.freeze(Object.fromEntries([...last.outcomes].map(([member, o]) => [member, Object.freeze({ ...o })]))),
          }),
    missedSlots: job.missedSlots,
    skippedRuns: job.skippedRuns,
    paused: job.paused,
    running:
      running.length === 0 ? NOTHING_RUNNING : Object.freeze(running.map((r) => Object.freeze({ slot: new Date(r.slotMs), fencingToken: r.token, member: r.member, startedAt: new Date(r.startedAtMs) }))),
  });
}
