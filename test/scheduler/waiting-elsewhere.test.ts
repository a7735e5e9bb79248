import { describe, expect, it } from 'vitest';
import type { Armed } from '../../src/runtime/scheduler/armed-claim.js';
import { RunAdmission } from '../../src/runtime/scheduler/run-admission.js';
import type { RunPermits } from '../../src/runtime/scheduler/run-permits.js';
import type { RuntimeContext } from '../../src/runtime/scheduler/runtime-context.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { claimKey } from '../../src/scheduler/records.js';
import { parseSpec } from '../../src/scheduler/spec.js';
import { SchedulerState } from '../../src/scheduler/state.js';

const T0 = Date.parse('2026-01-01T00:00:00Z');
const at = (s: number): number => T0 + s * 1000;

/** Members a, b and c handle job 'sync' (every second, mode 'one', overlap 'skip'); `self` admits its slots at the cluster's time `now()`. */
interface Setup {
  readonly apply: (c: SchedulerCommand) => number;
  readonly claim: (slotS: number, member: string) => number;
  readonly elsewhere: (slotS: number, nowS: number) => number[];
}

function setup(self: string, connected: (id: string) => boolean = () => true): Setup {
  const state = new SchedulerState();
  let index = 0;
  const apply = (c: SchedulerCommand): number => {
    state.apply(++index, c);
    return index;
  };
  for (const member of ['a', 'b', 'c']) apply({ type: 'register', job: 'sync', spec: parseSpec({ every: '1s' }), mode: 'one', policy: { retries: 0, retryDelayMs: 100, catchUp: { policy: 'latest' }, overlap: 'skip' }, member, atMs: T0 });
  let nowMs = T0;
  const ctx = { options: { self, clock: { now: () => nowMs }, peerConnected: connected }, state } as unknown as RuntimeContext;
  const admission = new RunAdmission(ctx, {} as RunPermits<Armed>);
  const claim = (slotS: number, member: string): number => apply({ type: 'claim', job: 'sync', slotMs: at(slotS), assignees: [member] });
  /** What `self` finds waiting elsewhere for its slot at `slotS`, the cluster's time at `nowS`. */
  const elsewhere = (slotS: number, nowS: number): number[] => {
    nowMs = at(nowS);
    const token = state.claims.get(claimKey('sync', at(slotS)))?.token ?? 0;
    return admission.waitingElsewhere({ job: 'sync', slotMs: at(slotS), token, mode: 'one' } as Armed).map((ms) => (ms - T0) / 1000);
  };
  return { apply, claim, elsewhere };
}

describe("a slot that would wait behind late runs, under overlap 'skip': what waits elsewhere", () => {
  it('counts an earlier slot of another member not started nor reported, and not one started, reported, its own, or of a member it is not connected to', () => {
    const { apply, claim, elsewhere } = setup('a', (id) => id !== 'c');
    claim(1, 'b');
    const started = claim(2, 'b');
    claim(3, 'c');
    const reported = claim(4, 'b');
    claim(5, 'a');
    claim(6, 'a');
    apply({ type: 'started', job: 'sync', slotMs: at(2), token: started, member: 'b', atMs: at(2) });
    apply({ type: 'outcome', job: 'sync', slotMs: at(4), token: reported, member: 'b', outcome: 'skipped', atMs: at(4) });
    expect(elsewhere(6, 6)).toEqual([1]);
  });

  it("counts, for a slot firing late, the later slots that came before it fired: a slot moved here late sees the one that fired before the move waiting (seed 3053), and an on-time slot none", () => {
    const { apply, claim, elsewhere } = setup('a');
    // Slot 1 was b's, interrupted, and moves to a at 3.4 s; b's slot 3 fired at 3 s and waits there.
    const first = claim(1, 'b');
    claim(3, 'b');
    claim(4, 'c');
    apply({ type: 'reassign', job: 'sync', slotMs: at(1), fromToken: first, assignees: ['a'], reason: 'assignee-lost', atMs: at(3.4) });
    expect(elsewhere(1, 3.4)).toEqual([3]);
    // Slot 4 has not come: it will see slot 1 waiting here, and skip.
    expect(elsewhere(1, 3.4)).not.toContain(4);
    // On time, a slot finds no later slot come.
    const { claim: claimOnTime, elsewhere: onTime } = setup('a');
    claimOnTime(3, 'a');
    claimOnTime(4, 'b');
    expect(onTime(3, 3)).toEqual([]);
  });
});
