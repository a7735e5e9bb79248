import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, type ClusterOptions } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';
import { OPERATIONS_VERSION } from '../../src/version/versions.js';
import { SCHEDULER_DEFAULTS } from '../../src/scheduler/state.js';
import { metricTypes, parseSamples, valueOf, type Sample } from '../fixtures/prometheus-text.js';

const started: Cluster[] = [];
const dirs: string[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

async function scrape(c: Cluster): Promise<{ text: string; samples: Sample[]; contentType: string | null }> {
  const r = await fetch(`http://${c.httpAddress}/metrics`);
  expect(r.status).toBe(200);
  const text = await r.text();
  return { text, samples: parseSamples(text), contentType: r.headers.get('content-type') };
}

async function single(options: ClusterOptions = {}): Promise<Cluster> {
  const c = new Cluster([], { storage: 'memory', http: { listen: '127.0.0.1:0' }, ...options });
  started.push(c);
  await c.start();
  await c.waitForLeader({ timeoutMs: 10_000 });
  return c;
}

/** Every metric the brief of issue 20 names, with its type. */
const EXPECTED: ReadonlyArray<[string, string]> = [
  ['cronraft_term', 'gauge'],
  ['cronraft_leader_known', 'gauge'],
  ['cronraft_is_leader', 'gauge'],
  ['cronraft_leader_changes_total', 'counter'],
  ['cronraft_commit_index', 'gauge'],
  ['cronraft_applied_index', 'gauge'],
  ['cronraft_clock_synced', 'gauge'],
  ['cronraft_snapshots_taken', 'gauge'],
  ['cronraft_snapshots_installed', 'gauge'],
  ['cronraft_last_snapshot_bytes', 'gauge'],
  ['cronraft_last_snapshot_loop_seconds', 'gauge'],
  ['cronraft_last_snapshot_longest_step_seconds', 'gauge'],
  ['cronraft_member_lag_entries', 'gauge'],
  ['cronraft_member_clock_offset_seconds', 'gauge'],
  ['cronraft_member_clock_skewed', 'gauge'],
  ['cronraft_member_reachable', 'gauge'],
  ['cronraft_job_runs_total', 'counter'],
  ['cronraft_job_failures_after_retries_total', 'counter'],
  ['cronraft_job_missed_slots_total', 'counter'],
  ['cronraft_job_skipped_slots_total', 'counter'],
  ['cronraft_job_slot_lateness_seconds', 'histogram'],
  ['cronraft_event_loop_blocked_total', 'counter'],
  ['cronraft_proposal_duration_seconds', 'histogram'],
  ['cronraft_fsync_duration_seconds', 'histogram'],
  ['cronraft_topic_items', 'gauge'],
  ['cronraft_topic_items_total', 'counter'],
  ['cronraft_bound_used', 'gauge'],
  ['cronraft_bound_limit', 'gauge'],
  ['cronraft_transport_messages_total', 'counter'],
  ['cronraft_transport_bytes_total', 'counter'],
  ['cronraft_transport_dropped_total', 'counter'],
  ['cronraft_transport_inbound_connections_total', 'counter'],
  ['cronraft_transport_inbound_connections_held', 'gauge'],
  ['cronraft_transport_connections', 'gauge'],
];

describe('GET /metrics', () => {
  it("exports every metric, prefixed cronraft_, in Prometheus' text format, with values read from state()", async () => {
    const c = await single();
    c.schedule('tick', { every: '200ms' }, () => undefined);
    await expect.poll(async () => valueOf((await scrape(c)).samples, 'cronraft_job_runs_total', { job: 'tick', outcome: 'succeeded' }) ?? 0, { timeout: 10_000 }).toBeGreaterThan(0);
    const { text, samples, contentType } = await scrape(c);
    expect(contentType).toMatch(/^text\/plain; version=0\.0\.4/);
    const types = metricTypes(text);
    expect(Object.fromEntries(types)).toEqual(Object.fromEntries(EXPECTED));
    const state = c.state();
    expect(valueOf(samples, 'cronraft_term')).toBe(state.term);
    expect(valueOf(samples, 'cronraft_leader_known')).toBe(1);
    expect(valueOf(samples, 'cronraft_is_leader')).toBe(1);
    expect(valueOf(samples, 'cronraft_leader_changes_total')).toBe(1);
    expect(valueOf(samples, 'cronraft_commit_index')).toBeGreaterThan(0);
    expect(valueOf(samples, 'cronraft_member_lag_entries', { member: c.id })).toBe(0);
    expect(valueOf(samples, 'cronraft_member_reachable', { member: c.id })).toBe(1);
    // A job's count of 0 has no series (ten thousand jobs of zeros were most of a scrape's cost).
    expect(valueOf(samples, 'cronraft_job_missed_slots_total', { job: 'tick' })).toBeUndefined();
    expect(valueOf(samples, 'cronraft_job_slot_lateness_seconds_count', { job: 'tick' })).toBeGreaterThan(0);
    // Every proposal of this member (the scheduler's claims and records) is observed once applied.
    expect(valueOf(samples, 'cronraft_proposal_duration_seconds_count')).toBeGreaterThan(0);
    // storage: 'memory' syncs nothing.
    expect(valueOf(samples, 'cronraft_fsync_duration_seconds_count')).toBe(0);
    // Every named bound, as state() reads it: the job counted against the jobs' 10,000.
    const bounds = c.state().bounds;
    expect(bounds.map((b) => b.name)).toEqual(expect.arrayContaining(['jobs', 'bytes of jobs', 'bytes of kept claims', 'bytes of the last snapshot taken']));
    expect(valueOf(samples, 'cronraft_bound_used', { bound: 'jobs', when_full: 'refuses' })).toBe(1);
    expect(valueOf(samples, 'cronraft_bound_limit', { bound: 'jobs', when_full: 'refuses' })).toBe(SCHEDULER_DEFAULTS.maxJobs);
    for (const b of bounds) expect(valueOf(samples, 'cronraft_bound_limit', { bound: b.name, when_full: b.whenFull }), b.name).toBe(b.limit);
    // Those full in their steady state say so: the alert leaves them out.
    expect(bounds.find((b) => b.name === 'claims kept')?.whenFull).toBe('forgets');
    expect(bounds.find((b) => b.name === 'fan-out batches')?.whenFull).toBe('never');
  });

  it("follows a job's skipped slots as they grow, among jobs that skip none", async () => {
    const c = await single();
    for (let i = 0; i < 20; i++) c.schedule(`idle${i}`, { every: '1h' }, () => undefined);
    c.schedule('tick', { every: '200ms' }, () => undefined);
    await expect.poll(() => c.state().jobs.length === 21 && c.state().version.active >= OPERATIONS_VERSION, { timeout: 15_000 }).toBe(true);
    // A paused job's slots are recorded skipped: its count grows from scrape to scrape.
    await c.pause('tick');
    const skipped = async (): Promise<number> => valueOf((await scrape(c)).samples, 'cronraft_job_skipped_slots_total', { job: 'tick' }) ?? 0;
    await expect.poll(skipped, { timeout: 10_000 }).toBeGreaterThan(0);
    const first = await skipped();
    await expect.poll(skipped, { timeout: 10_000 }).toBeGreaterThan(first);
    const { samples } = await scrape(c);
    expect(valueOf(samples, 'cronraft_job_skipped_slots_total', { job: 'tick' })).toBeLessThanOrEqual(c.state().jobs.find((j) => j.name === 'tick')!.skippedRuns);
    expect(samples.filter((s) => s.name.startsWith('cronraft_job_skipped_slots_total') && s.labels.job !== 'tick')).toEqual([]);
  });

  it('keeps a registry per Cluster: two members in one process export only their own', async () => {
    const a = await single();
    const b = await single();
    a.schedule('only-on-a', { every: '200ms' }, () => undefined);
    await expect.poll(async () => valueOf((await scrape(a)).samples, 'cronraft_job_runs_total', { job: 'only-on-a' }) ?? 0, { timeout: 10_000 }).toBeGreaterThan(0);
    const onB = (await scrape(b)).samples;
    expect(onB.filter((s) => s.labels.job === 'only-on-a')).toEqual([]);
    expect(valueOf(onB, 'cronraft_job_runs_total')).toBeUndefined();
  });

  it('counts a failure after retries once, when the last try fails, and every failed run', async () => {
    const c = await single();
    c.schedule('flaky', { at: Date.now() + 200 }, () => {
      throw new Error('always');
    }, { retries: 1, retryDelayMs: 10 });
    await expect.poll(async () => valueOf((await scrape(c)).samples, 'cronraft_job_failures_after_retries_total', { job: 'flaky' }) ?? 0, { timeout: 10_000 }).toBe(1);
    expect(valueOf((await scrape(c)).samples, 'cronraft_job_runs_total', { job: 'flaky', outcome: 'failed' })).toBe(2);
  });

  it("exports the snapshots taken here, the last one's size and how long it held the loop", async () => {
    const c = await single({ snapshotEveryEntries: 100, snapshotRetainEntries: 10 });
    expect(valueOf((await scrape(c)).samples, 'cronraft_last_snapshot_bytes')).toBe(0);
    for (let i = 0; i < 150; i++) await c.propose(`entry ${i}`);
    await expect.poll(async () => valueOf((await scrape(c)).samples, 'cronraft_snapshots_taken') ?? 0, { timeout: 10_000 }).toBeGreaterThan(0);
    // A proposal commits behind the compaction's writes: the call that handed the snapshot to
    // storage, which its timing counts, has been made by then.
    await c.propose('after the snapshot');
    const { samples } = await scrape(c);
    const last = c.state().log.lastSnapshot;
    expect(last).not.toBeNull();
    expect(valueOf(samples, 'cronraft_last_snapshot_bytes')).toBe(last?.bytes);
    expect(last?.bytes).toBeGreaterThan(0);
    expect(valueOf(samples, 'cronraft_last_snapshot_loop_seconds')).toBe((last?.loopMs ?? 0) / 1000);
    expect(valueOf(samples, 'cronraft_last_snapshot_longest_step_seconds')).toBe((last?.longestStepMs ?? 0) / 1000);
    expect(valueOf(samples, 'cronraft_snapshots_installed')).toBe(0);
  });

  it('observes synced writes on level storage', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'cronraft-metrics-'));
    dirs.push(dir);
    const c = await single({ storage: 'level', dataDir: dir, sync: true });
    await c.propose('x');
    expect(valueOf((await scrape(c)).samples, 'cronraft_fsync_duration_seconds_count')).toBeGreaterThan(0);
  });

  it('exports lag, clock offset and reachability of every member on the leader of three', async () => {
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    const members = addrs.map((listen) => new Cluster(addrs, { storage: 'memory', listen, heartbeatMs: 50, electionTimeoutMs: 500, http: { listen: '127.0.0.1:0' } }));
    started.push(...members);
    await Promise.all(members.map((m) => m.start()));
    const { leader } = await members[0]!.waitForLeader({ timeoutMs: 10_000 });
    const lead = members.find((m) => m.id === leader)!;
    await expect.poll(() => lead.state().members.every((m) => m.clockOffsetMs !== null && m.lag !== null), { timeout: 10_000 }).toBe(true);
    const { samples } = await scrape(lead);
    for (const id of addrs) {
      expect(valueOf(samples, 'cronraft_member_lag_entries', { member: id })).toBeGreaterThanOrEqual(0);
      expect(valueOf(samples, 'cronraft_member_clock_offset_seconds', { member: id })).toBeTypeOf('number');
      expect(valueOf(samples, 'cronraft_member_reachable', { member: id })).toBe(1);
    }
    const follower = members.find((m) => m.id !== leader)!;
    // A follower knows no lag: it exports none.
    expect(valueOf((await scrape(follower)).samples, 'cronraft_member_lag_entries')).toBeUndefined();
    // The transport's counts, as state().transport has them: the leader sent heartbeats and
    // appends and got answers, over a connection to each follower at least.
    const stats = lead.state().transport;
    const transport = (await scrape(lead)).samples;
    const sent = valueOf(transport, 'cronraft_transport_messages_total', { direction: 'sent' }) ?? 0;
    expect(sent).toBeGreaterThan(0);
    expect(sent).toBeGreaterThanOrEqual(stats.sent);
    expect(valueOf(transport, 'cronraft_transport_messages_total', { direction: 'received' })).toBeGreaterThan(0);
    expect(valueOf(transport, 'cronraft_transport_bytes_total', { direction: 'sent' })).toBeGreaterThanOrEqual(stats.sentBytes ?? Infinity);
    expect(valueOf(transport, 'cronraft_transport_bytes_total', { direction: 'received' })).toBeGreaterThan(0);
    expect(valueOf(transport, 'cronraft_transport_dropped_total', { reason: 'malformed' })).toBe(0);
    expect(valueOf(transport, 'cronraft_transport_connections')).toBeGreaterThanOrEqual(2);
    expect(valueOf(transport, 'cronraft_transport_inbound_connections_held')).toBeGreaterThanOrEqual(0);
    expect(valueOf(transport, 'cronraft_transport_inbound_connections_total', { outcome: 'handshake_failed' })).toBeTypeOf('number');
  });
});
