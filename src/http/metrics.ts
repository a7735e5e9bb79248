import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { ClusterState } from '../api/state.js';
import type { RunRecord } from '../runtime/scheduler/job-types.js';
import type { LoopBlocked } from '../runtime/loop-blocks.js';
import { CountedJobs } from './counted-jobs.js';
import { transportMetrics } from './transport-metrics.js';

/** What the metrics read: `state()` on every scrape, and the events they count. */
export interface MetricsSource {
  state(): ClusterState;
}

/** Buckets of the slot lateness histogram, in seconds: from a timer's jitter to a slot run minutes late. */
export const LATENESS_BUCKETS_SECONDS: readonly number[] = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300];

/** Buckets of the proposal and fsync histograms, in seconds: a disk's sync to a commit that waits out an election. */
export const LATENCY_BUCKETS_SECONDS: readonly number[] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5];

/** Outcomes that leave a slot failed once the job's retries are used up. */
const FAILURES: ReadonlySet<string> = new Set(['failed', 'aborted']);

/** Every outcome a run here may end with: the `outcome` labels of `cronraft_job_runs_total`. */
const RUN_OUTCOMES: ReadonlyArray<RunRecord['outcome']> = ['succeeded', 'failed', 'aborted', 'interrupted', 'replaced', 'cancelled'];

/**
 * A member's Prometheus metrics, in a registry of its own (several members may share a
 * process, and the app its default registry). Most are read from `state()` as a scrape collects
 * them; only what happens between scrapes is counted as it happens (leader changes, the runs
 * on this member) or observed into histograms (proposal, fsync and lateness). Per-member and
 * per-job series follow the configuration and the jobs of `state()`: a member removed or a job
 * gone leaves at the next scrape, so the series are bounded by the state's own bounds.
 *
 * Others add theirs to `registry` (metrics of a later feature live beside it, collected the same
 * way, reading `scrapeState()`).
 */
export class ClusterMetrics {
  readonly registry = new Registry();
  readonly #source: MetricsSource;
  /** The state read once for a whole scrape, so that every collector sees the same one. */
  #scraped: ClusterState | null = null;
  readonly #leaderChanges: Counter;
  readonly #runs: Counter<'job' | 'outcome'>;
  readonly #failuresAfterRetries: Counter<'job'>;
  readonly #blocked: Counter<'kind'>;
  readonly #lateness: Histogram<'job'>;
  readonly #proposals: Histogram;
  readonly #fsyncs: Histogram;
  /** The leader and term last counted: a leader seen again in its term (after an event of none) is no change. */
  #lastLeader: { readonly leader: string; readonly term: number } | null = null;
  /**
   * Jobs with series counted from runs here, so that those of a job gone can be removed, each
   * with where it was in the state's jobs when last looked for (-1: not yet): a job stays at its
   * place in the list while it is there (api/job-states.ts), so a scrape finds each at once.
   */
  readonly #jobsRun = new Map<string, number>();

  constructor(source: MetricsSource) {
    this.#source = source;
    const registers = [this.registry];
    const state = (): ClusterState => this.scrapeState();
    const gauge = (name: string, help: string, value: (s: ClusterState) => number): void => {
      new Gauge({ name, help, registers, collect: function (this: Gauge) { this.set(value(state())); } });
    };
    gauge('cronraft_term', 'The Raft term this member is in.', (s) => s.term);
    gauge('cronraft_leader_known', '1 when this member knows a leader, else 0.', (s) => (s.leader === null ? 0 : 1));
    gauge('cronraft_is_leader', '1 when this member leads, else 0.', (s) => (s.role === 'leader' ? 1 : 0));
    gauge('cronraft_commit_index', 'The highest log index this member knows committed.', (s) => s.commitIndex);
    gauge('cronraft_applied_index', 'The highest log index this member applied.', (s) => s.appliedIndex);
    gauge('cronraft_snapshots_taken', 'Snapshots this member took of its own state (compaction) since it started.', (s) => s.log.snapshotsTaken);
    gauge('cronraft_snapshots_installed', "Snapshots this member installed from a leader (it had fallen behind the leader's compacted log) since it started.", (s) => s.log.snapshotsInstalled);
    gauge('cronraft_last_snapshot_bytes', 'The size of the last snapshot this member took (0 before the first).', (s) => s.log.lastSnapshot?.bytes ?? 0);
    gauge('cronraft_last_snapshot_loop_seconds', "How long taking the last snapshot held this member's event loop, its steps together (0 before the first).", (s) => (s.log.lastSnapshot?.loopMs ?? 0) / 1000);
    gauge('cronraft_last_snapshot_longest_step_seconds', "The longest step of the last snapshot: the longest it held this member's event loop at once (0 before the first).", (s) => (s.log.lastSnapshot?.longestStepMs ?? 0) / 1000);
    gauge('cronraft_clock_synced', "1 once this member learned the cluster's time from a leader, else 0.", (s) => (s.clock.synced ? 1 : 0));
    const perMember = (name: string, help: string, value: (m: ClusterState['members'][number]) => number | null): void => {
      new Gauge({
        name,
        help,
        labelNames: ['member'],
        registers,
        collect: function (this: Gauge<'member'>) {
          this.reset();
          for (const m of state().members) {
            const v = value(m);
            if (v !== null) this.set({ member: m.id }, v);
          }
        },
      });
    };
    perMember('cronraft_member_lag_entries', 'Committed entries the member lacks, as the leader sees it (only the leader exports it).', (m) => m.lag);
    perMember('cronraft_member_clock_offset_seconds', "The member's clock minus the cluster's time (the leader knows every member's, a follower its own).", (m) => (m.clockOffsetMs === null ? null : m.clockOffsetMs / 1000));
    perMember('cronraft_member_clock_skewed', "1 when the member's clock is further than maxClockSkewMs from the cluster's time (it is given no work), else 0.", (m) => (m.clockOffsetMs === null ? null : m.clockSkewed ? 1 : 0));
    perMember('cronraft_member_reachable', '1 when this member reaches the member, else 0 (see state().members[].reachable).', (m) => (m.reachable ? 1 : 0));
    const counted = new CountedJobs();
    const perJob = (name: string, help: string, value: (j: ClusterState['jobs'][number]) => number): void => {
      new Counter({
        name,
        help,
        labelNames: ['job'],
        registers,
        collect: function (this: Counter<'job'>) {
          this.reset();
          // A job whose count is 0 has no series: at ten thousand jobs, zeros were most of a
          // scrape. Only the jobs with a count are looked at (counted-jobs.ts).
          for (const j of counted.update(state().jobs).values()) {
            const n = value(j);
            if (n > 0) this.inc({ job: j.name }, n);
          }
        },
      });
    };
    perJob('cronraft_job_missed_slots_total', "Slots the job's catch-up policy dropped, per the replicated log (the same on every member).", (j) => j.missedSlots);
    perJob('cronraft_job_skipped_slots_total', "Slots not run because another run of the job was in progress (its overlap policy), per the replicated log.", (j) => j.skippedRuns);
    // Fan-out, per topic, as replicated (the same on every member): items by state, and what the topic has seen.
    new Gauge({
      name: 'cronraft_topic_items',
      help: 'Work items of a topic by state: pending (waiting for a lease), in_flight (leased), dead (its dead letters kept).',
      labelNames: ['topic', 'state'],
      registers,
      collect: function (this: Gauge<'topic' | 'state'>) {
        this.reset();
        for (const t of state().topics) {
          let inFlight = 0;
          for (const n of Object.values(t.inFlight)) inFlight += n;
          this.set({ topic: t.name, state: 'pending' }, t.pending);
          this.set({ topic: t.name, state: 'in_flight' }, inFlight);
          this.set({ topic: t.name, state: 'dead' }, t.deadLetters);
        }
      },
    });
    new Counter({
      name: 'cronraft_topic_items_total',
      help: 'Work items of a topic by what happened: emitted, done, failed (attempts), dead, stale (outcomes refused), redelivered.',
      labelNames: ['topic', 'event'],
      registers,
      collect: function (this: Counter<'topic' | 'event'>) {
        this.reset();
        for (const t of state().topics) for (const event of ['emitted', 'done', 'failed', 'dead', 'stale', 'redelivered'] as const) this.inc({ topic: t.name, event }, t[event]);
      },
    });
    // Every named bound, what it holds and its limit (state().bounds), with what it does once
    // full: one that refuses or makes work wait, near its limit, is about to
    // (examples/alerts.yml, CronraftBoundNearLimit); one that forgets the oldest is full in its
    // steady state.
    for (const [name, help, value] of [
      ['cronraft_bound_used', "What one of this member's named bounds holds now (state().bounds): a count, or bytes as the snapshots take them.", (b: ClusterState['bounds'][number]) => b.value],
      ['cronraft_bound_limit', "The limit of one of this member's named bounds (state().bounds).", (b: ClusterState['bounds'][number]) => b.limit],
    ] as const) {
      new Gauge({
        name,
        help,
        labelNames: ['bound', 'when_full'],
        registers,
        collect: function (this: Gauge<'bound' | 'when_full'>) {
          this.reset();
          for (const b of state().bounds) this.set({ bound: b.name, when_full: b.whenFull }, value(b));
        },
      });
    }
    transportMetrics(registers, () => state().transport);
    this.#leaderChanges = new Counter({ name: 'cronraft_leader_changes_total', help: 'Times this member saw a new leader.', registers });
    this.#runs = new Counter({ name: 'cronraft_job_runs_total', help: 'Runs that ended on this member, by job and outcome.', labelNames: ['job', 'outcome'], registers });
    this.#failuresAfterRetries = new Counter({
      name: 'cronraft_job_failures_after_retries_total',
      help: 'Runs on this member that failed or timed out with no retry left to the job.',
      labelNames: ['job'],
      registers,
    });
    // By kind only, not by job: a job's name is already on its runs, and the event names it.
    this.#blocked = new Counter({
      name: 'cronraft_event_loop_blocked_total',
      help: "Times this member's event loop was held for its lease or longer (the 'blocked' event), by a job's handler before its first await (run), a work item's (item) or anything else (loop): its slots or items may have run again elsewhere.",
      labelNames: ['kind'],
      registers,
    });
    // Each kind from 0: a series that first appears at 1 shows no increase, and the alert on the
    // first hold of a member's life (examples/alerts.yml) would wait for a second.
    for (const kind of ['run', 'item', 'loop'] as const) this.#blocked.inc({ kind }, 0);
    this.#lateness = new Histogram({
      name: 'cronraft_job_slot_lateness_seconds',
      help: "How long after its slot's instant a run started on this member.",
      labelNames: ['job'],
      buckets: [...LATENESS_BUCKETS_SECONDS],
      registers,
    });
    this.#proposals = new Histogram({ name: 'cronraft_proposal_duration_seconds', help: 'From a proposal on this member to its entry applied here.', buckets: [...LATENCY_BUCKETS_SECONDS], registers });
    this.#fsyncs = new Histogram({ name: 'cronraft_fsync_duration_seconds', help: 'Synced writes of the log to disk on this member.', buckets: [...LATENCY_BUCKETS_SECONDS], registers });
  }

  /** The state of the scrape under way, or the state now outside one. */
  scrapeState(): ClusterState {
    return this.#scraped ?? this.#source.state();
  }

  /** The metrics in Prometheus' text format, from one `state()`. */
  async text(): Promise<string> {
    const state = this.#source.state();
    this.#scraped = state;
    try {
      this.#forgetGoneJobs(state);
      return await this.registry.metrics();
    } finally {
      this.#scraped = null;
    }
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  /** This member's leader changed (null: none known, not counted). */
  leaderSeen(leader: string | null, term: number): void {
    if (leader === null || (this.#lastLeader?.leader === leader && this.#lastLeader.term === term)) return;
    this.#lastLeader = { leader, term };
    this.#leaderChanges.inc();
  }

  /** A run ended on this member. */
  runEnded(run: RunRecord): void {
    if (!this.#jobsRun.has(run.job)) this.#jobsRun.set(run.job, -1);
    this.#runs.inc({ job: run.job, outcome: run.outcome });
    if (FAILURES.has(run.outcome) && run.retriesLeft === 0) this.#failuresAfterRetries.inc({ job: run.job });
    this.#lateness.observe({ job: run.job }, Math.max(0, run.startedAtMs - run.slotMs) / 1000);
  }

  /** This member's event loop was held for its lease or longer. */
  loopBlocked(blocked: LoopBlocked): void {
    this.#blocked.inc({ kind: blocked.kind });
  }

  /** A proposal of this member was applied here `durationMs` after it was made. */
  proposalApplied(durationMs: number): void {
    this.#proposals.observe(durationMs / 1000);
  }

  /** A synced write of the log took `durationMs`. */
  synced(durationMs: number): void {
    this.#fsyncs.observe(durationMs / 1000);
  }

  /**
   * The series of runs of jobs the state no longer knows: bounded by the jobs, not by every job
   * ever run. Each job run here is looked for where it was last; one that is not there is looked
   * for along the list while few are, and in a map of the names of all the jobs once more are (at
   * ten thousand jobs, gathering them on every scrape was much of its work, and on the first
   * scrape, when no job has a place yet, most of it).
   */
  #forgetGoneJobs(state: ClusterState): void {
    let places: Map<string, number> | null = null;
    let scans = 0;
    for (const [job, at] of this.#jobsRun) {
      if (state.jobs[at]?.name === job) continue;
      if (places === null && scans < PLACES_LOOKED_FOR_ALONG_THE_LIST) scans++;
      else places ??= new Map(state.jobs.map((j, i) => [j.name, i]));
      const place = places === null ? indexOfJob(state.jobs, job) : places.get(job);
      if (place !== undefined) {
        this.#jobsRun.set(job, place);
        continue;
      }
      this.#jobsRun.delete(job);
      this.#failuresAfterRetries.remove({ job });
      this.#lateness.remove({ job });
      for (const outcome of RUN_OUTCOMES) this.#runs.remove({ job, outcome });
    }
  }
}

/**
 * Jobs run here whose places in the list a scrape looks for by walking the list; past them, it
 * makes a map of every job's place. A walk compares names only, and costs a small part of what
 * the map does at thousands of jobs.
 */
export const PLACES_LOOKED_FOR_ALONG_THE_LIST = 16;

function indexOfJob(jobs: ClusterState['jobs'], name: string): number | undefined {
  for (let i = 0; i < jobs.length; i++) if (jobs[i]?.name === name) return i;
  return undefined;
}
