/**
 * When bookkeeping may go without getting in the way of a slot. Recording a run's start or
 * outcome, or claiming slots far ahead, costs every member a commit round (messages, a disk
 * write, an apply); done as slots fire, that work delays the handlers of the slots around it.
 * The slots themselves are known: the claims in the replicated state. So bookkeeping that can
 * wait is put off until no slot instant is near, within a bound on the wait.
 */

/** How near to a slot instant bookkeeping is put off. */
export interface QuietWindow {
  /** Before an instant: enough for a commit round to finish before the slot fires. */
  readonly beforeMs: number;
  /** After an instant: the handlers of the slots due then start, and those around it. */
  readonly afterMs: number;
}

export const QUIET_WINDOW: QuietWindow = { beforeMs: 10, afterMs: 10 };

/**
 * The first time at or after `nowMs` that is at least `window.beforeMs` before and
 * `window.afterMs` after every instant in `instants`, or `nowMs + limitMs` if there is none
 * sooner. Instants may come in any order and may repeat; only those that can matter (within
 * the limit and the window of it) are looked at, so the cost is one pass plus a sort of those.
 */
export function quietAt(nowMs: number, instants: Iterable<number>, limitMs: number, window: QuietWindow = QUIET_WINDOW): number {
  const endMs = nowMs + limitMs;
  const near: number[] = [];
  for (const at of instants) if (at + window.afterMs > nowMs && at - window.beforeMs < endMs) near.push(at);
  if (near.length === 0) return nowMs;
  near.sort((a, b) => a - b);
  let t = nowMs;
  for (const at of near) {
    if (at - window.beforeMs > t) break;
    t = Math.max(t, at + window.afterMs);
    if (t >= endMs) return endMs;
  }
  return t;
}
