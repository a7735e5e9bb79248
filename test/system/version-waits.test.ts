import { expect, it } from 'vitest';
import { FANOUT_VERSION, OPERATIONS_VERSION } from '../../src/version/versions.js';
import { stoppedAfterEach, threeMembers } from '../fixtures/loopback-members.js';

const started = stoppedAfterEach();

it('a new cluster of three over loopback: an emit and a pause made before it runs version 3 wait for it and go through, rather than being refused', async () => {
  // Longer than a new cluster takes to raise its version on a loaded machine: the calls wait up to it.
  const members = await threeMembers(started, { requestTimeoutMs: 20_000 });
  const consumed: Array<{ member: string; item: unknown }> = [];
  for (const m of members) {
    m.schedule('hourly', { every: '1h' }, () => undefined);
    m.consume('t', (item) => void consumed.push({ member: m.id, item }));
  }
  await Promise.all(members.map((m) => m.start()));
  await Promise.all(members.map((m) => m.waitForLeader({ timeoutMs: 20_000 })));
  // The version rises a step at a time, each after two of the keeper's looks half a second
  // apart: a leader is known well before.
  expect(members[0]!.state().version.active).toBeLessThan(FANOUT_VERSION);
  expect(members[1]!.state().version.active).toBeLessThan(OPERATIONS_VERSION);
  const calls = Promise.all([members[0]!.emitItems('t', ['a', 'b', 'c']), members[1]!.pause('hourly')]);
  // The emit and the member's consumer registration wait there, counted against the named
  // bound (state().bounds, /metrics).
  const waiting = (): number | undefined => members[0]!.state().bounds.find((b) => b.name === 'calls waiting for a cluster version')?.value;
  await expect.poll(waiting, { timeout: 1000, interval: 5 }).toBe(2);
  const [batch, paused] = await calls;
  expect(waiting()).toBe(0);
  expect(members[0]!.state().version.active).toBeGreaterThanOrEqual(FANOUT_VERSION);
  expect(paused).toEqual({ job: 'hourly', paused: true });
  await expect(batch.settled()).resolves.toMatchObject({ done: 3 });
  expect(consumed.map((c) => c.item).sort()).toEqual(['a', 'b', 'c']);
  await expect.poll(() => members[2]!.state().jobs.find((j) => j.name === 'hourly')?.paused, { timeout: 5000, interval: 20 }).toBe(true);
});
