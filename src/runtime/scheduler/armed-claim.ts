import { RunAbortedError } from '../../errors.js';
import type { TimerHandle } from '../../time/clock.js';
import type { AssignMode, OverlapPolicy } from '../../scheduler/command.js';
import type { PermittedRun } from './run-permits.js';

/** One of this member's claims, from its timer to the end of its run (RunPermits holds it once it fires). */
export interface Armed extends PermittedRun {
  readonly job: string;
  readonly slotMs: number;
  /** The token of the claim it holds. */
  readonly token: number;
  readonly mode: AssignMode;
  readonly overlap: OverlapPolicy;
  readonly timeoutMs: number;
  readonly abort: AbortController;
  timer: TimerHandle | null;
  /** When the timer fires, on the timers' monotonic time base: compared with the cluster's time to re-arm. */
  firesAt: number;
  /** The timer's callback, so that the assignee can set it again (re-arming). */
  fire: (() => void) | null;
  /** Whether, as it fired, its overlap policy made it wait for another run of its job to end. */
  waited: boolean;
}

/** Whether a run's signal was aborted for `which` reason. */
export const isReason = (reason: unknown, which: RunAbortedError['reason']): boolean => reason instanceof RunAbortedError && reason.reason === which;
