import { afterEach, describe, expect, it } from 'vitest';
import { ProcessCluster, type MemberProcess } from '../fixtures/process-cluster.js';
import { expectEverySlotRanOnce, historyOf, type HistoryRow } from '../fixtures/slot-history.js';

/**
 * Three OS processes run a job every second for 20 s; 8 s in, one is killed with SIGKILL (the
 * assignee in the middle of its run, then, separately, the leader). Every slot of the 20 s must
 * end with exactly one successful run recorded in the log, a killed run is retried under a
 * higher token, none may be lost, and lateness stays bounded.
 */
const EVERY_MS = 1000;
const WORK_MS = 300;
const SLOTS = 20;
/** When, after the first slot, the member is killed. */
const KILL_AFTER_MS = 8_000;

interface RunEvent {
  event: string;
  slotMs: number;
  token: number;
  attempt: number;
  member: string;
  at: number;
}

function runsOf(cluster: ProcessCluster): RunEvent[] {
  return cluster.members.flatMap((m) => m.events.filter((e) => e.event === 'run-start') as unknown as RunEvent[]);
}

async function scheduleEverywhere(cluster: ProcessCluster): Promise<void> {
  for (const m of cluster.members) await m.request('schedule', { name: 'job', everyMs: EVERY_MS, workMs: WORK_MS, retries: 0 });
}

describe('scheduled jobs across real processes', () => {
  let cluster: ProcessCluster | null = null;
  afterEach(async () => {
    await cluster?.cleanup();
    cluster = null;
  });

  for (const victimRole of ['assignee', 'leader'] as const) {
    it(`every slot runs once when the ${victimRole} is killed with SIGKILL${victimRole === 'assignee' ? ' mid-run' : ''}`, async () => {
      cluster = await ProcessCluster.create(3);
      await cluster.startAll();
      await cluster.waitForLeader();
      await scheduleEverywhere(cluster);
      const c = cluster;
      await expect.poll(() => runsOf(c).length, { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(1);
      const firstSlot = Math.min(...runsOf(c).map((r) => r.slotMs));
      const lastSlot = firstSlot + (SLOTS - 1) * EVERY_MS;
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, firstSlot + KILL_AFTER_MS - Date.now())));
      const leader = await c.waitForLeader();
      let victim: MemberProcess;
      let killedRun: RunEvent | null = null;
      if (victimRole === 'leader') {
        victim = leader;
      } else {
        // The next run that starts on a follower: it is killed while the run works.
        const followers = c.members.filter((m) => m !== leader);
        const from = Date.now();
        const onFollower = (): RunEvent | undefined => runsOf(c).find((r) => r.at >= from && followers.some((f) => f.address === r.member));
        await expect.poll(() => onFollower() !== undefined, { timeout: 20_000, interval: 5 }).toBe(true);
        killedRun = onFollower() as RunEvent;
        victim = followers.find((f) => f.address === killedRun?.member) as MemberProcess;
      }
      const killedAt = Date.now();
      await victim.kill();
      if (killedRun !== null) expect(killedAt - killedRun.at, 'killed mid-run').toBeLessThan(WORK_MS);
      // Run on to the end of the 20 s, until the log has the last slot's outcome.
      const survivors = c.members.filter((m) => m !== victim);
      const witness = survivors[0] as MemberProcess;
      const lastSucceeded = async (): Promise<boolean> => {
        const history = await historyOf(witness, 'job');
        return history.some((h) => h.slot === lastSlot && Object.values(h.outcomes).some((o) => o.outcome === 'succeeded'));
      };
      await expect.poll(lastSucceeded, { timeout: KILL_AFTER_MS + 30_000, interval: 200 }).toBe(true);
      const history = await expectEverySlotRanOnce(witness, 'job', EVERY_MS, firstSlot, lastSlot);
      expect(history).toHaveLength(SLOTS);
      if (killedRun !== null) {
        // The run that died with its member was run again elsewhere, under a higher token.
        const row = history.find((h) => h.slot === killedRun.slotMs) as HistoryRow;
        expect(row.fencingToken).toBeGreaterThan(killedRun.token);
        expect(runsOf(c).some((r) => r.slotMs === killedRun.slotMs && r.token === row.fencingToken && r.member !== victim.address)).toBe(true);
      }
      // Lateness of first attempts on survivors stays bounded: an election timeout plus slack.
      const late = runsOf(c).filter((r) => r.member !== victim.address && r.attempt === 1).map((r) => r.at - r.slotMs);
      expect(Math.max(...late)).toBeLessThan(1000);
    }, 120_000);
  }
});
