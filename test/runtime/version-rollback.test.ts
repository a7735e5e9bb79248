import { describe, expect, it } from 'vitest';
import { SUPPORTED, type VersionSupport } from '../../src/version/versions.js';
import { FOUNDERS, MembershipSim } from '../fixtures/membership-sim.js';

/** The release before this one: cluster versions 1 and 2 only. */
const OLD: VersionSupport = { protocol: { min: 1, max: 2 }, stateMachine: { min: 1, max: 2 } };

/**
 * A member rolled back to the release before after it announced the next version, restarted
 * within an election timeout: before the fix the leader counted it live at once (its connection
 * back, its last contact its previous life's) while the log still held its old announcement, and
 * could activate the version in the half second before its new announcement: the member then
 * stopped, CRONRAFT_VERSION_TOO_OLD, though the README lets any member go back to the release
 * before until the version rises. Seed 3 with 90 ms down hit that window (a couple of ms wide).
 */
describe('a member rolled back before the version rose', () => {
  it('is not stopped by an activation the leader based on its previous release announcement', async () => {
    const sim = new MembershipSim(3);
    for (const id of FOUNDERS) await sim.start(id, OLD);
    await sim.until('version 2', () => (FOUNDERS.every((id) => sim.get(id).member?.versions.active === 2) ? true : undefined));
    // Rolling upgrade: m1, m2, then m3 to this release (reads up to 3).
    for (const id of FOUNDERS) {
      const m = sim.get(id);
      m.crash();
      m.versions = SUPPORTED;
      await sim.run(200);
      await sim.restart(id);
      await sim.until(`${id} announced 3`, () => (sim.leader()?.member?.versions.members.get(id)?.stateMachine.max === 3 ? true : undefined));
    }
    expect(sim.leader()?.member?.versions.active).toBe(2); // not risen yet
    // m3's new release dies right away; the operator puts the release before back.
    const m3 = sim.get('m3');
    m3.crash();
    m3.versions = OLD;
    sim.scheduler.after(90, () => void sim.restart('m3'));
    await sim.run(6_000);
    const fatal = sim.fatal.get('m3') as Error | undefined;
    expect(fatal?.message).toBeUndefined();
    expect(sim.leader()?.member?.versions.active).toBe(2);
  });
});
