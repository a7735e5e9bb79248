import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import { MemberWatch } from '../../simulations/checkers/members.js';
import { RunsInProgress } from '../../simulations/checkers/runs.js';
import { WAITED_OVERLAP_GRACE_MS, WaitedRunsChecker, type WaitedRunFacts } from '../../simulations/checkers/waited-runs.js';
import type { SimMember } from '../../simulations/member.js';
import { SIM_EPOCH_MS } from '../../simulations/scheduler.js';
import type { ViolationKind } from '../../simulations/violations.js';

const ELECTION_TIMEOUT_MS = 1000;
const PLAN_INTERVAL_MS = 100;

/** A member as MemberWatch sees it: up in its first process life, never stalled. */
const member = (id: NodeId): SimMember => ({ id, incarnation: 1, up: true, pausedUntil: 0, member: null, driver: null }) as unknown as SimMember;

/** The checker over members m1 to m3, its jobs' modes and policies as given, links cut as `cuts` says. */
interface Setup {
  readonly reported: Array<{ kind: ViolationKind; detail: string }>;
  readonly start: (t: number, m: NodeId, job: string, slotT: number, token: number, waited: boolean, life?: number) => void;
  readonly end: (t: number, m: NodeId, job: string, slotT: number, token: number, life?: number) => void;
  readonly restart: (m: NodeId) => void;
  /** Time moves to `t`: pairs of runs that went on together past the grace are reported. */
  readonly after: (t: number) => void;
}

function setup(jobs: Record<string, { mode: 'one' | 'all'; overlap: string }>, cuts: Partial<Record<NodeId, number>> = {}): Setup {
  const reported: Array<{ kind: ViolationKind; detail: string }> = [];
  const runs = new RunsInProgress();
  const members = ['m1', 'm2', 'm3'].map(member);
  const watch = new MemberWatch(members);
  const facts: WaitedRunFacts = {
    mode: (job) => jobs[job]?.mode,
    overlap: (job) => jobs[job]?.overlap,
    electionTimeoutMs: ELECTION_TIMEOUT_MS,
    planIntervalMs: PLAN_INTERVAL_MS,
    lastCut: (id) => cuts[id],
  };
  const checker = new WaitedRunsChecker((_t, kind, detail) => void reported.push({ kind, detail }), runs, watch, facts);
  /** A run of `job`'s slot at true ms `slotT` starts on `m` at `t`, in its process life `life`. */
  const start = (t: number, m: NodeId, job: string, slotT: number, token: number, waited: boolean, life = 1): void => {
    const run = { job, slotMs: SIM_EPOCH_MS + slotT, fencingToken: token, waited };
    runs.start(t, m, life, run);
    checker.onRunStart(t, m, life, run);
  };
  const end = (t: number, m: NodeId, job: string, slotT: number, token: number, life = 1): void => void runs.end(t, m, life, { job, slotMs: SIM_EPOCH_MS + slotT, fencingToken: token });
    /** `m`'s process life crashes and the next one starts. */
  const restart = (m: NodeId): void => {
    const sim = members.find((x) => x.id === m) as { incarnation: number };
    watch.onStop(m, sim.incarnation);
    sim.incarnation += 1;
  };
  return { reported, start, end, restart, after: (t) => checker.afterEvent(t) };
}

const SKIP_ONE = { slow: { mode: 'one' as const, overlap: 'skip' } };

describe('the checker of slots waiting behind late runs (overlap-waited)', () => {
  it('reports two runs of a skip job at once on two members that each waited behind another run', () => {
    const { reported, start, end, after } = setup(SKIP_ONE);
    // A moved slot runs late on m1; slots 3000 and 6000 fire on m2 and m3 meanwhile and wait.
    start(5000, 'm1', 'slow', 0, 10, false);
    end(12_000, 'm1', 'slow', 0, 10);
    start(12_010, 'm2', 'slow', 3000, 11, true);
    start(12_012, 'm3', 'slow', 6000, 12, true);
    // Reported once both went on past the grace, and once only.
    after(12_012 + WAITED_OVERLAP_GRACE_MS);
    expect(reported).toEqual([]);
    after(12_013 + WAITED_OVERLAP_GRACE_MS);
    after(20_000);
    expect(reported.map((r) => r.kind)).toEqual(['overlap-waited']);
    expect(reported[0]?.detail).toContain('slot');
  });

  it('reports nothing where one of the two ends within the grace (taken as ended by its timeout a moment early), or its member crashed', () => {
    const { reported, start, end, after, restart } = setup(SKIP_ONE);
    start(10_000, 'm2', 'slow', 3000, 11, true);
    start(16_000, 'm3', 'slow', 6000, 12, true);
    end(16_000 + WAITED_OVERLAP_GRACE_MS - 1, 'm2', 'slow', 3000, 11);
    after(17_000);
    start(18_000, 'm1', 'slow', 9000, 13, true);
    restart('m3');
    after(19_000);
    expect(reported).toEqual([]);
  });

  it('reports nothing where one of the two did not wait (a start not seen yet: replication lag), or the first ended before', () => {
    const { reported, start, end, after } = setup(SKIP_ONE);
    start(12_010, 'm2', 'slow', 3000, 11, true);
    start(12_012, 'm3', 'slow', 6000, 12, false);
    end(13_000, 'm2', 'slow', 3000, 11);
    end(13_000, 'm3', 'slow', 6000, 12);
    start(14_000, 'm1', 'slow', 9000, 13, true);
    start(14_000, 'm1', 'slow', 9100, 14, true);
    end(14_500, 'm1', 'slow', 9100, 14);
    // Two waited runs on one member are the 'overlap' checker's, and one slot's on two members
    // (moved while its first holder waited) the 'double-run' checker's, not this one's.
    start(15_000, 'm2', 'slow', 9000, 15, true);
    after(20_000);
    expect(reported).toEqual([]);
  });

  it("reports two runs of a 'queue' job at once on two members that each waited: queued slots run one at a time (2d53a89)", () => {
    const { reported, start, end, after } = setup({ queued: { mode: 'one', overlap: 'queue' } });
    // m1's backlog: slot 10 s runs, slot 11 s waits behind it; slot 12 s went to m2 and waits too.
    start(10_000, 'm1', 'queued', 10_000, 1, false);
    end(13_000, 'm1', 'queued', 10_000, 1);
    start(13_000, 'm1', 'queued', 11_000, 2, true);
    start(13_001, 'm2', 'queued', 12_000, 3, true);
    after(15_000);
    expect(reported.map((r) => r.kind)).toEqual(['overlap-waited']);
    expect(reported[0]?.detail).toContain("overlap 'queue'");
  });

  it("leaves out overlap 'allow' and mode 'all'", () => {
    const { reported, start, after } = setup({ allowed: { mode: 'one', overlap: 'allow' }, all: { mode: 'all', overlap: 'skip' } });
    start(1000, 'm1', 'allowed', 0, 1, true);
    start(1000, 'm2', 'allowed', 100, 2, true);
    start(1000, 'm1', 'all', 0, 3, true);
    start(1000, 'm2', 'all', 0, 3, true);
    after(5000);
    expect(reported).toEqual([]);
  });

  it('excuses a member with a link blocked from a lease and a plan interval before the earlier slot, and not before', () => {
    const lease = 2 * ELECTION_TIMEOUT_MS + PLAN_INTERVAL_MS;
    const within = setup(SKIP_ONE, { m3: 3000 - lease });
    within.start(12_010, 'm2', 'slow', 3000, 11, true);
    within.start(12_012, 'm3', 'slow', 6000, 12, true);
    within.after(13_000);
    expect(within.reported).toEqual([]);
    const before = setup(SKIP_ONE, { m3: 3000 - lease - 1 });
    before.start(12_010, 'm2', 'slow', 3000, 11, true);
    before.start(12_012, 'm3', 'slow', 6000, 12, true);
    before.after(13_000);
    expect(before.reported.map((r) => r.kind)).toEqual(['overlap-waited']);
  });

  it('excuses a run its member resumes after a restart, and a run whose member crashed', () => {
    const { reported, start, restart, after } = setup(SKIP_ONE);
    start(10_000, 'm1', 'slow', 0, 10, true);
    restart('m1');
    // m1's crashed run is no run; its waited run beside m2's would have been two at once.
    start(12_000, 'm2', 'slow', 3000, 11, true);
    after(12_500);
    expect(reported).toEqual([]);
    // m3's next life resumes its slot under the same token: it waits without looking elsewhere.
    start(12_000, 'm3', 'slow', 6000, 12, false);
    restart('m3');
    start(15_000, 'm3', 'slow', 6000, 12, true, 2);
    after(15_010);
    expect(reported).toEqual([]);
    // m1's waited run beside m2's is two at once.
    start(15_020, 'm1', 'slow', 9000, 13, true, 2);
    after(16_000);
    expect(reported.map((r) => r.kind)).toEqual(['overlap-waited']);
  });
});
