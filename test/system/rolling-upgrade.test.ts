import { afterEach, describe, expect, it } from 'vitest';
import { ProcessCluster, type MemberProcess } from '../fixtures/process-cluster.js';
import { expectEverySlotRanOnce, historyOf, succeededBy } from '../fixtures/slot-history.js';

/**
 * A rolling upgrade across real processes: three members run this release, and each in turn is
 * stopped (cluster.stop()) and started again on its data directory as "the next release" (a
 * test build with one cluster version more and its command, `test-note`). A job every second
 * runs throughout. The new command is refused until the last member is upgraded, then the
 * cluster version rises and it works on every member; every slot of the window ran once. A
 * member then started back on this release refuses its data directory.
 */
const EVERY_MS = 1000;
const WORK_MS = 100;
/**
 * The job every member schedules. Overlap 'allow', as in rolling-restart.test.ts: under the
 * default 'skip' a slot is skipped, by design, while the run of the slot before still looks in
 * progress in its member's log, which it may for a second when that run's member lost its lease
 * a moment after the start (a member restarting on a loaded machine has none for a while); the
 * skip is final, and the slot would have no success to find.
 */
const JOB = { name: 'job', everyMs: EVERY_MS, workMs: WORK_MS, retries: 0, overlap: 'allow' } as const;

interface NoteError {
  readonly code?: string;
  readonly message?: string;
}

async function note(m: MemberProcess, text: string): Promise<{ index: number } | NoteError> {
  return m.request<{ index: number }>('test-note', { text }).catch((error: unknown) => error as NoteError);
}

describe('a rolling upgrade of real processes', () => {
  let cluster: ProcessCluster | null = null;
  afterEach(async () => {
    await cluster?.cleanup();
    cluster = null;
  });

  it('runs every slot once, turns the new command on only after the last upgrade, and refuses a downgrade after it', async () => {
    cluster = await ProcessCluster.create(3);
    const c = cluster;
    await c.startAll();
    await c.waitForLeader();
    for (const m of c.members) await m.request('schedule', JOB);
    // Every member announced what it reads; the version rises to this release's (2, membership) and no further.
    await expect.poll(async () => Object.values((await c.members[0]!.state()).version.members).every((v) => v !== null), { timeout: 10_000, interval: 50 }).toBe(true);
    const current = (await c.members[0]!.state()).version.supports.stateMachine.max;
    for (const m of c.members) await expect.poll(async () => (await m.state()).version.active, { timeout: 10_000, interval: 50 }).toBe(current);
    // The job's slots are EVERY_MS apart from its registration: the first one after the restarts begin.
    const restartsFrom = Date.now();

    for (const [i, m] of c.members.entries()) {
      await m.stop();
      c.startMember(m, true);
      const started = await m.waitEvent((e) => e.event === 'started' || e.event === 'start-failed');
      expect(started.event).toBe('started');
      await m.request('schedule', JOB);
      await c.waitForLeader();
      if (i < c.members.length - 1) {
        // Upgraded, but the others cannot read the next version yet: refused at once, naming it.
        const refused = await note(m, `early ${i}`);
        expect(refused).toMatchObject({ code: 'CRONRAFT_VERSION_NOT_ACTIVE' });
        expect((refused as NoteError).message).toContain(`cluster version ${current + 1}`);
      }
      // Let a few slots go by on this mix of releases.
      await new Promise((resolve) => setTimeout(resolve, 2 * EVERY_MS));
    }

    // The last upgrade: the leader raises the version, which every member applies.
    for (const m of c.members) await expect.poll(async () => (await m.state()).version.active, { timeout: 10_000, interval: 50 }).toBe(current + 1);
    // Each member said so through its event, naming the step and the entry that made it.
    for (const m of c.members) expect(await m.waitEvent((e) => e.event === 'version-activated' && e.to === current + 1, 10_000)).toMatchObject({ from: current, index: expect.any(Number) });
    const noted = await c.members[1]!.request<{ index: number }>('test-note', { text: 'after the upgrade' });
    expect(noted.index).toBeGreaterThan(0);
    for (const m of c.members) await expect.poll(() => m.request<string[] | null>('test-notes'), { timeout: 10_000, interval: 50 }).toEqual(['after the upgrade']);

    // Every slot from before the first restart to now ran once.
    const witness = c.members[2]!;
    const grid = (await historyOf(witness, 'job')).map((h) => h.slot);
    const anySlot = grid[0]!;
    const slotAfter = (ms: number): number => anySlot + Math.ceil((ms - anySlot) / EVERY_MS) * EVERY_MS;
    const firstSlot = slotAfter(restartsFrom);
    const lastSlot = slotAfter(Date.now()) - EVERY_MS;
    // Every slot of the window has its success: a slot interrupted at a restart runs again late,
    // under a new token, and may end after the last one.
    await expect.poll(async () => (await historyOf(witness, 'job')).filter((h) => h.slot >= firstSlot && h.slot <= lastSlot).every((h) => succeededBy(h) !== undefined), { timeout: 10_000, interval: 100 }).toBe(true);
    const slots = await expectEverySlotRanOnce(witness, 'job', EVERY_MS, firstSlot, lastSlot);
    expect(slots.length).toBeGreaterThanOrEqual(8);

    // A downgrade past the activation: the old release refuses the directory, naming both versions.
    const back = c.members[0]!;
    await back.stop();
    c.startMember(back, false);
    const failed = await back.waitEvent((e) => e.event === 'started' || e.event === 'start-failed');
    expect(failed).toMatchObject({ event: 'start-failed', code: 'CRONRAFT_VERSION_TOO_OLD' });
    expect(String((failed as { message?: string }).message)).toContain(`needs cluster version ${current + 1}; this member reads up to ${current}`);
  }, 120_000);
});
