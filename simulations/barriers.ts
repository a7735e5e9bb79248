import { SeededRandom, type Random } from '../src/time/random.js';
import type { ReadChecker } from './checkers/reads.js';
import type { SimMember } from './member.js';
import type { RunLoop } from './run-loop.js';
import type { SimScheduler } from './scheduler.js';
import type { SimWorld } from './world.js';
import { seedDraws } from './seed-share.js';

/**
 * `barrier()` in the swarm: now and then during the faults a member drawn at random asks for a
 * linearizable read barrier (RaftDriver.readBarrier, which `Cluster.barrier()` calls), and
 * checkers/reads.ts holds its answer to what was committed before it was asked; after healing,
 * a barrier on every member must resolve within the liveness bound (checkReadLiveness).
 */

/** The share of the seeds whose runs ask for read barriers (drawBarriersMode). */
export const BARRIERS_SHARE = 0.25;

/** Barriers are asked a drawn time apart, up to this (ms). */
const BARRIER_EVERY_MS = 400;

/** Whether a run of seed `seed` asks for read barriers, drawn from a stream of its own. */
export function drawBarriersMode(seed: number): boolean {
  return seedDraws(seed, 48_611, 47, BARRIERS_SHARE);
}

/** The stream a run's barriers draw from (when, and on which member), apart from every other. */
export function barriersRandom(seed: number): SeededRandom {
  return new SeededRandom(seed * 86_243 + 53);
}

/** Asks for read barriers on members up, drawn by `random`, until `untilMs`; `checks` judges each answer. */
export function startBarriers(scheduler: SimScheduler, random: Random, members: () => readonly SimMember[], untilMs: number, checks: ReadChecker): void {
  const ask = (): void => {
    if (scheduler.nowMs >= untilMs) return;
    const up = members().filter((m) => m.up);
    const m = up.length === 0 ? undefined : up[random.int(0, up.length - 1)];
    const driver = m?.driver ?? null;
    if (m !== undefined && driver !== null) void checks.ask(() => scheduler.nowMs, m.id, driver);
    scheduler.after(random.int(1, BARRIER_EVERY_MS), ask);
  };
  scheduler.after(random.int(1, BARRIER_EVERY_MS), ask);
}

/** A barrier refused after healing (a leader still settling in) is asked again this much later (ms). */
const READ_RETRY_MS = 200;

/**
 * After healing, with barriers: a barrier asked on every member of the configuration must
 * resolve (and hold, checkers/reads.ts) within the liveness bound, each asked again while it is
 * refused (`read-liveness`).
 */
export async function checkReadLiveness(world: SimWorld, loop: RunLoop): Promise<void> {
  const checks = world.readChecks;
  if (checks === null) return;
  const { scheduler, livenessBoundMs } = world;
  const startedAt = scheduler.nowMs;
  const waiting = new Map(world.current().map((m) => [m.id, m]));
  const ask = (m: SimMember): void => {
    if (!waiting.has(m.id)) return;
    const driver = m.driver;
    if (driver === null) {
      scheduler.after(READ_RETRY_MS, () => ask(m));
      return;
    }
    void checks.ask(() => scheduler.nowMs, m.id, driver).then((answered) => {
      if (answered) waiting.delete(m.id);
      else scheduler.after(READ_RETRY_MS, () => ask(m));
    });
  };
  for (const m of waiting.values()) ask(m);
  await loop.run(startedAt + livenessBoundMs, () => waiting.size === 0);
  if (loop.crashed || waiting.size === 0) return;
  world.report(scheduler.nowMs, 'read-liveness', `after healing, no barrier asked on ${[...waiting.keys()].join(', ')} from ${startedAt.toFixed(0)} ms resolved within ${livenessBoundMs} ms`);
}
