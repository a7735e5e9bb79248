import { describe, expect, it } from 'vitest';
import { Cluster, type Clock } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';
import { stoppedAfterEach } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

/** Three in-process members on loopback; member i reads its clock `offsets[i]` ms ahead. */
async function skewedMembers(offsets: readonly number[]): Promise<Cluster[]> {
  const addrs = await Promise.all(offsets.map(async () => `127.0.0.1:${await freePort()}`));
  const members = addrs.map((listen, i) => {
    const clock: Clock = { now: () => Date.now() + (offsets[i] ?? 0) };
    return new Cluster(addrs, { storage: 'memory', listen, clock });
  });
  started.push(...members);
  return members;
}

describe("slots fire on the cluster's time", () => {
  it('a member a minute ahead changes no fire time, is reported skewed and is given no work', async () => {
    const members = await skewedMembers([0, 0, 60_000]);
    const starts: Array<{ member: string; lateMs: number }> = [];
    const told: Array<{ by: string; id: string; offsetMs: number }> = [];
    for (const m of members) m.on('clock-skewed', ({ id, offsetMs }) => told.push({ by: m.id, id, offsetMs }));
    for (const m of members) {
      m.schedule('tick', { every: 200 }, (ctx) => {
        starts.push({ member: m.id, lateMs: Date.now() - ctx.slot.getTime() });
      });
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => starts.length, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(15);
    // Every start is at its instant by the true clock (the skewed member's own clock would put
    // them a minute off), and none ran on the skewed member.
    const skewed = members[2]!.id;
    expect(starts.filter((s) => s.member === skewed)).toEqual([]);
    // (Early starts are the failure this catches; load can make starts late, never early. The
    // 50 ms bound itself is checked on virtual time in the simulator.)
    for (const s of starts) expect(s.lateMs).toBeGreaterThan(-20);
    for (const s of starts) expect(s.lateMs).toBeLessThan(2_000);
    const leader = members.find((m) => m.state().role === 'leader')!;
    const view = leader.state().members.find((x) => x.id === skewed)!;
    expect(view.clockSkewed).toBe(true);
    expect(view.clockOffsetMs).toBeGreaterThan(59_000);
    expect(leader.state().clock.synced).toBe(true);
    // The leader tells of it once ('clock-skewed'), as it begins; of no other member.
    await expect.poll(() => told.filter((t) => t.by === leader.id).length, { timeout: 5_000, interval: 50 }).toBeGreaterThan(0);
    const byLeader = told.filter((t) => t.by === leader.id);
    expect(byLeader).toEqual([{ by: leader.id, id: skewed, offsetMs: expect.any(Number) }]);
    expect(byLeader[0]!.offsetMs).toBeGreaterThan(59_000);
    expect(told.every((t) => t.id === skewed)).toBe(true);
  });

  it("a member half a second ahead still gets work, and fires by the cluster's time, not its own", async () => {
    const members = await skewedMembers([0, 0, 500]);
    const starts: Array<{ member: string; lateMs: number }> = [];
    for (const m of members) {
      m.schedule('refresh', { every: 200 }, (ctx) => {
        starts.push({ member: m.id, lateMs: Date.now() - ctx.slot.getTime() });
      }, { mode: 'all' });
    }
    await Promise.all(members.map((m) => m.start()));
    const ahead = members[2]!.id;
    await expect.poll(() => starts.filter((s) => s.member === ahead).length, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(10);
    // Its own clock would have fired it 500 ms early: it holds its slots until it has learned
    // the cluster's time, then fires by it. (Late is load; early would be the bug.)
    const mine = starts.filter((s) => s.member === ahead);
    for (const s of mine) expect(s.lateMs).toBeGreaterThan(-20);
    const self = members[2]!.state();
    expect(self.members.find((x) => x.id === ahead)!.clockOffsetMs).toBeGreaterThan(400);
    expect(self.members.find((x) => x.id === ahead)!.clockSkewed).toBe(false);
  });
});
