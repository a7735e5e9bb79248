import { describe, expect, it } from 'vitest';
import { slowItemCauses, slowItemsText } from '../../bench/slow-items.js';

describe('bench/slow-items.ts: what held each item over the target', () => {
  // Member 0 leads, member 1 emits, member 2 does neither.
  const members = [
    { stalls: [{ at: 100, ms: 30 }], gc: [{ at: 105, ms: 10, kind: 4 }] },
    { stalls: [{ at: 200, ms: 15 }], gc: [] },
    { stalls: [{ at: 300, ms: 4 }], gc: [] },
  ];
  const roles = { leader: 0, emitter: 1 };

  it('counts an item under the roles of the member whose stalls overlap it most, when they alone made it late', () => {
    const items = [
      { member: 2, emittedAt: 0, ms: 5 }, // within the target
      { member: 2, emittedAt: 100, ms: 35 }, // the leader stood still 30 of 35 ms: late by 15
      { member: 1, emittedAt: 200, ms: 25 }, // the emitter, which started it too, 15 of 25: late by 5
      { member: 2, emittedAt: 300, ms: 30 }, // its consumer stood still 4 ms of the 10 it is late by
    ];
    const s = slowItemCauses(items, members, roles, 20);
    expect(s.over).toBe(3);
    expect(new Map(s.heldBy)).toEqual(
      new Map([
        ['leader', 1],
        ['emitter+consumer', 1],
        ['none', 1],
      ]),
    );
    expect(s.withGc).toBe(1);
    // No stall says how long its member waited for a CPU: nothing is put down to it.
    expect(s.waited).toBeNull();
    expect(slowItemsText(s)).toMatch(/^3 of 4 \(75\.00%\); held by the stalls of: .*\(a GC pause among them in 1\)$/);
  });

  it("puts an item down to its member's wait for a CPU when that wait alone made it late", () => {
    // The leader stood still 30 ms, 20 of them waiting for a CPU; the emitter 15, of which 2.
    const waiting = [
      { stalls: [{ at: 100, ms: 30, waitMs: 20 }], gc: [] },
      { stalls: [{ at: 200, ms: 15, waitMs: 2 }], gc: [] },
      { stalls: [], gc: [] },
    ];
    const items = [
      { member: 2, emittedAt: 100, ms: 35 }, // late by 15: the leader's 20 ms of waiting alone
      { member: 1, emittedAt: 200, ms: 25 }, // late by 5: the emitter waited only 2
    ];
    const s = slowItemCauses(items, waiting, roles, 20);
    expect(s.over).toBe(2);
    expect(s.waited).toBe(1);
    expect(slowItemsText(s)).toMatch(/, its wait for a CPU alone in 1\)$/);
  });

  it('says none when no item is over the target', () => {
    expect(slowItemsText(slowItemCauses([{ member: 0, emittedAt: 0, ms: 20 }], members, roles, 20))).toBe('none');
  });
});
