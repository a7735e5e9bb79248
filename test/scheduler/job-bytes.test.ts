/**
 * The scheduler's jobs and locks are bounded by what they take in a snapshot (maxJobBytes,
 * maxLockBytes, from SNAPSHOT_SHARES_VERSION), beside their number: before, 10,000 jobs with long
 * names, each with the handlers of many members, made a snapshot larger than a member behind
 * takes in (snapshot-shares.ts).
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { jobBytes, lockBytes } from '../../src/scheduler/job-footprint.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { encodeSchedulerSnapshot, restoreSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { MAX_ASSIGNED_MEMBERS } from '../../src/scheduler/assigned-counts.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { FIRST_CLUSTER_VERSION, SNAPSHOT_SHARES_VERSION } from '../../src/version/versions.js';
import { intents, resolve, ROOMY, T0 } from '../fixtures/scheduler-intents.js';

const utf8 = (value: unknown): number => Buffer.byteLength(JSON.stringify(value));

/** What the snapshot's jobs and locks take: each record with its comma. */
function snapshotBytes(state: SchedulerState): { jobs: number; locks: number } {
  const top = JSON.parse(Buffer.from(encodeSchedulerSnapshot(state)).toString('utf8')) as unknown[];
  const sum = (list: unknown[]): number => list.reduce<number>((total, record) => total + utf8(record) + 1, 0);
  return { jobs: sum(top[1] as unknown[]), locks: sum(top[3] as unknown[]) };
}

/** The bytes the state should count, from its records. */
function recount(state: SchedulerState): { jobs: number; locks: number } {
  let jobs = 0;
  for (const job of state.jobs.values()) jobs += jobBytes(job);
  let locks = 0;
  for (const [name, lock] of state.locks) locks += lockBytes(name, lock);
  return { jobs, locks };
}

const register = (job: string, member: string): Extract<SchedulerCommand, { type: 'register' }> => ({
  type: 'register',
  job,
  spec: { kind: 'every', everyMs: 3_600_000 },
  mode: 'one',
  policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } },
  member,
  atMs: T0,
});

describe('jobs and locks in bytes', () => {
  it('whatever the commands, counts what the jobs and locks take, no less than their snapshot, and within the bounds from SNAPSHOT_SHARES_VERSION', () => {
    fc.assert(
      fc.property(intents(80), fc.integer({ min: 150, max: 1500 }), fc.integer({ min: 60, max: 300 }), fc.boolean(), (xs, maxJobBytes, maxLockBytes, bounded) => {
        const version = bounded ? SNAPSHOT_SHARES_VERSION : FIRST_CLUSTER_VERSION;
        const state = new SchedulerState({ ...ROOMY, maxJobBytes, maxLockBytes });
        xs.forEach((i, k) => {
          const index = k + 1;
          state.apply(index, resolve(i, index, state), version);
          const counted = recount(state);
          expect([state.jobBytes, state.lockBytes]).toEqual([counted.jobs, counted.locks]);
          if (bounded) {
            expect(state.jobBytes).toBeLessThanOrEqual(maxJobBytes);
            expect(state.lockBytes).toBeLessThanOrEqual(maxLockBytes);
          }
        });
        const taken = snapshotBytes(state);
        expect(taken.jobs).toBeLessThanOrEqual(state.jobBytes);
        expect(taken.locks).toBeLessThanOrEqual(state.lockBytes);
        const restored = new SchedulerState({ ...ROOMY, maxJobBytes, maxLockBytes });
        restoreSchedulerSnapshot(restored, encodeSchedulerSnapshot(state));
        expect([restored.jobBytes, restored.lockBytes]).toEqual([state.jobBytes, state.lockBytes]);
      }),
      { numRuns: 300 },
    );
  });

  it('counts every field a job and a lock may hold, of any text, no less than JSON takes', () => {
    const text = fc.string({ unit: 'binary', minLength: 1, maxLength: 30 });
    fc.assert(
      fc.property(text, text, text, fc.array(text, { minLength: 1, maxLength: 5 }), fc.double({ noNaN: true, noDefaultInfinity: true }), (name, expression, tz, members, number) => {
        const state = new SchedulerState();
        let index = 0;
        const cron: SchedulerCommand = { type: 'register', job: name, spec: { kind: 'cron', expression, tz, dst: { gap: 'shift', overlap: 'twice' } }, mode: 'all', policy: { retries: 3, retryDelayMs: number, catchUp: { policy: 'all', windowMs: number, maxSlots: 7 }, overlap: 'replace' }, member: members[0] as string, atMs: number };
        state.apply(++index, cron, SNAPSHOT_SHARES_VERSION);
        for (const member of members) state.apply(++index, { ...cron, member }, SNAPSHOT_SHARES_VERSION);
        // Another form from the last member: a conflict, with its text.
        state.apply(++index, { ...register(name, members[members.length - 1] as string), mode: 'all' }, SNAPSHOT_SHARES_VERSION);
        state.apply(++index, { type: 'pause', job: name, atMs: number }, SNAPSHOT_SHARES_VERSION);
        state.apply(index + 1, { type: 'lock', name, member: members[0] as string, atMs: T0, untilMs: number }, SNAPSHOT_SHARES_VERSION);
        const taken = snapshotBytes(state);
        expect(taken.jobs).toBeLessThanOrEqual(state.jobBytes);
        expect(taken.locks).toBeLessThanOrEqual(state.lockBytes);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a new job, and a member\'s handler for a job, past maxJobBytes from SNAPSHOT_SHARES_VERSION, and a job no member handles makes room', () => {
    const one = jobBytes(recordOf('job-1', ['a']));
    const state = new SchedulerState({ ...ROOMY, maxJobBytes: 2 * one + 2 });
    let index = 0;
    expect(state.apply(++index, register('job-1', 'a'), SNAPSHOT_SHARES_VERSION)).toEqual({ ok: true });
    expect(state.apply(++index, register('job-2', 'a'), SNAPSHOT_SHARES_VERSION)).toEqual({ ok: true });
    // b's handler for job-1 takes its name and a comma: no room.
    expect(state.apply(++index, register('job-1', 'b'), SNAPSHOT_SHARES_VERSION)).toEqual({ ok: false, reason: 'too-many-jobs' });
    expect([...(state.jobs.get('job-1')?.handlers ?? [])]).toEqual(['a']);
    expect(state.apply(++index, register('job-3', 'a'), SNAPSHOT_SHARES_VERSION)).toEqual({ ok: false, reason: 'too-many-jobs' });
    // Before the version, the count alone bounds them, as a member of an earlier release applies them.
    const before = new SchedulerState({ ...ROOMY, maxJobBytes: 2 * one + 2 });
    for (const command of [register('job-1', 'a'), register('job-2', 'a'), register('job-1', 'b'), register('job-3', 'a')]) expect(before.apply(++index, command, FIRST_CLUSTER_VERSION)).toEqual({ ok: true });
    // Unregistered by its member, job-2 makes room for job-3.
    state.apply(++index, { type: 'unregister', job: 'job-2', member: 'a' }, SNAPSHOT_SHARES_VERSION);
    expect(state.apply(index + 1, register('job-3', 'a'), SNAPSHOT_SHARES_VERSION)).toEqual({ ok: true });
    expect([...state.jobs.keys()]).toEqual(['job-1', 'job-3']);
    expect(state.jobBytes).toBe(recount(state).jobs);
  });

  it('lets a member join a job no member handles once other such jobs made room, as a new job would', () => {
    const state = new SchedulerState({ ...ROOMY, maxJobBytes: 3 * jobBytes(recordOf('job-1', ['a'])) });
    let index = 0;
    for (const job of ['job-1', 'job-2', 'job-3']) state.apply(++index, register(job, 'a'), SNAPSHOT_SHARES_VERSION);
    for (const job of ['job-1', 'job-2']) state.apply(++index, { type: 'unregister', job, member: 'a' }, SNAPSHOT_SHARES_VERSION);
    // The new handler's name passes the share: job-1, handled by nobody, makes room; job-2 is kept.
    expect(state.apply(index + 1, register('job-2', 'a-much-longer-member-id:7000'), SNAPSHOT_SHARES_VERSION)).toEqual({ ok: true });
    expect([...state.jobs.keys()]).toEqual(['job-2', 'job-3']);
    expect([...(state.jobs.get('job-2')?.handlers ?? [])]).toEqual(['a-much-longer-member-id:7000']);
    expect(state.jobBytes).toBe(recount(state).jobs);
  });

  it("keeps a member's conflict in its place when its member registers yet another form, at every version", () => {
    for (const version of [FIRST_CLUSTER_VERSION, SNAPSHOT_SHARES_VERSION]) {
      const state = new SchedulerState();
      let index = 0;
      const every = (member: string, everyMs: number): SchedulerCommand => ({ ...register('job', member), spec: { kind: 'every', everyMs } });
      state.apply(++index, every('a', 1000), version);
      state.apply(++index, every('b', 2000), version);
      state.apply(++index, every('c', 3000), version);
      state.apply(index + 1, every('b', 4000), version);
      expect([...(state.jobs.get('job')?.conflicts ?? new Map<string, string>()).keys()]).toEqual(['b', 'c']);
      expect(state.jobBytes).toBe(recount(state).jobs);
    }
  });

  it('refuses a new lock past maxLockBytes from SNAPSHOT_SHARES_VERSION, once no expired lock is left to make room', () => {
    const lock = (name: string, atMs: number): SchedulerCommand => ({ type: 'lock', name, member: 'a', atMs, untilMs: atMs + 1000 });
    const one = lockBytes('lock-1', { holder: 'a', token: 1, untilMs: T0 });
    const state = new SchedulerState({ ...ROOMY, maxLockBytes: 2 * one });
    let index = 0;
    expect(state.apply(++index, lock('lock-1', T0), SNAPSHOT_SHARES_VERSION).ok).toBe(true);
    expect(state.apply(++index, lock('lock-2', T0), SNAPSHOT_SHARES_VERSION).ok).toBe(true);
    expect(state.apply(++index, lock('lock-3', T0 + 10), SNAPSHOT_SHARES_VERSION)).toEqual({ ok: false, reason: 'too-many-locks' });
    // lock-1 taken again once expired keeps its place; lock-2, expired, makes room for lock-3.
    expect(state.apply(++index, lock('lock-1', T0 + 2000), SNAPSHOT_SHARES_VERSION).ok).toBe(true);
    expect(state.apply(index + 1, lock('lock-3', T0 + 2000), SNAPSHOT_SHARES_VERSION).ok).toBe(true);
    expect([...state.locks.keys()]).toEqual(['lock-1', 'lock-3']);
    expect(state.lockBytes).toBe(recount(state).locks);
  });
});

describe('counts of assignments', () => {
  it('from SNAPSHOT_SHARES_VERSION keeps those of the MAX_ASSIGNED_MEMBERS members assigned to last, before it every member ever assigned', () => {
    const members = Array.from({ length: MAX_ASSIGNED_MEMBERS + 44 }, (_, i) => `member-${i}`);
    for (const version of [FIRST_CLUSTER_VERSION, SNAPSHOT_SHARES_VERSION]) {
      const state = new SchedulerState();
      let index = 0;
      state.apply(++index, register('job', 'a'), version);
      members.forEach((member, i) => state.apply(++index, { type: 'claim', job: 'job', slotMs: T0 + (i + 1) * 3_600_000, assignees: [member] }, version));
      // The first member assigned again: the latest, from the version on.
      state.apply(++index, { type: 'claim', job: 'job', slotMs: T0 + (members.length + 1) * 3_600_000, assignees: [members[0] as string] }, version);
      if (version < SNAPSHOT_SHARES_VERSION) {
        expect([...state.assigned.keys()]).toEqual(members);
        continue;
      }
      expect(state.assigned.size).toBe(MAX_ASSIGNED_MEMBERS);
      expect([...state.assigned.keys()]).toEqual([...members.slice(members.length - MAX_ASSIGNED_MEMBERS + 1), members[0]]);
      // Forgotten once the others were assigned after it, it counted as none again.
      expect(state.assigned.get(members[0] as string)).toBe(1);
    }
  });
});

/** A job record's fields that jobBytes reads, for `name` handled by `members`. */
function recordOf(name: string, members: string[]): Parameters<typeof jobBytes>[0] {
  return {
    name,
    spec: { kind: 'every', everyMs: 3_600_000 },
    mode: 'one',
    policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' }, overlap: 'skip' },
    anchorMs: T0,
    handlers: new Set(members),
    conflicts: new Map(),
    highWaterMs: T0,
    missedSlots: 0,
    skippedRuns: 0,
    paused: false,
  };
}
