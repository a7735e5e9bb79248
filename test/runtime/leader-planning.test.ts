import { describe, expect, it } from 'vitest';
import { LeaderPlanning } from '../../src/runtime/scheduler/leader-planning.js';
import { RuntimeContext, type SchedulerRuntimeOptions } from '../../src/runtime/scheduler/runtime-context.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import type { TimerHandle } from '../../src/time/clock.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const SLOT = T0 + 1000;
const POLICY = { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } } as const;

/**
 * The leader's planning on `a`, over a state it applies as SchedulerRuntime.apply does (the
 * state, then the planning told), with `c` out of the configuration: job `one` (mode 'one',
 * handled by a, b and c) has its slot at SLOT claimed for c, and c's run of it started. What
 * each plan proposes is kept; nothing proposed is applied unless the test applies it. `token`
 * is the claim's.
 */
/**
 * The leader `a`'s context, with `c` out of the configuration (a and b in it), on the clock
 * `now`: what it proposes goes to `propose` (unanswered), and no plan moves a claim, so that
 * only the departures are looked at. `proposeBatch`: the member's, when the test gives one.
 */
function departuresContext(now: { ms: number }, propose: (command: SchedulerCommand) => void, proposeBatch?: SchedulerRuntimeOptions['proposeBatch']): RuntimeContext {
  return new RuntimeContext({
    self: 'a',
    clock: { now: () => now.ms },
    // Nothing here waits on a timer: the plans are called by the test.
    timers: { now: () => now.ms, setTimeout: () => ({}) as TimerHandle, clearTimeout: () => undefined },
    propose: (command) => {
      propose(command);
      return new Promise(() => undefined);
    },
    ...(proposeBatch === undefined ? {} : { proposeBatch }),
    barrier: () => Promise.resolve(),
    isLeader: () => true,
    holdsLease: () => true,
    configuredMembers: () => ['a', 'b'],
    eligibleMembers: () => ['a', 'b'],
    planIntervalMs: 100,
    lookaheadMs: 0,
    maxClaimsPerPlan: 64,
    reassignHorizonMs: 600_000,
    reassignGraceMs: Number.POSITIVE_INFINITY,
  });
}

function leaderWithDepartedAssignee(): { apply: (command: SchedulerCommand) => void; plan: () => SchedulerCommand[]; token: number } {
  const now = { ms: T0 + 2000 };
  let proposed: SchedulerCommand[] = [];
  const ctx = departuresContext(now, (command) => proposed.push(command));
  const planning = new LeaderPlanning(ctx, () => 0);
  let index = 0;
  const apply = (command: SchedulerCommand): void => {
    const result = ctx.state.apply(++index, command);
    planning.applied(command, result);
  };
  for (const member of ['a', 'b', 'c']) apply({ type: 'register', job: 'one', spec: parseSpec({ every: '1h' }), mode: 'one', policy: POLICY, member, atMs: T0 });
  apply({ type: 'claim', job: 'one', slotMs: SLOT, assignees: ['c'] });
  const token = index;
  apply({ type: 'started', job: 'one', slotMs: SLOT, token, member: 'c', atMs: SLOT });
  const plan = (): SchedulerCommand[] => {
    proposed = [];
    now.ms += 100;
    planning.planIfLeading();
    return proposed;
  };
  return { apply, plan, token };
}

describe("the leader's planning", () => {
  // Simulator seed 2805 (5 members, 60 s, fan-out on) with the commit notice: the leader's pass
  // over the departures found nothing, then a later slot's run replaced the removed member's
  // run; nothing planned a forfeit for it, and every member's history() showed the slot with
  // no outcome for good.
  for (const cancel of ['cancel', 'cancel-runs'] as const) {
    it(`settles a departed member's run that ${cancel === 'cancel' ? 'a later slot replaced' : 'an operator cancelled'} after a plan found nothing left of it to settle`, () => {
      const { apply, plan, token } = leaderWithDepartedAssignee();
      // The first plan unregisters c; once that applied, nothing of c's is left to settle (its
      // mode 'one' claim is planReassignments' to move).
      expect(plan()).toEqual([{ type: 'unregister', job: 'one', member: 'c' }]);
      apply({ type: 'unregister', job: 'one', member: 'c' });
      expect(plan()).toEqual([]);
      apply(cancel === 'cancel' ? { type: 'cancel', job: 'one', slotMs: SLOT, token, bySlotMs: SLOT + 3_600_000, atMs: T0 + 2250 } : { type: 'cancel-runs', job: 'one', slotMs: SLOT, member: 'b', atMs: T0 + 2250 });
      // The slot never moves now: a forfeit is the only way its share gets an outcome.
      expect(plan()).toEqual([{ type: 'forfeit', job: 'one', slotMs: SLOT, token, member: 'c', atMs: T0 + 2300 }]);
    });
  }

  it("unregisters a departed member's jobs in batches of its own, as it would unregister them itself, and one by one where the cluster reads no batches", () => {
    for (const batches of [true, false]) {
      const now = { ms: T0 + 2000 };
      const proposed: SchedulerCommand[] = [];
      const batched: SchedulerCommand[][] = [];
      // Null below the cluster version that reads batches (member.ts).
      const ctx = departuresContext(now, (command) => proposed.push(command), (commands) => (batches ? (batched.push([...commands]), new Promise(() => undefined)) : null));
      const planning = new LeaderPlanning(ctx, () => 0);
      let index = 0;
      for (let i = 0; i < 40; i++) for (const member of ['a', 'c']) ctx.state.apply(++index, { type: 'register', job: `j${i}`, spec: parseSpec({ every: '1h' }), mode: 'one', policy: POLICY, member, atMs: T0 });
      const unregisters = Array.from({ length: 40 }, (_, i) => ({ type: 'unregister', job: `j${i}`, member: 'c' }));
      planning.planIfLeading();
      if (batches) {
        expect(batched).toEqual([unregisters]);
        expect(proposed).toEqual([]);
      } else {
        expect(proposed).toEqual(unregisters);
      }
      // Waiting for their answers, they are not proposed again by the next plan.
      now.ms += 100;
      planning.planIfLeading();
      expect(batched.length).toBe(batches ? 1 : 0);
      expect(proposed.length).toBe(batches ? 0 : 40);
    }
  });
});
