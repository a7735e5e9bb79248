import type { NodeId } from '../src/raft/types.js';
import { settleBoundMs, type SimTopic } from './fanout.js';
import type { SimMember } from './member.js';
import type { RunLoop } from './run-loop.js';
import type { SimWorld } from './world.js';

/** Bound on the time members get, once every item settled, to apply what was committed before their states are compared. */
const FANOUT_CATCH_UP_MS = 2000;

/** Per topic, its unsettled items as the faults heal and the items the log had emitted then. */
export type FanoutAtHeal = ReadonlyMap<string, { readonly unsettled: number; readonly emitted: number }>;

/** Fan-out as the faults heal (emits stop then): each topic's backlog, read on the member furthest along. */
export function fanoutAtHeal(world: SimWorld): FanoutAtHeal {
  world.fanoutEmitting = false;
  const ahead = furthest(world.current());
  const state = ahead?.member?.fanout;
  const at = new Map<string, { unsettled: number; emitted: number }>();
  for (const topic of world.fanout?.topics ?? []) {
    const record = state?.topics.get(topic.name);
    at.set(topic.name, { unsettled: record?.unsettled ?? 0, emitted: record?.counts.emitted ?? 0 });
  }
  return at;
}

/**
 * After healing, every item settles (done or dead) within its topic's bound (settleBoundMs, from
 * its consumers' timeouts, retries, backoff, parallelism and rate, for the backlog it had as the
 * faults healed and the emits under way then), members caught up hold the same fan-out state,
 * and none lost an item. A topic none of the current members consumes is not waited for.
 */
export async function checkFanoutSettles(world: SimWorld, loop: RunLoop, healedAt: number, atHeal: FanoutAtHeal): Promise<void> {
  const { fanout, fanoutChecks: checks, scheduler, report } = world;
  if (fanout === null || checks === null) return;
  const current = (): SimMember[] => world.current().filter((m) => m.member !== null);
  const consumed = fanout.topics.filter((topic) => consumersOf(topic, world) > 0);
  const unsettled = (name: string): number => Math.max(0, ...current().map((m) => m.member?.fanout.topics.get(name)?.unsettled ?? 0));
  const settled = (): boolean => consumed.every((topic) => unsettled(topic.name) === 0);
  // The bound grows with emits that were under way as the faults healed, as they apply.
  const boundOf = (topic: SimTopic): number => {
    const heal = atHeal.get(topic.name) ?? { unsettled: 0, emitted: 0 };
    const emitted = Math.max(0, ...current().map((m) => m.member?.fanout.topics.get(topic.name)?.counts.emitted ?? 0));
    return settleBoundMs(topic, heal.unsettled + Math.max(0, emitted - heal.emitted), consumersOf(topic, world));
  };
  const deadline = (): number => healedAt + Math.max(0, ...consumed.map(boundOf));
  for (let from = -1; !settled() && !loop.crashed && scheduler.nowMs < deadline() && scheduler.nowMs > from; ) {
    from = scheduler.nowMs;
    await loop.run(deadline(), settled);
  }
  if (loop.crashed) return;
  for (const topic of consumed) {
    const left = unsettled(topic.name);
    if (left > 0) report(scheduler.nowMs, 'fanout-settle', `${left} items of ${topic.name} unsettled ${scheduler.nowMs - healedAt} ms after healing, past their bound of ${boundOf(topic)} ms`);
  }
  const committed = Math.max(0, ...current().map((m) => m.driver?.node.log.committed ?? 0));
  await loop.run(scheduler.nowMs + FANOUT_CATCH_UP_MS, () => current().every((m) => (m.driver?.node.log.applied ?? 0) >= committed));
  if (loop.crashed) return;
  const t = scheduler.nowMs;
  checks.checkLost(t, current().map((m) => m.id));
  checks.checkAgreement(t, current().map((m) => ({ id: m.id, applied: m.driver?.node.log.applied ?? 0 })));
}

/** How many of the current members consume `topic`: the founders drawn for it, and every joiner. */
function consumersOf(topic: SimTopic, world: SimWorld): number {
  const founders = new Set<NodeId>(world.config.voters);
  return world.current().filter((m) => (founders.has(m.id) ? topic.consumers.includes(m.id) : true)).length;
}

function furthest(members: readonly SimMember[]): SimMember | undefined {
  let best: SimMember | undefined;
  for (const m of members) if (m.driver !== null && (best === undefined || m.driver.node.log.applied > (best.driver?.node.log.applied ?? 0))) best = m;
  return best;
}
