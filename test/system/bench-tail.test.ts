import { constants } from 'node:perf_hooks';
import { describe, expect, it } from 'vitest';
import { commitViews, gcKindCounts, type MemberProbe } from '../../bench/tail.js';
import type { ProbeReport } from '../fixtures/member-probe.js';

function report(parts: Partial<ProbeReport>): ProbeReport {
  return { gc: [], saves: [], writes: [], compactions: [], clears: [], dropped: 0, allocatedBytes: 0, cpuUserMs: 0, cpuSystemMs: 0, loopDelayMs: { p50: 0, p99: 0, max: 0, mean: 0 }, stalls: [], ...parts };
}

describe('bench/tail.ts: lining commits up with what the members did', () => {
  // Three commits: [1000, 1002), [1010, 1011), [1020, 1030).
  const latencies = [2, 1, 10];
  const starts = [1000, 1010, 1020];

  it('counts a GC pause by its overlap with each commit, on the member it ran on', () => {
    const members: MemberProbe[] = [
      { role: 'leader', report: report({ gc: [{ at: 1001, ms: 5, kind: 1 }] }) },
      { role: 'follower', report: report({ gc: [{ at: 1025, ms: 10, kind: 1 }] }) },
      { role: 'follower', report: report({}) },
    ];
    const views = commitViews({ name: 'test', latencies, starts, members });
    // The leader's pause from 1001 to 1006 covers the last ms of the first commit only.
    expect(views.map((v) => v.leaderGcMs)).toEqual([1, 0, 0]);
    // The follower's pause from 1025 to 1035 covers the last 5 ms of the third.
    expect(views.map((v) => v.followerGcMs)).toEqual([[0, 0], [0, 0], [5, 0]]);
  });

  it("takes a member's save and write as the longest that began within the commit, whatever their order in the report", () => {
    const members: MemberProbe[] = [
      {
        role: 'leader',
        report: report({
          // Out of order, as saves end (and are recorded) out of order; the one at 999 began before the first commit.
          saves: [{ at: 1022, ms: 3, entries: 1 }, { at: 999, ms: 9, entries: 1 }, { at: 1021, ms: 7, entries: 1 }, { at: 1010.5, ms: 0.4, entries: 1 }],
          writes: [{ at: 1021.5, ms: 6, ops: 2, sync: true }],
        }),
      },
      { role: 'follower', report: report({ saves: [{ at: 1001, ms: 0.7, entries: 1 }] }) },
      { role: 'follower', report: report({}) },
    ];
    const views = commitViews({ name: 'test', latencies, starts, members });
    expect(views.map((v) => v.leaderSaveMs)).toEqual([0, 0.4, 7]);
    expect(views.map((v) => v.leaderWriteMs)).toEqual([0, 0, 6]);
    expect(views.map((v) => v.followerSaveMs)).toEqual([[0.7, 0], [0, 0], [0, 0]]);
  });

  it('marks a commit during a compaction or a removal on any member', () => {
    const members: MemberProbe[] = [
      { role: 'leader', report: report({}) },
      { role: 'follower', report: report({ compactions: [{ at: 1009, ms: 1.5 }] }) },
      { role: 'follower', report: report({ clears: [{ at: 1029.5, ms: 20 }] }) },
    ];
    const views = commitViews({ name: 'test', latencies, starts, members });
    expect(views.map((v) => v.compacting)).toEqual([false, true, false]);
    expect(views.map((v) => v.clearing)).toEqual([false, false, true]);
  });

  it("names GC pauses by perf_hooks' kinds", () => {
    const at = (kind: number, ms: number): { at: number; ms: number; kind: number } => ({ at: 0, ms, kind });
    const gc = [at(constants.NODE_PERFORMANCE_GC_MINOR, 1), at(constants.NODE_PERFORMANCE_GC_MINOR, 2.5), at(constants.NODE_PERFORMANCE_GC_MAJOR, 20), at(constants.NODE_PERFORMANCE_GC_INCREMENTAL, 0.5)];
    expect(gcKindCounts(gc)).toBe('2 minor (max 2.50), 1 major (max 20.00), 1 incremental (max 0.50), 0 weak callbacks');
  });
});
