import { CodecError } from '../errors.js';
import type { Entry } from '../raft/types.js';
import type { SchedulerCommand } from '../scheduler/command.js';
import type { ApplyResult, SchedulerStateParts } from '../scheduler/records.js';
import { decodeSchedulerSnapshot, encodeSchedulerSnapshot } from '../scheduler/state-snapshot.js';
import type { AppendedDecodings } from './appended-decodings.js';
import { decodeEntry, isUserCommand, type SkippedEntry } from './commands.js';
import type { StateMachine } from './state-machine.js';
import { decodeMemberSnapshot, encodeClusterPart, encodeMemberSnapshot } from './member-snapshot.js';
import type { ClusterCommand } from '../version/cluster-command.js';
import type { ClusterApplyResult, ClusterVersionState } from '../version/cluster-version.js';
import { SchedulerMirror } from './scheduler-mirror.js';
import { FanoutState, type FanoutApplyResult, type FanoutStateParts } from '../fanout/state.js';
import type { FanoutCommand } from '../fanout/command.js';
import { decodeFanoutSnapshot, encodeFanoutSnapshot, fanoutSnapshotSteps } from '../fanout/state-snapshot.js';
import { FANOUT_VERSION } from '../version/versions.js';
import type { SchedulerRuntime } from './scheduler/scheduler-runtime.js';

export interface MemberStateMachineHooks {
  /** An application entry (`cluster.propose`) applied here, in log order. */
  readonly onUserEntry?: (entry: Entry, data: Uint8Array) => void;
  /**
   * Whether onUserEntry wants application entries now (`Cluster`: whether anyone listens). When
   * it does not, they are not decoded at all: every member applies every entry, and decoding
   * what nobody reads cost every member time and garbage on each entry. @default true
   */
  readonly wantsUserEntries?: () => boolean;
  /** An entry every member skips (see decodeEntry), at its index. */
  readonly onSkipped?: (index: number, reason: SkippedEntry['reason']) => void;
  /** A cluster command applied here (a version announced or raised), with its result. */
  readonly onClusterApplied?: (index: number, command: ClusterCommand, result: ClusterApplyResult) => void;
  /** A fan-out command applied here, with its result and its entry's proposal id (issue 19). */
  readonly onFanoutApplied?: (index: number, command: FanoutCommand, result: FanoutApplyResult, pid: string) => void;
  /** A scheduler command applied here, with its result and the cluster version it applied under. */
  readonly onSchedulerApplied?: (index: number, command: SchedulerCommand, result: unknown, version: number) => void;
  /**
   * A monotonic clock, ms, by which a step of a snapshot goes on while it has time (see
   * SNAPSHOT_STEP_BUDGET_MS). @default none: a piece of work a step
   */
  readonly now?: () => number;
  /** The entries a leader decoded as it appended them, which the apply takes rather than decode again. */
  readonly appended?: AppendedDecodings;
}

/**
 * A member's replicated state machine: every Normal entry is a command, an application's bytes
 * (handed on as they apply, not kept) or the scheduler's (applied to its state). A snapshot holds
 * the scheduler's state; the driver's compactions take it in steps, of a mirror of the state
 * (see SchedulerMirror).
 *
 * A leader's snapshot is decoded and checked in full by `acceptsSnapshot` before the protocol
 * takes it in, and the driver restores those very bytes right after: the decoded state is kept
 * from the one to the other, for the live state (the mirror decodes the bytes again: records
 * belong to one state). It is kept for the last snapshot checked only, and given to one restore
 * only. (`schedulerOf`: the member builds its scheduler after the driver this is given to.)
 */
export function memberStateMachine(schedulerOf: () => SchedulerRuntime, cluster: ClusterVersionState, hooks: MemberStateMachineHooks = {}, fanout: FanoutState = new FanoutState()): StateMachine {
  let checked: { readonly data: Uint8Array; readonly parts: SchedulerStateParts; readonly fanout: FanoutStateParts | null } | null = null;
  // Fan-out's state goes into snapshots once its version is in force (member-snapshot.ts, format 3).
  const fanoutPart = (): Uint8Array | null => (cluster.active >= FANOUT_VERSION ? encodeFanoutSnapshot(fanout) : null);
  const mirror = new SchedulerMirror(() => schedulerOf().state.limits, hooks.now);
  // One scheduler command, on the live state and its mirror alike, under the cluster's version in
  // force (what some commands do depends on it, see SchedulerState.apply).
  const applyScheduler = (index: number, command: SchedulerCommand): ApplyResult => {
    const result = schedulerOf().apply(index, command, cluster.active);
    mirror.apply(index, command, cluster.active);
    hooks.onSchedulerApplied?.(index, command, result, cluster.active);
    return result;
  };
  return {
    apply: (entry) => {
      // Nothing here reads an application entry but the hook: skipped, it needs no decoding.
      if ((hooks.onUserEntry === undefined || hooks.wantsUserEntries?.() === false) && isUserCommand(entry.data)) return undefined;
      // Throws VersionTooOldError for an entry of an active version this member cannot read:
      // the driver stops the member before the entry counts as applied.
      const command = hooks.appended === undefined ? decodeEntry(entry.data, cluster.active, cluster.support) : hooks.appended.take(entry.data, cluster.active, cluster.support);
      switch (command.kind) {
        case 'scheduler':
          return applyScheduler(entry.index, command.command);
        case 'scheduler-batch':
          // One entry, many registrations, each applied as if it had an entry of its own (none
          // reads the index: registrations carry no fencing token).
          for (const one of command.commands) applyScheduler(entry.index, one);
          return undefined;
        case 'user':
          hooks.onUserEntry?.(entry, command.data);
          return undefined;
        case 'cluster': {
          const before = cluster.active;
          const result = cluster.apply(command.command, entry.index);
          // A version raised here changes what the scheduler keeps, on the live state and the mirror alike.
          if (cluster.active !== before) {
            schedulerOf().versionRaised(cluster.active);
            mirror.versionRaised(entry.index, cluster.active);
          }
          hooks.onClusterApplied?.(entry.index, command.command, result);
          return result;
        }
        case 'extension':
          return cluster.applyExtension(command.command, entry.index);
        case 'fanout': {
          const result = fanout.apply(entry.index, command.command);
          hooks.onFanoutApplied?.(entry.index, command.command, result, entry.pid);
          return result;
        }
        case 'skip':
          hooks.onSkipped?.(entry.index, command.reason);
          return undefined;
      }
    },
    // The scheduler's state and the cluster's: applications' own entries are delivered as they
    // apply and are not replayed from a snapshot.
    snapshot: () => encodeMemberSnapshot(encodeSchedulerSnapshot(schedulerOf().state), encodeClusterPart(cluster.save()), fanoutPart()),
    // Taken of the mirror, which holds still while the live state moves on (see SchedulerMirror).
    // The mirror catches up with the live state as the snapshot begins, so the cluster's state,
    // small, is taken from the live one now, at the same index.
    // Fan-out's state is taken at the same index, its records held as they are and encoded in
    // steps after the scheduler's (fanoutSnapshotSteps).
    snapshotInSteps: () => mirror.snapshotInSteps(encodeClusterPart(cluster.save()), cluster.active >= FANOUT_VERSION ? fanoutSnapshotSteps(fanout) : null),
    restore: (data) => {
      const decoded = checked?.data === data ? checked.parts : null;
      const decodedFanout = checked?.data === data ? checked.fanout : null;
      checked = null;
      const parts = decodeMemberSnapshot(data);
      if (parts === null) throw new CodecError('Not a member snapshot this version reads');
      // First, since it may refuse (a version this member cannot read) and then changes nothing.
      if (parts.cluster === null) cluster.reset();
      else cluster.restore(parts.cluster);
      // A snapshot of a cluster before version 3 holds no fan-out state: it is empty then.
      const fanoutParts = decodedFanout ?? (parts.fanout === null ? null : decodeFanoutSnapshot(parts.fanout, fanout.limits));
      schedulerOf().restore(decoded ?? parts.scheduler);
      if (fanoutParts === null) fanout.clear();
      else fanout.restore(fanoutParts);
      // The mirror decodes the bytes again: the decoded records belong to the live state.
      mirror.restore(parts.scheduler);
    },
    acceptsSnapshot: (data) => {
      checked = null;
      const parts = decodeMemberSnapshot(data);
      // A snapshot of a cluster version this member cannot read throws (VersionTooOldError):
      // it could never catch up, and stops.
      if (parts === null || (parts.cluster !== null && !cluster.accepts(parts.cluster))) return false;
      try {
        checked = { data, parts: decodeSchedulerSnapshot(parts.scheduler, schedulerOf().state.limits), fanout: parts.fanout === null ? null : decodeFanoutSnapshot(parts.fanout, fanout.limits) };
        return true;
      } catch {
        return false;
      }
    },
  };
}
