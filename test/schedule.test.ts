import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, InvalidArgumentError, type JobContext } from '../src/index.js';
import { freePort } from './fixtures/process-cluster.js';

const started: Cluster[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
});

async function threeMembers(): Promise<Cluster[]> {
  const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
  const members = addrs.map((listen) => new Cluster(addrs, { storage: 'memory', listen }));
  started.push(...members);
  return members;
}

interface Run {
  readonly member: string;
  readonly slotMs: number;
  readonly token: number;
}

describe('cluster.schedule', () => {
  it("runs each slot once across the cluster (mode 'one'), with increasing fencing tokens, spread over members", async () => {
    const members = await threeMembers();
    const runs: Run[] = [];
    for (const m of members) {
      m.schedule('tick', { every: 200 }, (ctx: JobContext) => {
        runs.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken });
      });
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => new Set(runs.map((r) => r.slotMs)).size, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(12);
    const slots = [...new Set(runs.map((r) => r.slotMs))].sort((a, b) => a - b);
    // Exactly once per slot, and none lost between the first and the last.
    expect(runs.length).toBe(slots.length);
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBe(200);
    const bySlot = [...runs].sort((a, b) => a.slotMs - b.slotMs);
    for (let i = 1; i < bySlot.length; i++) expect(bySlot[i]!.token).toBeGreaterThan(bySlot[i - 1]!.token);
    expect(new Set(runs.map((r) => r.member)).size).toBeGreaterThan(1);
    // Outcomes are recorded through the log and visible from any member.
    await expect
      .poll(() => members[0]!.history({ job: 'tick' }).filter((h) => Object.values(h.outcomes).some((o) => o.outcome === 'succeeded')).length, { timeout: 10_000 })
      .toBeGreaterThanOrEqual(5);
    const job = members[1]!.state().jobs.find((j) => j.name === 'tick');
    expect(job).toMatchObject({ spec: 'every 200', mode: 'one', handlers: [...members.map((m) => m.id)].sort() });
    expect(job!.nextSlot).toBeInstanceOf(Date);
  });

  it("mode 'all' runs each slot on every member that scheduled it", async () => {
    const members = await threeMembers();
    const runs: Run[] = [];
    for (const m of members) {
      m.schedule('refresh', { every: 250 }, (ctx) => void runs.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken }), { mode: 'all' });
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => new Set(runs.map((r) => r.slotMs)).size, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(6);
    // Slots still in flight at the end may have run on some members only; the earlier ones ran on all.
    const slots = [...new Set(runs.map((r) => r.slotMs))].sort((a, b) => a - b).slice(0, -2);
    for (const slot of slots) {
      const here = runs.filter((r) => r.slotMs === slot);
      expect(here.map((r) => r.member).sort()).toEqual(members.map((m) => m.id).sort());
      expect(new Set(here.map((r) => r.token)).size).toBe(1);
    }
  });

  it('rejects a bad name, spec, handler or option at the call, leaving nothing registered', () => {
    const c = new Cluster([], { storage: 'memory' });
    const cases: Array<[() => unknown, string]> = [
      [() => c.schedule('', '* * * * *', () => undefined), 'name'],
      [() => c.schedule('a', '99 * * * *', () => undefined), 'spec'],
      [() => c.schedule('a', { cron: '* * * * *', tz: 'Nowhere/Land' }, () => undefined), 'spec.tz'],
      [() => c.schedule('a', '* * * * *', 'not a function' as never), 'handler'],
      [() => c.schedule('a', '* * * * *', () => undefined, { mode: 'some' as 'one' }), 'options.mode'],
      [() => c.schedule('a', '* * * * *', () => undefined, { timeoutMs: -1 }), 'options.timeoutMs'],
    ];
    for (const [call, option] of cases) {
      expect(call).toThrow(InvalidArgumentError);
      try {
        call();
      } catch (e) {
        expect(e).toMatchObject({ option });
      }
    }
    c.schedule('a', '* * * * *', () => undefined);
    expect(() => c.schedule('a', '* * * * *', () => undefined)).toThrow(/already scheduled/);
  });
});
