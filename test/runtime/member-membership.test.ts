import { describe, expect, it } from 'vitest';
import { RemovedError, VersionNotActiveError } from '../../src/errors.js';
import type { NodeId } from '../../src/raft/types.js';
import { memberSettings, type MemberSettings } from '../../src/runtime/member-settings.js';
import { SeededRandom } from '../../src/time/random.js';
import { MEMBERSHIP_VERSION, SUPPORTED, type VersionSupport } from '../../src/version/versions.js';
import type { SimJob } from '../../simulations/jobs.js';
import { SimMember, type MemberHooks, type SimMemberConfig } from '../../simulations/member.js';
import { SimNetwork } from '../../simulations/network.js';
import { SimScheduler } from '../../simulations/scheduler.js';
import { simulateUntil } from '../fixtures/sim-until.js';

/**
 * Configuration changes wired through the production member (driver, member, configuration
 * keeper, simulated transport), on simulated time: a member joins as a learner, catches up,
 * runs its share of a mode 'all' job, is promoted; a founding member is removed and stops,
 * disrupting nothing. And the version gate: no change before the cluster runs version 2.
 */
const SETTINGS = memberSettings();
/** Every member runs it: a learner given work shows in its runs. */
const JOB: SimJob = { name: 'everyone', spec: { every: '1s' }, runMs: [1, 5], options: { mode: 'all' } };
/** Bound on simulated time for a step of a scenario. */
const LIMIT_MS = 30_000;
const FOUNDERS = ['m1', 'm2', 'm3'];
/** This release without cluster version 2: a member of 0.1.0, as far as the gate goes. */
const WITHOUT_MEMBERSHIP: VersionSupport = { protocol: { min: 1, max: 1 }, stateMachine: { min: 1, max: 1 } };

class MembershipSim {
  readonly scheduler = new SimScheduler();
  readonly network: SimNetwork;
  readonly members = new Map<NodeId, SimMember>();
  readonly runs: Array<{ readonly id: NodeId; readonly t: number }> = [];
  readonly fatal = new Map<NodeId, unknown>();
  readonly terms: Array<{ readonly id: NodeId; readonly term: number }> = [];
  readonly #config: SimMemberConfig;
  readonly #hooks: MemberHooks;
  readonly #seed: number;

  constructor(seed: number, settings: MemberSettings = SETTINGS) {
    this.#seed = seed;
    this.network = new SimNetwork(this.scheduler, new SeededRandom(seed), { lossRate: 0, duplicateRate: 0, latencyMinMs: 0.2, latencyMaxMs: 1 });
    // Every member, a joiner too, is given the founding voters as its configuration.
    this.#config = { voters: FOUNDERS, jobs: [JOB], settings };
    const ignore = (): void => undefined;
    this.#hooks = {
      onStart: ignore,
      onApplied: ignore,
      onSnapshotInstalled: ignore,
      onSchedulerApplied: ignore,
      onSoftState: (id, _node, s) => this.terms.push({ id, term: s.term }),
      onRunStart: (id) => this.runs.push({ id, t: this.scheduler.nowMs }),
      onRun: ignore,
      onFatal: (id, error) => this.fatal.set(id, error),
    };
  }

  async start(id: NodeId, versions: VersionSupport = SUPPORTED): Promise<SimMember> {
    const m = new SimMember(id, this.#seed * 31 + this.members.size, this.scheduler);
    m.versions = versions;
    this.members.set(id, m);
    await m.start(this.network, this.#config, this.#hooks);
    return m;
  }

  get(id: NodeId): SimMember {
    return this.members.get(id) as SimMember;
  }

  async until<T>(what: string, done: () => T | undefined): Promise<T> {
    return simulateUntil(this.scheduler, [...this.members.values()], LIMIT_MS, what, done);
  }

  /** Runs for `ms` of simulated time. */
  async run(ms: number): Promise<void> {
    const until = this.scheduler.nowMs + ms;
    await this.until('time passes', () => (this.scheduler.nowMs >= until ? true : undefined)).catch(() => undefined);
  }

  leader(): SimMember | undefined {
    return [...this.members.values()].find((m) => m.up && this.fatal.get(m.id) === undefined && m.driver?.node.role === 'leader');
  }

  /** Settles `promise` while simulated time runs. */
  async settle<T>(promise: Promise<T>): Promise<T> {
    let outcome: { value: T } | { error: unknown } | undefined;
    promise.then(
      (value) => (outcome = { value }),
      (error: unknown) => (outcome = { error }),
    );
    const o = await this.until('the request settles', () => outcome);
    if ('error' in o) throw o.error;
    return o.value;
  }
}

/** The member's voters and learners (the peer ids bound are binding-keeper's tests' matter). */
const conf = (m: SimMember): { voters: readonly NodeId[]; learners: readonly NodeId[] } => {
  const c = m.member?.configuration.conf;
  return { voters: c?.voters ?? [], learners: c?.learners ?? [] };
};

describe('configuration changes on the production member', () => {
  it('adds a learner that catches up and takes work, promotes it, and removes a founding member, which stops and disrupts nothing', async () => {
    const sim = new MembershipSim(3);
    for (const id of FOUNDERS) await sim.start(id);
    // The version rises to 2 by itself: every member reads it.
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const m4 = await sim.start('m4');
    const leader = await sim.until('a leader', () => sim.leader());

    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id: 'm4' }));
    expect(conf(leader)).toEqual({ voters: FOUNDERS, learners: ['m4'] });
    // The learner catches up, learns that it is one, and runs its share of the mode 'all' job.
    await sim.until('m4 applies its own addition', () => (conf(m4).learners.includes('m4') ? true : undefined));
    await sim.until('m4 runs a slot', () => sim.runs.find((r) => r.id === 'm4'));
    expect(m4.driver?.node.role).toBe('follower');
    expect(leader.member?.eligibleMembers()).toContain('m4');

    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'promote', id: 'm4' }));
    await sim.until('every member sees m4 a voter', () => ([...sim.members.values()].every((m) => conf(m).voters.includes('m4')) ? true : undefined));

    // A founding follower is removed: it stops as it applies the change, and no election follows.
    const removed = FOUNDERS.find((id) => id !== leader.id) as NodeId;
    const term = leader.driver?.node.term;
    const termsBefore = sim.terms.length;
    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'remove', id: removed }));
    await sim.until('the removed member stops', () => sim.fatal.get(removed));
    expect(sim.fatal.get(removed)).toBeInstanceOf(RemovedError);
    expect(sim.fatal.get(removed)).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    await expect(sim.get(removed).driver?.propose(Uint8Array.of(1))).rejects.toMatchObject({ code: 'CRONRAFT_REMOVED' });
    const runsBefore = sim.runs.filter((r) => r.id === removed).length;
    await sim.run(10_000);
    expect(sim.runs.filter((r) => r.id === removed).length).toBe(runsBefore);
    expect(sim.leader()).toBe(leader);
    expect(leader.driver?.node.term).toBe(term);
    expect(sim.terms.slice(termsBefore).every((t) => t.term === term)).toBe(true);
    const remaining = [...sim.members.values()].filter((m) => m.id !== removed);
    for (const m of remaining) expect(conf(m)).toEqual({ voters: ['m4', ...FOUNDERS.filter((id) => id !== removed)].sort(), learners: [] });
    // The three left still commit, and run the job.
    const runsNow = sim.runs.length;
    await sim.until('runs go on', () => (new Set(sim.runs.slice(runsNow).map((r) => r.id)).size === 3 ? true : undefined));
    expect(sim.fatal.size).toBe(1);
  });

  it('removes the leader: it stops, hands over, and the voters left elect a leader and go on', async () => {
    const sim = new MembershipSim(7);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'remove', id: leader.id }));
    await sim.until('the removed leader stops', () => sim.fatal.get(leader.id));
    expect(sim.fatal.get(leader.id)).toMatchObject({ code: 'CRONRAFT_REMOVED' });
    const next = await sim.until('a new leader', () => sim.leader());
    expect(next.id).not.toBe(leader.id);
    const left = FOUNDERS.filter((id) => id !== leader.id);
    await sim.until('the voters left apply the change', () => (left.every((id) => conf(sim.get(id)).voters.length === 2) ? true : undefined));
    for (const id of left) expect(conf(sim.get(id))).toEqual({ voters: left, learners: [] });
    // Two voters commit on: a proposal through the new leader is applied.
    await sim.settle((next.driver as NonNullable<SimMember['driver']>).propose(Uint8Array.of(7)));
    expect(sim.fatal.size).toBe(1);
  });

  it('catches a learner up by a snapshot that carries the configuration, and it restarts from it', async () => {
    const small: MemberSettings = { ...SETTINGS, compaction: { everyEntries: 20, retainEntries: 5 } };
    const sim = new MembershipSim(5, small);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    // Enough entries that the leader's log no longer starts at 1.
    await sim.until('the leader compacted', () => ((leader.driver?.node.log.firstIndex() ?? 1) > 1 ? true : undefined));
    const m4 = await sim.start('m4');
    await sim.settle((leader.member as NonNullable<SimMember['member']>).proposeConfChange({ type: 'add-learner', id: 'm4' }));
    await sim.until('m4 learns it is a learner', () => (conf(m4).learners.includes('m4') ? true : undefined));
    expect(m4.driver?.snapshotsInstalled).toBeGreaterThan(0);
    // Once compacted past the change, a snapshot holds it: m4 restarts from it a learner.
    await sim.until('m4 compacted past its addition', () => (m4.driver?.node.latestSnapshot.conf?.learners.includes('m4') === true && (m4.driver?.snapshotsTaken ?? 0) > 0 ? true : undefined));
    m4.crash();
    await m4.start(sim.network, { voters: FOUNDERS, jobs: [JOB], settings: small }, { onStart: () => undefined, onApplied: () => undefined, onSnapshotInstalled: () => undefined, onSchedulerApplied: () => undefined, onSoftState: () => undefined, onRunStart: () => undefined, onRun: () => undefined, onFatal: (id, e) => sim.fatal.set(id, e) });
    expect(conf(m4)).toEqual({ voters: FOUNDERS, learners: ['m4'] });
    expect(sim.fatal.size).toBe(0);
  });

  it('refuses a change while the cluster runs version 1: before the version rose, and while a member cannot read version 2', async () => {
    const sim = new MembershipSim(4);
    await sim.start('m1');
    await sim.start('m2');
    await sim.start('m3', WITHOUT_MEMBERSHIP);
    const leader = await sim.until('a leader', () => sim.leader());
    expect(leader.member?.versions.active).toBe(1);
    expect(() => leader.member?.proposeConfChange({ type: 'remove', id: 'm3' })).toThrow(VersionNotActiveError);
    // With a member that cannot read it, the version never rises, and the gate holds.
    await sim.run(10_000);
    expect(leader.member?.versions.active).toBe(1);
    expect(() => leader.member?.proposeConfChange({ type: 'remove', id: 'm3' })).toThrow(expect.objectContaining({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', needs: MEMBERSHIP_VERSION }));
    expect(conf(leader)).toEqual({ voters: FOUNDERS, learners: [] });
  });

  it('rejects a change on a follower with NotLeaderError naming the leader', async () => {
    const sim = new MembershipSim(6);
    for (const id of FOUNDERS) await sim.start(id);
    await sim.until('cluster version 2 on every member', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === MEMBERSHIP_VERSION) ? true : undefined));
    const leader = await sim.until('a leader', () => sim.leader());
    const follower = sim.get(FOUNDERS.find((id) => id !== leader.id) as NodeId);
    await expect(follower.member?.proposeConfChange({ type: 'add-learner', id: 'm4' })).rejects.toMatchObject({ code: 'CRONRAFT_NOT_LEADER', leader: leader.id });
    await expect(leader.member?.proposeConfChange({ type: 'remove', id: 'nobody' })).rejects.toMatchObject({ code: 'CRONRAFT_MEMBERSHIP_REFUSED', reason: 'not-member' });
  });
});
