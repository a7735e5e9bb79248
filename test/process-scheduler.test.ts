import { afterEach, describe, expect, it } from 'vitest';
import { ProcessCluster, type MemberProcess } from './fixtures/process-cluster.js';

/**
 * Three OS processes run a job every 500 ms; one is killed with SIGKILL mid-run (the assignee,
 * then, separately, the leader). Every slot must end with exactly one successful run recorded
 * in the log, none may be lost, and lateness stays bounded.
 */
const EVERY_MS = 500;
const WORK_MS = 200;

interface RunEvent {
  event: string;
  slotMs: number;
  token: number;
  attempt: number;
  member: string;
  at: number;
}

interface HistoryRow {
  slot: number;
  fencingToken: number;
  outcomes: Record<string, { outcome: string; token: number }>;
}

function runsOf(cluster: ProcessCluster): RunEvent[] {
  return cluster.members.flatMap((m) => m.events.filter((e) => e.event === 'run-start') as unknown as RunEvent[]);
}

async function scheduleEverywhere(cluster: ProcessCluster): Promise<void> {
  for (const m of cluster.members) await m.request('schedule', { name: 'job', everyMs: EVERY_MS, workMs: WORK_MS, retries: 0 });
}

/** Checks the log's record of slots in [fromMs, toMs]: each has exactly one success, under its current token. */
async function expectEverySlotRanOnce(witness: MemberProcess, fromMs: number, toMs: number): Promise<void> {
  const history = await witness.request<HistoryRow[]>('history', { job: 'job', limit: 1000 });
  const slots = history.filter((h) => h.slot >= fromMs && h.slot <= toMs).sort((a, b) => a.slot - b.slot);
  expect(slots.length).toBeGreaterThan(3);
  for (let i = 1; i < slots.length; i++) expect(slots[i]!.slot - slots[i - 1]!.slot, 'no slot lost').toBe(EVERY_MS);
  for (const h of slots) {
    const successes = Object.values(h.outcomes).filter((o) => o.outcome === 'succeeded' && o.token === h.fencingToken);
    expect(successes, `slot ${h.slot}`).toHaveLength(1);
  }
}

describe('scheduled jobs across real processes', () => {
  let cluster: ProcessCluster | null = null;
  afterEach(async () => {
    await cluster?.cleanup();
    cluster = null;
  });

  for (const victimRole of ['assignee', 'leader'] as const) {
    it(`every slot runs once when the ${victimRole} is killed with SIGKILL mid-run`, async () => {
      cluster = await ProcessCluster.create(3);
      await cluster.startAll();
      await cluster.waitForLeader();
      await scheduleEverywhere(cluster);
      const c = cluster;
      // Let a few slots run, then kill a member in the middle of one of its runs.
      await expect.poll(() => runsOf(c).length, { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(4);
      const leader = await c.waitForLeader();
      let victim: MemberProcess;
      if (victimRole === 'leader') {
        victim = leader;
      } else {
        const followers = c.members.filter((m) => m !== leader);
        const started = runsOf(c).length;
        await expect.poll(() => runsOf(c).slice(started).some((r) => followers.some((f) => f.address === r.member)), { timeout: 20_000, interval: 5 }).toBe(true);
        const run = runsOf(c).slice(started).find((r) => followers.some((f) => f.address === r.member))!;
        victim = followers.find((f) => f.address === run.member)!;
      }
      const killedAt = Date.now();
      await victim.kill();
      // Run on for a while after the kill, then check what the log recorded.
      const survivors = c.members.filter((m) => m !== victim);
      await expect
        .poll(() => survivors.flatMap((m) => m.events.filter((e) => e.event === 'run-end' && (e.at as number) > killedAt + 3000)).length, { timeout: 30_000, interval: 50 })
        .toBeGreaterThan(0);
      const firstSlot = Math.min(...runsOf(c).map((r) => r.slotMs));
      await expectEverySlotRanOnce(survivors[0]!, firstSlot, killedAt + 2000);
      // Lateness of runs on survivors stays bounded: an election timeout plus slack for a retry.
      const late = runsOf(c).filter((r) => r.member !== victim.address && r.attempt === 1).map((r) => r.at - r.slotMs);
      expect(Math.max(...late)).toBeLessThan(1000);
    }, 90_000);
  }
});
