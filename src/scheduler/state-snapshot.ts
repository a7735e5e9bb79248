import { concatBytes } from '../bytes/concat-bytes.js';
import { CodecError } from '../errors.js';
import type { NodeId } from '../raft/types.js';
import type { DstPolicy, JobSpec } from './spec.js';
import { NO_CONFLICTS, claimKey, isCancelledRun, type ClaimRecord, type JobRecord, type LockRecord, type SchedulerStateParts } from './records.js';
import { SCHEDULER_DEFAULTS, SchedulerState } from './state.js';
import type { AssignMode, JobPolicy, OverlapPolicy } from './command.js';

/**
 * A snapshot of the scheduler's replicated state, for log compaction: a member that lags
 * installs the leader's, and a member that restarts reads its own. It is the UTF-8 JSON of a
 * compact array; every Map and Set of the state is an array in its iteration order, since that
 * order is state too (claims are forgotten oldest first, expired locks likewise, and the
 * planner walks open claims in index order). Objects are never used.
 *
 * JSON rather than CBOR (the rest of the wire) for speed: a snapshot at the state's bounds
 * (10,000 claims) is taken on the event loop, where no slot can fire meanwhile, and V8's JSON
 * encodes it in a fraction of cborg's time (measured when this format was chosen). JSON is as
 * deterministic here: arrays, strings and numbers only, and ECMAScript fixes how a number is
 * printed, so equal states give equal bytes on every member.
 *
 *   [version, jobs, claims, locks, assigned, open, inProgress]
 *
 *   job:       [name, spec, mode, policy, anchorMs, handlers, conflicts, highWaterMs, missedSlots, skippedRuns]
 *              | [..., skippedRuns, true]: a paused job (cluster version 3)
 *   spec:      ['cron', expression, tz] | ['cron', expression, tz, dstGap, dstOverlap]
 *              | ['every', everyMs] | ['at', atMs] | ['delay', delayMs, initialDelayMs]
 *   policy:    [retries, retryDelayMs, catchUp, overlap]
 *   catchUp:   ['latest'] | ['none'] | ['all', windowMs, maxSlots]
 *   handlers:  [member, ...]
 *   conflicts: [[member, theirSpecKey], ...]
 *   claim:     [job, slotMs, token, assignees, attempt, outcomes, starts, cancelled]
 *              | [..., cancelled, true]: a triggered claim (cluster version 3)
 *              | [..., cancelled, triggered, claimedAtMs | null, retried]: a claim made after its
 *                instant, or moved other than to retry, under cluster version 3 (CLAIM_TIME_VERSION,
 *                RETRY_COUNT_VERSION); `triggered` true or false
 *   outcome:   [member, outcome, atMs, token] | [member, outcome, atMs, token, error]
 *   start:     [member, atMs, token]
 *   cancelled: null | [token, bySlotMs, atMs]: replaced by a later slot
 *              | [token, null, atMs, member]: cancelled by an operator (cluster version 3)
 *   lock:      [name, holder, token, untilMs]
 *   assigned:  [[member, claims], ...]
 *   open, inProgress: [position in claims, ...], the order of the derived indexes (see
 *              SchedulerStateParts.indexOrder); inProgress groups each job's claims, in job order.
 *
 * A cron spec without a DST policy and one with the default policy spelled out are different
 * replicated values (their keys compare equal), so each keeps its own form. Equal states give
 * equal bytes on every member. Any change to the layout must bump SCHEDULER_SNAPSHOT_VERSION.
 * The one exception is the trailing `true` of a paused job or a triggered claim, the cancelled
 * form of an operator's cancel, and a claim's time and retries: only the commands of cluster
 * version 3 make one (OPERATIONS_VERSION), or only under it (CLAIM_TIME_VERSION,
 * RETRY_COUNT_VERSION: before it, a claim keeps no time and every move counts as a retry), which
 * no member of an earlier release applies, so a state without them keeps the bytes of version 1,
 * which every release reads.
 * `false` is never written (a job that is not paused has 10 fields), and is refused.
 */
export const SCHEDULER_SNAPSHOT_VERSION = 1;

const TOP_LEVEL_FIELDS = 7;
const JOB_FIELDS = 10;
/** A paused job's fields: JOB_FIELDS and its trailing `true`. */
const PAUSED_JOB_FIELDS = JOB_FIELDS + 1;
const POLICY_FIELDS = 4;
const CLAIM_FIELDS = 8;
/** A triggered claim's fields: CLAIM_FIELDS and its trailing `true`. */
const TRIGGERED_CLAIM_FIELDS = CLAIM_FIELDS + 1;
/** A claim with a time or a count of retries of its own: CLAIM_FIELDS, then triggered, claimedAtMs and retried. */
const TIMED_CLAIM_FIELDS = CLAIM_FIELDS + 3;
const START_FIELDS = 3;
const CANCELLED_FIELDS = 3;
/** An operator's cancel: `[token, null, atMs, member]`. */
const OPERATOR_CANCELLED_FIELDS = 4;
const LOCK_FIELDS = 4;

/**
 * The bound of lists the state itself does not bound (a job's handlers, a claim's assignees,
 * outcomes and starts, the members' tallies: one per member): only the snapshot's size does.
 */
const UNBOUNDED = Number.MAX_SAFE_INTEGER;

type Wire = unknown[];
type Limits = Pick<SchedulerState['limits'], 'maxClaimsKept' | 'maxJobs' | 'maxLocks'>;

const SPEC_KINDS = ['cron', 'every', 'at', 'delay'] as const;
const MODES: readonly AssignMode[] = ['one', 'all'];
const OVERLAPS: readonly OverlapPolicy[] = ['skip', 'allow', 'queue', 'replace'];
const CATCH_UPS = ['latest', 'none', 'all'] as const;
const DST_GAPS: readonly DstPolicy['gap'][] = ['shift', 'skip'];
const DST_OVERLAPS: readonly DstPolicy['overlap'][] = ['once', 'twice'];

const encoder = new TextEncoder();
// Invalid UTF-8 is refused rather than replaced, and a leading U+FEFF kept rather than
// dropped, so one snapshot has one meaning.
const decoder = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/**
 * Jobs, claims or locks encoded in one step of a snapshot taken in steps (schedulerSnapshotSteps).
 * A state at its bounds (10,000 claims) encoded at once held the event loop for tens of
 * milliseconds, more under load. A caller that runs several steps in one turn of the event loop
 * until a budget is spent (SchedulerMirror, SNAPSHOT_STEP_BUDGET_MS) goes past it by at most one
 * step, so a step is kept well below the budget at its slowest: a member's first snapshot of
 * 10,000 jobs, its code not yet optimised, with two other members taking theirs in the same
 * process, took up to 5 ms for a step of 100 records, past the 5 ms the many-jobs bench holds a
 * step to; a quarter of that stays within it.
 */
export const SNAPSHOT_RECORDS_PER_STEP = 25;

/** Encodes the whole state. Deterministic: the same state gives the same bytes on every member. */
export function encodeSchedulerSnapshot(state: SchedulerState): Uint8Array {
  const steps = schedulerSnapshotSteps(state, Number.POSITIVE_INFINITY);
  for (;;) {
    const step = steps.next();
    if (step.done === true) return concatBytes(step.value);
  }
}

/**
 * Encodes the whole state in steps, for a caller that lets other work run between them: each
 * `next()` looks at most at `recordsPerStep` jobs, claims, locks or entries of an index, and the
 * last returns the bytes in pieces, which together are encodeSchedulerSnapshot's (joined by the
 * caller, into whatever holds them: see encodeMemberSnapshot). The state must not change until
 * then.
 */
export function* schedulerSnapshotSteps(state: SchedulerState, recordsPerStep: number = SNAPSHOT_RECORDS_PER_STEP): Generator<void, Uint8Array[], void> {
  // The JSON of an array is its elements' JSON joined by commas inside brackets, with no space:
  // the text of the whole is built from the text of runs of elements.
  const text = new Utf8Pieces();
  text.push(`[${SCHEDULER_SNAPSHOT_VERSION},`);
  yield* encodeInSteps(state.jobs.values(), (job, run) => run.push(jobWire(job)), text, recordsPerStep);
  text.push(',');
  const position = new Map<ClaimRecord, number>();
  const claimAt = (claim: ClaimRecord, run: unknown[]): void => {
    position.set(claim, position.size);
    run.push(claimWire(claim));
  };
  yield* encodeInSteps(state.claims.values(), claimAt, text, recordsPerStep);
  text.push(',');
  yield* encodeInSteps(state.locks, ([name, lock], run) => run.push([name, lock.holder, lock.token, lock.untilMs]), text, recordsPerStep);
  text.push(`,${JSON.stringify([...state.assigned])},`);
  // The indexes hold kept claims only (a forgotten claim leaves them), so every one has a
  // position. They are as long as the claims, and the in-progress one is looked up per job: in
  // steps too, or the last step would be the longest by far.
  const positionOf = (claim: ClaimRecord, run: unknown[]): void => {
    const at = position.get(claim);
    if (at !== undefined) run.push(at);
  };
  yield* encodeInSteps(state.openClaims(), positionOf, text, recordsPerStep);
  text.push(',');
  yield* encodeInSteps(state.jobs.keys(), (job, run) => state.claimsInProgress(job).forEach((claim) => positionOf(claim, run)), text, recordsPerStep);
  text.push(']');
  return text.pieces();
}

/**
 * Text made UTF-8 a step's worth at a time: joining and encoding the whole text of a large
 * snapshot at the end made that step several times as long as any other.
 */
class Utf8Pieces {
  readonly #done: Uint8Array[] = [];
  #text = '';

  push(text: string): void {
    this.#text += text;
  }

  /** Encodes the text pushed since the last cut. */
  cut(): void {
    if (this.#text.length === 0) return;
    this.#done.push(encoder.encode(this.#text));
    this.#text = '';
  }

  pieces(): Uint8Array[] {
    this.cut();
    return this.#done;
  }
}

/**
 * Appends to `text` the JSON array of what `wire` gives for `items` (it appends each item's
 * elements to the run, none or more), yielding after every `perStep` items looked at.
 */
function* encodeInSteps<T>(items: Iterable<T>, wire: (item: T, run: unknown[]) => void, text: Utf8Pieces, perStep: number): Generator<void, void, void> {
  text.push('[');
  let run: unknown[] = [];
  let first = true;
  let looked = 0;
  const flush = (): void => {
    if (run.length === 0) return;
    const json = JSON.stringify(run);
    text.push(first ? json.slice(1, -1) : `,${json.slice(1, -1)}`);
    first = false;
    run = [];
  };
  for (const item of items) {
    wire(item, run);
    if (++looked >= perStep) {
      looked = 0;
      flush();
      text.cut();
      yield;
    }
  }
  flush();
  text.push(']');
}

/**
 * Replaces the whole contents of `state` with the snapshot's, in place, rebuilding its derived
 * indexes. The bytes are untrusted (a peer sent them): they are decoded and checked in full
 * first, and on any fault this throws CodecError and leaves `state` as it was.
 */
export function restoreSchedulerSnapshot(state: SchedulerState, bytes: Uint8Array): void {
  state.restoreFrom(decodeSchedulerSnapshot(bytes, state.limits));
}

/**
 * Decodes and checks a snapshot into fresh records, for a state with `limits` (a snapshot that
 * does not fit them is refused: the state would break its bounds). Give the parts to one state
 * only: its apply changes the records. Throws CodecError, and only CodecError, on any bad input.
 */
export function decodeSchedulerSnapshot(bytes: Uint8Array, limits: Limits = SCHEDULER_DEFAULTS): SchedulerStateParts {
  try {
    if (!(bytes instanceof Uint8Array)) throw new CodecError(`expected a Uint8Array, got ${describe(bytes)}`);
    return partsFromWire(JSON.parse(decoder.decode(bytes)) as unknown, limits);
  } catch (error) {
    // Ours, the decoder's (truncated or garbled bytes), and a stack overflow on absurd nesting: all
    // become one CodecError that says it was a snapshot.
    const detail = error instanceof Error ? error.message : String(error);
    throw new CodecError(`Malformed scheduler snapshot: ${detail}`, { cause: error });
  }
}

function jobWire(job: JobRecord): Wire {
  const { policy } = job;
  const catchUp = policy.catchUp.policy === 'all' ? ['all', policy.catchUp.windowMs, policy.catchUp.maxSlots] : [policy.catchUp.policy];
  const wire: Wire = [
    job.name,
    specWire(job.spec),
    job.mode,
    [policy.retries, policy.retryDelayMs, catchUp, policy.overlap],
    job.anchorMs,
    [...job.handlers],
    [...job.conflicts],
    job.highWaterMs,
    job.missedSlots,
    job.skippedRuns,
  ];
  if (job.paused) wire.push(true);
  return wire;
}

function specWire(spec: JobSpec): Wire {
  switch (spec.kind) {
    case 'cron':
      return spec.dst === undefined ? ['cron', spec.expression, spec.tz] : ['cron', spec.expression, spec.tz, spec.dst.gap, spec.dst.overlap];
    case 'every':
      return ['every', spec.everyMs];
    case 'at':
      return ['at', spec.atMs];
    case 'delay':
      return ['delay', spec.delayMs, spec.initialDelayMs];
  }
}

function claimWire(claim: ClaimRecord): Wire {
  const outcomes = [...claim.outcomes].map(([member, o]) => (o.error === undefined ? [member, o.outcome, o.atMs, o.token] : [member, o.outcome, o.atMs, o.token, o.error]));
  const starts = [...claim.starts].map(([member, s]) => [member, s.atMs, s.token]);
  const ended = claim.cancelled;
  const cancelled = ended === null ? null : isCancelledRun(ended) ? [ended.token, null, ended.atMs, ended.byMember] : [ended.token, ended.bySlotMs, ended.atMs];
  const wire: Wire = [claim.job, claim.slotMs, claim.token, [...claim.assignees], claim.attempt, outcomes, starts, cancelled];
  if (claim.claimedAtMs !== undefined || claim.retried !== claim.attempt - 1) wire.push(claim.trigger === true, claim.claimedAtMs ?? null, claim.retried);
  else if (claim.trigger === true) wire.push(true);
  return wire;
}

function partsFromWire(value: unknown, limits: Limits): SchedulerStateParts {
  if (!Array.isArray(value) || value.length === 0) throw new CodecError(`expected a non-empty array, got ${describe(value)}`);
  if (value[0] !== SCHEDULER_SNAPSHOT_VERSION) throw new CodecError(`unsupported version ${describe(value[0])}`);
  const top = tuple(value, 'snapshot', TOP_LEVEL_FIELDS);
  const jobs = new Map<string, JobRecord>();
  for (const [i, item] of list(top[1], 'jobs', limits.maxJobs).entries()) {
    const job = jobFromWire(item, `jobs[${i}]`);
    if (jobs.has(job.name)) throw new CodecError(`jobs[${i}].name: ${describe(job.name)} appears twice`);
    jobs.set(job.name, job);
  }
  const claims = new Map<string, ClaimRecord>();
  for (const [i, item] of list(top[2], 'claims', limits.maxClaimsKept).entries()) {
    const claim = claimFromWire(item, `claims[${i}]`);
    // Every kept claim has its job: a job forgotten at the cap takes its claims with it (SchedulerState.#makeRoom).
    if (!jobs.has(claim.job)) throw new CodecError(`claims[${i}].job: no job ${describe(claim.job)}`);
    const key = claimKey(claim.job, claim.slotMs);
    if (claims.has(key)) throw new CodecError(`claims[${i}]: slot ${key} appears twice`);
    claims.set(key, claim);
  }
  const locks = entries(top[3], 'locks', limits.maxLocks, lockFromWire);
  const assigned = entries(top[4], 'assigned', UNBOUNDED, (item, field) => {
    const a = tuple(item, field, 2);
    return [string(a[0], `${field}.member`), count(a[1], `${field}.claims`)] as const;
  });
  const claimList = [...claims.values()];
  const parts: SchedulerStateParts = {
    jobs: [...jobs.values()],
    claims: claimList,
    locks,
    assigned,
    indexOrder: { open: claimsAt(top[5], 'open', claimList), inProgress: claimsAt(top[6], 'inProgress', claimList) },
  };
  checkIndexOrder(parts, limits);
  return parts;
}

/**
 * The index order must be the one the claims give: each index lists exactly the claims that
 * rebuilding it puts there. Checked on a scratch state, through the same rebuild the target
 * will run, so the target is only touched once the whole snapshot is known good.
 */
function checkIndexOrder(parts: SchedulerStateParts, limits: Limits): void {
  const scratch = new SchedulerState(limits);
  scratch.restoreFrom(parts);
  const inProgress = parts.jobs.flatMap((job) => [...scratch.claimsInProgress(job.name)]);
  if (!sameItems(parts.indexOrder?.open ?? [], [...scratch.openClaims()])) throw new CodecError('open: not the claims whose story is not over, in index order');
  if (!sameItems(parts.indexOrder?.inProgress ?? [], inProgress)) throw new CodecError('inProgress: not the claims with a run in progress, grouped by job in index order');
}

function sameItems<T>(a: readonly T[], b: readonly T[]): boolean {
  return a.length === b.length && a.every((item, i) => item === b[i]);
}

function claimsAt(value: unknown, field: string, claims: readonly ClaimRecord[]): ClaimRecord[] {
  const seen = new Set<number>();
  return list(value, field, claims.length).map((item, i) => {
    const at = count(item, `${field}[${i}]`);
    const claim = claims[at];
    if (claim === undefined) throw new CodecError(`${field}[${i}]: no claim at position ${at}`);
    if (seen.has(at)) throw new CodecError(`${field}[${i}]: claim at position ${at} appears twice`);
    seen.add(at);
    return claim;
  });
}

function jobFromWire(value: unknown, field: string): JobRecord {
  const j = array(value, field);
  if (j.length !== JOB_FIELDS && j.length !== PAUSED_JOB_FIELDS) throw new CodecError(`${field}: expected ${JOB_FIELDS} or ${PAUSED_JOB_FIELDS} fields, got ${j.length}`);
  if (j.length === PAUSED_JOB_FIELDS && j[JOB_FIELDS] !== true) throw new CodecError(`${field}.paused: expected true, got ${describe(j[JOB_FIELDS])}`);
  const handlers = new Set<NodeId>();
  for (const [i, item] of list(j[5], `${field}.handlers`, UNBOUNDED).entries()) {
    const member = string(item, `${field}.handlers[${i}]`);
    if (handlers.has(member)) throw new CodecError(`${field}.handlers[${i}]: ${describe(member)} appears twice`);
    handlers.add(member);
  }
  const conflicts = entries(j[6], `${field}.conflicts`, UNBOUNDED, (item, f) => {
    const c = tuple(item, f, 2);
    return [string(c[0], `${f}.member`), string(c[1], `${f}.spec`)] as const;
  });
  return {
    name: string(j[0], `${field}.name`),
    spec: specFromWire(j[1], `${field}.spec`),
    mode: oneOf(j[2], `${field}.mode`, MODES),
    policy: policyFromWire(j[3], `${field}.policy`),
    anchorMs: ms(j[4], `${field}.anchorMs`),
    handlers,
    conflicts: conflicts.length === 0 ? NO_CONFLICTS : new Map(conflicts),
    highWaterMs: ms(j[7], `${field}.highWaterMs`),
    missedSlots: count(j[8], `${field}.missedSlots`),
    skippedRuns: count(j[9], `${field}.skippedRuns`),
    paused: j.length === PAUSED_JOB_FIELDS,
  };
}

/**
 * Checks shapes and types only. Whether a cron expression parses or a zone exists is left to
 * the planner, as for a registration in the log: it depends on the tz data of the member, and a
 * snapshot must restore alike on every member.
 */
function specFromWire(value: unknown, field: string): JobSpec {
  const s = array(value, field);
  const kind = oneOf(s[0], `${field}.kind`, SPEC_KINDS);
  switch (kind) {
    case 'cron': {
      if (s.length !== 3 && s.length !== 5) throw new CodecError(`${field}: expected 3 or 5 fields, got ${s.length}`);
      const expression = string(s[1], `${field}.expression`);
      const tz = string(s[2], `${field}.tz`);
      if (s.length === 3) return { kind, expression, tz };
      return { kind, expression, tz, dst: { gap: oneOf(s[3], `${field}.dst.gap`, DST_GAPS), overlap: oneOf(s[4], `${field}.dst.overlap`, DST_OVERLAPS) } };
    }
    case 'every':
      tuple(s, field, 2);
      return { kind, everyMs: positiveMs(s[1], `${field}.everyMs`) };
    case 'at':
      tuple(s, field, 2);
      return { kind, atMs: ms(s[1], `${field}.atMs`) };
    case 'delay':
      tuple(s, field, 3);
      return { kind, delayMs: positiveMs(s[1], `${field}.delayMs`), initialDelayMs: nonNegativeMs(s[2], `${field}.initialDelayMs`) };
  }
}

function policyFromWire(value: unknown, field: string): JobPolicy & { readonly overlap: OverlapPolicy } {
  const p = tuple(value, field, POLICY_FIELDS);
  const c = array(p[2], `${field}.catchUp`);
  const policy = oneOf(c[0], `${field}.catchUp.policy`, CATCH_UPS);
  let catchUp: JobPolicy['catchUp'];
  if (policy === 'all') {
    tuple(c, `${field}.catchUp`, 3);
    catchUp = { policy, windowMs: nonNegativeMs(c[1], `${field}.catchUp.windowMs`), maxSlots: count(c[2], `${field}.catchUp.maxSlots`) };
  } else {
    tuple(c, `${field}.catchUp`, 1);
    catchUp = { policy };
  }
  return {
    retries: count(p[0], `${field}.retries`),
    retryDelayMs: nonNegativeMs(p[1], `${field}.retryDelayMs`),
    catchUp,
    overlap: oneOf(p[3], `${field}.overlap`, OVERLAPS),
  };
}

function claimFromWire(value: unknown, field: string): ClaimRecord {
  const c = array(value, field);
  if (c.length !== CLAIM_FIELDS && c.length !== TRIGGERED_CLAIM_FIELDS && c.length !== TIMED_CLAIM_FIELDS) {
    throw new CodecError(`${field}: expected ${CLAIM_FIELDS}, ${TRIGGERED_CLAIM_FIELDS} or ${TIMED_CLAIM_FIELDS} fields, got ${c.length}`);
  }
  if (c.length === TRIGGERED_CLAIM_FIELDS && c[CLAIM_FIELDS] !== true) throw new CodecError(`${field}.trigger: expected true, got ${describe(c[CLAIM_FIELDS])}`);
  const outcomes = new Map(
    entries(c[5], `${field}.outcomes`, UNBOUNDED, (item, f) => {
      const o = array(item, f);
      if (o.length !== 4 && o.length !== 5) throw new CodecError(`${f}: expected 4 or 5 fields, got ${o.length}`);
      const outcome = { outcome: string(o[1], `${f}.outcome`), atMs: ms(o[2], `${f}.atMs`), token: count(o[3], `${f}.token`) };
      return [string(o[0], `${f}.member`), o.length === 4 ? outcome : { ...outcome, error: string(o[4], `${f}.error`) }] as const;
    }),
  );
  const starts = new Map(
    entries(c[6], `${field}.starts`, UNBOUNDED, (item, f) => {
      const s = tuple(item, f, START_FIELDS);
      return [string(s[0], `${f}.member`), { atMs: ms(s[1], `${f}.atMs`), token: count(s[2], `${f}.token`) }] as const;
    }),
  );
  let cancelled: ClaimRecord['cancelled'] = null;
  if (c[7] !== null) {
    const x = array(c[7], `${field}.cancelled`);
    if (x.length === OPERATOR_CANCELLED_FIELDS) {
      if (x[1] !== null) throw new CodecError(`${field}.cancelled.bySlotMs: expected null in an operator's cancel, got ${describe(x[1])}`);
      cancelled = { token: count(x[0], `${field}.cancelled.token`), atMs: ms(x[2], `${field}.cancelled.atMs`), byMember: string(x[3], `${field}.cancelled.byMember`) };
    } else {
      tuple(x, `${field}.cancelled`, CANCELLED_FIELDS);
      cancelled = { token: count(x[0], `${field}.cancelled.token`), bySlotMs: ms(x[1], `${field}.cancelled.bySlotMs`), atMs: ms(x[2], `${field}.cancelled.atMs`) };
    }
  }
  const attempt = count(c[4], `${field}.attempt`);
  if (attempt < 1) throw new CodecError(`${field}.attempt: expected 1 or more, got ${attempt}`);
  const slotMs = ms(c[1], `${field}.slotMs`);
  const timed = c.length === TIMED_CLAIM_FIELDS ? timedClaimFields(c, field, slotMs, attempt) : null;
  return {
    job: string(c[0], `${field}.job`),
    slotMs,
    token: count(c[2], `${field}.token`),
    assignees: list(c[3], `${field}.assignees`, UNBOUNDED).map((item, i) => string(item, `${field}.assignees[${i}]`)),
    attempt,
    retried: timed?.retried ?? attempt - 1,
    outcomes,
    starts,
    cancelled,
    ...(c.length === TRIGGERED_CLAIM_FIELDS || timed?.triggered === true ? { trigger: true as const } : {}),
    ...(timed?.claimedAtMs === undefined ? {} : { claimedAtMs: timed.claimedAtMs }),
  };
}

/**
 * A claim's trailing triggered, claimedAtMs and retried, as the state keeps them: a time after
 * the slot's instant, at most attempt − 1 retries, and not the values the shorter forms stand for
 * (no time and every move a retry), which are written short: equal states give equal bytes.
 */
function timedClaimFields(c: Wire, field: string, slotMs: number, attempt: number): { triggered: boolean; claimedAtMs: number | undefined; retried: number } {
  const triggered = c[CLAIM_FIELDS];
  if (typeof triggered !== 'boolean') throw new CodecError(`${field}.trigger: expected true or false, got ${describe(triggered)}`);
  const atField = c[CLAIM_FIELDS + 1];
  const claimedAtMs = atField === null ? undefined : ms(atField, `${field}.claimedAtMs`);
  if (claimedAtMs !== undefined && claimedAtMs <= slotMs) throw new CodecError(`${field}.claimedAtMs: expected a time after the slot's, got ${claimedAtMs}`);
  const retried = count(c[CLAIM_FIELDS + 2], `${field}.retried`);
  if (retried > attempt - 1) throw new CodecError(`${field}.retried: expected at most ${attempt - 1} (the claim's moves), got ${retried}`);
  if (claimedAtMs === undefined && retried === attempt - 1) throw new CodecError(`${field}: a claim with no time and every move a retry is written in ${CLAIM_FIELDS} or ${TRIGGERED_CLAIM_FIELDS} fields`);
  return { triggered, claimedAtMs, retried };
}

function lockFromWire(value: unknown, field: string): readonly [string, LockRecord] {
  const l = tuple(value, field, LOCK_FIELDS);
  return [string(l[0], `${field}.name`), { holder: string(l[1], `${field}.holder`), token: count(l[2], `${field}.token`), untilMs: ms(l[3], `${field}.untilMs`) }];
}

/** A list of [key, value] pairs, as a Map keeps them: a key that appears twice is refused. */
function entries<K, V>(value: unknown, field: string, max: number, item: (value: unknown, field: string) => readonly [K, V]): (readonly [K, V])[] {
  const keys = new Set<K>();
  return list(value, field, max).map((v, i) => {
    const entry = item(v, `${field}[${i}]`);
    if (keys.has(entry[0])) throw new CodecError(`${field}[${i}]: ${describe(entry[0])} appears twice`);
    keys.add(entry[0]);
    return entry;
  });
}

function array(value: unknown, field: string): Wire {
  if (!Array.isArray(value)) throw new CodecError(`${field}: expected an array, got ${describe(value)}`);
  return value;
}

function tuple(value: unknown, field: string, length: number): Wire {
  const a = array(value, field);
  if (a.length !== length) throw new CodecError(`${field}: expected ${length} fields, got ${a.length}`);
  return a;
}

function list(value: unknown, field: string, max: number): Wire {
  const a = array(value, field);
  if (a.length > max) throw new CodecError(`${field}: ${a.length} items, more than the ${max} this state keeps`);
  return a;
}

function string(value: unknown, field: string): string {
  if (typeof value !== 'string') throw new CodecError(`${field}: expected a string, got ${describe(value)}`);
  return value;
}

function oneOf<T extends string>(value: unknown, field: string, allowed: readonly T[]): T {
  if (!allowed.includes(value as T)) throw new CodecError(`${field}: expected one of ${allowed.join(', ')}, got ${describe(value)}`);
  return value as T;
}

/** A time or duration: any finite number (the cluster's time need not be whole milliseconds). */
function ms(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isFinite(value)) throw new CodecError(`${field}: expected a finite number, got ${describe(value)}`);
  return value;
}

function nonNegativeMs(value: unknown, field: string): number {
  const n = ms(value, field);
  if (n < 0) throw new CodecError(`${field}: expected 0 or more, got ${n}`);
  return n;
}

/** An interval that must move time forward: a zero one would yield the same instant over and over. */
function positiveMs(value: unknown, field: string): number {
  const n = ms(value, field);
  if (n <= 0) throw new CodecError(`${field}: expected more than 0, got ${n}`);
  return n;
}

/** A token, attempt or tally: a whole number a JavaScript number holds exactly. */
function count(value: unknown, field: string): number {
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0) throw new CodecError(`${field}: expected a non-negative integer, got ${describe(value)}`);
  return value;
}

function describe(value: unknown): string {
  if (Array.isArray(value)) return `an array of ${value.length}`;
  if (value instanceof Uint8Array) return `${value.length} bytes`;
  if (typeof value === 'string') return JSON.stringify(value.length > 64 ? `${value.slice(0, 64)}…` : value);
  if (typeof value === 'object' && value !== null) return 'an object';
  return String(value);
}
