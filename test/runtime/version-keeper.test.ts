import { describe, expect, it } from 'vitest';
import { decodeEntry } from '../../src/runtime/commands.js';
import type { RaftDriver } from '../../src/runtime/driver.js';
import { VERSION_CHECK_MS, VERSION_REANNOUNCE_MS, VersionKeeper } from '../../src/runtime/version-keeper.js';
import { ClusterVersionState } from '../../src/version/cluster-version.js';
import { SUPPORTED } from '../../src/version/versions.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

/** A follower's keeper over `versions`, whose proposals apply at once; the announcements it made, counted. */
function follower(versions: ClusterVersionState): { timers: ManualTimers; announced: () => number } {
  const timers = new ManualTimers();
  let announced = 0;
  let index = 0;
  const driver = {
    node: { leader: 'b', role: 'follower' },
    propose: async (data: Uint8Array) => {
      const entry = decodeEntry(data, versions.active, versions.support);
      if (entry.kind === 'cluster') {
        if (entry.command.type === 'announce') announced++;
        versions.apply(entry.command, ++index);
      }
      return { index, result: undefined };
    },
  } as unknown as RaftDriver;
  new VersionKeeper({ self: 'a', members: () => ['a', 'b', 'c'], versions, driver, timers, live: () => true }).start();
  return { timers, announced: () => announced };
}

describe('the version keeper', () => {
  it('announces again every VERSION_REANNOUNCE_MS while the version is below what it reads, though its state shows it announced: a leader that restored a snapshot of format 1 (0.1.0’s) forgot it, and waited for it for good', async () => {
    const versions = new ClusterVersionState(SUPPORTED, () => true);
    const { timers, announced } = follower(versions);
    timers.advance(VERSION_CHECK_MS);
    await Promise.resolve();
    expect(announced()).toBe(1);
    timers.advance(VERSION_REANNOUNCE_MS - VERSION_CHECK_MS);
    await Promise.resolve();
    expect(announced()).toBe(1);
    timers.advance(VERSION_CHECK_MS);
    await Promise.resolve();
    expect(announced()).toBe(2);
  });

  it('announces once, and not again, at the version it reads', async () => {
    const versions = new ClusterVersionState(SUPPORTED, () => true);
    for (let v = 1; v < SUPPORTED.stateMachine.max; v++) versions.apply({ type: 'activate', from: v, to: v + 1 }, v);
    const { timers, announced } = follower(versions);
    timers.advance(3 * VERSION_REANNOUNCE_MS);
    await Promise.resolve();
    expect(announced()).toBe(1);
  });
});
