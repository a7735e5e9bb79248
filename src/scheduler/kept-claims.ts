import { isInProgress } from './apply-rules.js';
import { claimBytes } from './claim-footprint.js';
import { claimKey, isSettling, type ClaimRecord, type JobRecord } from './records.js';

/** Claims looked at, oldest first, for one that is finished when one must be forgotten. */
const MAX_EVICTION_SCAN = 64;

const EMPTY: ReadonlySet<ClaimRecord> = new Set();
const NONE_SPARED: ReadonlySet<ClaimRecord> = EMPTY;

/**
 * The claims SchedulerState keeps, with the indexes derived from them (runs in progress per job,
 * open claims) and what they take in a snapshot (claim-footprint.ts), bounded in number and in
 * bytes: past either bound, the oldest finished claims are forgotten. Part of the state that
 * `apply` changes, so everything here is as deterministic as it is.
 */
export class KeptClaims {
  /** By `${job}@${slotMs}`, in claim order (a Map keeps insertion order). */
  readonly byKey = new Map<string, ClaimRecord>();
  /**
   * Per job, its kept claims with a run in progress: started under the claim's token, with no
   * outcome from that member and not replaced. So that a firing slot need not scan every claim.
   */
  readonly #inProgress = new Map<string, Set<ClaimRecord>>();
  readonly #open = new Set<ClaimRecord>();
  /** What each kept claim takes in a snapshot, as last measured (see index), and their sum. */
  readonly #bytes = new Map<ClaimRecord, number>();
  #totalBytes = 0;
  readonly #jobs: ReadonlyMap<string, JobRecord>;

  /** `jobs`: the state's jobs, read for a claim's mode and its job's latest slot. */
  constructor(jobs: ReadonlyMap<string, JobRecord>) {
    this.#jobs = jobs;
  }

  /** What the kept claims take in a snapshot, at most (claim-footprint.ts). */
  get bytes(): number {
    return this.#totalBytes;
  }

  /** Claims (mode 'one') whose story may not be over (see SchedulerState.openClaims). */
  get open(): ReadonlySet<ClaimRecord> {
    return this.#open;
  }

  inProgressOf(job: string): ReadonlySet<ClaimRecord> {
    return this.#inProgress.get(job) ?? EMPTY;
  }

  /** The jobs with a kept claim open or in progress. */
  busyJobs(): Set<string> {
    const busy = new Set<string>(this.#inProgress.keys());
    for (const claim of this.#open) busy.add(claim.job);
    return busy;
  }

  /** Keeps a new claim, last in claim order. */
  add(claim: ClaimRecord): void {
    this.byKey.set(claimKey(claim.job, claim.slotMs), claim);
    this.index(claim);
  }

  /**
   * Updates the indexes and the bytes of a claim that is new, or whose starts, outcomes, token
   * or cancellation changed.
   */
  index(claim: ClaimRecord): void {
    let set = this.#inProgress.get(claim.job);
    if (isInProgress(claim)) {
      if (set === undefined) this.#inProgress.set(claim.job, (set = new Set()));
      set.add(claim);
    } else if (set !== undefined) {
      set.delete(claim);
      if (set.size === 0) this.#inProgress.delete(claim.job);
    }
    const assignee = claim.assignees[0];
    const outcome = assignee === undefined ? undefined : claim.outcomes.get(assignee);
    const settled = outcome !== undefined && outcome.token === claim.token && isSettling(outcome.outcome);
    if (this.#jobs.get(claim.job)?.mode !== 'one' || settled || claim.cancelled?.token === claim.token) this.#open.delete(claim);
    else this.#open.add(claim);
    const bytes = claimBytes(claim);
    this.#totalBytes += bytes - (this.#bytes.get(claim) ?? 0);
    this.#bytes.set(claim, bytes);
  }

  /**
   * Forgets the oldest claims while more than `maxCount` are kept, or, when `maxBytes` is given,
   * while they take more than it, but never those in `spared` (the claims the command just
   * applied hands back: its caller acts on them); returns those forgotten, oldest first.
   */
  trim(maxCount: number, maxBytes: number | undefined, spared: ReadonlySet<ClaimRecord> = NONE_SPARED): ClaimRecord[] {
    const forgotten: ClaimRecord[] = [];
    while (this.byKey.size > maxCount || (maxBytes !== undefined && this.#totalBytes > maxBytes)) {
      const claim = this.#forgetOne(spared);
      if (claim === undefined) break;
      forgotten.push(claim);
    }
    return forgotten;
  }

  /** Forgets every kept claim of `job` (a job forgotten to make room). */
  forgetJob(job: string): void {
    for (const [key, claim] of this.byKey) {
      if (claim.job === job) this.#forget(key, claim);
    }
    this.#inProgress.delete(job);
  }

  /** Replaces every kept claim with `claims`, in their order, and puts the indexes in `order` when given (see SchedulerStateParts.indexOrder). */
  restore(claims: readonly ClaimRecord[], order: { readonly open: readonly ClaimRecord[]; readonly inProgress: readonly ClaimRecord[] } | undefined): void {
    this.byKey.clear();
    this.#inProgress.clear();
    this.#open.clear();
    this.#bytes.clear();
    this.#totalBytes = 0;
    for (const claim of claims) this.byKey.set(claimKey(claim.job, claim.slotMs), claim);
    for (const claim of this.byKey.values()) this.index(claim);
    if (order === undefined) return;
    reorder(this.#open, order.open);
    const byJob = new Map<string, ClaimRecord[]>();
    for (const claim of order.inProgress) {
      const list = byJob.get(claim.job);
      if (list === undefined) byJob.set(claim.job, [claim]);
      else list.push(claim);
    }
    for (const [job, set] of this.#inProgress) reorder(set, byJob.get(job) ?? []);
  }

  /**
   * Forgets the oldest claim whose story is over, among the oldest few: a run in progress, or a
   * job's latest claim (a fixed-delay job plans its next slot from it), must not be forgotten
   * while older finished ones are kept. If all of those few are still open, the oldest goes
   * anyway: the bound holds whatever happens but for the claims spared. Deterministic, like
   * everything in apply.
   */
  #forgetOne(spared: ReadonlySet<ClaimRecord>): ClaimRecord | undefined {
    let victim: [string, ClaimRecord] | undefined;
    let looked = 0;
    for (const entry of this.byKey) {
      const claim = entry[1];
      if (spared.has(claim)) continue;
      victim ??= entry;
      const open = this.#inProgress.get(claim.job)?.has(claim) === true || this.#jobs.get(claim.job)?.highWaterMs === claim.slotMs;
      if (!open) {
        victim = entry;
        break;
      }
      if (++looked >= MAX_EVICTION_SCAN) break;
    }
    if (victim === undefined) return undefined;
    this.#forget(victim[0], victim[1]);
    return victim[1];
  }

  #forget(key: string, claim: ClaimRecord): void {
    this.byKey.delete(key);
    this.#open.delete(claim);
    this.#totalBytes -= this.#bytes.get(claim) ?? 0;
    this.#bytes.delete(claim);
    // A forgotten claim leaves the index too, which keeps it bounded with the claims.
    const set = this.#inProgress.get(claim.job);
    set?.delete(claim);
    if (set?.size === 0) this.#inProgress.delete(claim.job);
  }
}

/**
 * Puts the members of `set` that `order` lists in that order, followed by the others as they
 * were: an order can arrange a set, never add to it or take from it.
 */
function reorder<T>(set: Set<T>, order: readonly T[]): void {
  const members = new Set(set);
  set.clear();
  for (const item of order) if (members.delete(item)) set.add(item);
  for (const item of members) set.add(item);
}
