import { describe, expect, it } from 'vitest';
import { RunPermits, type PermittedRun } from '../../src/runtime/scheduler/run-permits.js';
import { MAX_WAITING_RUNS, PRIORITY_AGING_MS } from '../../src/scheduler/run-queue.js';

interface Run extends PermittedRun {
  readonly name: string;
}

const run = (name: string, job = name, priority = 0): Run => ({ name, job, priority, phase: 'armed', resume: null, startedAtMs: undefined });

/** RunPermits on manual time, recording the order in which runs are let start or dropped. */
function permits(maxConcurrent: number, blocked: (r: Run) => boolean = () => false): { s: RunPermits<Run>; log: string[]; time: { now: number }; open: { value: boolean } } {
  const time = { now: 0 };
  const open = { value: true };
  const s = new RunPermits<Run>({ maxConcurrent, monotonicNow: () => time.now, clusterNow: () => 1_000_000 + time.now, blocked, open: () => open.value });
  return { s, log: [], time, open };
}

const settle = async (): Promise<void> => {
  for (let i = 0; i < 5; i++) await Promise.resolve();
};

function waitFor(s: RunPermits<Run>, r: Run, phase: 'queued' | 'ready', log: string[]): void {
  const go = s.wait(r, phase);
  if (go === null) throw new Error('no room');
  void go.then((started) => log.push(`${started ? 'start' : 'drop'} ${r.name}`));
}

describe('RunPermits', () => {
  it('starts at most maxConcurrent runs, by priority then arrival, and the next as one ends', async () => {
    const { s, log } = permits(2);
    const runs = [run('low'), run('high', 'high', 5), run('mid', 'mid', 2), run('low2', 'low2')];
    for (const r of runs) waitFor(s, r, 'ready', log);
    s.pump();
    await settle();
    expect(log).toEqual(['start high', 'start mid']);
    expect(runs.map((r) => r.phase)).toEqual(['ready', 'running', 'running', 'ready']);
    expect(runs[1]!.startedAtMs).toBe(1_000_000);
    s.release(runs[1]!);
    await settle();
    expect(log).toEqual(['start high', 'start mid', 'start low']);
    expect(runs[1]!.phase).toBe('done');
    expect(s.activeOf('high').size).toBe(0);
  });

  it('ages a waiting run so that a later one of higher priority does not pass it forever', async () => {
    const { s, log, time } = permits(1);
    const busy = run('busy');
    waitFor(s, busy, 'ready', log);
    s.pump();
    const old = run('old', 'old', 0);
    waitFor(s, old, 'ready', log);
    time.now = 3 * PRIORITY_AGING_MS;
    // Two levels higher, but three aging steps later: the older run goes first.
    waitFor(s, run('new', 'new', 2), 'ready', log);
    s.release(busy);
    await settle();
    expect(log).toEqual(['start busy', 'start old']);
  });

  it('lets a queued run go, first come first served per job, once its job is no longer blocked', async () => {
    let blocked = true;
    const { s, log } = permits(10, () => blocked);
    const first = run('first', 'job');
    const second = run('second', 'job');
    waitFor(s, first, 'queued', log);
    waitFor(s, second, 'queued', log);
    s.pump();
    await settle();
    expect(log).toEqual([]);
    expect(s.queuedCount).toBe(2);
    expect([...s.activeOf('job')]).toEqual([first, second]);
    blocked = false;
    s.pump();
    await settle();
    // One run of the job at a time leaves the queue: the second waits for the first.
    expect(log).toEqual(['start first']);
    expect(s.queuedCount).toBe(1);
  });

  it('drops a waiting run, which then never starts, and leaves a running one alone', async () => {
    const { s, log } = permits(1);
    const a = run('a');
    const b = run('b');
    waitFor(s, a, 'ready', log);
    waitFor(s, b, 'ready', log);
    s.pump();
    s.drop(a);
    // a was running: dropping it changes nothing, it still holds its run permit.
    expect(a.phase).toBe('running');
    expect(s.activeOf('a').has(a)).toBe(true);
    s.drop(b);
    s.release(a);
    await settle();
    expect(log).toEqual(['start a', 'drop b']);
    expect(b.phase).toBe('done');
    expect(s.activeOf('b').size).toBe(0);
  });

  it('starts nothing while closed (draining or stopped)', async () => {
    const { s, log, open } = permits(5);
    open.value = false;
    waitFor(s, run('a'), 'ready', log);
    s.pump();
    await settle();
    expect(log).toEqual([]);
    open.value = true;
    s.pump();
    await settle();
    expect(log).toEqual(['start a']);
  });

  it(`refuses a run when MAX_WAITING_RUNS wait already, changing nothing`, () => {
    const { s, log } = permits(1);
    for (let i = 0; i < MAX_WAITING_RUNS; i++) waitFor(s, run(`r${i}`, 'job'), 'ready', log);
    const extra = run('extra', 'job');
    expect(s.wait(extra, 'ready')).toBeNull();
    expect(extra.phase).toBe('armed');
    expect(s.activeOf('job').has(extra)).toBe(false);
    // A queued run is bounded per job by the overlap policy, not here.
    expect(s.wait(run('queued', 'other'), 'queued')).not.toBeNull();
  });
});
