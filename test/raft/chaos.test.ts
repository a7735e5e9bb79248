import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/time/random.js';
import { EntryType, type NodeId } from '../../src/raft/types.js';
import { sameConfiguration } from '../../src/raft/configuration.js';
import { TestNetwork } from './network.js';

/**
 * Random partitions, message loss, restarts, compactions and proposals over many seeds, with Raft's
 * safety properties checked after every step, then a healed phase that must elect a leader
 * and commit. The full simulator (simulations/) grows from this; this keeps the pure core honest.
 */
/**
 * With `spares`, members that start empty outside the configuration, the leader also proposes
 * configuration changes among the faults: it adds a spare as a learner, promotes a learner, or
 * removes a member (never added again: ids are not reused). Returns how many snapshots were
 * delivered and how many changes were applied by the end (so a sweep can show it made some).
 */
function runSeed(seed: number, founding: NodeId[], steps: number, spares: NodeId[] = []): { snapshots: number; changes: number } {
  const rnd = new SeededRandom(seed);
  const net = new TestNetwork(founding, { seed, electionTicks: 10, heartbeatTicks: 2 });
  for (const id of spares) net.addMember(id);
  const members = net.ids;
  const removed = new Set<NodeId>();
  let changes = 0;
  const leaderOfTerm = new Map<number, NodeId>();
  const committedLog = new Map<number, string>(); // index -> term:pid of a committed entry
  const lastCommit = new Map<NodeId, number>();
  let proposals = 0;
  let lossPercent = 0;
  net.filter = (): boolean => rnd.int(0, 99) >= lossPercent;

  const check = (): void => {
    for (const id of members) {
      const node = net.node(id);
      if (node.role === 'leader') {
        const prior = leaderOfTerm.get(node.term);
        if (prior !== undefined && prior !== id) throw new Error(`seed ${seed}: two leaders in term ${node.term}: ${prior} and ${id}`);
        leaderOfTerm.set(node.term, id);
      }
      const commit = node.log.committed;
      if (commit < (lastCommit.get(id) ?? 0)) throw new Error(`seed ${seed}: ${id} commit went back`);
      lastCommit.set(id, commit);
      for (let i = node.log.firstIndex(); i <= commit; i++) {
        const e = node.log.entry(i)!;
        const key = `${e.term}:${e.pid}`;
        const known = committedLog.get(i);
        if (known !== undefined && known !== key) throw new Error(`seed ${seed}: index ${i} committed as ${known} and ${key}`);
        committedLog.set(i, key);
      }
      // Applied entries are a prefix of the committed log.
      net.member(id).applied.forEach((e) => {
        if (committedLog.get(e.index) !== `${e.term}:${e.pid}`) throw new Error(`seed ${seed}: ${id} applied ${e.index} not as committed`);
      });
    }
  };

  const proposeChange = (): void => {
    const leader = net.leaders().at(-1);
    if (leader === undefined) return;
    const conf = net.node(leader).configuration;
    const outsiders = members.filter((id) => !removed.has(id) && !conf.voters.includes(id) && !conf.learners.includes(id));
    const kind = rnd.int(0, 3);
    const pick = (ids: readonly NodeId[]): NodeId | undefined => ids[rnd.int(0, Math.max(0, ids.length - 1))];
    const unbound = [...conf.voters, ...conf.learners].filter((id) => !conf.peerIds.some(([member]) => member === id));
    const change =
      kind === 0
        ? { type: 'add-learner' as const, id: pick(outsiders) }
        : kind === 1
          ? { type: 'promote' as const, id: pick(conf.learners) }
          : kind === 2
            ? { type: 'remove' as const, id: pick([...conf.voters, ...conf.learners]) }
            : { type: 'bind' as const, id: pick(unbound) };
    if (change.id === undefined) return;
    // A bind changes no quorum: it only moves the configuration every member must agree on.
    const outcome = net.confChange(leader, change.type === 'bind' ? { type: 'bind', id: change.id, peerId: `P${change.id}` } : { type: change.type, id: change.id });
    if (outcome.kind === 'appended' && change.type === 'remove') removed.add(change.id);
  };

  for (let step = 0; step < steps; step++) {
    const roll = rnd.int(0, 99);
    if (roll < 3) net.isolate(members[rnd.int(0, members.length - 1)]!);
    else if (roll < 6) net.cut(members[rnd.int(0, members.length - 1)]!, members[rnd.int(0, members.length - 1)]!);
    else if (roll < 10) net.recover();
    else if (roll < 12) net.restart(members[rnd.int(0, members.length - 1)]!);
    else if (roll < 14) lossPercent = rnd.int(0, 30);
    else if (roll < 40) net.propose(members[rnd.int(0, members.length - 1)]!, `p${++proposals}`);
    else if (roll < 42) net.node(members[rnd.int(0, members.length - 1)]!).transferLeadership();
    else if (roll < 45) net.compact(members[rnd.int(0, members.length - 1)]!, rnd.int(0, 5));
    else if (roll < 48 && spares.length > 0) proposeChange();
    for (const id of members) if (rnd.int(0, 3) > 0) net.tick(id);
    // Deliver a random prefix of the traffic: the rest waits, which reorders across steps.
    net.deliverOnce();
    check();
  }

  // Liveness: heal everything; within a bound of ticks a leader must emerge and commit a new
  // entry on every member. A proposal refused (no leader yet, or a transfer under way) is retried.
  net.recover();
  lossPercent = 0;
  // The term in which 'final' was appended; a proposal can be lost when leadership changes
  // before it commits, and a client then proposes again, as this does.
  let appendedInTerm = -1;
  for (let t = 0; t < 200; t++) {
    const leaders = net.leaders();
    if (leaders.length === 1 && net.node(leaders[0]!).term !== appendedInTerm) {
      if (net.propose(leaders[0]!, 'final').kind === 'appended') appendedInTerm = net.node(leaders[0]!).term;
    }
    net.tickAll(1);
    check();
    // Every member of the leader's configuration applies it; one removed, or never added, need not.
    const leader = net.leaders()[0];
    const conf = leader === undefined ? null : net.node(leader).configuration;
    const current = conf === null ? members : [...conf.voters, ...conf.learners];
    if (current.every((id) => net.appliedTexts(id).includes('final'))) {
      // No change is proposed while healing: every member that applied 'final' holds the leader's configuration, peer ids bound included.
      for (const id of current) if (conf !== null && !sameConfiguration(net.node(id).configuration, conf)) throw new Error(`seed ${seed}: ${id} holds another configuration than the leader`);
      for (const id of current) changes = Math.max(changes, net.member(id).applied.filter((e) => e.type === EntryType.ConfChange).length);
      return { snapshots: net.count('snapshot'), changes };
    }
  }
  if (process.env.DEBUG_SEED === String(seed)) {
    const l = net.leaders()[0];
    console.log(appendedInTerm, l, members.map((id) => [id, net.node(id).role, net.node(id).term, net.node(id).leader, net.node(id).log.committed, net.node(id).log.lastIndex(), net.logTerms(id).slice(-3), l ? net.node(l).progressOf(id) : null, net.appliedTexts(id).length]));
  }
  throw new Error(`seed ${seed}: the final entry was not applied everywhere within 200 ticks after healing`);
}

describe('randomized faults keep Raft safe and live', () => {
  it('3 members, 150 seeds', () => {
    let snapshots = 0;
    for (let seed = 1; seed <= 150; seed++) snapshots += runSeed(seed, ['a', 'b', 'c'], 400).snapshots;
    expect(snapshots).toBeGreaterThan(0);
  });

  it('5 members, 100 seeds', () => {
    let snapshots = 0;
    for (let seed = 1; seed <= 100; seed++) snapshots += runSeed(seed, ['a', 'b', 'c', 'd', 'e'], 400).snapshots;
    expect(snapshots).toBeGreaterThan(0);
  });

  it('3 founding members and 3 spares, configuration changes among the faults, 150 seeds', () => {
    let changes = 0;
    let snapshots = 0;
    for (let seed = 1; seed <= 150; seed++) {
      const run = runSeed(seed, ['a', 'b', 'c'], 400, ['d', 'e', 'f']);
      changes += run.changes;
      snapshots += run.snapshots;
    }
    expect(changes).toBeGreaterThan(150);
    expect(snapshots).toBeGreaterThan(0);
  });
});
