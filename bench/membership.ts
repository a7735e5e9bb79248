/**
 * `npm run bench -- membership`: members in processes of their own on loopback, level with sync
 * on, default settings but for the learner's stable time (below). Measures
 * (a) the time from start() of a new, empty instance to voter, with JOBS jobs in the state;
 * (b) serial commit latency on the leader of 3 voters, then of the same cluster grown to 5
 *     voters and 10 learners, in the same run (the same leader process, warmed up alike).
 */
import type { ClusterState } from '../src/index.js';
import { ProcessCluster, type MemberProcess } from '../test/fixtures/process-cluster.js';
import { fmt, summarize } from './stats.js';

/** Jobs in the state the new instance must take in (part a). */
export const JOBS = 10_000;
/** Serial commits measured for each configuration, after WARMUP_COMMITS (the JIT: see bench/raft.ts COLD_COMMITS). */
const SERIAL_COMMITS = 1000;
const WARMUP_COMMITS = 2000;
/** Serial commits asked of the leader in one request, well within the fixture's request timeout on a loaded machine. */
const SERIAL_CHUNK = 200;
/** Learners added in part b beside the 5 voters. */
const LEARNERS = 10;
/** Bound on each wait of the bench. */
const WAIT_MS = 120_000;
/**
 * The stable time the leader waits before it promotes a caught-up learner is set to nothing
 * (PROMOTE_STABLE_MS, 10 s by default, is a policy chosen to wait, not work done): the figure
 * is what joining costs, the join, the snapshot, the catch-up and the promotion's commit, and
 * the leader's look every MEMBERSHIP_CHECK_MS. With the default, add the stable time.
 */
const TEST_TIMING = { promoteStableMs: 0 };

export interface MembershipBenchResult {
  readonly jobs: number;
  /** From start() of the new instance: its start() resolved (it joined as a learner), it was caught up, it was a voter. */
  readonly toVoter: { readonly spawnMs: number; readonly startedMs: number; readonly caughtUpMs: number | null; readonly voterMs: number; readonly snapshotsInstalled: number };
  readonly threeVoters: ReturnType<typeof summarize>;
  readonly fiveVotersTenLearners: ReturnType<typeof summarize>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls until `done` holds (every 5 ms), or throws naming `what` after WAIT_MS. */
async function until(what: string, done: () => Promise<boolean>): Promise<void> {
  const deadline = Date.now() + WAIT_MS;
  while (!(await done())) {
    if (Date.now() > deadline) throw new Error(`membership bench: ${what} not within ${WAIT_MS} ms`);
    await sleep(5);
  }
}

async function allStates(members: readonly MemberProcess[]): Promise<ClusterState[]> {
  return Promise.all(members.map((m) => m.state()));
}

async function membershipActive(members: readonly MemberProcess[]): Promise<void> {
  await until('cluster version 2', async () => (await allStates(members)).every((s) => s.version.active >= 2));
}

/** Starts `m` and waits for its start() to resolve; throws with its error if it rejects. */
async function started(cluster: ProcessCluster, m: MemberProcess): Promise<void> {
  cluster.startMember(m);
  const e = await m.waitEvent((e) => e.event === 'started' || e.event === 'start-failed', WAIT_MS);
  if (e.event === 'start-failed') throw new Error(`membership bench: ${m.address} failed to start: ${String(e.code)} ${String(e.message)}`);
}

async function startJoiner(cluster: ProcessCluster): Promise<MemberProcess> {
  const m = await cluster.add();
  await started(cluster, m);
  return m;
}

/**
 * Part a. Four founding voters (as a cluster of five that lost one machine and removed it):
 * the leader promotes one caught-up learner to make the voters odd again, so the new instance
 * becomes a voter on its own (from three, the leader waits for two learners ready).
 */
async function benchToVoter(): Promise<MembershipBenchResult['toVoter']> {
  const cluster = await ProcessCluster.create(4, { voters: 5 }, undefined, TEST_TIMING);
  try {
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    await membershipActive(cluster.members);
    // Registrations go in batches at this version (bench/jobs-registered-run.ts); one member registers them all.
    await leader.request('schedule-many', { prefix: 'job', count: JOBS, every: '1h' });
    await until(`${JOBS} jobs in the state`, async () => (await leader.state()).jobs.length === JOBS);
    const { index } = await leader.request<{ index: number }>('barrier');
    const joiner = await cluster.add();
    const spawnedAt = Date.now();
    await started(cluster, joiner);
    // From the joiner's call of start(), after its process spawned and loaded the library (reported apart).
    const t0 = Number((await joiner.waitEvent((e) => e.event === 'starting', WAIT_MS)).at);
    const spawnMs = t0 - spawnedAt;
    const startedMs = Date.now() - t0;
    let caughtUpMs: number | null = null;
    let snapshotsInstalled = 0;
    await until('the new instance a voter', async () => {
      const s = await joiner.state();
      snapshotsInstalled = s.log.snapshotsInstalled;
      if (caughtUpMs === null && s.appliedIndex >= index) caughtUpMs = Date.now() - t0;
      return s.configuration.voters.includes(joiner.address);
    });
    return { spawnMs, startedMs, caughtUpMs, voterMs: Date.now() - t0, snapshotsInstalled };
  } finally {
    await cluster.cleanup();
  }
}

/** Part b: serial commits with 3 voters, then with 5 voters and LEARNERS learners, from the same leader. */
async function benchLatency(): Promise<Pick<MembershipBenchResult, 'threeVoters' | 'fiveVotersTenLearners'>> {
  const cluster = await ProcessCluster.create(3, { voters: 5 }, undefined, TEST_TIMING);
  try {
    await cluster.startAll();
    const leader = await cluster.waitForLeader();
    await membershipActive(cluster.members);
    const serial = async (count: number): Promise<number[]> => {
      const latencies: number[] = [];
      for (let done = 0; done < count; done += SERIAL_CHUNK) latencies.push(...(await leader.request<{ latencies: number[] }>('serial', { count: Math.min(SERIAL_CHUNK, count - done), bytes: 64 })).latencies);
      return latencies;
    };
    await serial(WARMUP_COMMITS);
    const threeVoters = summarize(await serial(SERIAL_COMMITS));
    // Two to be promoted, then LEARNERS that stay learners (voters: 5), one at a time: joins are
    // configuration changes, one at a time anyway.
    for (let i = 0; i < 2 + LEARNERS; i++) await startJoiner(cluster);
    await until('5 voters and 10 learners on every member', async () =>
      (await allStates(cluster.members)).every((s) => s.configuration.voters.length === 5 && s.configuration.learners.length === LEARNERS),
    );
    if ((await cluster.waitForLeader()) !== leader) throw new Error('membership bench: leadership moved while the cluster grew');
    await serial(WARMUP_COMMITS);
    const fiveVotersTenLearners = summarize(await serial(SERIAL_COMMITS));
    return { threeVoters, fiveVotersTenLearners };
  } finally {
    await cluster.cleanup();
  }
}

export async function benchMembership(): Promise<MembershipBenchResult> {
  const toVoter = await benchToVoter();
  // Printed at once: the second part runs 15 processes, and a figure measured is not lost with it.
  console.log(`new instance to voter: ${JSON.stringify(toVoter)}`);
  const latency = await benchLatency();
  return { jobs: JOBS, toVoter, ...latency };
}

export function membershipRows(r: MembershipBenchResult): string[][] {
  const s = (x: ReturnType<typeof summarize>): string => `${fmt(x.p50)} / ${fmt(x.p99)} ms`;
  return [
    [`new empty instance: start() to voter, ${r.jobs.toLocaleString('en-US')} jobs in the state`, `${fmt(r.toVoter.voterMs, 0)} ms`, '<= 2 s'],
    ['  of which start() resolved (joined as a learner)', `${fmt(r.toVoter.startedMs, 0)} ms`, ''],
    ['  of which caught up (applied what the leader had)', r.toVoter.caughtUpMs === null ? 'n/a' : `${fmt(r.toVoter.caughtUpMs, 0)} ms`, ''],
    ['  before it: the process spawned and loaded the library (not counted)', `${fmt(r.toVoter.spawnMs, 0)} ms`, ''],
    ['commit latency p50 / p99, 3 voters (serial, warm)', s(r.threeVoters), ''],
    [`commit latency p50 / p99, 5 voters + ${LEARNERS} learners (serial, warm)`, s(r.fiveVotersTenLearners), ''],
  ];
}
