import { describe, expect, it } from 'vitest';
import type { NodeId } from '../../src/raft/types.js';
import type { RunRecord } from '../../src/runtime/scheduler/job-types.js';
import { memberSettings } from '../../src/runtime/member-settings.js';
import { SeededRandom } from '../../src/time/random.js';
import type { SimJob } from '../../simulations/jobs.js';
import { SimMember, type MemberHooks, type SimMemberConfig } from '../../simulations/member.js';
import { SimNetwork } from '../../simulations/network.js';
import { SimScheduler } from '../../simulations/scheduler.js';
import { simulateUntil } from '../fixtures/sim-until.js';

/**
 * A member's lease (member.ts, holdsLease) on simulated time, with the production member: a
 * member that stood still (SIGSTOP, a paused VM) for longer than its lease aborts its runs as
 * it resumes, follower or leader, and a follower whose leader died keeps its runs through the
 * election that follows, as long as the lease lasts. test/system/process-faults.test.ts does the same
 * to real processes, where the order of events after a stall is the kernel's.
 */
/** The production defaults. */
const SETTINGS = memberSettings();
const TIMING = SETTINGS.timing;
const LEASE_MS = 2 * TIMING.electionTimeoutMs;
/** Runs last longer than a pause: they are still going when their member resumes. */
const RUN_MS = 3000;
const JOB: SimJob = { name: 'long', spec: { every: '2s' }, runMs: [RUN_MS, RUN_MS], options: { overlap: 'allow' } };
/** A stall well past the lease (and an election timeout, after which the leader moves the slot). */
const PAUSE_MS = 1500;
/** Bound on simulated time for a scenario to get somewhere. */
const LIMIT_MS = 20_000;

interface Seen<T> {
  readonly id: NodeId;
  readonly t: number;
  readonly value: T;
}

/** Three members on a simulated network that loses nothing, each running JOB. */
class LeaseSim {
  readonly scheduler = new SimScheduler();
  readonly network: SimNetwork;
  readonly members: SimMember[];
  readonly starts: Array<Seen<Pick<RunRecord, 'slotMs' | 'fencingToken'>>> = [];
  readonly ends: Array<Seen<RunRecord>> = [];
  readonly leaders: Array<Seen<NodeId | null>> = [];

  private constructor(seed: number) {
    this.network = new SimNetwork(this.scheduler, new SeededRandom(seed), { lossRate: 0, duplicateRate: 0, latencyMinMs: 0.2, latencyMaxMs: 1 });
    this.members = ['m1', 'm2', 'm3'].map((id, i) => new SimMember(id, seed * 31 + i, this.scheduler));
  }

  static async start(seed: number): Promise<LeaseSim> {
    const sim = new LeaseSim(seed);
    const config: SimMemberConfig = { voters: sim.members.map((m) => m.id), jobs: [JOB], settings: SETTINGS };
    const ignore = (): void => undefined;
    const hooks: MemberHooks = {
      onStart: ignore,
      onApplied: ignore,
      onSnapshotInstalled: ignore,
      onSchedulerApplied: ignore,
      onSoftState: (id, _node, s) => sim.leaders.push({ id, t: sim.scheduler.nowMs, value: s.leader }),
      onRunStart: (id, _incarnation, run) => sim.starts.push({ id, t: sim.scheduler.nowMs, value: run }),
      onRun: (id, _incarnation, run) => sim.ends.push({ id, t: sim.scheduler.nowMs, value: run }),
      onFatal: ignore,
    };
    // All start at time 0: each member's plan tick falls on every multiple of the plan interval.
    for (const m of sim.members) await m.start(sim.network, config, hooks);
    return sim;
  }

  /** Runs the simulation until `done` holds, for at most LIMIT_MS more. */
  async until<T>(what: string, done: () => T | undefined): Promise<T> {
    return simulateUntil(this.scheduler, this.members, LIMIT_MS, what, done);
  }

  leader(): SimMember | undefined {
    return this.members.find((m) => m.driver?.node.role === 'leader');
  }

  /** The next run to start on one of `on`, from now. */
  nextRunOn(on: readonly SimMember[]): Promise<Seen<Pick<RunRecord, 'slotMs' | 'fencingToken'>>> {
    const from = this.starts.length;
    return this.until('a run starts', () => this.starts.slice(from).find((s) => on.some((m) => m.id === s.id)));
  }

  /** The end of `run` on member `id`. */
  endOf(id: NodeId, run: Pick<RunRecord, 'slotMs' | 'fencingToken'>): Promise<Seen<RunRecord>> {
    return this.until('the run ends', () => this.ends.find((e) => e.id === id && e.value.slotMs === run.slotMs && e.value.fencingToken === run.fencingToken));
  }

  /**
   * Stalls `m` for PAUSE_MS from just after its next plan tick: it then resumes with messages
   * that arrived early in the stall (heartbeats come more often than plan ticks) ahead of that
   * tick, as a real process may take the messages waiting on its sockets first.
   */
  async pauseAfterPlanTick(m: SimMember): Promise<{ readonly from: number; readonly until: number }> {
    const from = (Math.floor(this.scheduler.nowMs / TIMING.planIntervalMs) + 1) * TIMING.planIntervalMs + 1;
    await this.until('the pause starts', () => (this.scheduler.nextAt() !== null && (this.scheduler.nextAt() as number) > from ? true : undefined));
    m.pausedUntil = from + PAUSE_MS;
    return { from, until: m.pausedUntil };
  }
}

describe('a member lease', () => {
  // Heartbeats arrive within a plan interval: a stall that starts after a plan tick resumes
  // with a message from the leader ahead of the next one.
  it('is laid out as the scenarios below assume', () => {
    expect(TIMING.heartbeatTicks * TIMING.tickMs).toBeLessThan(TIMING.planIntervalMs);
  });

  it('that ran out while a follower stood still is not renewed by the first message it then takes: its run aborts as it resumes', async () => {
    const sim = await LeaseSim.start(1);
    const leader = await sim.until('a leader', () => sim.leader());
    const run = await sim.nextRunOn(sim.members.filter((m) => m !== leader));
    const follower = sim.members.find((m) => m.id === run.id) as SimMember;
    const pause = await sim.pauseAfterPlanTick(follower);
    const end = await sim.endOf(follower.id, run.value);
    expect({ outcome: end.value.outcome, t: end.t }).toEqual({ outcome: 'interrupted', t: pause.until });
  });

  it('is held by a leader only while a majority answers: a leader that stood still for longer aborts its run as it resumes', async () => {
    const sim = await LeaseSim.start(2);
    const leader = await sim.until('a leader', () => sim.leader());
    const run = await sim.nextRunOn([leader]);
    const pause = await sim.pauseAfterPlanTick(leader);
    const end = await sim.endOf(leader.id, run.value);
    expect({ outcome: end.value.outcome, t: end.t }).toEqual({ outcome: 'interrupted', t: pause.until });
  });

  it("lasts through the election that follows a leader's death: a follower knows no leader for a while, and its run goes on", async () => {
    const sim = await LeaseSim.start(3);
    const leader = await sim.until('a leader', () => sim.leader());
    const run = await sim.nextRunOn(sim.members.filter((m) => m !== leader));
    leader.crash();
    const diedAt = sim.scheduler.nowMs;
    const end = await sim.endOf(run.id, run.value);
    // The follower did campaign (Raft forgets the leader then) while its run went on, and it
    // heard from a new leader before its lease ran out.
    const forgot = sim.leaders.find((l) => l.id === run.id && l.t > diedAt && l.value === null);
    const next = sim.leaders.find((l) => l.id === run.id && l.t > diedAt && l.value !== null && l.value !== leader.id);
    expect(forgot?.t).toBeLessThan(end.t);
    expect(next?.t).toBeLessThan(diedAt + LEASE_MS);
    expect(end.value.outcome).toBe('succeeded');
  });

  it('is renewed by its leader only: a follower that hears nothing but its former leader, deposed and campaigning, aborts its run', async () => {
    const sim = await LeaseSim.start(4);
    const leader = await sim.until('a leader', () => sim.leader());
    const run = await sim.nextRunOn(sim.members.filter((m) => m !== leader));
    const follower = sim.members.find((m) => m.id === run.id) as SimMember;
    const other = sim.members.find((m) => m !== leader && m !== follower) as SimMember;
    // The leader hears nobody and steps down, then asks for votes over and over; those reach the
    // follower, which hears from no one else. No leader can be elected.
    for (const [from, to] of [[follower, leader], [other, leader], [follower, other], [other, follower]] as const) sim.network.block(from.id, to.id);
    const cutAt = sim.scheduler.nowMs;
    const end = await sim.endOf(follower.id, run.value);
    expect(end.value.outcome).toBe('interrupted');
    // Heartbeats reach it until the leader steps down (CheckQuorum looks once an election
    // timeout, at what it heard during the one before: two timeouts at most); its lease ends two
    // timeouts later, and its next plan tick sees that.
    expect(end.t).toBeLessThanOrEqual(cutAt + 2 * TIMING.electionTimeoutMs + LEASE_MS + TIMING.planIntervalMs);
    // Not vacuous: the former leader's messages go on reaching it, past its lease.
    const driver = follower.driver;
    const heardPastLease = (): true | undefined => ((driver?.contact.lastHeard(leader.id) ?? 0) - (driver?.contact.leaderContact ?? 0) > LEASE_MS ? true : undefined);
    await expect(sim.until('the former leader is heard from past the lease', heardPastLease)).resolves.toBe(true);
  });

  it('of a leader counts from the last time it heard from a majority, though it steps down meanwhile: cut off, it aborts its run within the lease', async () => {
    const sim = await LeaseSim.start(5);
    const leader = await sim.until('a leader', () => sim.leader());
    const run = await sim.nextRunOn([leader]);
    for (const other of sim.members) {
      if (other === leader) continue;
      sim.network.block(leader.id, other.id);
      sim.network.block(other.id, leader.id);
    }
    const cutAt = sim.scheduler.nowMs;
    const end = await sim.endOf(leader.id, run.value);
    expect(end.value.outcome).toBe('interrupted');
    // It heard from its majority last before the cut; the plan tick after the lease ran out sees it.
    expect(end.t).toBeLessThanOrEqual(cutAt + LEASE_MS + TIMING.planIntervalMs);
    // Not vacuous: it stepped down (CheckQuorum) before its lease ran out, and leads no more.
    const steppedDown = sim.leaders.find((l) => l.id === leader.id && l.t > cutAt && l.value !== leader.id);
    expect(steppedDown?.t).toBeLessThan(end.t);
  });
});
