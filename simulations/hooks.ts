import type { NodeId } from '../src/raft/types.js';
import type { WireMessage } from '../src/transport/envelope.js';
import { MISSED, MISSED_REASONS } from '../src/scheduler/command.js';
import type { ApplyResult } from '../src/scheduler/records.js';
import type { MemberHooks } from './member.js';
import type { SchedulerChecker } from './scheduler-checker.js';
import { SIM_EPOCH_MS } from './scheduler.js';
import type { SimWorld } from './world.js';

/** Outcomes a slot may get with no run of it (the report shows them; a run's end has its own event). */
const NOT_RUN_OUTCOMES: ReadonlySet<string> = new Set(['skipped', 'replaced', 'cancelled', 'interrupted']);

/**
 * What every member tells the run as it goes (its start, what it applies, its role, its runs,
 * the messages it sends and receives, why it stopped), handed to the checkers that judge it, the
 * trace that fingerprints the run, and the timeline the report draws. It exists apart from the
 * world that builds the members so that the wiring of the checkers reads in one place.
 */
export function memberHooks(world: SimWorld): MemberHooks {
  const { scheduler, safety, slots, runChecks, configurations, versionChecks, refusals, trace, leading, record, changes } = world;
  return {
    onStart: (id, snapshotIndex) => {
      safety.onStart(id, snapshotIndex);
      slots.onMemberStart(scheduler.nowMs, id);
    },
    onSnapshotInstalled: (id, index) => {
      trace.update(`${scheduler.nowMs} ${id} installs ${index}\n`);
      world.snapshotsInstalled++;
      // Applying starts again after the snapshot, as after a restart from one.
      safety.onStart(id, index);
    },
    onApplied: (id, entry) => {
      trace.update(`${scheduler.nowMs} ${id} apply ${entry.index}@${entry.term}\n`);
      safety.onApplied(scheduler.nowMs, id, entry);
      configurations.onApplied(scheduler.nowMs, entry);
      versionChecks.onApplied(scheduler.nowMs, world.memberOf(id), entry);
      world.alsoOnApplied?.(id, entry);
    },
    onSoftState: (id, node, s) => {
      if (s.role === 'leader' && leading.get(id) !== node.term) {
        leading.set(id, node.term);
        trace.update(`${scheduler.nowMs} ${id} leads ${node.term}\n`);
        safety.onLeader(scheduler.nowMs, id, node.term, node.log);
        record({ t: scheduler.nowMs, kind: 'leader', member: id, term: node.term });
      } else if (s.role !== 'leader' && leading.has(id)) {
        leading.delete(id);
        record({ t: scheduler.nowMs, kind: 'follower', member: id, term: node.term });
      }
    },
    onSchedulerApplied: (id, index, command, result, version) => {
      const t = scheduler.nowMs;
      const applied = result as Parameters<SchedulerChecker['onApplied']>[4];
      const first = slots.onApplied(t, id, index, command, applied, version);
      runChecks.onApplied(t, id, index, command, applied, first, version);
      if (!first || !applied.ok) return;
      if (command.type === 'claim' || command.type === 'reassign') {
        record({ t, kind: 'claim', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: index, assignees: command.assignees });
      } else if (command.type === 'skip') {
        record({ t, kind: 'missed', job: command.job, throughT: command.throughMs - SIM_EPOCH_MS, count: command.count });
      } else if (command.type === 'outcome' && NOT_RUN_OUTCOMES.has(command.outcome)) {
        record({ t, kind: 'outcome', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: command.token, member: command.member, outcome: command.outcome, ...(command.error === undefined ? {} : { reason: command.error }) });
      } else if (command.type === 'forfeit') {
        record({ t, kind: 'outcome', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: command.token, member: command.member, outcome: MISSED, reason: MISSED_REASONS['member-removed'] });
      } else if (command.type === 'expire') {
        const applied = result as ApplyResult;
        const assignee = (applied.ok ? applied.claim?.assignees[0] : undefined) ?? '';
        record({ t, kind: 'outcome', job: command.job, slotT: command.slotMs - SIM_EPOCH_MS, token: index, member: assignee, outcome: MISSED, reason: MISSED_REASONS[command.reason] });
      }
    },
    onRunStart: (id, incarnation, run) => {
      trace.update(`${scheduler.nowMs} ${id} runs ${run.job}@${run.slotMs} ${run.fencingToken}\n`);
      slots.onRunStart(scheduler.nowMs, id, incarnation, run);
      runChecks.onRunStart(scheduler.nowMs, id, incarnation, run);
    },
    onRun: (id, incarnation, run) => {
      slots.onRunEnd(id, incarnation, run);
      runChecks.onRunEnd(scheduler.nowMs, id, incarnation, run);
      const endT = scheduler.nowMs;
      const startT = endT - (run.endedAtMs - run.startedAtMs);
      record({ t: endT, kind: 'run', job: run.job, slotT: run.slotMs - SIM_EPOCH_MS, token: run.fencingToken, member: id, startT, endT, outcome: run.outcome });
    },
    onFanoutApplied: (id, index, command, result) => {
      const t = scheduler.nowMs;
      trace.update(`${t} ${id} fan-out ${index} ${command.type}\n`);
      const term = world.memberOf(id).driver?.node.log.term(index) ?? 0;
      world.fanoutChecks?.onApplied(t, id, index, term, command, result);
    },
    onItem: (id, incarnation, topic, event) => {
      trace.update(`${scheduler.nowMs} ${id} item ${event.type} ${event.ctx.id} ${event.ctx.fencingToken}\n`);
      world.fanoutChecks?.onItem(scheduler.nowMs, id, incarnation, topic, event);
    },
    ...(changes ? { onReceiving: (id: NodeId, m: WireMessage) => configurations.onReceiving(world.memberOf(id), m) } : {}),
    onReceived: (id, m, termBefore) => {
      runChecks.onReceived(scheduler.nowMs, id, m);
      if (changes) configurations.onReceived(scheduler.nowMs, world.memberOf(id), m, termBefore);
    },
    ...(changes ? { onSend: (id: NodeId, m: WireMessage) => configurations.onSend(scheduler.nowMs, world.memberOf(id), m) } : {}),
    onHandler: (id, incarnation, event) => runChecks.onHandler(scheduler.nowMs, id, incarnation, event),
    onLock: (id, incarnation, event) => {
      trace.update(`${scheduler.nowMs} ${id} lock ${event.type} ${event.name} ${event.token}\n`);
      runChecks.onLock(scheduler.nowMs, id, incarnation, event);
    },
    onFatal: (id, error) => {
      runChecks.onFatal(id);
      // A member removed stops as removed: the end the removal meant, not a failure.
      if (configurations.isExpectedRemoval(scheduler.nowMs, id, error)) world.membership?.onRemoved(world.memberOf(id));
      else if (!versionChecks.onFatal(scheduler.nowMs, id, error)) refusals.onFatal(scheduler.nowMs, id, error);
    },
  };
}
