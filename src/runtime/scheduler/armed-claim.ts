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

/**
 * Why a run of mode 'one' is interrupted once this member lost its lease: a follower's runs
 * when it has not heard from the leader, or the leader has not taken in its answers, for
 * longer than the lease; a leader's (or a member that led last) when it has not heard from a
 * majority of the voters for as long.
 */
export const LEASE_LOST = 'this member lost its lease: it did not hear from the leader (leading, from a majority of the voters), or the leader did not take in its answers, for longer than the lease';

/** Why a run of mode 'one' does not start at its instant: this member did not hold its lease then (see LEASE_LOST). */
export const NO_LEASE_AT_INSTANT = 'this member did not hold its lease at the slot instant: it had not heard from the leader (leading, from a majority of the voters), or the leader had not taken in its answers, within the lease';
