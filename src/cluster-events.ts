import type { EventEmitter } from 'node:events';
import { InvalidArgumentError, thrownMessage } from './errors.js';
import type { Role } from './raft/ready.js';
import type { SchedulerCommand } from './scheduler/command.js';
import type { ApplyResult } from './scheduler/records.js';
import type { NodeId } from './raft/types.js';
import type { RunRecord } from './runtime/scheduler/job-types.js';
import type { Batch, BatchSummary } from './runtime/fanout/batches.js';
import type { LoopBlocked } from './runtime/loop-blocks.js';

/** The member a change of the configuration concerns, and the index of its entry. */
export interface MembershipEventPayload {
  readonly id: NodeId;
  readonly index: number;
}

/** The events a Cluster emits, with their payloads. */
export interface ClusterEvents {
  /** The leader changed (null: none known, e.g. during an election). */
  leader: [{ readonly leader: NodeId | null; readonly term: number }];
  /** This member's role changed. */
  role: [{ readonly role: Role; readonly term: number }];
  /**
   * An entry was committed and applied on this member, in log order. Entries that a snapshot
   * covers (after a restart, or installed from the leader) are not delivered again.
   */
  applied: [{ readonly index: number; readonly term: number; readonly data: Uint8Array }];
  /** A slot ran on this member (its outcome is also recorded in the log). */
  run: [RunRecord];
  /**
   * A job's handler (`kind: 'run'`) or a work item's (`kind: 'item'`) held this member's event
   * loop, before its first await, for `ms`, as long as the member's lease (`leaseMs`, two
   * election timeouts) or longer, or something else did (`kind: 'loop'`: work after an await, the
   * app's own, a long GC pause, a stopped process): the member answered nothing meanwhile, so its
   * slots may run again on other members, or its items, under higher fencing tokens (README,
   * "Handlers and the event loop").
   */
  blocked: [LoopBlocked];
  /** The cluster version rose (README, "Upgrading"): features of version `to` are on from entry `index`. */
  'version-activated': [{ readonly from: number; readonly to: number; readonly index: number }];
  /**
   * Changes of the configuration, as this member applies them (README, "Membership"); not
   * those a snapshot from the leader covers, nor before start. `member-joined`: a member was
   * added as a learner; `member-promoted`: a learner became a voter; `member-left`: a member
   * removed itself (`stop({ leave: true })`); `member-removed`: a member was removed by another
   * (`removeMember`, or the leader's rule for a member unreachable for `deadMemberAfterMs`).
   */
  'member-joined': [MembershipEventPayload];
  'member-promoted': [MembershipEventPayload];
  'member-left': [MembershipEventPayload];
  'member-removed': [MembershipEventPayload];
  /**
   * An attempt of a work item run on this member failed, as recorded in the log: it will be
   * retried after its backoff, or (`dead`) it went to the topic's dead letters.
   */
  'item-failed': [{ readonly topic: string; readonly id: number; readonly attempt: number; readonly error: string; readonly dead: boolean; readonly index: number }];
  /** A batch of work items emitted on this member settled: each item succeeded or went to the dead letters. */
  'batch-settled': [{ readonly batch: Batch; readonly summary: BatchSummary }];
  /** A run on this member failed (or timed out) with no retry left: its slot's final outcome. */
  failed: [RunRecord];
  /**
   * A slot was recorded missed, as this member applied it (every member tells it): nobody ran
   * it and nobody will (`expire`, with the reason), or a removed member's share of a mode 'all'
   * slot (`member-removed`). Slots a catch-up policy dropped are told by `slots-dropped`.
   */
  missed: [{ readonly job: string; readonly slot: Date; readonly reason: string; readonly index: number }];
  /**
   * A job's catch-up policy dropped slots, as this member applied it (every member tells it):
   * the `count` slots after `after` up to `through` (an outage's, or a one-shot's in the past
   * with `catchUp: 'none'`) are never claimed nor run, and `history()` does not list them; they
   * are counted in `state().jobs[].missedSlots`.
   */
  'slots-dropped': [{ readonly job: string; readonly count: number; readonly after: Date; readonly through: Date; readonly index: number }];
  /**
   * An operator's cancel (`cancel()`) reached runs of a job, as this member applied it (every
   * member tells it): the slots whose runs it ended, the member it was asked of, and its entry.
   * Each run's own end comes with the `run` event of the member that ran it (outcome `cancelled`).
   */
  cancelled: [{ readonly job: string; readonly slots: readonly Date[]; readonly by: NodeId; readonly index: number }];
  /**
   * A job this member scheduled was not registered, as this member applied its registration:
   * the cluster holds as many jobs as it may (10,000, or from cluster version 3 3.5 MiB of them as
   * the snapshots take them, with their handlers) and none of them could make room (a job that
   * no member has a handler for anymore, with no claim unsettled or in progress, from cluster
   * version 3); or, past those bytes, this member's handler for a job already registered was
   * refused (the job runs on the members that have one, if any). Unschedule jobs, then schedule
   * it again. Or (`spec-conflict`) the job is registered in another form (spec, mode or options)
   * that another member still has a handler for (a rolling deploy): this member is not assigned
   * it, and its own form takes the job over once no other member has the old one (from cluster
   * version 3, but for a change of mode, which never is). Told again when this member replays the
   * entry after a restart.
   */
  'job-refused': [{ readonly job: string; readonly reason: 'too-many-jobs' | 'spec-conflict'; readonly index: number }];
  /**
   * A consumer this member registered (`consume`) was refused, as this member applied it: the
   * cluster holds as many topics as it may (1,000), or as many bytes of topics and their
   * consumers (1 MiB as the snapshots take them); this member runs none of the topic's items,
   * and registers its consumer again only when it starts again. A topic is forgotten once it has
   * no consumer, no unsettled item and no dead letter (drop them), which makes room. Told again
   * when this member replays the entry after a restart.
   */
  'consume-refused': [{ readonly topic: string; readonly reason: 'too-many-topics'; readonly index: number }];
  /** A member this member reached before is unreachable (cluster-watch.ts: as this member sees it). */
  'member-unreachable': [{ readonly id: NodeId; readonly lastContactMs: number | null }];
  /** A member's clock is further than maxClockSkewMs from the cluster's time: it is given no work. */
  'clock-skewed': [{ readonly id: NodeId; readonly offsetMs: number }];
  /** A fatal error stopped this member (e.g. its disk failed). */
  error: [Error];
}

/** Every event a Cluster tells: a Record, so that an event of ClusterEvents missing here, or one here of no such event, fails to compile. */
const EVENTS: Readonly<Record<keyof ClusterEvents, true>> = {
  leader: true,
  role: true,
  applied: true,
  run: true,
  blocked: true,
  'version-activated': true,
  'member-joined': true,
  'member-promoted': true,
  'member-left': true,
  'member-removed': true,
  'item-failed': true,
  'batch-settled': true,
  failed: true,
  missed: true,
  'slots-dropped': true,
  cancelled: true,
  'job-refused': true,
  'consume-refused': true,
  'member-unreachable': true,
  'clock-skewed': true,
  error: true,
};

/** EventEmitter's own events, which it tells itself as listeners come and go. */
const EMITTER_EVENTS: ReadonlySet<string> = new Set(['newListener', 'removeListener']);

/**
 * Refuses an event no Cluster tells: fan-out's first sketch emitted work items with
 * `cluster.emit(topic, items)`, which is EventEmitter's emit, so a JavaScript app that called it
 * told an event nobody listened to and emitted nothing, unsaid (TypeScript refused it with a
 * type error that named no alternative). Symbols pass (EventEmitter.errorMonitor).
 * @throws InvalidArgumentError naming emitItems
 */
export function refuseForeignEvent(event: string | symbol): void {
  if (typeof event !== 'string' || Object.hasOwn(EVENTS, event) || EMITTER_EVENTS.has(event)) return;
  throw new InvalidArgumentError('event', event, "one of the Cluster's events (work items are emitted with cluster.emitItems(topic, items), or ctx.emit in a slot)");
}

/** The `cancelled` event a scheduler command applied here makes, if any: a `cancel-runs` that reached a slot. */
export function cancelledEventOf(index: number, command: SchedulerCommand, result: unknown): ClusterEvents['cancelled'][0] | null {
  if (command.type !== 'cancel-runs') return null;
  const reached = (result as { readonly ok?: boolean; readonly cancelled?: ReadonlyArray<{ readonly slotMs: number }> } | undefined)?.cancelled ?? [];
  if (reached.length === 0) return null;
  return { job: command.job, slots: reached.map((claim) => new Date(claim.slotMs)), by: command.member, index };
}

/**
 * Emits `event` on `cluster` to the app's listeners, whose errors are the app's: a listener that
 * throws must not stop the member applying the log, nor keep the other events of the same
 * change (a run's `failed` after its `run`) from being told. Before, the events told straight
 * (`role`, `leader`, `run`, fan-out's and the watch's) let such an error out into the member's
 * loop, which failed the member.
 */
export function tellApp<K extends keyof ClusterEvents>(cluster: EventEmitter<ClusterEvents>, event: K, ...payload: ClusterEvents[K]): void {
  try {
    (cluster.emit as (name: string, ...values: unknown[]) => boolean)(event, ...payload);
  } catch (error) {
    warnListenerThrew(cluster, event, error);
  }
}

/** The events whose listeners threw, per Cluster: each is warned of once. */
const warned = new WeakMap<object, Set<string>>();

/**
 * Tells the app, through a process warning (printed to stderr unless the app listens for
 * `process.on('warning')`), that a listener of `event` threw: once per event and Cluster, so
 * that a listener throwing on every run does not print a warning per run. Dropped unsaid, a
 * typo in a listener left it doing nothing, with no trace (found by a stranger's test).
 */
function warnListenerThrew(cluster: object, event: string, error: unknown): void {
  let events = warned.get(cluster);
  if (events === undefined) warned.set(cluster, (events = new Set()));
  if (events.has(event)) return;
  events.add(event);
  const stack = error instanceof Error ? error.stack : undefined;
  process.emitWarning(`A listener of the cluster's '${event}' event threw: ${thrownMessage(error)} (the member goes on; later throws of its listeners are not told again)`, {
    type: 'CronraftListenerWarning',
    code: 'CRONRAFT_LISTENER_THREW',
    ...(stack === undefined ? {} : { detail: stack }),
  });
}

/** The `missed` event a scheduler command applied here makes, if any: an `expire` or a `forfeit` that applied. */
export function missedEventOf(index: number, command: SchedulerCommand, result: unknown): ClusterEvents['missed'][0] | null {
  if (command.type !== 'expire' && command.type !== 'forfeit') return null;
  if ((result as { readonly ok?: boolean } | undefined)?.ok === false) return null;
  return { job: command.job, slot: new Date(command.slotMs), reason: command.type === 'expire' ? command.reason : 'member-removed', index };
}

/** The `slots-dropped` event a scheduler command applied here makes, if any: a `skip` that applied. */
export function slotsDroppedEventOf(index: number, command: SchedulerCommand, result: unknown): ClusterEvents['slots-dropped'][0] | null {
  if (command.type !== 'skip' || (result as { readonly ok?: boolean } | undefined)?.ok !== true) return null;
  return { job: command.job, count: command.count, after: new Date(command.fromMs), through: new Date(command.throughMs), index };
}

/** The `job-refused` event a registration of this member's applied here makes, if any. */
export function jobRefusedEventOf(self: NodeId, index: number, command: SchedulerCommand, result: unknown): ClusterEvents['job-refused'][0] | null {
  if (command.type !== 'register' || command.member !== self) return null;
  const r = result as ApplyResult | undefined;
  return r?.ok === false && (r.reason === 'too-many-jobs' || r.reason === 'spec-conflict') ? { job: command.job, reason: r.reason, index } : null;
}
