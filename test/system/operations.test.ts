import { describe, expect, it } from 'vitest';
import { RunAbortedError, UnknownJobError, type Cluster, type JobContext, type RunRecord } from '../../src/index.js';
import { CANCELLED_REASON, PAUSED_REASON } from '../../src/scheduler/command.js';
import { OPERATIONS_VERSION } from '../../src/version/versions.js';
import { type SlotRun, stoppedAfterEach, threeMembers } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

describe('pause, resume and trigger on three members over loopback', () => {
  it('pause records the slots as skipped (paused) in history and runs none; resume runs again; trigger runs one extra slot once', async () => {
    const members = await threeMembers(started);
    const ticks: SlotRun[] = [];
    const hourly: SlotRun[] = [];
    for (const m of members) {
      m.schedule('tick', { every: 200 }, (ctx: JobContext) => void ticks.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken }));
      m.schedule('hourly', { every: '1h' }, (ctx: JobContext) => void hourly.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken }));
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => members.every((m) => m.state().version.active >= OPERATIONS_VERSION), { timeout: 15_000, interval: 50 }).toBe(true);
    await expect.poll(() => ticks.length, { timeout: 15_000, interval: 50 }).toBeGreaterThanOrEqual(2);
    await expect(members[1]!.pause('nope')).rejects.toBeInstanceOf(UnknownJobError);

    await expect(members[1]!.pause('tick')).resolves.toEqual({ job: 'tick', paused: true });
    await expect.poll(() => members.every((m) => m.state().jobs.find((j) => j.name === 'tick')?.paused === true), { timeout: 5000, interval: 20 }).toBe(true);
    // Once every member applied the pause, what fires is recorded, not run.
    const runsAtPause = ticks.length;
    const pausedSlots = (): number => members[0]!.history({ job: 'tick', limit: 1000 }).filter((h) => Object.values(h.outcomes).some((o) => o.outcome === 'skipped' && o.error === PAUSED_REASON)).length;
    await expect.poll(pausedSlots, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(4);
    expect(ticks.length).toBe(runsAtPause);
    for (const h of members[2]!.history({ job: 'tick', limit: 1000 })) {
      if (Object.values(h.outcomes).some((o) => o.error === PAUSED_REASON)) expect(ticks.some((r) => r.slotMs === h.slot.getTime())).toBe(false);
    }

    // Triggered while paused, on one member: one extra run, exactly once across the members.
    const slot = await members[2]!.trigger('tick');
    expect(slot.job).toBe('tick');
    await expect.poll(() => ticks.filter((r) => r.slotMs === slot.slot.getTime()).length, { timeout: 10_000, interval: 20 }).toBe(1);
    expect(ticks.find((r) => r.slotMs === slot.slot.getTime())?.token).toBe(slot.fencingToken);
    expect(members[0]!.history({ job: 'tick', limit: 1000 }).find((h) => h.slot.getTime() === slot.slot.getTime())).toMatchObject({ trigger: true, fencingToken: slot.fencingToken });

    await expect(members[0]!.resume('tick')).resolves.toEqual({ job: 'tick', paused: false });
    const afterResume = ticks.length;
    await expect.poll(() => ticks.length, { timeout: 10_000, interval: 50 }).toBeGreaterThanOrEqual(afterResume + 3);
    expect(members[1]!.state().jobs.find((j) => j.name === 'tick')).toMatchObject({ paused: false, missedSlots: 0 });

    // A job with no slot due for an hour: the trigger is its only run, once.
    const extra = await members[0]!.trigger('hourly');
    await expect.poll(() => hourly.length, { timeout: 10_000, interval: 20 }).toBe(1);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    expect(hourly).toEqual([expect.objectContaining({ slotMs: extra.slot.getTime(), token: extra.fencingToken })]);
    // Every slot of tick ran at most once.
    expect(new Set(ticks.map((r) => r.slotMs)).size).toBe(ticks.length);
  });
});

describe('cancel on three members over loopback', () => {
  it('aborts a long run on whichever member runs it, asked of another, with CRONRAFT_RUN_CANCELLED; history shows it cancelled once, on every member; no retry follows', async () => {
    const members = await threeMembers(started);
    const runs: Array<{ member: string; ctx: JobContext }> = [];
    const ended: RunRecord[] = [];
    const told: Array<{ member: string; job: string; slots: readonly Date[]; by: string }> = [];
    for (const m of members) {
      m.on('cancelled', ({ job, slots, by }) => void told.push({ member: m.id, job, slots, by }));
      // A run that ignores its signal: it would last a minute; the cancel ends it for the record at once.
      m.schedule('slow', { every: '1h' }, (ctx: JobContext) => {
        runs.push({ member: m.id, ctx });
        return new Promise((resolve) => setTimeout(resolve, 60_000).unref());
      }, { retries: 2, timeoutMs: 120_000 });
      m.on('run', (run) => void ended.push(run));
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => members.every((m) => m.state().version.active >= OPERATIONS_VERSION), { timeout: 15_000, interval: 50 }).toBe(true);
    await expect(members[0]!.cancel('nope')).rejects.toBeInstanceOf(UnknownJobError);
    await expect(members[0]!.cancel('slow')).resolves.toEqual({ job: 'slow', cancelled: [] });

    const slot = await members[0]!.trigger('slow');
    await expect.poll(() => runs.length, { timeout: 10_000, interval: 20 }).toBe(1);
    const run = runs[0]!;
    // Asked of a member that does not run it: the cancel reaches the run through the log.
    const asked = members.find((m) => m.id !== run.member)!;
    const result = await asked.cancel('slow');
    expect(result.job).toBe('slow');
    expect(result.cancelled.map((c) => [c.slot.getTime(), c.fencingToken])).toEqual([[slot.slot.getTime(), slot.fencingToken]]);
    await expect.poll(() => run.ctx.signal.aborted, { timeout: 5000, interval: 20 }).toBe(true);
    expect(run.ctx.signal.reason).toBeInstanceOf(RunAbortedError);
    expect(run.ctx.signal.reason).toMatchObject({ reason: 'cancelled', code: 'CRONRAFT_RUN_CANCELLED' });
    const cancelledIn = (m: Cluster): unknown => m.history({ job: 'slow' }).find((h) => h.fencingToken === slot.fencingToken)?.outcomes[run.member]?.outcome;
    await expect.poll(() => members.map(cancelledIn), { timeout: 10_000, interval: 50 }).toEqual(['cancelled', 'cancelled', 'cancelled']);
    for (const m of members) {
      const h = m.history({ job: 'slow' }).find((x) => x.fencingToken === slot.fencingToken)!;
      expect(Object.keys(h.outcomes)).toEqual([run.member]);
      expect(h.outcomes[run.member]?.error?.startsWith(CANCELLED_REASON)).toBe(true);
      expect(h.cancelled).toMatchObject({ by: asked.id });
      expect(h.running).toEqual({});
    }
    expect(ended.filter((r) => r.fencingToken === slot.fencingToken)).toEqual([expect.objectContaining({ member: run.member, outcome: 'cancelled' })]);
    // Every member told the cancel once, as it applied it; the cancel that reached nothing, never.
    expect(told.map((t) => t.member).sort()).toEqual(members.map((m) => m.id).sort());
    expect(told.every((t) => t.job === 'slow' && t.by === asked.id && t.slots.length === 1 && t.slots[0]!.getTime() === slot.slot.getTime())).toBe(true);
    // No retry of the cancelled slot (its job allows two): a retry would move it under a new
    // token, which every member's history would show. Another trigger, claimed after, runs.
    const next = await members[2]!.trigger('slow');
    await expect.poll(() => runs.length, { timeout: 10_000, interval: 20 }).toBe(2);
    expect(runs.map((r) => r.ctx.slot.getTime())).toEqual([slot.slot.getTime(), next.slot.getTime()]);
    expect(runs[1]!.ctx.signal.aborted).toBe(false);
    for (const m of members) expect(m.history({ job: 'slow' }).find((h) => h.slot.getTime() === slot.slot.getTime())?.fencingToken).toBe(slot.fencingToken);
  });
});
