/**
 * The `slots-dropped` event: slots a job's catch-up policy drops are never claimed, so
 * `history()` cannot list them; every member tells which it dropped as it applies the drop (a
 * stranger found only a counter in `state()` for them).
 */
import { describe, expect, it } from 'vitest';
import type { ClusterEvents } from '../../src/index.js';
import { AT_CATCH_UP_VERSION } from '../../src/version/versions.js';
import { stoppedAfterEach, threeMembers } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

describe('slots-dropped', () => {
  it('every member tells the slots a catch-up policy dropped, which no member runs, and counts them', async () => {
    const members = await threeMembers(started);
    const told = new Map<string, Array<ClusterEvents['slots-dropped'][0]>>();
    for (const m of members) {
      told.set(m.id, []);
      m.on('slots-dropped', (e) => told.get(m.id)?.push(e));
    }
    await Promise.all(members.map((m) => m.start()));
    await expect.poll(() => members.every((m) => m.state().version.active >= AT_CATCH_UP_VERSION), { timeout: 15_000, interval: 50 }).toBe(true);
    // A one-shot an hour ago, registered with catch-up 'none': its slot is dropped, not run.
    const atMs = Date.now() - 3_600_000;
    let runs = 0;
    for (const m of members) m.schedule('launch', { at: new Date(atMs) }, () => void runs++, { catchUp: 'none' });
    await expect.poll(() => members.every((m) => (told.get(m.id) ?? []).length === 1), { timeout: 15_000, interval: 20 }).toBe(true);
    const events = members.map((m) => told.get(m.id)?.[0]);
    for (const e of events) expect(e).toEqual({ job: 'launch', count: 1, after: new Date(atMs - 1), through: new Date(atMs), index: events[0]?.index });
    for (const m of members) expect(m.state().jobs.find((j) => j.name === 'launch')?.missedSlots).toBe(1);
    expect(members[0]?.history({ job: 'launch' })).toEqual([]);
    expect(runs).toBe(0);
  });
});
