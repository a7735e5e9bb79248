import { createHash } from 'node:crypto';
import type { Entry, NodeId } from '../src/raft/types.js';
import { SeededRandom } from '../src/time/random.js';
import { SafetyChecker } from './checker.js';
import { SimMember, type MemberHooks, type MemberSettings } from './member.js';
import { SimNetwork, type NetworkFaults } from './network.js';
import { drainMicrotasks, SimScheduler } from './scheduler.js';

/** Which faults a run injects. Each on by default; their parameters are drawn from the seed. */
export interface FaultSwitches {
  readonly partitions?: boolean;
  readonly loss?: boolean;
  readonly crashes?: boolean;
}

export interface SimulationOptions {
  readonly seed: number;
  readonly members?: number;
  /** Simulated time with faults (the safety phase). */
  readonly durationMs?: number;
  /** After healing everything, a new proposal must commit everywhere within this (the liveness phase). */
  readonly livenessBoundMs?: number;
  readonly faults?: FaultSwitches;
}

export interface SimulationResult {
  readonly seed: number;
  readonly violations: readonly string[];
  readonly simulatedMs: number;
  readonly committed: number;
  readonly acknowledged: number;
  readonly crashes: number;
  readonly delivered: number;
  readonly dropped: number;
  /** A hash of everything that happened, for the determinism check. */
  readonly traceHash: string;
  /** The parameters the seed drew. */
  readonly drawn: Record<string, number>;
}

const TICK_MS = 10;
const ELECTION_TICKS = 25;
const HEARTBEAT_TICKS = 5;
/** Bound on simulated events in one run, so that a livelock cannot run forever. */
const MAX_EVENTS = 5_000_000;

const decoder = new TextDecoder();

/**
 * Runs a cluster of production Raft nodes and drivers on simulated time, network and disks.
 * One seed fixes every choice: fault parameters, latencies, losses, crashes and proposals.
 * Phase one injects faults and checks safety after every event; phase two heals everything
 * and demands that a new proposal commit on every member within a bound.
 */
export async function simulate(options: SimulationOptions): Promise<SimulationResult> {
  const seed = options.seed;
  const random = new SeededRandom(seed);
  const switches = { partitions: true, loss: true, crashes: true, ...options.faults };
  const memberCount = options.members ?? 5;
  const durationMs = options.durationMs ?? 60_000;
  const livenessBoundMs = options.livenessBoundMs ?? 10_000;
  const drawn = {
    lossPermille: switches.loss ? random.int(0, 300) : 0,
    duplicatePermille: switches.loss ? random.int(0, 50) : 0,
    latencyMaxUs: random.int(200, 20_000),
    fsyncMaxUs: random.int(100, 10_000),
    partitionEveryMs: random.int(100, 3000),
    crashEveryMs: random.int(500, 10_000),
    proposeEveryMs: random.int(1, 50),
  };
  const faults: NetworkFaults = {
    lossRate: drawn.lossPermille / 1000,
    duplicateRate: drawn.duplicatePermille / 1000,
    latencyMinMs: 0.05,
    latencyMaxMs: drawn.latencyMaxUs / 1000,
  };
  const scheduler = new SimScheduler();
  const network = new SimNetwork(scheduler, random, faults);
  const checker = new SafetyChecker();
  const trace = createHash('sha256');
  const ids: NodeId[] = Array.from({ length: memberCount }, (_, i) => `m${i + 1}`);
  const members = ids.map((id, i) => new SimMember(id, seed * 31 + i));
  const settings: MemberSettings = { voters: ids, tickMs: TICK_MS, electionTicks: ELECTION_TICKS, heartbeatTicks: HEARTBEAT_TICKS, requestTimeoutMs: 2000 };
  /** Set in the liveness phase to watch for its marker entry. */
  let alsoOnApplied: ((id: NodeId, entry: Entry) => void) | null = null;
  const hooks: MemberHooks = {
    onStart: (id, snapshotIndex) => checker.onStart(id, snapshotIndex),
    onApplied: (id, entry) => {
      trace.update(`${scheduler.nowMs} ${id} apply ${entry.index}@${entry.term}\n`);
      checker.onApplied(scheduler.nowMs, id, entry);
      alsoOnApplied?.(id, entry);
    },
    onLeader: (id, node) => {
      trace.update(`${scheduler.nowMs} ${id} leads ${node.term}\n`);
      checker.onLeader(scheduler.nowMs, id, node.term, node.log);
    },
  };
  let crashes = 0;
  let acknowledged = 0;
  let proposals = 0;

  const pick = <T>(xs: readonly T[]): T => xs[random.int(0, xs.length - 1)] as T;
  const up = (): SimMember[] => members.filter((m) => m.up);

  for (const m of members) await m.start(scheduler, network, settings, hooks);

  const propose = (text: string): void => {
    const m = up().length > 0 ? pick(up()) : null;
    const driver = m?.driver;
    if (driver === null || driver === undefined) return;
    driver.propose(new TextEncoder().encode(text)).then(
      ({ index }) => {
        acknowledged++;
        trace.update(`${scheduler.nowMs} ack ${text} ${index}\n`);
        checker.onAck(scheduler.nowMs, index, text);
      },
      () => undefined,
    );
  };

  // The workload: proposals from random members for the whole run.
  const workload = (): void => {
    propose(`p${++proposals}`);
    scheduler.after(random.int(1, drawn.proposeEveryMs), workload);
  };
  scheduler.after(random.int(1, drawn.proposeEveryMs), workload);

  // Faults, only during the safety phase.
  const isolate = (who: NodeId): void => {
    for (const other of ids) {
      if (other === who) continue;
      network.block(who, other);
      network.block(other, who);
    }
  };
  const partition = (): void => {
    if (scheduler.nowMs >= durationMs) return;
    network.healAll();
    const kind = random.int(0, 4);
    if (kind === 1) {
      isolate(pick(ids));
    } else if (kind === 2) {
      const side = new Set(ids.filter(() => random.int(0, 1) === 0));
      for (const a of ids) for (const b of ids) if (side.has(a) !== side.has(b)) network.block(a, b);
    } else if (kind === 3) {
      // One-way: a member can send but not hear (or the reverse).
      const who = pick(ids);
      for (const other of ids) if (other !== who) network.block(random.int(0, 1) === 0 ? who : other, random.int(0, 1) === 0 ? other : who);
    } else if (kind === 4) {
      // Isolate whoever leads now.
      const leader = members.find((m) => m.driver?.node.role === 'leader');
      if (leader !== undefined) isolate(leader.id);
    }
    trace.update(`${scheduler.nowMs} partition ${kind}\n`);
    scheduler.after(random.int(drawn.partitionEveryMs / 2, drawn.partitionEveryMs), partition);
  };
  if (switches.partitions) scheduler.after(drawn.partitionEveryMs, partition);

  const restarts: Array<Promise<void>> = [];
  const crash = (): void => {
    if (scheduler.nowMs >= durationMs) return;
    const victim = pick(up());
    if (victim !== undefined && up().length > 1) {
      crashes++;
      victim.crash(network);
      trace.update(`${scheduler.nowMs} crash ${victim.id}\n`);
      scheduler.after(random.int(50, 3000), () => {
        if (!victim.up) restarts.push(victim.start(scheduler, network, settings, hooks));
      });
    }
    scheduler.after(random.int(drawn.crashEveryMs / 2, drawn.crashEveryMs), crash);
  };
  if (switches.crashes) scheduler.after(drawn.crashEveryMs, crash);

  // A leader counts its own copy of an entry towards a majority only once it is durable: its
  // own match index must never exceed what its disk holds (with the same term).
  const checkLeaderDurability = (m: SimMember): void => {
    const node = m.driver?.node;
    if (node === undefined || node.role !== 'leader') return;
    const match = node.progressOf(m.id)?.match ?? 0;
    if (match > 0 && m.disk.durableTerm(match) !== node.log.term(match)) {
      checker.report(scheduler.nowMs, `leader ${m.id} counts index ${match} as its own, but its disk does not hold it`);
    }
  };

  /** Set when an event threw: the run stops there, with the exception as its violation. */
  let crashed = false;
  const run = async (untilMs: number, stop: () => boolean = () => false): Promise<void> => {
    let events = 0;
    for (;;) {
      let stepped: boolean;
      try {
        stepped = scheduler.step(untilMs);
      } catch (error) {
        // The protocol's own assertions (e.g. "no term for index") are violations too.
        checker.report(scheduler.nowMs, `exception: ${error instanceof Error ? error.message : String(error)}`);
        crashed = true;
        return;
      }
      if (!stepped) return;
      await drainMicrotasks();
      if (restarts.length > 0) await Promise.all(restarts.splice(0));
      for (const m of members) {
        if (!m.up) continue;
        m.scheduleSync(scheduler, random.int(50, drawn.fsyncMaxUs) / 1000);
        checkLeaderDurability(m);
      }
      if (++events > MAX_EVENTS) throw new Error(`seed ${seed}: more than ${MAX_EVENTS} events`);
      if (stop()) return;
    }
  };

  await run(durationMs);
  if (crashed) return finish();

  // Liveness: heal the network, restart the dead, stop losing messages. A new entry must
  // then commit and be applied on every member within the bound.
  network.healAll();
  network.faults = { ...faults, lossRate: 0, duplicateRate: 0 };
  for (const m of members) if (!m.up) await m.start(scheduler, network, settings, hooks);
  const healedAt = scheduler.nowMs;
  const marker = `liveness-${seed}`;
  let appliedEverywhere = false;
  const appliedBy = new Set<NodeId>();
  alsoOnApplied = (id, entry): void => {
    if (decoder.decode(entry.data) === marker) appliedBy.add(id);
  };
  const retry = (): void => {
    if (appliedBy.size > 0) return;
    propose(marker);
    scheduler.after(500, retry);
  };
  retry();
  await run(healedAt + livenessBoundMs, () => {
    appliedEverywhere = appliedBy.size === memberCount;
    return appliedEverywhere;
  });
  if (crashed) return finish();
  if (!appliedEverywhere) {
    checker.report(scheduler.nowMs, `liveness: after healing at ${healedAt} ms, no new entry was applied on every member within ${livenessBoundMs} ms (${appliedBy.size}/${memberCount})`);
  }
  return finish();

  function finish(): SimulationResult {
    checker.checkAcknowledged(scheduler.nowMs);
    for (const m of members) m.driver?.stop();
    return {
      seed,
      violations: checker.violations,
      simulatedMs: scheduler.nowMs,
      committed: checker.committedCount,
      acknowledged,
      crashes,
      delivered: network.delivered,
      dropped: network.dropped,
      traceHash: trace.digest('hex').slice(0, 16),
      drawn,
    };
  }
}
