import type { NodeId } from '../src/raft/types.js';
import { holdsReleasedClaim } from '../src/runtime/scheduler/handover.js';
import { claimKey } from '../src/scheduler/records.js';
import type { SchedulerState } from '../src/scheduler/state.js';
import { instantsBetween } from '../src/scheduler/spec.js';
import { outcomeGraceMs, type SimJob } from './jobs.js';
import type { RunLoop } from './run-loop.js';
import { SIM_EPOCH_MS } from './scheduler.js';
import type { SchedulerChecker } from './scheduler-checker.js';
import type { Report } from './violations.js';
import type { SimWorld } from './world.js';

/** A graceful stop's time for runs in progress: `Cluster`'s default `stopTimeoutMs`. */
export const HANDOVER_STOP_TIMEOUT_MS = 1000;
/** How long a member stopped gracefully stays down before it starts again (a deploy's restart). */
export const HANDOVER_DOWN_MS = 300;
/** Between one member's restart and the next one's stop: it catches up and takes work again. */
export const HANDOVER_SETTLE_MS = 3000;
/**
 * How late a slot may start while members stop gracefully one after the other: a claim a
 * stopping member releases moves once its unregistration commits and the leader plans (at
 * once, as the unregistration applies), a few commit rounds; when a stopping leader hands over
 * leadership just then, the new assignee's read barrier (a claim it applied late) waits for the
 * new leader's first commit. Without the handover, a claim waited for the whole stop, whose
 * runs alone may take HANDOVER_STOP_TIMEOUT_MS; checkReleased is what tells the two apart.
 */
export const HANDOVER_LATENESS_MS = 600;

/** How near its instant a member that held a slot must have been full for the slot to have waited for a run permit (ms): the lateness check's bound after healing. */
const PERMIT_WAIT_MARGIN_MS = 50;

/**
 * Jobs for a run that checks graceful stops: a slot every second, one every 200 ms whose runs
 * often go on as a member stops, and one whose runs last most of the stop's time.
 */
export const HANDOVER_JOBS: readonly SimJob[] = [
  { name: 'every-second', spec: { every: '1s' } },
  { name: 'fast', spec: { every: '200ms' }, runMs: [20, 150] },
  { name: 'long', spec: { every: '1s' }, runMs: [300, 800], options: { overlap: 'allow' } },
];

/** One member's graceful stop and restart, in true ms. */
export interface GracefulRestart {
  readonly member: NodeId;
  readonly stopT: number;
  readonly downT: number;
  readonly upT: number;
}

/**
 * The jobs a rolling restart of graceful stops must run on time, exactly once: mode 'one',
 * runs that never fail and end within the stop's time (longer ones are reported interrupted and
 * run again, by design).
 */
export function handoverJobs(jobs: readonly SimJob[]): SimJob[] {
  return jobs.filter((j) => (j.options?.mode ?? 'one') === 'one' && (j.failRate ?? 0) === 0 && (j.runMs?.[1] ?? 50) < HANDOVER_STOP_TIMEOUT_MS && j.options?.timeoutMs === undefined);
}

/**
 * `handover`: every slot of `handoverJobs` due in [fromT, toT] (true ms), while members stopped
 * gracefully one after the other and nothing else went wrong, started exactly once (one skipped
 * by its overlap policy excepted) and within HANDOVER_LATENESS_MS of its instant, unless
 * `waitedForPermit` says a member that held it then was running as many runs as its
 * maxConcurrent (a member whose jobs need more runs at once than it may start is late with or
 * without graceful stops: found by a census with maxConcurrent 1, in every seed).
 */
export function checkHandover(
  t: number,
  report: Report,
  slots: SchedulerChecker,
  jobs: readonly SimJob[],
  window: { readonly fromT: number; readonly toT: number },
  restarts: readonly GracefulRestart[],
  waitedForPermit: (job: string, slotMs: number) => boolean = () => false,
): void {
  const during = restarts.map((r) => `${r.member} ${r.stopT}..${r.downT}, up ${r.upT}`).join('; ');
  for (const job of handoverJobs(jobs)) {
    const info = slots.jobs.get(job.name);
    if (info === undefined) continue;
    for (const slotMs of instantsBetween(info.spec, info.anchorMs, SIM_EPOCH_MS + window.fromT - 1, SIM_EPOCH_MS + window.toT, 100_000)) {
      const slot = slots.slots.get(claimKey(job.name, slotMs));
      const slotT = slotMs - SIM_EPOCH_MS;
      const skipped = slot !== undefined && [...slot.outcomes.values()].some((o) => o === 'skipped');
      if (slot === undefined || (slot.firstStartT === null && !skipped)) report(t, 'handover', `${job.name}@${slotT} (true ms) never ran (graceful stops: ${during})`);
      else if (slot.runs > 1) report(t, 'handover', `${job.name}@${slotT} started ${slot.runs} times (graceful stops: ${during})`);
      else if (slot.firstStartT !== null && slot.firstStartT - slotT > HANDOVER_LATENESS_MS && !waitedForPermit(job.name, slotMs)) {
        report(t, 'handover', `${job.name}@${slotT} started ${(slot.firstStartT - slotT).toFixed(1)} ms late, past ${HANDOVER_LATENESS_MS} ms (graceful stops: ${during})`);
      }
    }
  }
}

/**
 * `handover`: once a member stopped gracefully, the state the cluster applied (`state`, a
 * leader's) holds no claim of a job that another member handles still assigned to it with
 * nothing run or reported under its token: it released each, and the leader moved them.
 */
export function checkReleased(t: number, report: Report, state: SchedulerState, member: NodeId): void {
  if (!holdsReleasedClaim(state, member)) return;
  const held = [...state.openClaims()].filter((c) => c.assignees[0] === member && state.jobs.get(c.job)?.mode === 'one' && c.outcomes.get(member)?.token !== c.token && c.starts.get(member)?.token !== c.token);
  report(t, 'handover', `${member} stopped gracefully while the log still had it hold a claim it never ran: ${held.map((c) => `${c.job}@${c.slotMs - SIM_EPOCH_MS} token ${c.token}`).join(', ')}`);
}

/**
 * After the other checks (SimulationOptions.handover), each member in turn, the leader first,
 * stopped gracefully and started again, with nothing else going wrong; checked by
 * checkReleased as each goes and checkHandover at the end. It ends early if an event throws.
 */
export async function rollingRestart(world: SimWorld, loop: RunLoop): Promise<void> {
  const { scheduler, members, report, settings } = world;
  const fromT = scheduler.nowMs;
  const done: GracefulRestart[] = [];
  const leaderFirst = [...members].sort((a, b) => Number(b.driver?.node.role === 'leader') - Number(a.driver?.node.role === 'leader'));
  for (const m of leaderFirst) {
    const before = m.member;
    if (before === null) continue;
    const stopT = scheduler.nowMs;
    let down = false;
    void m.stopGracefully(HANDOVER_STOP_TIMEOUT_MS).then(() => (down = true));
    // Every wait of a graceful stop is bounded: by the runs' time, then a few election timeouts.
    await loop.run(stopT + HANDOVER_STOP_TIMEOUT_MS + 10 * settings.timing.electionTimeoutMs, () => down);
    if (loop.crashed) return;
    if (!down) {
      report(scheduler.nowMs, 'handover', `${m.id}'s graceful stop did not end within its bounds`);
      return;
    }
    world.onStop(m);
    const downT = scheduler.nowMs;
    // What the cluster had applied by the time it went, as the member furthest along (the
    // stopped one included) applied it: no claim of it waits on it, unrun. (A leader just
    // elected may not have applied yet what the last one committed.)
    const seen = [before, ...members.map((x) => x.member)].filter((x) => x !== null);
    const witness = seen.reduce((a, b) => (b.driver.node.log.applied > a.driver.node.log.applied ? b : a), before);
    checkReleased(downT, report, witness.scheduler.state, m.id);
    await loop.run(downT + HANDOVER_DOWN_MS);
    world.restart(m);
    await Promise.all(world.restarts.splice(0));
    done.push({ member: m.id, stopT, downT, upT: scheduler.nowMs });
    await loop.run(scheduler.nowMs + HANDOVER_SETTLE_MS);
    if (loop.crashed) return;
  }
  const toT = scheduler.nowMs;
  await loop.run(toT + outcomeGraceMs(world.jobs));
  if (loop.crashed) return;
  checkHandover(scheduler.nowMs, report, world.slots, world.jobs, { fromT, toT }, done, (job, slotMs) => world.runChecks.waitedForPermit(job, slotMs, undefined, PERMIT_WAIT_MARGIN_MS));
}
