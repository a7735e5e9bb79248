import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, stopClusters, T0, track } from '../fixtures/scheduler-cluster.js';

afterEach(stopClusters);

/**
 * A 'queue' job whose runs outlast its period builds a backlog on the member its slots stick to
 * (planner.ts). Once a slot goes to another member (the first was not eligible for a moment: a
 * lease renewed late, a stop, a restart), the first still runs its backlog: the slots of the
 * second must wait for it, not run beside it. (A stranger saw two runs at once, in step, for
 * minutes: each member started its next run as the other's ended.)
 */
describe("a 'queue' job whose slots moved to another member while the first still had a backlog", () => {
  it('runs one slot at a time, in slot order, across the two members', async () => {
    let bAway = false;
    const c = track(new Cluster(['a', 'b', 'c'], 5, { eligibleMembers: () => (bAway ? ['a', 'c'] : ['a', 'b', 'c']), holdingMembers: () => ['a', 'b', 'c'] }));
    // b and c handle the job; its runs take 3 s, a slot every 2 s.
    c.schedule(['b', 'c'], 'import', { every: '2s' }, 3000, { overlap: 'queue' });
    await c.time.advanceTo(T0 + 9_000);
    const first = c.runs[0]!.member;
    expect(c.runs.every((r) => r.member === first)).toBe(true);
    // The member with the backlog may take no new work for a second (it still holds its claims):
    // the next slot goes elsewhere.
    if (first === 'b') bAway = true;
    else throw new Error(`the slots stuck to ${first}, not b`);
    await c.time.advanceTo(T0 + 10_500);
    bAway = false;
    await c.time.advanceTo(T0 + 40_000);
    expect(c.runs.some((r) => r.member === 'c')).toBe(true);
    expect(c.maxOverlap('import')).toBe(1);
    // One after another, oldest slot first.
    const bySlot = [...c.runs].sort((x, y) => x.slotMs - y.slotMs);
    expect(c.runs.map((r) => r.slotMs)).toEqual(bySlot.map((r) => r.slotMs));
  });
});
