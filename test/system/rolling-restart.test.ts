import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, type JobContext } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';

/** The job's period: several slots fall within each member's stop and restart. */
const EVERY_MS = 200;
/** How long each run takes: a member that stops is often in the middle of one. */
const RUN_MS = 120;
/** How long each restarted member runs before the next one stops. */
const SETTLE_MS = 1500;

const running = new Set<Cluster>();
const dirs: string[] = [];
afterEach(async () => {
  await Promise.all([...running].map((c) => c.stop()));
  running.clear();
  await Promise.all(dirs.splice(0).map((d) => rm(d, { recursive: true, force: true })));
});

interface Run {
  readonly member: string;
  readonly slotMs: number;
  readonly startedAtMs: number;
  /** Whether ctx.signal fired before the run ended. */
  aborted: boolean;
  ended: boolean;
}

describe('a rolling restart', () => {
  it('stopping and restarting each member in turn, the leader included, misses and doubles no slot', async () => {
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    const dataDirs: string[] = [];
    for (let i = 0; i < addrs.length; i++) dataDirs.push(await mkdtemp(join(tmpdir(), 'cronraft-rolling-')));
    dirs.push(...dataDirs);
    const runs: Run[] = [];
    const boot = async (i: number): Promise<Cluster> => {
      const c = new Cluster(addrs, { storage: 'level', dataDir: dataDirs[i], listen: addrs[i] });
      // Overlap 'allow': a slot that starts late behind a stop must not be skipped because the
      // run before it has not recorded its end yet (the default 'skip' would, by design).
      c.schedule(
        'tick',
        { every: EVERY_MS },
        async (ctx: JobContext) => {
          const run: Run = { member: c.id, slotMs: ctx.slot.getTime(), startedAtMs: Date.now(), aborted: false, ended: false };
          runs.push(run);
          const aborted = (): void => {
            run.aborted = true;
          };
          ctx.signal.addEventListener('abort', aborted);
          await new Promise((resolve) => setTimeout(resolve, RUN_MS));
          ctx.signal.removeEventListener('abort', aborted);
          run.ended = true;
        },
        // Catch-up of every slot of the last minute: on a loaded machine an election may outlast
        // the look-ahead, and the default ('latest') would then drop the slots it missed, by design.
        { overlap: 'allow', catchUp: { windowMs: 60_000, maxSlots: 600 } },
      );
      running.add(c);
      await c.start();
      return c;
    };
    const members = await Promise.all(addrs.map((_, i) => boot(i)));
    await Promise.all(members.map((m) => m.waitForLeader({ timeoutMs: 20_000 })));
    await expect.poll(() => runs.length, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(5);
    const windowFromMs = Date.now();
    // The leader first, then the others, each stopped and started again on its data directory.
    const leader = members[0]!.state().leader;
    const order = [...addrs.keys()].sort((a, b) => Number(addrs[b] === leader) - Number(addrs[a] === leader));
    expect(addrs[order[0]!]).toBe(leader);
    for (const i of order) {
      const old = members[i]!;
      await old.stop();
      running.delete(old);
      const fresh = await boot(i);
      members[i] = fresh;
      await fresh.waitForLeader({ timeoutMs: 10_000 });
      await fresh.barrier();
      await new Promise((resolve) => setTimeout(resolve, SETTLE_MS));
    }
    const windowToMs = Date.now();
    // Every slot of the window, from the first one run after it opened; one late behind the
    // last restart (on a loaded machine) may still be running, or waiting to move.
    const firstSlotMs = Math.min(...runs.filter((r) => r.slotMs >= windowFromMs).map((r) => r.slotMs));
    expect(firstSlotMs - windowFromMs).toBeLessThan(EVERY_MS);
    const expected: number[] = [];
    for (let slotMs = firstSlotMs; slotMs <= windowToMs; slotMs += EVERY_MS) expected.push(slotMs);
    // No slot doubled, and none missed: each ran to its end exactly once unaborted. A member
    // starved past its lease on a loaded machine aborts its run (ctx.signal) and the slot moves,
    // by design; two runs of a slot that both ran to their end unaborted would be a slot run
    // twice, one under a stale token.
    const whole = (): number[] => runs.filter((r) => r.ended && !r.aborted && r.slotMs >= firstSlotMs && r.slotMs <= windowToMs).map((r) => r.slotMs).sort((a, b) => a - b);
    await expect.poll(() => whole().length, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(expected.length);
    expect(whole()).toEqual(expected);
    const inWindow = runs.filter((r) => r.slotMs >= firstSlotMs && r.slotMs <= windowToMs);
    // Every member ran slots after its restart.
    for (const m of members) expect(inWindow.some((r) => r.member === m.id && r.startedAtMs > windowFromMs)).toBe(true);
  }, 60_000);
});
