import { describe, expect, it } from 'vitest';
import type { ClusterState } from '../../src/api/state.js';
import { ClusterMetrics, PLACES_LOOKED_FOR_ALONG_THE_LIST } from '../../src/http/metrics.js';
import type { RunRecord } from '../../src/runtime/scheduler/job-types.js';
import { parseSamples, valueOf } from '../fixtures/prometheus-text.js';

type Job = ClusterState['jobs'][number];
type Member = ClusterState['members'][number];

const job = (name: string, missedSlots: number, skippedRuns: number): Job => ({ name, spec: 'every 1000', mode: 'one', handlers: [], conflicts: {}, nextSlot: null, lastClaim: null, missedSlots, skippedRuns, running: [], paused: false });
const member = (id: string, over: Partial<Member> = {}): Member => ({ id, addrs: [], voter: true, reachable: true, lastContactMs: 0, matchIndex: null, lag: null, peerId: null, clockOffsetMs: null, clockSkewed: false, dialFailure: null, ...over });

/** A state with only what the metrics read set; the rest never read. */
function stateWith(members: Member[], jobs: Job[]): ClusterState {
  return { term: 7, leader: 'a', role: 'follower', commitIndex: 40, appliedIndex: 39, members, jobs, topics: [], transport: { sent: 0, received: 0, droppedQueueFull: 0, droppedMalformed: 0, droppedOversized: 0, droppedUnexpected: 0, droppedPeerIdMismatch: 0 }, clock: { synced: true, clusterTime: new Date(0), invalidStamps: 0 }, log: { firstIndex: 1, snapshotIndex: 0, snapshotsTaken: 0, snapshotsInstalled: 0, lastSnapshot: null }, bounds: [{ name: 'jobs', value: jobs.length, limit: 10_000, whenFull: 'refuses' }] } as unknown as ClusterState;
}

const run = (over: Partial<RunRecord>): RunRecord => ({ job: 'j', slotMs: 1000, fencingToken: 1, member: 'a', startedAtMs: 1250, endedAtMs: 1300, outcome: 'succeeded', attempt: 1, retriesLeft: 0, ...over });

describe('ClusterMetrics', () => {
  it("reads its gauges and the jobs' replicated counts from one state() per scrape", async () => {
    let calls = 0;
    const metrics = new ClusterMetrics({
      state: () => {
        calls++;
        return stateWith([member('a', { lag: 0, clockOffsetMs: 12 }), member('b', { lag: 5, clockOffsetMs: -250, clockSkewed: true, reachable: false }), member('c')], [job('j', 3, 2)]);
      },
    });
    const samples = parseSamples(await metrics.text());
    expect(calls).toBe(1);
    expect(valueOf(samples, 'cronraft_term')).toBe(7);
    expect(valueOf(samples, 'cronraft_is_leader')).toBe(0);
    expect(valueOf(samples, 'cronraft_applied_index')).toBe(39);
    expect(valueOf(samples, 'cronraft_member_lag_entries', { member: 'b' })).toBe(5);
    // Unknown values are left out rather than exported as 0.
    expect(valueOf(samples, 'cronraft_member_lag_entries', { member: 'c' })).toBeUndefined();
    expect(valueOf(samples, 'cronraft_member_clock_offset_seconds', { member: 'b' })).toBe(-0.25);
    expect(valueOf(samples, 'cronraft_member_clock_skewed', { member: 'b' })).toBe(1);
    expect(valueOf(samples, 'cronraft_member_clock_skewed', { member: 'c' })).toBeUndefined();
    expect(valueOf(samples, 'cronraft_member_reachable', { member: 'b' })).toBe(0);
    expect(valueOf(samples, 'cronraft_job_missed_slots_total', { job: 'j' })).toBe(3);
    expect(valueOf(samples, 'cronraft_job_skipped_slots_total', { job: 'j' })).toBe(2);
  });

  it('drops the series of a member or a job the state no longer has', async () => {
    let state = stateWith([member('a'), member('b')], [job('j', 1, 0), job('k', 0, 0)]);
    const metrics = new ClusterMetrics({ state: () => state });
    metrics.runEnded(run({ job: 'k', outcome: 'failed' }));
    let samples = parseSamples(await metrics.text());
    expect(valueOf(samples, 'cronraft_job_runs_total', { job: 'k', outcome: 'failed' })).toBe(1);
    state = stateWith([member('a')], [job('j', 1, 0)]);
    samples = parseSamples(await metrics.text());
    expect(samples.filter((s) => s.labels.job === 'k' || s.labels.member === 'b')).toEqual([]);
  });

  it("keeps a job's series while it moves in the state's jobs, and drops them right after it is gone", async () => {
    let state = stateWith([], [job('j', 0, 0), job('k', 0, 0)]);
    const metrics = new ClusterMetrics({ state: () => state });
    metrics.runEnded(run({ job: 'k', outcome: 'succeeded' }));
    const runsOfK = async (): Promise<number | undefined> => valueOf(parseSamples(await metrics.text()), 'cronraft_job_runs_total', { job: 'k', outcome: 'succeeded' });
    expect(await runsOfK()).toBe(1);
    // j gone, another job where k was: k is still known, elsewhere.
    state = stateWith([], [job('k', 0, 0), job('l', 0, 0)]);
    expect(await runsOfK()).toBe(1);
    state = stateWith([], [job('m', 0, 0), job('l', 0, 0), job('k', 0, 0)]);
    expect(await runsOfK()).toBe(1);
    // k gone, another job at its place: its series go at the next scrape.
    state = stateWith([], [job('m', 0, 0), job('l', 0, 0), job('n', 0, 0)]);
    expect(await runsOfK()).toBeUndefined();
  });

  it("finds the places of more jobs run here than it looks for along the list, and drops those gone, alike", async () => {
    const many = PLACES_LOOKED_FOR_ALONG_THE_LIST + 5;
    const names = Array.from({ length: many }, (_, i) => `r${i}`);
    // The jobs run here after others, in reverse: none at the place it was first given.
    let state = stateWith([], [...['x', 'y'].map((n) => job(n, 0, 0)), ...[...names].reverse().map((n) => job(n, 0, 0))]);
    const metrics = new ClusterMetrics({ state: () => state });
    for (const name of names) metrics.runEnded(run({ job: name }));
    const runs = async (): Promise<(number | undefined)[]> => {
      const samples = parseSamples(await metrics.text());
      return names.map((name) => valueOf(samples, 'cronraft_job_runs_total', { job: name, outcome: 'succeeded' }));
    };
    expect(await runs()).toEqual(names.map(() => 1));
    // Every other one gone, the rest moved: the gone ones' series go, the others' stay.
    state = stateWith([], names.filter((_, i) => i % 2 === 0).map((n) => job(n, 0, 0)));
    expect(await runs()).toEqual(names.map((_, i) => (i % 2 === 0 ? 1 : undefined)));
  });

  it('counts runs by outcome, a failure after retries only on the last try, lateness from the slot, and handlers that blocked the loop by kind', async () => {
    const metrics = new ClusterMetrics({ state: () => stateWith([], [job('j', 0, 0)]) });
    metrics.runEnded(run({ outcome: 'failed', retriesLeft: 1 }));
    metrics.runEnded(run({ outcome: 'aborted', attempt: 2, retriesLeft: 0, startedAtMs: 3000 }));
    metrics.runEnded(run({ outcome: 'interrupted', retriesLeft: 0 }));
    metrics.loopBlocked({ kind: 'run', job: 'j', slot: new Date(0), fencingToken: 3, ms: 600, leaseMs: 500 });
    metrics.loopBlocked({ kind: 'item', topic: 't', id: 1, fencingToken: 4, ms: 700, leaseMs: 500 });
    metrics.loopBlocked({ kind: 'item', topic: 't', id: 2, fencingToken: 5, ms: 800, leaseMs: 500 });
    metrics.leaderSeen('a', 1);
    metrics.leaderSeen(null, 1);
    // The same leader in the same term, after a moment of none, is no change.
    metrics.leaderSeen('a', 1);
    metrics.leaderSeen('b', 2);
    metrics.leaderSeen(null, 3);
    metrics.leaderSeen('b', 3);
    const samples = parseSamples(await metrics.text());
    expect(valueOf(samples, 'cronraft_job_runs_total', { job: 'j', outcome: 'failed' })).toBe(1);
    expect(valueOf(samples, 'cronraft_job_runs_total', { job: 'j', outcome: 'aborted' })).toBe(1);
    expect(valueOf(samples, 'cronraft_job_failures_after_retries_total', { job: 'j' })).toBe(1);
    expect(valueOf(samples, 'cronraft_job_slot_lateness_seconds_sum', { job: 'j' })).toBeCloseTo(0.25 + 2 + 0.25);
    expect(valueOf(samples, 'cronraft_job_slot_lateness_seconds_bucket', { job: 'j', le: '0.25' })).toBe(2);
    expect(valueOf(samples, 'cronraft_leader_changes_total')).toBe(3);
    expect(valueOf(samples, 'cronraft_event_loop_blocked_total', { kind: 'run' })).toBe(1);
    expect(valueOf(samples, 'cronraft_event_loop_blocked_total', { kind: 'item' })).toBe(2);
    // A kind never told is there at 0, so that an alert on its increase sees the first one.
    expect(valueOf(samples, 'cronraft_event_loop_blocked_total', { kind: 'loop' })).toBe(0);
  });
});
