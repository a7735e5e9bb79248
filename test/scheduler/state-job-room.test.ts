import { describe, expect, it } from 'vitest';
import { JobStates } from '../../src/api/job-states.js';
import { jobRefusedEventOf } from '../../src/cluster-events.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { plan } from '../../src/scheduler/planner.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { decodeSchedulerSnapshot, encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { expectSameBytes } from '../fixtures/bytes.js';
import { FIRST_CLUSTER_VERSION, JOB_ROOM_VERSION } from '../../src/version/versions.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } } as const;
const register = (job: string, member = 'a'): SchedulerCommand => ({ type: 'register', job, spec: parseSpec({ every: '1s' }), mode: 'one', policy, member, atMs: T0 });
const unregister = (job: string, member = 'a'): SchedulerCommand => ({ type: 'unregister', job, member });

/** A state of at most `maxJobs` jobs, with an applier that numbers entries, on a cluster version that makes room (JOB_ROOM_VERSION) unless told otherwise. */
function stateOf(maxJobs: number, makesRoom = true): { s: SchedulerState; apply: (c: SchedulerCommand) => ReturnType<SchedulerState['apply']> } {
  const s = new SchedulerState({ maxJobs });
  let index = 0;
  return { s, apply: (c) => s.apply(++index, c, makesRoom ? JOB_ROOM_VERSION : FIRST_CLUSTER_VERSION) };
}

describe('a new job at the cap of jobs', () => {
  it('is refused (too-many-jobs) on a cluster version before JOB_ROOM_VERSION, as a member of an earlier release refuses it', () => {
    const { s, apply } = stateOf(2, false);
    for (const job of ['j1', 'j2']) apply(register(job));
    apply(unregister('j1'));
    expect(apply(register('j3'))).toEqual({ ok: false, reason: 'too-many-jobs' });
    expect([...s.jobs.keys()]).toEqual(['j1', 'j2']);
  });

  it('is refused (too-many-jobs) while every job has a handler', () => {
    const { s, apply } = stateOf(3);
    for (const job of ['j1', 'j2', 'j3']) apply(register(job));
    expect(apply(register('j4'))).toEqual({ ok: false, reason: 'too-many-jobs' });
    expect([...s.jobs.keys()]).toEqual(['j1', 'j2', 'j3']);
    expect(s.jobsForgotten).toBe(0);
  });

  it('takes the place of the first job no member has a handler for, one with no run in progress', () => {
    const { s, apply } = stateOf(3);
    for (const job of ['j1', 'j2', 'j3']) apply(register(job));
    // j1 runs (a claim started), then loses its handler; j2 and j3 lose theirs, j3 first.
    const claimed = apply({ type: 'claim', job: 'j1', slotMs: T0 + 1000, assignees: ['a'] });
    if (!claimed.ok || claimed.claim === undefined) throw new Error('no claim');
    apply({ type: 'started', job: 'j1', slotMs: T0 + 1000, token: claimed.claim.token, member: 'a', atMs: T0 + 1000 });
    for (const job of ['j1', 'j3', 'j2']) apply(unregister(job));
    expect(apply(register('j4'))).toEqual({ ok: true });
    // j1's run is in progress: j2, the first after it in the jobs, goes.
    expect([...s.jobs.keys()]).toEqual(['j1', 'j3', 'j4']);
    expect(apply(register('j5'))).toEqual({ ok: true });
    expect([...s.jobs.keys()]).toEqual(['j1', 'j4', 'j5']);
    // Only j1 is left without a handler, and it runs: refused.
    expect(apply(register('j6'))).toEqual({ ok: false, reason: 'too-many-jobs' });
    // j1's claim stays with it.
    expect(s.claims.size).toBe(1);
    expect(s.jobsForgotten).toBe(2);
  });

  it('takes no place of a job that a member registered again', () => {
    const { s, apply } = stateOf(2);
    for (const job of ['j1', 'j2']) apply(register(job));
    apply(unregister('j1'));
    apply(register('j1', 'b'));
    expect(apply(register('j3'))).toEqual({ ok: false, reason: 'too-many-jobs' });
    apply(unregister('j2'));
    expect(apply(register('j3'))).toEqual({ ok: true });
    expect([...s.jobs.keys()]).toEqual(['j1', 'j3']);
  });

  it('forgets the same job on a member restored from a snapshot as on one that applied every entry', () => {
    const { s, apply } = stateOf(4);
    for (const job of ['j1', 'j2', 'j3', 'j4']) apply(register(job));
    // Orphaned in another order than the jobs'.
    for (const job of ['j4', 'j2', 'j3']) apply(unregister(job));
    const restored = new SchedulerState({ maxJobs: 4 });
    restored.restoreFrom(decodeSchedulerSnapshot(encodeSchedulerSnapshot(s)));
    for (const state of [s, restored]) {
      expect(state.apply(100, register('new1'), JOB_ROOM_VERSION)).toEqual({ ok: true });
      expect(state.apply(101, register('new2'), JOB_ROOM_VERSION)).toEqual({ ok: true });
    }
    expect([...restored.jobs.keys()]).toEqual([...s.jobs.keys()]);
    expect([...s.jobs.keys()]).toEqual(['j1', 'j4', 'new1', 'new2']);
  });

  it('forgets a job with its claims: its snapshot reads back, and a restored state goes on alike', () => {
    const { s, apply } = stateOf(3);
    for (const job of ['j1', 'j2', 'j3']) apply(register(job));
    // j1 ran once (settled) and lost its handler: it goes, and its claim with it.
    const claimed = apply({ type: 'claim', job: 'j1', slotMs: T0 + 1000, assignees: ['a'] });
    if (!claimed.ok || claimed.claim === undefined) throw new Error('no claim');
    const token = claimed.claim.token;
    apply({ type: 'started', job: 'j1', slotMs: T0 + 1000, token, member: 'a', atMs: T0 + 1000 });
    apply({ type: 'outcome', job: 'j1', slotMs: T0 + 1000, token, member: 'a', outcome: 'succeeded', atMs: T0 + 1005 });
    apply({ type: 'claim', job: 'j2', slotMs: T0 + 1000, assignees: ['a'] });
    apply(unregister('j1'));
    expect(apply(register('j4'))).toEqual({ ok: true });
    expect([...s.claims.values()].map((c) => c.job)).toEqual(['j2']);
    const bytes = encodeSchedulerSnapshot(s);
    const restored = new SchedulerState({ maxJobs: 3 });
    restored.restoreFrom(decodeSchedulerSnapshot(bytes));
    expectSameBytes(encodeSchedulerSnapshot(restored), bytes);
    // Both forget the next one alike, and stay the same.
    for (const state of [s, restored]) {
      state.apply(100, unregister('j3'), JOB_ROOM_VERSION);
      expect(state.apply(101, register('j5'), JOB_ROOM_VERSION)).toEqual({ ok: true });
    }
    expectSameBytes(encodeSchedulerSnapshot(restored), encodeSchedulerSnapshot(s));
  });

  it('gives a name registered again after it was forgotten none of the old claims, whatever its mode', () => {
    const { s, apply } = stateOf(2);
    apply({ type: 'register', job: 'x', spec: parseSpec({ every: '1s' }), mode: 'all', policy, member: 'a', atMs: T0 });
    apply(register('y'));
    // A mode 'all' claim no member started: neither open nor in progress.
    apply({ type: 'claim', job: 'x', slotMs: T0 + 1000, assignees: ['a'] });
    apply(unregister('x'));
    expect(apply(register('z'))).toEqual({ ok: true });
    apply(unregister('y'));
    // x again, in mode 'one', where y was.
    expect(apply(register('x'))).toEqual({ ok: true });
    expect([...s.jobs.keys()]).toEqual(['z', 'x']);
    expect([...s.claims.values()].filter((c) => c.job === 'x')).toEqual([]);
    const restored = new SchedulerState({ maxJobs: 2 });
    restored.restoreFrom(decodeSchedulerSnapshot(encodeSchedulerSnapshot(s)));
    expectSameBytes(encodeSchedulerSnapshot(restored), encodeSchedulerSnapshot(s));
  });

  it("gives an { at } job registered again after it was forgotten its passed instant again: the README's 'a new job'", () => {
    const { s, apply } = stateOf(2);
    const at = (member = 'a'): SchedulerCommand => ({ type: 'register', job: 'launch', spec: parseSpec({ at: new Date(T0 + 1000) }), mode: 'one', policy, member, atMs: T0 });
    apply(at());
    apply(register('y'));
    const first = apply({ type: 'claim', job: 'launch', slotMs: T0 + 1000, assignees: ['a'] });
    if (!first.ok || first.claim === undefined) throw new Error('no claim');
    apply({ type: 'outcome', job: 'launch', slotMs: T0 + 1000, token: first.claim.token, member: 'a', outcome: 'succeeded', atMs: T0 + 1100 });
    // Its run over and its last member gone, it makes room for z.
    apply(unregister('launch'));
    expect(plan(s, { nowMs: T0 + 60_000, lookaheadMs: 1000, members: new Map([['a', { load: 0 }]]), maxClaims: 10 }).filter((c) => 'job' in c && c.job === 'launch')).toEqual([]);
    expect(apply(register('z'))).toEqual({ ok: true });
    expect(s.jobs.has('launch')).toBe(false);
    apply(unregister('y'));
    // Registered again an hour after its instant, where y was: a new job, whose instant passed before its registration.
    expect(apply({ ...at(), atMs: T0 + 3_600_000 } as SchedulerCommand)).toEqual({ ok: true });
    const due = plan(s, { nowMs: T0 + 3_600_000, lookaheadMs: 1000, members: new Map([['a', { load: 0 }]]), maxClaims: 10 });
    expect(due).toContainEqual(expect.objectContaining({ type: 'claim', job: 'launch', slotMs: T0 + 1000 }));
  });

  it('leaves state().jobs without the job forgotten, the new one last', () => {
    const { s, apply } = stateOf(3);
    for (const job of ['j1', 'j2', 'j3']) apply(register(job));
    const views = new JobStates();
    views.of(s, T0 + 100);
    apply(unregister('j2'));
    // Warmed ahead too, as a member does between calls.
    views.warm(s, T0 + 100, 10);
    apply(register('j4'));
    views.warm(s, T0 + 100, 10);
    const after = views.of(s, T0 + 100);
    expect(after.map((j) => j.name)).toEqual(['j1', 'j3', 'j4']);
    expect(after).toEqual(new JobStates().of(s, T0 + 100));
    // Forgotten, then registered again: a new job, once.
    apply(unregister('j1'));
    apply(register('j2'));
    expect(views.of(s, T0 + 100).map((j) => j.name)).toEqual(['j3', 'j4', 'j2']);
  });

  it('makes a job-refused event on the member whose registration it was, and on no other', () => {
    const command = register('j9', 'a');
    const refused = { ok: false, reason: 'too-many-jobs' } as const;
    expect(jobRefusedEventOf('a', 7, command, refused)).toEqual({ job: 'j9', reason: 'too-many-jobs', index: 7 });
    expect(jobRefusedEventOf('b', 7, command, refused)).toBeNull();
    expect(jobRefusedEventOf('a', 7, command, { ok: true })).toBeNull();
    // A registration refused for another form that another member still handles is told too:
    // before, it was silent, and a job whose spec changed in a deploy could stop unseen.
    expect(jobRefusedEventOf('a', 7, command, { ok: false, reason: 'spec-conflict' })).toEqual({ job: 'j9', reason: 'spec-conflict', index: 7 });
    expect(jobRefusedEventOf('a', 7, command, { ok: false, reason: 'unknown-job' })).toBeNull();
  });
});
