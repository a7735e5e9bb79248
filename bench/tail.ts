/**
 * Where the slow commits of the raft bench's serial phases come from: each commit the leader
 * measured is lined up, on the shared wall clock, with what every member's probe saw meanwhile
 * (test/fixtures/member-probe.ts): GC pauses, storage writes, compactions. Printed per phase as
 * how often each coincides with any commit and with the slowest 1 %, then the slowest commits one
 * by one, then each member's GC, event-loop delay and storage-write figures over the phase.
 */
import { constants } from 'node:perf_hooks';
import type { GcSpan, ProbeReport, Span } from '../test/fixtures/member-probe.js';
import { fmt, percentile, printTable, summarize } from './stats.js';
import type { StallSpan } from '../test/fixtures/loop-stalls.js';

/** How many of the slowest commits are listed one by one. */
const SLOWEST_LISTED = 8;
/** How many compactions or removals of a member are listed with their times. */
const SPANS_LISTED = 4;
/** perf_hooks' GC kinds, as its constants name them. */
const GC_KINDS: ReadonlyArray<readonly [number, string]> = [
  [constants.NODE_PERFORMANCE_GC_MINOR, 'minor'],
  [constants.NODE_PERFORMANCE_GC_MAJOR, 'major'],
  [constants.NODE_PERFORMANCE_GC_INCREMENTAL, 'incremental'],
  [constants.NODE_PERFORMANCE_GC_WEAKCB, 'weak callbacks'],
];

/** How many GC pauses of each kind, and the longest: "3 minor (max 2.10), 1 major (max 20.00), 0 incremental, 0 weak callbacks". */
export function gcKindCounts(gc: readonly GcSpan[]): string {
  return GC_KINDS.map(([kind, name]) => {
    const ms = gc.filter((g) => g.kind === kind).map((g) => g.ms);
    return ms.length === 0 ? `0 ${name}` : `${ms.length} ${name} (max ${fmt(Math.max(...ms))})`;
  }).join(', ');
}

export interface MemberProbe {
  readonly role: 'leader' | 'follower';
  readonly report: ProbeReport;
}

export interface PhaseProbe {
  readonly name: string;
  readonly latencies: readonly number[];
  /** When each commit began, wall clock ms. */
  readonly starts: readonly number[];
  readonly members: readonly MemberProbe[];
}

/** What of `spans` (in order of `at`) overlaps [from, to): the ms of overlap in all. */
export function overlapMs(spans: readonly Span[], from: number, to: number): number {
  let ms = 0;
  for (const s of spans) {
    if (s.at >= to) break;
    const end = s.at + s.ms;
    if (end > from) ms += Math.min(end, to) - Math.max(s.at, from);
  }
  return ms;
}

/**
 * How long the loop's thread waited for a CPU within [from, to), from the stalls that overlap it
 * (each stall's wait taken as spread over it); 0 where the waits could not be read.
 */
export function overlapWaitMs(spans: readonly StallSpan[], from: number, to: number): number {
  let ms = 0;
  for (const s of spans) {
    if (s.at >= to) break;
    const overlap = Math.min(s.at + s.ms, to) - Math.max(s.at, from);
    if (overlap > 0 && s.ms > 0) ms += ((s.waitMs ?? 0) * overlap) / s.ms;
  }
  return ms;
}

/** The longest of `spans` that began within [from, to); 0 if none did. */
function longestStartedMs(spans: readonly Span[], from: number, to: number): number {
  let ms = 0;
  for (const s of spans) {
    if (s.at >= to) break;
    if (s.at >= from) ms = Math.max(ms, s.ms);
  }
  return ms;
}

export interface CommitView {
  readonly latency: number;
  readonly leaderGcMs: number;
  /** GC overlap of each follower. */
  readonly followerGcMs: readonly number[];
  readonly leaderSaveMs: number;
  readonly followerSaveMs: readonly number[];
  /** The longest LevelDB batch write the leader began within the commit: its save less the queue wait. */
  readonly leaderWriteMs: number;
  readonly followerWriteMs: readonly number[];
  readonly compacting: boolean;
  /** Whether a member was removing stale entries in the background meanwhile. */
  readonly clearing: boolean;
}

/** Each commit of the phase, with what every member did meanwhile. */
export function commitViews(p: PhaseProbe): CommitView[] {
  const byAt = <T extends Span>(xs: readonly T[]): T[] => [...xs].sort((a, b) => a.at - b.at);
  const members = p.members.map((m) => ({ role: m.role, gc: byAt(m.report.gc), saves: byAt(m.report.saves), writes: byAt(m.report.writes), compactions: byAt(m.report.compactions), clears: byAt(m.report.clears) }));
  const leader = members.find((m) => m.role === 'leader');
  const followers = members.filter((m) => m.role === 'follower');
  return p.latencies.map((latency, i) => {
    const from = p.starts[i] as number;
    const to = from + latency;
    return {
      latency,
      leaderGcMs: leader === undefined ? 0 : overlapMs(leader.gc, from, to),
      followerGcMs: followers.map((f) => overlapMs(f.gc, from, to)),
      leaderSaveMs: leader === undefined ? 0 : longestStartedMs(leader.saves, from, to),
      followerSaveMs: followers.map((f) => longestStartedMs(f.saves, from, to)),
      leaderWriteMs: leader === undefined ? 0 : longestStartedMs(leader.writes, from, to),
      followerWriteMs: followers.map((f) => longestStartedMs(f.writes, from, to)),
      compacting: members.some((m) => overlapMs(m.compactions, from, to) > 0),
      clearing: members.some((m) => overlapMs(m.clears, from, to) > 0),
    };
  });
}

const share = (xs: readonly CommitView[], pred: (v: CommitView) => boolean): string => `${fmt((100 * xs.filter(pred).length) / Math.max(1, xs.length), 1)} %`;
const med = (xs: readonly number[]): string => fmt(percentile([...xs].sort((a, b) => a - b), 50));

/** Prints the breakdown of one phase. */
export function printAttribution(p: PhaseProbe): void {
  const all = commitViews(p);
  const p99 = summarize(p.latencies).p99;
  const slow = all.filter((v) => v.latency >= p99);
  console.log(`\n${p.name}: ${all.length} commits, p99 ${fmt(p99)} ms; the slowest 1 % (${slow.length} commits, >= p99) against all of them`);
  console.log('(times on the shared wall clock; a member\'s save is the longest that began within the commit; the commit needs one follower)\n');
  const minFollowerSave = (v: CommitView): number => Math.min(...v.followerSaveMs);
  const both = (pred: (v: CommitView) => boolean): string[] => [share(all, pred), share(slow, pred)];
  const bothFollowers = (v: CommitView): boolean => v.followerGcMs.length > 0 && v.followerGcMs.every((ms) => ms > 0);
  const rows: string[][] = [
    ['a GC pause on the leader overlaps it', ...both((v) => v.leaderGcMs > 0)],
    ['a GC pause on a follower overlaps it', ...both((v) => v.followerGcMs.some((ms) => ms > 0))],
    ['GC pauses on both followers overlap it', ...both(bothFollowers)],
    ['a compaction on any member overlaps it', ...both((v) => v.compacting)],
    ['a removal of stale entries on any member overlaps it', ...both((v) => v.clearing)],
    ['mean GC overlap, leader (ms)', fmt(mean(all.map((v) => v.leaderGcMs)), 3), fmt(mean(slow.map((v) => v.leaderGcMs)), 3)],
    ['median leader save (ms)', med(all.map((v) => v.leaderSaveMs)), med(slow.map((v) => v.leaderSaveMs))],
    ['median faster follower save (ms)', med(all.map(minFollowerSave)), med(slow.map(minFollowerSave))],
    ['median leader LevelDB write (ms)', med(all.map((v) => v.leaderWriteMs)), med(slow.map((v) => v.leaderWriteMs))],
    ['median commit latency (ms)', med(all.map((v) => v.latency)), med(slow.map((v) => v.latency))],
  ];
  printTable(['coincides with', 'all commits', 'slowest 1 %'], rows);

  console.log(`\nthe ${SLOWEST_LISTED} slowest commits (ms):\n`);
  const listed = [...all].sort((a, b) => b.latency - a.latency).slice(0, SLOWEST_LISTED);
  printTable(
    ['latency', 'leader save (write)', 'follower saves (writes)', 'GC leader', 'GC followers', 'compaction, removal'],
    listed.map((v) => [
      fmt(v.latency),
      `${fmt(v.leaderSaveMs)} (${fmt(v.leaderWriteMs)})`,
      v.followerSaveMs.map((ms, i) => `${fmt(ms)} (${fmt(v.followerWriteMs[i] ?? 0)})`).join(' / '),
      fmt(v.leaderGcMs), v.followerGcMs.map((ms) => fmt(ms)).join(' / '), [v.compacting ? 'compaction' : '', v.clearing ? 'removal' : ''].filter((x) => x !== '').join(', ')]),
  );

  console.log('\neach member over the phase:\n');
  const n = Math.max(1, all.length);
  printTable(
    ['member', 'GC pauses by kind (ms)', 'GC total / max (ms)', 'loop delay p50 / p99 / max (ms, late)', 'saves p50 / p99 / max (ms)', 'per commit: saves, writes (synced)', 'per commit: KB allocated, CPU µs (user + kernel)', 'compactions (ms)', 'removals (ms)'],
    p.members.map((m) => {
      const r = m.report;
      const gcMs = r.gc.map((g) => g.ms);
      const saves = summarize(r.saves.map((s) => s.ms));
      const d = r.loopDelayMs;
      return [
        m.role,
        gcKindCounts(r.gc),
        `${fmt(gcMs.reduce((a, b) => a + b, 0))} / ${fmt(Math.max(0, ...gcMs))}`,
        `${fmt(d.p50)} / ${fmt(d.p99)} / ${fmt(d.max)}`,
        `${fmt(saves.p50)} / ${fmt(saves.p99)} / ${fmt(saves.max)}`,
        `${fmt(r.saves.length / n)}, ${fmt(r.writes.length / n)} (${fmt(r.writes.filter((w) => w.sync).length / n)})`,
        `${fmt(r.allocatedBytes / 1024 / n, 1)}, ${fmt((r.cpuUserMs * 1000) / n, 0)} + ${fmt((r.cpuSystemMs * 1000) / n, 0)}`,
        `${spansText(r.compactions)}${r.dropped > 0 ? ` (${r.dropped} records dropped)` : ''}`,
        spansText(r.clears),
      ];
    }),
  );
}

/** How many, and how long each took: "2: 3.1, 4.5". */
function spansText(spans: readonly Span[]): string {
  const shown = spans.slice(0, SPANS_LISTED).map((s) => fmt(s.ms, 1));
  return spans.length === 0 ? '0' : `${spans.length}: ${shown.join(', ')}${spans.length > SPANS_LISTED ? ', ...' : ''}`;
}

function mean(xs: readonly number[]): number {
  return xs.reduce((a, b) => a + b, 0) / Math.max(1, xs.length);
}
