/**
 * Every error cronraft throws or rejects with is a CronraftError with a stable, uppercase
 * `code`. Codes are part of the public API: they do not change between minor versions.
 */
export class CronraftError extends Error {
  readonly code: string;

  constructor(code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
    this.code = code;
  }
}

/** Bad input to a public call: names the option or argument and the value it got. */
export class InvalidArgumentError extends CronraftError {
  readonly option: string;

  constructor(option: string, value: unknown, expected: string) {
    super('CRONRAFT_INVALID_ARGUMENT', `Invalid ${option}: expected ${expected}, got ${describe(value)}`);
    this.option = option;
  }
}

/** A proposal or read reached a member that is not the leader and no leader is known or reachable. */
export class NotLeaderError extends CronraftError {
  readonly leader: string | null;

  constructor(leader: string | null, message?: string) {
    super('CRONRAFT_NOT_LEADER', message ?? (leader === null ? 'No leader is known' : `Not the leader; the leader is ${leader}`));
    this.leader = leader;
  }
}

/** A proposal was appended but replaced by another leader's entry: it will never commit. */
export class ProposalDroppedError extends CronraftError {
  constructor(message = 'The proposal was overwritten by a new leader and will never commit') {
    super('CRONRAFT_PROPOSAL_DROPPED', message);
  }
}

/**
 * A forwarded proposal's leader changed before it said where the proposal went: it may or may
 * not commit. Retry only what is safe to apply twice.
 */
export class OutcomeUnknownError extends CronraftError {
  constructor(message = 'The leader changed before acknowledging the proposal; it may or may not commit') {
    super('CRONRAFT_OUTCOME_UNKNOWN', message);
  }
}

/** A proposal or read did not complete within its timeout; it may or may not have committed. */
export class TimeoutError extends CronraftError {
  constructor(what: string, timeoutMs: number) {
    super('CRONRAFT_TIMEOUT', `${what} did not complete within ${timeoutMs} ms`);
  }
}

/** Too many proposals are waiting to commit: the caller should retry later. */
export class BackpressureError extends CronraftError {
  /**
   * The items of an emit of several entries that were kept before it filled up, by their places
   * in the emit, as ranges `[first, last]`: those not in them were not kept, and may be emitted
   * again. Empty when nothing was kept (and for any other refusal).
   */
  readonly kept: ReadonlyArray<readonly [number, number]>;

  constructor(message: string, kept: ReadonlyArray<readonly [number, number]> = []) {
    super('CRONRAFT_BACKPRESSURE', message);
    this.kept = kept;
  }
}

/** The member is not started, is stopping or stopped. */
export class NotRunningError extends CronraftError {
  /** What the member is ('new', 'starting', 'not started', 'stopping', 'stopped', 'failed'), or what is not available here. */
  readonly state: string;

  /** `options.cause`: for a member that failed, the fatal error, which the message names too. */
  constructor(state: string, options?: { cause?: unknown }) {
    const cause = options?.cause;
    const why = state === 'failed' && cause instanceof Error ? `: ${cause.message}${cause instanceof CronraftError ? ` (${cause.code})` : ''}` : '';
    // What to do, where the state alone does not say it: a call made before start() (a stranger read "is new" and guessed).
    const next = state === 'new' || state === 'not started' ? ': call start() first, and wait for it' : state === 'starting' ? ': wait for start() to resolve' : '';
    super('CRONRAFT_NOT_RUNNING', `The cluster member is ${state}${why}${next}`, options);
    this.state = state;
  }
}

/**
 * This member has not learned the cluster's time from a leader within the timeout, so it cannot
 * stamp a time every member agrees on (a lock's expiry, say). Retry once it hears a leader.
 */
export class ClockUnsyncedError extends CronraftError {
  constructor(timeoutMs: number) {
    super('CRONRAFT_CLOCK_UNSYNCED', `This member has not learned the cluster's time from a leader within ${timeoutMs} ms`);
  }
}

/** The data directory cannot be used: unreadable, corrupt, or belongs to another cluster or member. */
export class StorageError extends CronraftError {
  readonly path: string;

  constructor(code: 'CRONRAFT_STORAGE_CORRUPT' | 'CRONRAFT_STORAGE_MISMATCH' | 'CRONRAFT_STORAGE_UNREADABLE', path: string, message: string, options?: { cause?: unknown }) {
    super(code, `${path}: ${message}`, options);
    this.path = path;
  }
}

/**
 * This member is too old for the cluster: the cluster version in force (in its data directory,
 * a leader's snapshot or the log) is one it cannot read. It never skips what it cannot read:
 * it stops. Upgrade it to a release that reads `needs` (README, "Upgrading").
 */
export class VersionTooOldError extends CronraftError {
  /** The cluster version needed. */
  readonly needs: number;
  /** The highest cluster version this member reads. */
  readonly reads: number;

  constructor(needs: number, reads: number, where: string) {
    super('CRONRAFT_VERSION_TOO_OLD', `${where} needs cluster version ${needs}; this member reads up to ${reads}: upgrade it (a downgrade past a version's activation is refused)`);
    this.needs = needs;
    this.reads = reads;
  }
}

/**
 * A feature needs a cluster version that is not active yet: some member of the cluster runs a
 * release that cannot read it. It turns on once every member has been upgraded and the leader
 * has raised the version (`state().version`).
 */
export class VersionNotActiveError extends CronraftError {
  readonly feature: string;
  readonly needs: number;
  readonly active: number;
  /**
   * The members of the configuration that never said what they read (none started since the
   * cluster formed, or one of cronraft 0.1.0): the version waits for them, however long.
   */
  readonly silent: readonly string[];

  constructor(feature: string, needs: number, active: number, silent: readonly string[] = []) {
    super(
      'CRONRAFT_VERSION_NOT_ACTIVE',
      `${feature} needs cluster version ${needs}; the cluster runs version ${active} until every member reads ${needs} (a new cluster raises its version a step at a time within seconds of forming: state().version says what it waits for)${silentText(silent)}`,
    );
    this.feature = feature;
    this.needs = needs;
    this.active = active;
    this.silent = silent;
  }
}

/**
 * What the version waits for when members never said what they read: a founding member never
 * started (an address mistyped, a machine never provisioned) keeps it at 1 for good, and with it
 * every membership change, a removal of that member included. Said, not left to a wait.
 */
function silentText(silent: readonly string[]): string {
  if (silent.length === 0) return '';
  const shown = silent.slice(0, 3).join(', ') + (silent.length > 3 ? ` and ${silent.length - 3} more` : '');
  return `. It waits for ${shown}, which never said what it reads since the cluster formed: start a member of this release at that address (one with an empty data directory joins), or upgrade it if it runs cronraft 0.1.0; the version then rises, and a member not wanted can be removed`;
}

/**
 * A call or request names a job the cluster does not know (an operation, `pause`, `resume`,
 * `trigger`: none registered under `job` as this member applied the log after a read barrier;
 * an HTTP request for one job).
 */
export class UnknownJobError extends CronraftError {
  readonly job: string;

  constructor(job: string) {
    super('CRONRAFT_UNKNOWN_JOB', `No job named ${describe(job)} is registered in the cluster`);
    this.job = job;
  }
}

/**
 * The leader refused a change of the configuration (`removeMember`): `reason` says why, as the
 * protocol gives it (membership.ts's ConfChangeOutcome): `pending` (an earlier change is not
 * applied yet: retry), `not-committed-in-term` (a new leader has not committed yet: retry),
 * `not-member`, `already-member`, `not-learner`, `last-voter` or `malformed`.
 */
export class MembershipChangeRefusedError extends CronraftError {
  readonly reason: string;

  /** `remedy`: what to do about it, where the reason alone does not say. */
  constructor(reason: string, what: string, remedy?: string) {
    super('CRONRAFT_MEMBERSHIP_REFUSED', `The leader refused to ${what}: ${reason}${remedy === undefined ? '' : `. ${remedy}`}`);
    this.reason = reason;
  }
}

/**
 * A member with an empty data directory found no cluster to join within `joinTimeoutMs` (or
 * longer, waiting on a looker found by mDNS: the message says how long it looked) and may
 * not form one (README "Forming the cluster"): its seeds did not answer, or a cluster runs but
 * did not add it in time. The message says what each seed last answered.
 */
export class JoinFailedError extends CronraftError {
  constructor(timeoutMs: number, answers: string) {
    super('CRONRAFT_JOIN_FAILED', `No running cluster added this member within ${timeoutMs} ms, and it may not form one (its own address is not among its peers, or a cluster runs): ${answers}`);
  }
}

/**
 * This member was removed from the cluster's configuration: it applies nothing more and takes
 * no part in elections; every request waiting on it fails with this error. Its data directory
 * belongs to a configuration it is no longer in: to take part again, it must be added back.
 */
export class RemovedError extends CronraftError {
  readonly index: number;

  constructor(index: number) {
    super('CRONRAFT_REMOVED', `This member was removed from the cluster (the change applied at or before index ${index})`);
    this.index = index;
  }
}

/**
 * The most characters of a refused value an error's message quotes: a job name, topic or payload
 * of megabytes made a message of megabytes, in every log line that printed it.
 */
export const MAX_DESCRIBED_CHARS = 200;

function describe(value: unknown): string {
  const text = describeWhole(value);
  return text.length <= MAX_DESCRIBED_CHARS ? text : `${text.slice(0, MAX_DESCRIBED_CHARS)}… (${text.length} characters)`;
}

function describeWhole(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'number' || typeof value === 'boolean' || value === null || value === undefined) return String(value);
  // JSON writes an invalid Date as null.
  if (value instanceof Date) return Number.isNaN(value.getTime()) ? 'Invalid Date' : value.toISOString();
  try {
    return JSON.stringify(value) ?? typeof value;
  } catch {
    return typeof value;
  }
}

/** A frame from the network (or a message to send) does not match the wire format: it is dropped, never half-used. */
export class CodecError extends CronraftError {
  constructor(message: string, options?: { cause?: unknown }) {
    super('CRONRAFT_MALFORMED_MESSAGE', message, options);
  }
}

/**
 * Why a listen failed, from its cause: the system's own words (`listen EADDRINUSE: address
 * already in use ...`) where the cause holds them. libp2p's message wraps them in advice about
 * its own options, which are not cronraft's, and the stack of the error inside.
 */
function listenReason(cause: unknown): string {
  if (!(cause instanceof Error)) return '';
  const system = /listen E[A-Z]+[^\n]*/.exec(cause.message);
  return `: ${system !== null ? system[0] : (cause.message.split('\n')[0] ?? '')}`;
}

/** The transport could not listen on its address, e.g. because the port is taken. */
export class ListenError extends CronraftError {
  readonly address: string;

  constructor(address: string, options?: { cause?: unknown }) {
    super('CRONRAFT_LISTEN_FAILED', `Cannot listen on ${address}${listenReason(options?.cause)}`, options);
    this.address = address;
  }
}

/**
 * Why a run's `ctx.signal` aborted: `reason` says which. `timeout`: the run exceeded its
 * `timeoutMs`. `reassigned`: its slot moved to another member under a newer fencing token.
 * `interrupted`: the cluster, not the job, ended it (this member lost the leader for longer
 * than its lease, or no leader confirmed the claim). `replaced`: a later slot of the job
 * replaced it (overlap 'replace'). `cancelled`: an operator cancelled it (`cluster.cancel()`,
 * `POST /v1/jobs/:name/cancel`, `cronraft cancel`). `stopping`: this member is stopping. And
 * `ended`, which no signal has: a slot's `ctx.emit` called after its run ended.
 */
export class RunAbortedError extends CronraftError {
  /** Why the run's signal aborted; 'ended' only for a `ctx.emit` after its run ended, which no signal says. */
  readonly reason: 'timeout' | 'reassigned' | 'interrupted' | 'replaced' | 'cancelled' | 'stopping' | 'ended';

  constructor(reason: RunAbortedError['reason'], message: string) {
    super(`CRONRAFT_RUN_${reason.toUpperCase()}`, message);
    this.reason = reason;
  }
}

/**
 * The message of what user code threw, as a record keeps it: an Error's message (its name when
 * it has none: `new Error()` was recorded as 'failed', an AggregateError's kind lost), an
 * object's string `message` (a thrown `{ message, code }` was '[object Object]'), anything
 * else as a string. A value that cannot be made one (Object.create(null), a toString that
 * throws) gets a message saying so, rather than throwing where the failure is being recorded.
 */
export function thrownMessage(thrown: unknown): string {
  try {
    if (thrown instanceof Error) return thrown.message === '' ? String(thrown.name) : String(thrown.message);
    const message = typeof thrown === 'object' && thrown !== null ? (thrown as { message?: unknown }).message : undefined;
    return typeof message === 'string' && message !== '' ? message : String(thrown);
  } catch {
    return 'a value with no string form';
  }
}
