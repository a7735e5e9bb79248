import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OPERATIONS_VERSION } from '../../src/version/versions.js';
import { describe, expect, it } from 'vitest';
import { Cluster, InvalidArgumentError, type JobContext } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';
import { type SlotRun, stoppedAfterEach, threeMembers } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

describe('cluster.schedule', () => {
  it("runs each slot once across the cluster (mode 'one'), with increasing fencing tokens, spread over members", async () => {
    const members = await threeMembers(started);
    const runs: SlotRun[] = [];
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
    const members = await threeMembers(started);
    const runs: SlotRun[] = [];
    for (const m of members) {
      m.schedule('refresh', { every: 250 }, (ctx) => void runs.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken }), { mode: 'all' });
    }
    await Promise.all(members.map((m) => m.start()));
    // Slots claimed before every member's registration reached the log go to fewer members:
    // count only slots well after all three are registered (past the planner's look-ahead).
    await expect.poll(() => members[0]!.state().jobs[0]?.handlers.length ?? 0, { timeout: 20_000 }).toBe(3);
    const from = Date.now() + 2000;
    const after = (): number[] => [...new Set(runs.map((r) => r.slotMs))].filter((t) => t >= from).sort((a, b) => a - b);
    await expect.poll(() => after().length, { timeout: 20_000, interval: 50 }).toBeGreaterThanOrEqual(6);
    // Slots still in flight at the end may have run on some members only; the earlier ones ran on all.
    const slots = after().slice(0, -2);
    for (const slot of slots) {
      const here = runs.filter((r) => r.slotMs === slot);
      expect(here.map((r) => r.member).sort()).toEqual(members.map((m) => m.id).sort());
      expect(new Set(here.map((r) => r.token)).size).toBe(1);
    }
  });

  it('moves a slot whose assignee died mid-run to another member, under a higher token', async () => {
    const members = await threeMembers(started);
    const runs: Array<SlotRun & { attempt: number }> = [];
    let victim: Cluster | null = null;
    let victimSlot: number | null = null;
    for (const m of members) {
      m.schedule('report', { every: 300 }, async (ctx) => {
        runs.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken, attempt: ctx.attempt });
        // The first follower to get a slot hangs in it: it is the one that will die.
        if (victim === null && m.state().role !== 'leader') {
          victim = m;
          victimSlot = ctx.slot.getTime();
          await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
        }
      });
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => victim, { timeout: 20_000, interval: 20 }).not.toBeNull();
    // Dies without a word (stop() of a follower hands nothing over), mid-run.
    await (victim as unknown as Cluster).stop();
    await expect
      .poll(() => runs.find((r) => r.slotMs === victimSlot && r.member !== (victim as unknown as Cluster).id), { timeout: 20_000, interval: 20 })
      .toBeDefined();
    const first = runs.find((r) => r.slotMs === victimSlot && r.member === (victim as unknown as Cluster).id)!;
    const retry = runs.find((r) => r.slotMs === victimSlot && r.member !== first.member)!;
    expect(retry.token).toBeGreaterThan(first.token);
    expect(retry.attempt).toBe(2);
  });

  it('runs once an { at } job scheduled at start for a moment later, though its registration applies after the instant', async () => {
    const members = await threeMembers(started);
    // Due before the members have elected a leader and learned the cluster's time, which a
    // registration waits for; the cluster also starts at version 1 and raises it as it goes.
    const at = new Date(Date.now() + 50);
    const runs: Array<{ member: string; slotMs: number }> = [];
    for (const m of members) m.schedule('launch', { at }, (ctx) => void runs.push({ member: m.id, slotMs: ctx.slot.getTime() }));
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => runs.length, { timeout: 20_000, interval: 20 }).toBe(1);
    expect(runs[0]!.slotMs).toBe(at.getTime());
    await expect.poll(() => members[0]!.history({ job: 'launch' })[0]?.outcomes, { timeout: 10_000 }).toMatchObject({ [runs[0]!.member]: { outcome: 'succeeded' } });
    expect(members[0]!.history({ job: 'launch' })).toHaveLength(1);
  });

  it('retries a failed run on another member, as many times as the job asks', async () => {
    const members = await threeMembers(started);
    const runs: Array<SlotRun & { attempt: number }> = [];
    for (const m of members) {
      m.schedule(
        'flaky',
        { every: 400 },
        (ctx) => {
          runs.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken, attempt: ctx.attempt });
          if (ctx.attempt === 1) throw new Error('first attempts always fail');
        },
        { retries: 1, retryDelayMs: 100 },
      );
    }
    await Promise.all(members.map((m) => m.start()));
    // A slot's first attempt that ran (and failed), with what ran after it. A slot moved before
    // its first run started (its assignee stalled past an election timeout, on a loaded machine)
    // starts at attempt 2 with no failure before it: it is no retry, and is left out.
    const retried = (): Array<{ first: SlotRun & { attempt: number }; later: Array<SlotRun & { attempt: number }> }> =>
      runs.filter((r) => r.attempt === 1).map((first) => ({ first, later: runs.filter((r) => r.slotMs === first.slotMs && r.attempt > 1) })).filter((s) => s.later.length > 0);
    await expect.poll(() => retried().length, { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(3);
    for (const { first, later } of retried()) {
      // One retry was asked for, and it succeeds: no run after it. Its attempt is 2, or more if
      // the retry was moved before it started (its member stalled, on a loaded machine: CI saw
      // attempt 3), which moves count but not against `retries`.
      expect(later).toHaveLength(1);
      expect(later[0]!.attempt).toBeGreaterThanOrEqual(2);
      const second = later[0]!;
      expect(second.token).toBeGreaterThan(first.token);
      expect(second.member).not.toBe(first.member);
    }
  });

  it("emits 'failed' for a run that failed with no retry left, and not for one that will be retried", async () => {
    const c = new Cluster([], { storage: 'memory' });
    started.push(c);
    const failed: Array<{ attempt: number; retriesLeft: number }> = [];
    c.on('failed', (run) => failed.push({ attempt: run.attempt, retriesLeft: run.retriesLeft }));
    c.schedule('doomed', { every: 300 }, () => {
      throw new Error('always');
    }, { retries: 1, retryDelayMs: 50 });
    await c.start();
    await expect.poll(() => failed.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(2);
    // Only each slot's last attempt, its retry, is told.
    expect(failed.every((f) => f.attempt === 2 && f.retriesLeft === 0)).toBe(true);
  });

  it('a member that unschedules a job stops being assigned it, and its claimed slots run elsewhere', async () => {
    const members = await threeMembers(started);
    const runs: SlotRun[] = [];
    for (const m of members) m.schedule('move', { every: 200 }, (ctx) => void runs.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken }));
    // A run's record names its slot as its ctx.slot does: the job's anchor, the cluster's time at
    // its registration, is a whole millisecond (a stranger's slots fell a fraction past them).
    const records: Array<{ slotMs: number }> = [];
    for (const m of members) m.on('run', (r) => void records.push(r));
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => members[0]!.state().jobs[0]?.handlers.length ?? 0, { timeout: 20_000 }).toBe(3);
    const quitter = members.find((m) => m.state().role !== 'leader')!;
    expect(quitter.unschedule('move')).toBe(true);
    const from = Date.now();
    await expect.poll(() => quitter.state().jobs[0]?.handlers.includes(quitter.id), { timeout: 20_000 }).toBe(false);
    // Slots due after the quit still run, once each, none lost (those claimed for the quitter
    // before it quit are moved), and none on the member that quit.
    await expect.poll(() => runs.filter((r) => r.slotMs > from).length, { timeout: 20_000, interval: 20 }).toBeGreaterThanOrEqual(10);
    const after = runs.filter((r) => r.slotMs > from);
    expect(after.some((r) => r.member === quitter.id)).toBe(false);
    const slots = [...new Set(after.map((r) => r.slotMs))].sort((a, b) => a - b);
    expect(after.length).toBe(slots.length);
    for (let i = 1; i < slots.length; i++) expect(slots[i]! - slots[i - 1]!).toBe(200);
    expect(records.length).toBeGreaterThan(0);
    expect(records.filter((r) => !Number.isInteger(r.slotMs))).toEqual([]);
    expect(records.every((r) => runs.some((run) => run.slotMs === r.slotMs))).toBe(true);
  });

  it("skips slots that fire while the job runs elsewhere (overlap 'skip'), and shows them and the runs in progress", async () => {
    const members = await threeMembers(started);
    const runs: SlotRun[] = [];
    let running = 0;
    let maxRunning = 0;
    for (const m of members) {
      m.schedule('slow', { every: 200 }, async (ctx) => {
        runs.push({ member: m.id, slotMs: ctx.slot.getTime(), token: ctx.fencingToken });
        maxRunning = Math.max(maxRunning, ++running);
        await new Promise((resolve) => setTimeout(resolve, 450));
        running--;
      });
    }
    await Promise.all(members.map((m) => m.start()));
    // Every member sees runs in progress (started, no outcome) and skipped slots, from the log.
    await expect.poll(() => members[2]!.state().jobs.find((j) => j.name === 'slow')?.running.length ?? 0, { timeout: 20_000, interval: 20 }).toBeGreaterThan(0);
    await expect.poll(() => members[1]!.state().jobs.find((j) => j.name === 'slow')?.skippedRuns ?? 0, { timeout: 20_000 }).toBeGreaterThanOrEqual(3);
    const history = members[0]!.history({ job: 'slow' });
    expect(history.some((h) => Object.values(h.outcomes).some((o) => o.outcome === 'skipped' && /overlap/.test(o.error ?? '')))).toBe(true);
    expect(history.some((h) => Object.keys(h.running).length > 0 || Object.values(h.outcomes).some((o) => o.outcome === 'succeeded'))).toBe(true);
    const ran = new Set(runs.map((r) => r.slotMs));
    // A slot is run or skipped, never both.
    for (const h of history) {
      if (Object.values(h.outcomes).some((o) => o.outcome === 'skipped')) expect(ran.has(h.slot.getTime())).toBe(false);
    }
    // Runs are 450 ms, slots 200 ms apart: without the policy three would overlap. The log's
    // lag (a commit) can let a run start just before another's start record arrives.
    expect(maxRunning).toBeLessThanOrEqual(2);
  });

  it('rejects a bad name, spec, handler or option at the call, leaving nothing registered', () => {
    const c = new Cluster([], { storage: 'memory' });
    const cases: Array<[() => unknown, string]> = [
      [() => c.schedule('', '* * * * *', () => undefined), 'name'],
      // Names no address can hold: HTTP and the CLI resolve them as path segments.
      [() => c.schedule('.', '* * * * *', () => undefined), 'name'],
      [() => c.schedule('..', '* * * * *', () => undefined), 'name'],
      // A name cut through an emoji: the log's UTF-8 would make it another name's.
      [() => c.schedule(`${'x'.repeat(199)}😀`.slice(0, 200), '* * * * *', () => undefined), 'name'],
      // Whole numbers a double cannot hold exactly, which the log's check refuses: the registration
      // (and the others batched in its entry) was skipped by every member, unsaid.
      [() => c.schedule('a', '* * * * *', () => undefined, { overlap: 'queue', catchUp: { windowMs: 60_000, maxSlots: 2 ** 60 } }), 'options.catchUp'],
      [() => c.schedule('a', '* * * * *', () => undefined, { timeoutMs: 2 ** 60 }), 'options.timeoutMs'],
      // Slots no Date holds (state() showed Invalid Date).
      [() => c.schedule('a', { at: 1e300 }, () => undefined), 'spec.at'],
      // Two kinds at once: the first was taken, the other dropped unsaid.
      [() => c.schedule('a', { cron: '* * * * *', every: '1s' } as never, () => undefined), 'spec'],
      [() => c.schedule('a', { every: 1e20 }, () => undefined), 'spec.every'],
      [() => c.schedule('a', { delayAfterCompletion: '1s', initialDelay: 2 ** 60 }, () => undefined), 'spec.initialDelay'],
      [() => c.schedule('a', '99 * * * *', () => undefined), 'spec'],
      [() => c.schedule('a', { cron: '* * * * *', tz: 'Nowhere/Land' }, () => undefined), 'spec.tz'],
      [() => c.schedule('a', '* * * * *', 'not a function' as never), 'handler'],
      [() => c.schedule('a', '* * * * *', () => undefined, { mode: 'some' as 'one' }), 'options.mode'],
      [() => c.schedule('a', '* * * * *', () => undefined, { timeoutMs: -1 }), 'options.timeoutMs'],
      [() => c.schedule('a', '* * * * *', () => undefined, { overlap: 'sometimes' as 'skip' }), 'options.overlap'],
      [() => c.schedule('a', '* * * * *', () => undefined, { priority: 1.5 }), 'options.priority'],
      [() => c.schedule('a', '* * * * *', () => undefined, { priority: 1_000_000 }), 'options.priority'],
      [() => c.schedule('a', '* * * * *', () => undefined, { catchUp: { windowMs: 60_000, maxSlots: 5 } }), 'options.overlap'],
      [() => c.schedule('a', { delayAfterCompletion: 5 }, () => undefined), 'spec.delayAfterCompletion'],
      [() => c.schedule('a', { delayAfterCompletion: '1s', initialDelay: -5 }, () => undefined), 'spec.initialDelay'],
      // A misspelt option: dropped unsaid before, and the default used (no retry at all).
      [() => c.schedule('a', '* * * * *', () => undefined, { retires: 2 } as never), 'options.retires'],
      // A spec's field of another name, dropped unsaid before: the job ran in UTC, or with no delay.
      [() => c.schedule('a', { cron: '0 9 * * *', timezone: 'Europe/Paris' } as never, () => undefined), 'spec.timezone'],
      [() => c.schedule('a', { every: '1h', initialDelay: '5m' } as never, () => undefined), 'spec.initialDelay'],
      [() => c.schedule('a', { every: '1s', dst: { gap: 'skip' } } as never, () => undefined), 'spec.dst'],
      // A spec of fewer fields: filled in from the left before, another schedule.
      [() => c.schedule('a', '0 2 * *', () => undefined), 'spec'],
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

  it("rejects the other calls' options of another name, which were dropped unsaid", async () => {
    const c = new Cluster([], { storage: 'memory' });
    // The lock held no minimum; every job's history came back; the wait had no bound.
    await expect(c.runExclusive('x', { atMostFor: 1000, atLeastfor: 500 } as never, () => undefined)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'atLeastfor' });
    expect(() => c.history({ jobs: 'x' } as never)).toThrow(expect.objectContaining({ option: 'jobs' }));
    await expect(c.waitForLeader({ timeout: 5 } as never)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'timeout' });
    await expect(c.emitItems('t', [1], { keyy: () => 'k' } as never)).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'keyy' });
  });

  it("lets a run whose timeoutMs is past what Node's timers hold (about 35 days) go on, and a lock as long", async () => {
    // Node runs a timer of 2^31 ms or more after 1 ms: every such run was aborted at once, its
    // signal CRONRAFT_RUN_TIMEOUT, and runExclusive's task too (src/time/clock.ts).
    const c = new Cluster([], { storage: 'memory' });
    started.push(c);
    await c.start();
    await c.waitForLeader({ timeoutMs: 10_000 });
    const seen: Array<{ aborted: boolean }> = [];
    c.schedule('long', { at: new Date(Date.now() + 3_600_000) }, async (ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      seen.push({ aborted: ctx.signal.aborted });
    }, { timeoutMs: 3_000_000_000 });
    await expect.poll(() => c.state().version.active >= OPERATIONS_VERSION && c.state().jobs.some((j) => j.name === 'long'), { timeout: 10_000 }).toBe(true);
    await c.trigger('long');
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(1);
    expect(seen[0]).toEqual({ aborted: false });
    let lockAborted: boolean | null = null;
    await c.runExclusive('lock', { atMostFor: 3_000_000_000 }, async ({ signal }) => {
      await new Promise((resolve) => setTimeout(resolve, 50));
      lockAborted = signal.aborted;
    });
    expect(lockAborted).toBe(false);
  });

  it('refuses a job past the 10,000 the cluster holds, rather than schedule one that would never run', () => {
    const c = new Cluster([], { storage: 'memory' });
    for (let i = 0; i < 10_000; i++) c.schedule(`job-${i}`, { every: '1h' }, () => undefined);
    expect(() => c.schedule('one-more', { every: '1h' }, () => undefined)).toThrow(InvalidArgumentError);
    // Room again once one is unscheduled.
    expect(c.unschedule('job-0')).toBe(true);
    expect(c.schedule('one-more', { every: '1h' }, () => undefined).name).toBe('one-more');
  });
});

describe('slot instants', () => {
  it("an { every } job's slots, a fixed-delay job's and a triggered one fall on whole milliseconds, where a run's record and its ctx.slot agree, with a clock that reads fractions", async () => {
    // The cluster's time, which a registration is stamped with, is read from this clock (a
    // member's corrected by the others' offsets, so often a fraction on a cluster of three).
    const c = new Cluster([], { listen: '127.0.0.1:0', storage: 'memory', clock: { now: () => Date.now() + 0.375 } });
    started.push(c);
    const slots: number[] = [];
    const records: Array<{ job: string; slotMs: number }> = [];
    c.schedule('tick', { every: 100 }, (ctx) => void slots.push(ctx.slot.getTime()));
    // A fixed-delay job's slots count from its runs' ends, and a triggered slot from the time it is asked.
    c.schedule('after', { delayAfterCompletion: 100 }, (ctx) => void slots.push(ctx.slot.getTime()));
    c.schedule('now', { every: '1h' }, (ctx) => void slots.push(ctx.slot.getTime()));
    c.on('run', (r) => void records.push({ job: r.job, slotMs: r.slotMs }));
    await c.start();
    await expect.poll(() => c.state().version.active, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(2);
    await c.trigger('now');
    await expect.poll(() => ['tick', 'after', 'now'].map((job) => records.filter((r) => r.job === job).length >= (job === 'now' ? 1 : 3)), { timeout: 10_000, interval: 20 }).toEqual([true, true, true]);
    expect(records.filter((r) => !Number.isInteger(r.slotMs))).toEqual([]);
    expect(records.every((r) => slots.includes(r.slotMs))).toBe(true);
    expect(c.history().flatMap((h) => Object.values(h.outcomes).map((o) => o.atMs)).filter((ms) => !Number.isInteger(ms))).toEqual([]);
  });
});

describe('restarts', () => {
  it('a member restarted from its data directory does not run again the slots it ran before', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'cronraft-sched-'));
    const port = await freePort();
    const runs: number[] = [];
    const member = (): Cluster => {
      const c = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
      c.schedule('tick', { every: 200 }, (ctx) => void runs.push(ctx.slot.getTime()));
      return c;
    };
    try {
      const first = member();
      await first.start();
      await expect.poll(() => runs.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(5);
      await first.stop();
      const before = runs.length;
      const second = member();
      started.push(second);
      await second.start();
      await expect.poll(() => runs.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(before + 3);
      // Replaying its log re-applied every claim it had run; none ran twice.
      expect(new Set(runs).size).toBe(runs.length);
    } finally {
      // Stopped before its directory goes: stopping writes the store's durable mark there.
      await Promise.all(started.map((c) => c.stop()));
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('a job scheduled anew with another spec', () => {
  it('runs the new spec when its member restarts with it, and when it schedules it again in one life', async () => {
    // Before, the job kept its first spec, with no handler left: it ran no more, told nowhere.
    const dataDir = await mkdtemp(join(tmpdir(), 'cronraft-respec-'));
    const port = await freePort();
    try {
      const first = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
      first.schedule('report', { every: '1h' }, () => undefined);
      await first.start();
      await expect.poll(() => first.state().version.active >= OPERATIONS_VERSION && first.state().jobs.some((j) => j.handlers.length === 1), { timeout: 10_000 }).toBe(true);
      await first.stop();
      const runs: string[] = [];
      const second = new Cluster([], { listen: `127.0.0.1:${port}`, dataDir });
      started.push(second);
      second.schedule('report', { every: 200 }, () => void runs.push('report'));
      await second.start();
      await expect.poll(() => runs.length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(2);
      expect(second.state().jobs.find((j) => j.name === 'report')).toMatchObject({ spec: 'every 200', handlers: [second.id], conflicts: {} });
      second.unschedule('report');
      second.schedule('report', { every: 100 }, () => void runs.push('again'));
      await expect.poll(() => runs.filter((r) => r === 'again').length, { timeout: 10_000, interval: 20 }).toBeGreaterThanOrEqual(2);
      expect(second.state().jobs.find((j) => j.name === 'report')).toMatchObject({ spec: 'every 100', handlers: [second.id] });
    } finally {
      await Promise.all(started.map((c) => c.stop()));
      await rm(dataDir, { recursive: true, force: true });
    }
  });
});

describe('cluster.runExclusive', () => {
  it('runs on one member at a time, keeps the lock at least atLeastFor, and fences with increasing tokens', async () => {
    const members = await threeMembers(started);
    await Promise.all(members.map((m) => m.start()));
    await Promise.all(members.map((m) => m.waitForLeader()));
    let running = 0;
    let maxRunning = 0;
    const tokens: number[] = [];
    const task = async ({ fencingToken }: { fencingToken: number }): Promise<void> => {
      running++;
      maxRunning = Math.max(maxRunning, running);
      tokens.push(fencingToken);
      await new Promise((r) => setTimeout(r, 50));
      running--;
    };
    // All three try at once: exactly one runs. It holds on until the other two were refused, so
    // the outcome does not depend on how fast the task is.
    let refusals = 0;
    let allRefused: () => void = () => undefined;
    const refused = new Promise<void>((resolve) => (allRefused = resolve));
    const first = await Promise.all(
      members.map((m) =>
        m
          .runExclusive('nightly', { atMostFor: 10_000, atLeastFor: 0 }, async (lock) => {
            await task(lock);
            await refused;
          })
          .then((ran) => {
            if (!ran && ++refusals === 2) allRefused();
            return ran;
          }),
      ),
    );
    expect(first.filter(Boolean)).toHaveLength(1);
    expect(maxRunning).toBe(1);
    // Released (atLeastFor 0): the next try runs, with a higher token.
    expect(await members[1]!.runExclusive('nightly', { atMostFor: 10_000 }, task)).toBe(true);
    expect(tokens[1]).toBeGreaterThan(tokens[0]!);
    // atLeastFor keeps the lock after a quick task.
    expect(await members[2]!.runExclusive('quick', { atMostFor: 60_000, atLeastFor: 30_000 }, () => undefined)).toBe(true);
    expect(await members[0]!.runExclusive('quick', { atMostFor: 60_000 }, task)).toBe(false);
  });

  it('a lock whose holder never releases it expires after atMostFor', async () => {
    const c = new Cluster([], { storage: 'memory' });
    started.push(c);
    await c.start();
    await c.waitForLeader();
    let release: () => void = () => undefined;
    const holding = c.runExclusive('stuck', { atMostFor: 300 }, ({ signal }) => new Promise<void>((resolve) => {
      release = resolve;
      signal.addEventListener('abort', () => resolve(), { once: true });
    }));
    await expect.poll(async () => c.runExclusive('stuck', { atMostFor: 1000 }, () => undefined), { timeout: 5000, interval: 50 }).toBe(true);
    release();
    await holding;
  });

  it('a graceful stop lets a task under a lock end and release it, aborting one past stopTimeoutMs: the lock is free after a restart', async () => {
    // A stop let such tasks go on and closed: their locks stayed held until atMostFor (an hour,
    // say), the whole cluster locked out of them.
    const root = await mkdtemp(join(tmpdir(), 'cronraft-lock-stop-'));
    try {
      const listen = `127.0.0.1:${await freePort()}`;
      const dataDir = join(root, 'member');
      const first = new Cluster([listen], { listen, dataDir, sync: false, stopTimeoutMs: 500 });
      started.push(first);
      await first.start();
      await first.waitForLeader();
      let quickEnded = false;
      let stuckReason: unknown = null;
      let running = 0;
      const quick = first.runExclusive('quick', { atMostFor: 600_000 }, async () => {
        running++;
        await new Promise((resolve) => setTimeout(resolve, 200));
        quickEnded = true;
      });
      const stuck = first.runExclusive('stuck', { atMostFor: 600_000 }, ({ signal }) => {
        running++;
        return new Promise<void>((resolve) => signal.addEventListener('abort', () => {
          stuckReason = signal.reason;
          resolve();
        }, { once: true }));
      });
      await expect.poll(() => running, { timeout: 5000, interval: 10 }).toBe(2);
      await first.stop();
      expect(quickEnded).toBe(true);
      expect(stuckReason).toMatchObject({ code: 'CRONRAFT_RUN_STOPPING' });
      await Promise.all([quick, stuck]);
      const second = new Cluster([listen], { listen, dataDir, sync: false });
      started.push(second);
      await second.start();
      await second.waitForLeader();
      expect(await second.runExclusive('quick', { atMostFor: 1000 }, () => undefined)).toBe(true);
      expect(await second.runExclusive('stuck', { atMostFor: 1000 }, () => undefined)).toBe(true);
    } finally {
      await rm(root, { recursive: true, force: true });
    }
  });

  it('refuses at once on a member that has heard no leader (it has no cluster time to stamp the lock with)', async () => {
    // Its peers never come up: it forms the cluster once it stops looking for a running one.
    const [alone] = await threeMembers(started, { joinTimeoutMs: 100 });
    await alone!.start();
    let ran = false;
    await expect(alone!.runExclusive('x', { atMostFor: 1000 }, () => (ran = true))).rejects.toMatchObject({ code: 'CRONRAFT_NOT_LEADER' });
    expect(ran).toBe(false);
  });

  it('rejects bad options at the call', async () => {
    const c = new Cluster([], { storage: 'memory' });
    await expect(c.runExclusive('x', { atMostFor: 0 }, () => undefined)).rejects.toMatchObject({ option: 'atMostFor' });
    await expect(c.runExclusive('x', { atMostFor: 100, atLeastFor: 200 }, () => undefined)).rejects.toMatchObject({ option: 'atLeastFor' });
    // A name held for thousands of years, its end past the integers a double holds exactly.
    await expect(c.runExclusive('x', { atMostFor: 2 ** 53 - 1 }, () => undefined)).rejects.toMatchObject({ option: 'atMostFor' });
    await expect(c.runExclusive('x', { atMostFor: 1e15, atLeastFor: 1e15 }, () => undefined)).rejects.toMatchObject({ option: 'atMostFor' });
    await expect(c.runExclusive('x', { atMostFor: 365 * 86_400_000 + 1 }, () => undefined)).rejects.toMatchObject({ option: 'atMostFor', message: expect.stringContaining('at most 31536000000 (a year)') });
  });
});
