import { describe, expect, it } from 'vitest';
import { parseSpec, specKey } from '../../src/scheduler/spec.js';
import { decodeSchedulerSnapshot, encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { MISSED, MISSED_REASONS, policyKey, sameForm, type SchedulerCommand } from '../../src/scheduler/command.js';
import { NO_CONFLICTS, runsOf } from '../../src/scheduler/records.js';
import { SchedulerState } from '../../src/scheduler/state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const every = parseSpec({ every: '1s' });
const policy = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } } as const;
const register = (member: string, spec = every): SchedulerCommand => ({ type: 'register', job: 'report', spec, mode: 'one', policy, member, atMs: T0 });
const claim = (slotMs: number, assignees = ['a']): SchedulerCommand => ({ type: 'claim', job: 'report', slotMs, assignees });

describe('the scheduler state machine', () => {
  it('claims a slot at most once, ever, whatever order claims arrive in', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    expect(s.apply(2, claim(T0 + 2000))).toMatchObject({ ok: true, claim: { token: 2 } });
    // A second leader's claim of the same slot, or of an earlier one, is refused.
    expect(s.apply(3, claim(T0 + 2000, ['b']))).toEqual({ ok: false, reason: 'duplicate-slot' });
    expect(s.apply(4, claim(T0 + 1000, ['b']))).toEqual({ ok: false, reason: 'duplicate-slot' });
    expect(s.apply(5, claim(T0 + 3000))).toMatchObject({ ok: true, claim: { token: 5 } });
    expect([...s.claims.values()].map((c) => c.token)).toEqual([2, 5]);
  });

  it('keeps the first registration when members register different specs (a rolling deploy)', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    expect(s.apply(2, register('b', parseSpec({ every: '5s' })))).toEqual({ ok: false, reason: 'spec-conflict' });
    expect(s.apply(3, register('c'))).toEqual({ ok: true });
    const job = s.jobs.get('report')!;
    expect(job.spec).toEqual(every);
    expect([...job.handlers].sort()).toEqual(['a', 'c']);
    expect(job.conflicts.get('b')).toBe('every 5000 (one, retries 0 delay 1000 catch-up latest)');
  });

  it('replicates the policy with the job: a member registering other retries is a conflict too', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    expect(s.apply(2, { ...register('b'), policy: { ...policy, retries: 3 } } as SchedulerCommand)).toEqual({ ok: false, reason: 'spec-conflict' });
    expect(s.jobs.get('report')!.policy.retries).toBe(0);
  });

  it('tells a registration that matches the job from one that conflicts by their texts, however their fields are written', () => {
    // The fields are compared first, the texts (specKey, policyKey) only when they differ: the
    // two must agree on every registration, equal fields or not.
    type Register = Extract<SchedulerCommand, { type: 'register' }>;
    const base = register('a') as Register;
    const all = { policy: 'all', windowMs: 60_000, maxSlots: 5 } as const;
    const cases: Array<[Partial<Register>, Partial<Register>, 'same' | 'conflict']> = [
      [{}, { spec: parseSpec({ every: '1s' }) }, 'same'],
      [{}, { policy: { ...policy, overlap: 'skip' } }, 'same'],
      [{ policy: { ...policy, overlap: 'queue' } }, { policy: { ...policy } }, 'conflict'],
      [{}, { policy: { ...policy, retryDelayMs: 2000 } }, 'conflict'],
      [{}, { mode: 'all' }, 'conflict'],
      [{}, { spec: parseSpec({ at: new Date(T0 + 1000) }) }, 'conflict'],
      [{ policy: { ...policy, catchUp: all, overlap: 'queue' } }, { policy: { ...policy, catchUp: { ...all }, overlap: 'queue' } }, 'same'],
      [{ policy: { ...policy, catchUp: all, overlap: 'queue' } }, { policy: { ...policy, catchUp: { ...all, maxSlots: 6 }, overlap: 'queue' } }, 'conflict'],
      [{ spec: parseSpec('0 * * * *') }, { spec: parseSpec('0 * * * *') }, 'same'],
      [{ spec: parseSpec('0 * * * *') }, { spec: parseSpec('5 * * * *') }, 'conflict'],
      [{ spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris' }) }, { spec: parseSpec('0 * * * *') }, 'conflict'],
      [{ spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'skip' } }) }, { spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'skip' } }) }, 'same'],
      [{ spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'skip' } }) }, { spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris' }) }, 'conflict'],
      [{ spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'shift', overlap: 'once' } }) }, { spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris' }) }, 'same'],
      [{ spec: parseSpec({ delayAfterCompletion: 1000 }) }, { spec: parseSpec({ delayAfterCompletion: 1000 }) }, 'same'],
      [{ spec: parseSpec({ delayAfterCompletion: 1000 }) }, { spec: parseSpec({ delayAfterCompletion: 1000, initialDelay: 10 }) }, 'conflict'],
    ];
    const text = (r: Register): string => `${specKey(r.spec)} (${r.mode}, ${policyKey(r.policy)})`;
    for (const [first, second, expected] of cases) {
      const s = new SchedulerState();
      s.apply(1, { ...base, ...first });
      const result = s.apply(2, { ...base, ...second, member: 'b' });
      expect(result, JSON.stringify([first, second])).toEqual(expected === 'same' ? { ok: true } : { ok: false, reason: 'spec-conflict' });
      // Members share a form between jobs when sameForm says so (registrations.ts): it never
      // says so where the texts differ.
      const [a, b] = [{ ...base, ...first }, { ...base, ...second }];
      if (sameForm(a, b)) expect(text(a), JSON.stringify([first, second])).toBe(text(b));
    }
    expect(sameForm(register('a') as Register, register('b') as Register)).toBe(true);
    expect(sameForm({ ...base, spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'skip' } }) }, { ...base, spec: parseSpec({ cron: '0 * * * *', tz: 'Europe/Paris', dst: { gap: 'skip' } }) })).toBe(true);
  });

  it('refuses an outcome reported under a claim that is not the slot’s current one', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    s.apply(2, claim(T0 + 1000));
    expect(s.apply(3, { type: 'outcome', job: 'report', slotMs: T0 + 1000, token: 1, member: 'a', outcome: 'succeeded', atMs: T0 + 1001 })).toEqual({ ok: false, reason: 'stale-token' });
    expect(s.apply(4, { type: 'outcome', job: 'report', slotMs: T0 + 1000, token: 2, member: 'a', outcome: 'succeeded', atMs: T0 + 1001 })).toMatchObject({ ok: true });
    expect(s.claims.get(`report@${T0 + 1000}`)!.outcomes.get('a')).toEqual({ outcome: 'succeeded', atMs: T0 + 1001, token: 2 });
  });

  it('keeps the first outcome a member reports for a token: a repeat cannot turn a success into a failure', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    s.apply(2, claim(T0 + 1000));
    const report = (index: number, outcome: 'succeeded' | 'interrupted'): ReturnType<SchedulerState['apply']> =>
      s.apply(index, { type: 'outcome', job: 'report', slotMs: T0 + 1000, token: 2, member: 'a', outcome, atMs: T0 + 1100 });
    expect(report(3, 'succeeded')).toMatchObject({ ok: true });
    expect(report(4, 'interrupted')).toMatchObject({ ok: false });
    expect(s.claims.get(`report@${T0 + 1000}`)!.outcomes.get('a')!.outcome).toBe('succeeded');
  });

  it('records skipped slots as missed and never claims them afterwards', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    expect(s.apply(2, { type: 'skip', job: 'report', throughMs: T0 + 5000, fromMs: T0, count: 5 })).toEqual({ ok: true });
    expect(s.jobs.get('report')!.missedSlots).toBe(5);
    expect(s.apply(3, claim(T0 + 5000))).toEqual({ ok: false, reason: 'duplicate-slot' });
  });

  it('refuses a claim planned from a high-water mark that has moved since (it could jump over uncounted slots)', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    expect(s.apply(2, { type: 'claim', job: 'report', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 })).toMatchObject({ ok: true });
    // Planned when the mark was still T0: T0+2000..4000 would be neither claimed nor counted.
    expect(s.apply(3, { type: 'claim', job: 'report', slotMs: T0 + 5000, assignees: ['a'], fromMs: T0 })).toEqual({ ok: false, reason: 'stale-token' });
    expect(s.apply(4, { type: 'claim', job: 'report', slotMs: T0 + 2000, assignees: ['a'], fromMs: T0 + 1000 })).toMatchObject({ ok: true });
  });

  it('refuses a skip planned from a high-water mark that has moved since (its count would include a claim)', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    expect(s.apply(2, claim(T0 + 1000))).toMatchObject({ ok: true });
    expect(s.apply(3, { type: 'skip', job: 'report', throughMs: T0 + 5000, fromMs: T0, count: 5 })).toEqual({ ok: false, reason: 'stale-token' });
    expect(s.jobs.get('report')!.missedSlots).toBe(0);
    expect(s.apply(4, { type: 'skip', job: 'report', throughMs: T0 + 5000, fromMs: T0 + 1000, count: 4 })).toEqual({ ok: true });
    expect(s.jobs.get('report')!.missedSlots).toBe(4);
  });

  it('forgets finished claims before a run still in progress when it must drop one', () => {
    const s = new SchedulerState({ maxClaimsKept: 3 });
    s.apply(1, register('a'));
    s.apply(2, claim(T0 + 1000));
    const token = s.claims.get(`report@${T0 + 1000}`)!.token;
    s.apply(3, { type: 'started', job: 'report', slotMs: T0 + 1000, token, member: 'a', atMs: T0 + 1000 });
    for (let i = 2; i <= 4; i++) s.apply(2 + i, claim(T0 + i * 1000));
    // The oldest, still running, stays; the finished ones after it went first.
    expect([...s.claims.values()].map((c) => c.slotMs - T0)).toEqual([1000, 3000, 4000]);
  });

  it('keeps a bounded number of claims, dropping the oldest', () => {
    const s = new SchedulerState({ maxClaimsKept: 3 });
    s.apply(1, register('a'));
    for (let i = 1; i <= 5; i++) s.apply(1 + i, claim(T0 + i * 1000));
    expect([...s.claims.values()].map((c) => c.slotMs - T0)).toEqual([3000, 4000, 5000]);
  });

  it('is deterministic: the same commands give the same state', () => {
    const commands: SchedulerCommand[] = [register('a'), register('b'), claim(T0 + 1000, ['b']), claim(T0 + 1000), claim(T0 + 2000)];
    const run = (): string => {
      const s = new SchedulerState();
      commands.forEach((c, i) => s.apply(i + 1, c));
      return JSON.stringify([...s.claims.values()].map((c) => [c.job, c.slotMs, c.token, c.assignees]));
    };
    expect(run()).toBe(run());
  });
});

describe('memory per job', () => {
  const registerJob = (job: string, member: string, spec = every): SchedulerCommand => ({ type: 'register', job, spec, mode: 'one', policy, member, atMs: T0 });

  it('jobs that the same members registered in the same order share one set of handlers, which a change replaces rather than alters', () => {
    const s = new SchedulerState();
    let index = 0;
    for (const member of ['a', 'b', 'c']) for (const job of ['j1', 'j2', 'j3']) s.apply(++index, registerJob(job, member));
    const shared = s.jobs.get('j1')!.handlers;
    expect([...shared]).toEqual(['a', 'b', 'c']);
    expect(s.jobs.get('j2')!.handlers).toBe(shared);
    expect(s.jobs.get('j3')!.handlers).toBe(shared);
    s.apply(++index, { type: 'unregister', job: 'j2', member: 'b' });
    expect([...s.jobs.get('j2')!.handlers]).toEqual(['a', 'c']);
    expect([...shared]).toEqual(['a', 'b', 'c']);
    // The order is state (a snapshot holds it): registered in another order, another set.
    s.apply(++index, registerJob('j4', 'b'));
    s.apply(index + 1, registerJob('j4', 'a'));
    expect([...s.jobs.get('j4')!.handlers]).toEqual(['b', 'a']);
    // A state restored from a snapshot shares them too.
    const restored = new SchedulerState();
    restored.restoreFrom(decodeSchedulerSnapshot(encodeSchedulerSnapshot(s)));
    expect(restored.jobs.get('j3')!.handlers).toBe(restored.jobs.get('j1')!.handlers);
    expect([...restored.jobs.get('j4')!.handlers]).toEqual(['b', 'a']);
    expect(encodeSchedulerSnapshot(restored)).toEqual(encodeSchedulerSnapshot(s));
  });

  it('a job without conflicts holds the one shared empty map; a conflict gives it its own, and its end the shared one again', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    const job = s.jobs.get('report')!;
    expect(job.conflicts).toBe(NO_CONFLICTS);
    s.apply(2, register('b', parseSpec({ every: '5s' })));
    expect([...job.conflicts.keys()]).toEqual(['b']);
    expect(NO_CONFLICTS.size).toBe(0);
    s.apply(3, register('b'));
    expect(job.conflicts).toBe(NO_CONFLICTS);
    expect([...job.handlers]).toEqual(['a', 'b']);
  });

  it("keeps the registration's own policy when it names an overlap policy (the mirror's state shares it)", () => {
    const s = new SchedulerState();
    const withOverlap = { ...register('a'), policy: { ...policy, overlap: 'queue' } } as Extract<SchedulerCommand, { type: 'register' }>;
    s.apply(1, withOverlap);
    expect(s.jobs.get('report')!.policy).toBe(withOverlap.policy);
    s.apply(2, { ...register('b'), job: 'older' } as SchedulerCommand);
    expect(s.jobs.get('older')!.policy).toEqual({ ...policy, overlap: 'skip' });
  });
});

describe('the changes of jobs', () => {
  it('are kept only by a state that tracks them: one that does not (the mirror) keeps the same contents and says every job may have changed', () => {
    const tracking = new SchedulerState({ maxClaimsKept: 2 });
    const mirror = new SchedulerState({ maxClaimsKept: 2 }, { tracksChanges: false });
    const commands: SchedulerCommand[] = [
      register('a'),
      { ...register('a'), job: 'other' } as SchedulerCommand,
      register('b'),
      { type: 'claim', job: 'report', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 },
      { type: 'claim', job: 'other', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 },
      { type: 'claim', job: 'report', slotMs: T0 + 2000, assignees: ['b'], fromMs: T0 + 1000 },
    ];
    commands.forEach((command, i) => {
      expect(mirror.apply(i + 1, command)).toEqual(tracking.apply(i + 1, command));
    });
    expect(encodeSchedulerSnapshot(mirror)).toEqual(encodeSchedulerSnapshot(tracking));
    expect(tracking.jobsChangedSince(0)).toEqual(['report', 'other', 'report', 'report', 'other', 'report', 'report']);
    expect(tracking.changeOf('other')).toBe(5);
    expect(mirror.jobsChangedSince(0)).toBeNull();
    expect(mirror.changeOf('other')).toBe(mirror.changes);
  });
});

describe('reassignment', () => {
  it('moves a claim under a new, higher token only from the token it names', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    s.apply(2, register('b'));
    s.apply(3, claim(T0 + 1000, ['a']));
    const move = (index: number, fromToken: number): ReturnType<SchedulerState['apply']> =>
      s.apply(index, { type: 'reassign', job: 'report', slotMs: T0 + 1000, fromToken, assignees: ['b'], reason: 'assignee-lost' });
    expect(move(4, 3)).toMatchObject({ ok: true, claim: { token: 4, assignees: ['b'], attempt: 2 } });
    // A second leader's move from the old token loses: the claim moved already.
    expect(move(5, 3)).toEqual({ ok: false, reason: 'stale-token' });
    // The first assignee's late outcome, under the old token, is refused.
    expect(s.apply(6, { type: 'outcome', job: 'report', slotMs: T0 + 1000, token: 3, member: 'a', outcome: 'succeeded', atMs: T0 + 1500 })).toEqual({ ok: false, reason: 'stale-token' });
  });

  it('is refused once the outcome it was planned without ends the slot, or makes it a retry', () => {
    // Seed 42 (five members, three minutes): a leader planned a move from its applied state
    // while the assignee's success was committed but not yet applied there; applied after the
    // success, the move ran the slot again.
    const s = new SchedulerState();
    s.apply(1, register('a'));
    s.apply(2, register('b'));
    s.apply(3, claim(T0 + 1000, ['a']));
    s.apply(4, claim(T0 + 2000, ['a']));
    const outcome = (index: number, slotMs: number, token: number, result: 'succeeded' | 'failed' | 'interrupted'): void => {
      s.apply(index, { type: 'outcome', job: 'report', slotMs, token, member: 'a', outcome: result, atMs: slotMs + 500 });
    };
    const move = (index: number, slotMs: number, fromToken: number, reason: 'assignee-lost' | 'retry'): ReturnType<SchedulerState['apply']> =>
      s.apply(index, { type: 'reassign', job: 'report', slotMs, fromToken, assignees: ['b'], reason });
    outcome(5, T0 + 1000, 3, 'succeeded');
    expect(move(6, T0 + 1000, 3, 'assignee-lost')).toEqual({ ok: false, reason: 'ended' });
    expect(move(7, T0 + 1000, 3, 'retry')).toEqual({ ok: false, reason: 'ended' });
    expect(s.claims.get(`report@${T0 + 1000}`)).toMatchObject({ token: 3, assignees: ['a'], attempt: 1 });
    // A failure turns a lost assignee's move into a retry, which the planner plans after its back-off.
    outcome(8, T0 + 2000, 4, 'failed');
    expect(move(9, T0 + 2000, 4, 'assignee-lost')).toEqual({ ok: false, reason: 'ended' });
    expect(move(10, T0 + 2000, 4, 'retry')).toMatchObject({ ok: true, claim: { token: 10, attempt: 2 } });
    // An interrupted run is moved (the cluster, not the job, ended it); a retry needs a failure.
    outcome(11, T0 + 2000, 10, 'interrupted');
    expect(move(12, T0 + 2000, 10, 'retry')).toEqual({ ok: false, reason: 'ended' });
    expect(move(13, T0 + 2000, 10, 'assignee-lost')).toMatchObject({ ok: true, claim: { token: 13, attempt: 3 } });
  });
});

describe('expiry', () => {
  it('records a slot nobody ran as missed, with its reason, under a new token that makes the old one stale', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    s.apply(2, claim(T0 + 1000, ['a']));
    s.apply(3, { type: 'started', job: 'report', slotMs: T0 + 1000, token: 2, member: 'a', atMs: T0 + 1000 });
    const expire = (index: number, fromToken: number): ReturnType<SchedulerState['apply']> =>
      s.apply(index, { type: 'expire', job: 'report', slotMs: T0 + 1000, fromToken, reason: 'expired', atMs: T0 + 700_000 });
    expect(expire(4, 1)).toEqual({ ok: false, reason: 'stale-token' });
    expect(expire(5, 2)).toMatchObject({ ok: true, claim: { token: 5, assignees: ['a'], attempt: 1 } });
    const c = s.claims.get(`report@${T0 + 1000}`)!;
    expect(c.outcomes.get('a')).toEqual({ outcome: MISSED, atMs: T0 + 700_000, token: 5, error: MISSED_REASONS.expired });
    // Its story is over: no run in progress, nothing for the leader to move, no second expiry,
    // and the run under the old token cannot report.
    expect(runsOf(c)).toEqual([]);
    expect(s.openClaims().has(c)).toBe(false);
    expect(expire(6, 5)).toEqual({ ok: false, reason: 'ended' });
    expect(s.apply(7, { type: 'outcome', job: 'report', slotMs: T0 + 1000, token: 2, member: 'a', outcome: 'succeeded', atMs: T0 + 700_001 })).toEqual({ ok: false, reason: 'stale-token' });
  });

  it('is refused for a slot with an outcome under its token, and for a job of mode all', () => {
    const s = new SchedulerState();
    s.apply(1, register('a'));
    s.apply(2, claim(T0 + 1000, ['a']));
    s.apply(3, { type: 'outcome', job: 'report', slotMs: T0 + 1000, token: 2, member: 'a', outcome: 'failed', atMs: T0 + 1500 });
    expect(s.apply(4, { type: 'expire', job: 'report', slotMs: T0 + 1000, fromToken: 2, reason: 'expired', atMs: T0 + 700_000 })).toEqual({ ok: false, reason: 'ended' });
    s.apply(5, { type: 'register', job: 'everywhere', spec: every, mode: 'all', policy, member: 'a', atMs: T0 });
    s.apply(6, { type: 'claim', job: 'everywhere', slotMs: T0 + 1000, assignees: ['a'] });
    expect(s.apply(7, { type: 'expire', job: 'everywhere', slotMs: T0 + 1000, fromToken: 6, reason: 'expired', atMs: T0 + 700_000 })).toEqual({ ok: false, reason: 'ended' });
  });
});

describe('locks', () => {
  it('are taken when free or expired, released only by their token, and kept at least until untilMs', () => {
    const s = new SchedulerState();
    const lock = (index: number, member: string, atMs: number, untilMs: number): ReturnType<SchedulerState['apply']> =>
      s.apply(index, { type: 'lock', name: 'n', member, atMs, untilMs });
    expect(lock(1, 'a', T0, T0 + 1000)).toMatchObject({ ok: true, lock: { holder: 'a', token: 1 } });
    expect(lock(2, 'b', T0 + 10, T0 + 1000)).toEqual({ ok: false, reason: 'locked' });
    expect(s.apply(3, { type: 'unlock', name: 'n', token: 2, untilMs: T0 + 20 })).toEqual({ ok: false, reason: 'stale-token' });
    // Released early but held until T0 + 500 (its at-least-for).
    s.apply(4, { type: 'unlock', name: 'n', token: 1, untilMs: T0 + 500 });
    expect(lock(5, 'b', T0 + 400, T0 + 2000)).toEqual({ ok: false, reason: 'locked' });
    expect(lock(6, 'b', T0 + 500, T0 + 2000)).toMatchObject({ ok: true, lock: { holder: 'b', token: 6 } });
    // Its holder died: it expires at untilMs all the same.
    expect(lock(7, 'c', T0 + 2000, T0 + 3000)).toMatchObject({ ok: true, lock: { token: 7 } });
  });

  it('tell a name refused for want of room (every lock kept held) apart from one another member holds', () => {
    const s = new SchedulerState({ maxLocks: 2 });
    s.apply(1, { type: 'lock', name: 'x', member: 'a', atMs: T0, untilMs: T0 + 1000 });
    s.apply(2, { type: 'lock', name: 'y', member: 'a', atMs: T0, untilMs: T0 + 1000 });
    expect(s.apply(3, { type: 'lock', name: 'x', member: 'b', atMs: T0 + 10, untilMs: T0 + 1000 })).toEqual({ ok: false, reason: 'locked' });
    expect(s.apply(4, { type: 'lock', name: 'z', member: 'b', atMs: T0 + 10, untilMs: T0 + 1000 })).toEqual({ ok: false, reason: 'too-many-locks' });
    // Once one expired, it makes room.
    expect(s.apply(5, { type: 'lock', name: 'z', member: 'b', atMs: T0 + 1000, untilMs: T0 + 2000 })).toMatchObject({ ok: true });
  });
});
