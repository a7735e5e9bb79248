import type { NodeId } from '../../src/raft/types.js';
import { instantsBetween } from '../../src/scheduler/spec.js';
import { claimKey } from '../../src/scheduler/records.js';
import type { SchedulerChecker } from '../scheduler-checker.js';
import { SIM_EPOCH_MS } from '../scheduler.js';
import type { Report } from '../violations.js';

/** Outcomes of a slot a member did not run, as its overlap policy (or an operator's cancel) decided. */
const NOT_RUN = new Set(['skipped', 'replaced', 'cancelled']);

/**
 * Mode 'all' runs on every member (`mode-all`): after healing, every slot of a mode 'all' job
 * due in the watched window is assigned to every member that scheduled the job, and each of
 * them starts it within the lateness bound (or its overlap policy, or a full member, kept it
 * from running then).
 */
export class ModeAllChecker {
  readonly #report: Report;
  readonly #slots: SchedulerChecker;
  /** The members every slot must run on: those of the committed configuration at the end. */
  readonly #members: () => readonly NodeId[];
  /** Per slot of a mode 'all' job, when each member first started it (true ms). */
  readonly #starts = new Map<string, Map<NodeId, number>>();

  constructor(report: Report, slots: SchedulerChecker, members: () => readonly NodeId[]) {
    this.#report = report;
    this.#slots = slots;
    this.#members = members;
  }

  onRunStart(t: number, member: NodeId, run: { readonly job: string; readonly slotMs: number }): void {
    if (this.#slots.jobs.get(run.job)?.mode !== 'all') return;
    const key = claimKey(run.job, run.slotMs);
    let starts = this.#starts.get(key);
    if (starts === undefined) this.#starts.set(key, (starts = new Map()));
    if (!starts.has(member)) starts.set(member, t);
  }

  finish(t: number, window: { readonly fromT: number; readonly toT: number; readonly latenessMs: number; readonly excused: (job: string, slotMs: number, member: NodeId) => boolean }): void {
    for (const [name, job] of this.#slots.jobs) {
      if (job.mode !== 'all' || job.spec.kind === 'delay') continue;
      for (const slotMs of instantsBetween(job.spec, job.anchorMs, SIM_EPOCH_MS + window.fromT - 1, SIM_EPOCH_MS + window.toT, 100_000)) {
        const key = claimKey(name, slotMs);
        const slot = this.#slots.slots.get(key);
        // A slot never claimed is the lateness check's.
        if (slot === undefined) continue;
        const slotT = slotMs - SIM_EPOCH_MS;
        for (const member of this.#members()) {
          if (!slot.assignees.includes(member)) {
            this.#report(t, 'mode-all', `${name}@${slotT} (true ms) was not assigned to ${member} (assignees ${slot.assignees.join(', ')})`);
            continue;
          }
          const startT = this.#starts.get(key)?.get(member);
          if (startT !== undefined && Math.abs(startT - slotT) <= window.latenessMs) continue;
          if (NOT_RUN.has(slot.outcomes.get(`${member} ${slot.token}`) ?? '') || window.excused(name, slotMs, member)) continue;
          this.#report(t, 'mode-all', `${name}@${slotT} (true ms) ${startT === undefined ? 'never ran' : `started ${(startT - slotT).toFixed(1)} ms off its instant`} on ${member}`);
        }
      }
    }
  }
}
