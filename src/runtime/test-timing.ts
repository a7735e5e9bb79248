import type { MemberTiming } from './member.js';

/**
 * A seam for tests of real processes (test/fixtures/member-process.ts): timings of a member that
 * are not options of Cluster, because production has no reason to change them, shortened so
 * that a test of minutes runs in seconds. Kept out of the public API: index.ts exports none of
 * this, and a Cluster no test touched runs the defaults.
 */
export type TestTiming = Pick<MemberTiming, 'promoteStableMs' | 'leaderlessBeforeProbeMs'>;

const timings = new WeakMap<object, TestTiming>();

/** Makes `cluster` start with `timing` over its own. Call before start(). */
export function useTestTiming(cluster: object, timing: TestTiming): void {
  timings.set(cluster, timing);
}

/** The timing `cluster` starts its member with: `base`, with what a test set over it. */
export function timingOf(cluster: object, base: MemberTiming): MemberTiming {
  const timing = timings.get(cluster);
  return timing === undefined ? base : { ...base, ...timing };
}
