import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeCommand, encodeCommand } from '../../src/runtime/commands.js';
import { decodeSchedulerSnapshot, encodeSchedulerSnapshot, restoreSchedulerSnapshot, schedulerSnapshotSteps } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import { claimKey, type ApplyResult, type ClaimRecord } from '../../src/scheduler/records.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { applyIntents, indexes, intent, intents, POLICIES, resolve, ROOMY, SMALL, SPECS, T0, type Limits } from '../fixtures/scheduler-intents.js';

describe('scheduler state snapshots', () => {
  it('a restored state applies any later commands exactly as the original does', () => {
    fc.assert(
      fc.property(
        fc.constantFrom(SMALL, ROOMY),
        intents(50),
        fc.array(intent, { maxLength: 50, size: 'max' }),
        intents(15),
        (limits, prefix, suffix, other) => {
          const a = new SchedulerState(limits);
          applyIntents(a, prefix, 1);
          const bytes = encodeSchedulerSnapshot(a);
          const b = new SchedulerState(limits);
          restoreSchedulerSnapshot(b, bytes);
          // A member with a state of its own (a restart, an older snapshot): all of it is replaced.
          const c = new SchedulerState(limits);
          applyIntents(c, other, 1);
          restoreSchedulerSnapshot(c, bytes);
          for (const s of [b, c]) {
            expect(encodeSchedulerSnapshot(s)).toEqual(bytes);
            expect(indexes(s)).toEqual(indexes(a));
          }
          const first = prefix.length + 1;
          suffix.forEach((i, k) => {
            const command = resolve(i, first + k, a);
            const expected: ApplyResult = a.apply(first + k, command);
            expect(b.apply(first + k, command)).toEqual(expected);
            expect(c.apply(first + k, command)).toEqual(expected);
          });
          const end = encodeSchedulerSnapshot(a);
          expect(encodeSchedulerSnapshot(b)).toEqual(end);
          expect(encodeSchedulerSnapshot(c)).toEqual(end);
          expect(indexes(b)).toEqual(indexes(a));
          expect(indexes(c)).toEqual(indexes(a));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('every command these sequences make passes the log decoder, unchanged (its checks refuse nothing a member writes)', () => {
    fc.assert(
      fc.property(intents(60), (xs) => {
        for (const command of applyIntents(new SchedulerState(), xs, 1)) {
          expect(decodeCommand(encodeCommand({ kind: 'scheduler', command }))).toEqual({ kind: 'scheduler', command });
        }
      }),
      { numRuns: 100 },
    );
  });

  it('taken in steps of any size, is the same bytes as taken at once, and valid JSON', () => {
    fc.assert(
      fc.property(intents(60), fc.integer({ min: 1, max: 7 }), (run, perStep) => {
        const state = new SchedulerState(ROOMY);
        applyIntents(state, run, 1);
        const whole = encodeSchedulerSnapshot(state);
        const steps = schedulerSnapshotSteps(state, perStep);
        let yielded = 0;
        let step = steps.next();
        for (; step.done !== true; step = steps.next()) yielded++;
        expect(Buffer.concat(step.value)).toEqual(Buffer.from(whole));
        // One step per run of perStep jobs, claims, locks, open claims or jobs looked up for
        // claims in progress that is full: no step does more.
        const full = (n: number): number => Math.floor(n / perStep);
        expect(yielded).toBe(full(state.jobs.size) + full(state.claims.size) + full(state.locks.size) + full(state.openClaims().size) + full(state.jobs.size));
        const text = new TextDecoder().decode(whole);
        expect(JSON.stringify(JSON.parse(text))).toBe(text);
      }),
      { numRuns: 200 },
    );
  });

  it('has the layout of version 1, taken at once or a record a step (the text the encoder of version 1 gave before it had steps)', () => {
    const s = new SchedulerState();
    s.apply(1, { type: 'register', job: 'sync', spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy: { retries: 1, retryDelayMs: 500, catchUp: { policy: 'latest' } }, member: 'a', atMs: T0 });
    s.apply(2, { type: 'register', job: 'report', spec: { kind: 'cron', expression: '0 * * * * *', tz: 'UTC' }, mode: 'all', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'none' } }, member: 'b', atMs: T0 });
    s.apply(3, { type: 'claim', job: 'sync', slotMs: T0 + 1000, assignees: ['a'], fromMs: T0 });
    s.apply(4, { type: 'started', job: 'sync', slotMs: T0 + 1000, token: 3, member: 'a', atMs: T0 + 1001 });
    s.apply(5, { type: 'outcome', job: 'sync', slotMs: T0 + 1000, token: 3, member: 'a', outcome: 'failed', atMs: T0 + 1010, error: 'boom' });
    s.apply(6, { type: 'claim', job: 'sync', slotMs: T0 + 2000, assignees: ['b'], fromMs: T0 + 1000 });
    s.apply(7, { type: 'started', job: 'sync', slotMs: T0 + 2000, token: 6, member: 'b', atMs: T0 + 2002 });
    const expected =
      '[1,[["sync",["every",1000],"one",[1,500,["latest"],"skip"],1767225600000,["a"],[],1767225602000,0,0],' +
      '["report",["cron","0 * * * * *","UTC"],"all",[0,1000,["none"],"skip"],1767225600000,["b"],[],1767225600000,0,0]],' +
      '[["sync",1767225601000,3,["a"],1,[["a","failed",1767225601010,3,"boom"]],[["a",1767225601001,3]],null],' +
      '["sync",1767225602000,6,["b"],1,[],[["b",1767225602002,6]],null]],' +
      '[],[["a",1],["b",1]],[0,1],[1]]';
    expect(new TextDecoder().decode(encodeSchedulerSnapshot(s))).toBe(expected);
    const steps = schedulerSnapshotSteps(s, 1);
    let step = steps.next();
    while (step.done !== true) step = steps.next();
    expect(new TextDecoder().decode(Buffer.concat(step.value))).toBe(expected);
  });

  it('is deterministic: the same commands give the same bytes on every member, and again', () => {
    fc.assert(
      fc.property(intents(60), (run) => {
        const one = new SchedulerState(SMALL);
        const commands = applyIntents(one, run, 1);
        const other = new SchedulerState(SMALL);
        commands.forEach((command, k) => other.apply(k + 1, command));
        expect(encodeSchedulerSnapshot(one)).toEqual(encodeSchedulerSnapshot(other));
        expect(encodeSchedulerSnapshot(one)).toEqual(encodeSchedulerSnapshot(one));
      }),
      { numRuns: 100 },
    );
  });

  it('round-trips every field, optional ones as present or absent', () => {
    const s = new SchedulerState();
    let index = 0;
    const apply = (command: SchedulerCommand): ApplyResult => s.apply(++index, command);
    SPECS.forEach((spec, k) => {
      const job = `job-${k}`;
      apply({ type: 'register', job, spec, mode: k % 2 === 0 ? 'one' : 'all', policy: POLICIES[k % POLICIES.length]!, member: 'a', atMs: T0 });
      apply({ type: 'register', job, spec, mode: k % 2 === 0 ? 'one' : 'all', policy: POLICIES[k % POLICIES.length]!, member: 'b', atMs: T0 + 1 });
    });
    // A conflicting registration, a claim with each kind of record, a skip, locks.
    apply({ type: 'register', job: 'job-0', spec: { kind: 'every', everyMs: 7000 }, mode: 'one', policy: POLICIES[0]!, member: 'c', atMs: T0 });
    apply({ type: 'claim', job: 'job-0', slotMs: T0 + 1000, assignees: ['a', 'b'], fromMs: T0 });
    const token = index;
    apply({ type: 'started', job: 'job-0', slotMs: T0 + 1000, token, member: 'a', atMs: T0 + 1001 });
    apply({ type: 'outcome', job: 'job-0', slotMs: T0 + 1000, token, member: 'a', outcome: 'failed', atMs: T0 + 1002, error: 'boom' });
    apply({ type: 'outcome', job: 'job-0', slotMs: T0 + 1000, token, member: 'b', outcome: 'succeeded', atMs: T0 + 1003 });
    apply({ type: 'claim', job: 'job-1', slotMs: T0 + 2000, assignees: ['b'] });
    apply({ type: 'cancel', job: 'job-1', slotMs: T0 + 2000, token: index, bySlotMs: T0 + 3000, atMs: T0 + 2500 });
    apply({ type: 'claim', job: 'job-2', slotMs: T0 + 2000, assignees: ['c'] });
    apply({ type: 'reassign', job: 'job-2', slotMs: T0 + 2000, fromToken: index, assignees: ['a'], reason: 'assignee-lost' });
    apply({ type: 'skip', job: 'job-3', throughMs: T0 + 9000, fromMs: T0, count: 3 });
    apply({ type: 'lock', name: 'x', member: 'a', atMs: T0, untilMs: T0 + 500 });
    apply({ type: 'lock', name: 'y', member: 'b', atMs: T0, untilMs: T0 + 900 });
    apply({ type: 'unlock', name: 'y', token: index, untilMs: T0 + 600 });

    const restored = new SchedulerState();
    restoreSchedulerSnapshot(restored, encodeSchedulerSnapshot(s));
    // Strict: an optional field restored as `undefined` rather than absent would fail.
    expect(restored.jobs).toStrictEqual(s.jobs);
    expect(restored.claims).toStrictEqual(s.claims);
    expect(restored.locks).toStrictEqual(s.locks);
    expect(restored.assigned).toStrictEqual(s.assigned);
    expect([...restored.jobs.get('job-0')!.conflicts]).toEqual([['c', expect.stringContaining('every 7000')]]);
    expect(restored.claims.get(claimKey('job-0', T0 + 1000))!.outcomes.get('a')).toStrictEqual({ outcome: 'failed', atMs: T0 + 1002, token, error: 'boom' });
    expect('error' in restored.claims.get(claimKey('job-0', T0 + 1000))!.outcomes.get('b')!).toBe(false);
    expect('dst' in restored.jobs.get('job-0')!.spec).toBe(false);
    expect(restored.jobs.get('job-2')!.spec).toStrictEqual(SPECS[2]);
    // Fresh records: the restored state shares nothing with the one it was taken from.
    expect(restored.claims.get(claimKey('job-0', T0 + 1000))).not.toBe(s.claims.get(claimKey('job-0', T0 + 1000)));
    expect(indexes(restored)).toEqual(indexes(s));
  });

  it('keeps the order of the derived indexes where applying the log left it out of claim order', () => {
    const s = new SchedulerState();
    const register = (job: string): SchedulerCommand => ({ type: 'register', job, spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy: POLICIES[0]!, member: 'a', atMs: T0 });
    s.apply(1, register('report'));
    s.apply(2, { type: 'claim', job: 'report', slotMs: T0 + 1000, assignees: ['a'] });
    s.apply(3, { type: 'claim', job: 'report', slotMs: T0 + 2000, assignees: ['a'] });
    s.apply(4, { type: 'started', job: 'report', slotMs: T0 + 1000, token: 2, member: 'a', atMs: T0 + 1000 });
    s.apply(5, { type: 'started', job: 'report', slotMs: T0 + 2000, token: 3, member: 'a', atMs: T0 + 2000 });
    // The first slot's run is moved and starts again: it goes to the end of the run index.
    s.apply(6, { type: 'reassign', job: 'report', slotMs: T0 + 1000, fromToken: 2, assignees: ['b'], reason: 'assignee-lost' });
    s.apply(7, { type: 'started', job: 'report', slotMs: T0 + 1000, token: 6, member: 'b', atMs: T0 + 2100 });
    // A third slot succeeds, then a move planned before that success is applied: the state
    // machine refuses it now, but applied it before, and the claim reopened, last in the open
    // index. A state written then, restored, keeps that order.
    s.apply(8, { type: 'claim', job: 'report', slotMs: T0 + 3000, assignees: ['a'] });
    s.apply(9, { type: 'outcome', job: 'report', slotMs: T0 + 3000, token: 8, member: 'a', outcome: 'succeeded', atMs: T0 + 3001 });
    s.apply(10, { type: 'claim', job: 'report', slotMs: T0 + 4000, assignees: ['a'] });
    expect(s.apply(11, { type: 'reassign', job: 'report', slotMs: T0 + 3000, fromToken: 8, assignees: ['c'], reason: 'assignee-lost' })).toEqual({ ok: false, reason: 'ended' });
    const reopened = s.claims.get(claimKey('report', T0 + 3000))!;
    Object.assign(reopened, { token: 11, assignees: ['c'], attempt: 2 });
    const claimAt = (ms: number): ClaimRecord => s.claims.get(claimKey('report', T0 + ms))!;
    s.restoreFrom({
      jobs: [...s.jobs.values()],
      claims: [...s.claims.values()],
      locks: [],
      assigned: [...s.assigned],
      indexOrder: { open: [claimAt(1000), claimAt(2000), claimAt(4000), claimAt(3000)], inProgress: [claimAt(2000), claimAt(1000)] },
    });
    const order = indexes(s);
    expect(order.inProgress.report).toEqual([claimKey('report', T0 + 2000), claimKey('report', T0 + 1000)]);
    expect(order.open).toEqual([T0 + 1000, T0 + 2000, T0 + 4000, T0 + 3000].map((t) => claimKey('report', t)));
    const restored = new SchedulerState();
    restoreSchedulerSnapshot(restored, encodeSchedulerSnapshot(s));
    expect(indexes(restored)).toEqual(order);
  });

  it('restores a state at its bounds, which then forgets claims and locks and refuses jobs alike', () => {
    const limits: Limits = { maxClaimsKept: 3, maxJobs: 2, maxLocks: 2 };
    const full = new SchedulerState(limits);
    let index = 0;
    const both = (states: SchedulerState[], command: SchedulerCommand): ApplyResult[] => {
      index += 1;
      return states.map((st) => st.apply(index, command));
    };
    const register = (job: string): SchedulerCommand => ({ type: 'register', job, spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy: POLICIES[0]!, member: 'a', atMs: T0 });
    both([full], register('report'));
    both([full], register('sync'));
    both([full], { type: 'claim', job: 'report', slotMs: T0 + 1000, assignees: ['a'] });
    both([full], { type: 'started', job: 'report', slotMs: T0 + 1000, token: index, member: 'a', atMs: T0 + 1000 });
    both([full], { type: 'claim', job: 'sync', slotMs: T0 + 1000, assignees: ['b'] });
    both([full], { type: 'outcome', job: 'sync', slotMs: T0 + 1000, token: index, member: 'b', outcome: 'succeeded', atMs: T0 + 1001 });
    both([full], { type: 'claim', job: 'sync', slotMs: T0 + 2000, assignees: ['b'] });
    both([full], { type: 'lock', name: 'x', member: 'a', atMs: T0, untilMs: T0 + 100 });
    both([full], { type: 'lock', name: 'y', member: 'a', atMs: T0, untilMs: T0 + 5000 });
    expect([full.jobs.size, full.claims.size, full.locks.size]).toEqual([2, 3, 2]);

    const restored = new SchedulerState(limits);
    restoreSchedulerSnapshot(restored, encodeSchedulerSnapshot(full));
    const states = [full, restored];
    // A third job is refused; a new claim forgets the oldest finished one (sync's first, not
    // report's run in progress); a new lock forgets the expired one.
    expect(both(states, register('mail'))).toEqual([{ ok: false, reason: 'too-many-jobs' }, { ok: false, reason: 'too-many-jobs' }]);
    const [claimed, claimedToo] = both(states, { type: 'claim', job: 'report', slotMs: T0 + 2000, assignees: ['a'] });
    expect(claimedToo).toEqual(claimed);
    expect([...restored.claims.keys()]).toEqual([claimKey('report', T0 + 1000), claimKey('sync', T0 + 2000), claimKey('report', T0 + 2000)]);
    const [locked, lockedToo] = both(states, { type: 'lock', name: 'z', member: 'b', atMs: T0 + 200, untilMs: T0 + 300 });
    expect(lockedToo).toEqual(locked);
    expect([...restored.locks.keys()]).toEqual(['y', 'z']);
    both(states, { type: 'claim', job: 'sync', slotMs: T0 + 3000, assignees: ['b'] });
    expect(encodeSchedulerSnapshot(restored)).toEqual(encodeSchedulerSnapshot(full));
    expect(indexes(restored)).toEqual(indexes(full));
  });

  it('decodes into fresh parts that a state with the same limits can take', () => {
    const s = new SchedulerState(SMALL);
    applyIntents(s, fc.sample(intents(30), { numRuns: 1, seed: 7 })[0]!, 1);
    const parts = decodeSchedulerSnapshot(encodeSchedulerSnapshot(s), SMALL);
    expect(parts.claims.length).toBe(s.claims.size);
    expect(parts.jobs.map((j) => j.name)).toEqual([...s.jobs.keys()]);
  });
});
