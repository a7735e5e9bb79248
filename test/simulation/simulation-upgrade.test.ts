import { describe, expect, it } from 'vitest';
import { simulate } from '../../simulations/simulate.js';
import { drawVersionsMode, UPGRADE_SHARE } from '../../simulations/upgrades.js';
import { SUPPORTED } from '../../src/version/versions.js';

/**
 * Mixed versions in the fault swarm: a rolling upgrade onto the test-only next release, with
 * test notes proposed through the version gate all along. The checkers (version-checker.ts) run
 * in every simulation; these runs show that the upgrade really happens under them: notes are
 * refused before the version rises, it rises, and notes commit after.
 */
describe('a rolling upgrade in the simulator', () => {
  for (const members of [3, 5]) {
    it(`${members} members: 3 seeds of 30 simulated seconds upgrade safely, the gate refusing notes until the version rises`, async () => {
      for (let seed = 1; seed <= 3; seed++) {
        const r = await simulate({ seed, members, durationMs: 30_000, versions: 'upgrade' });
        expect(r.violations, `seed ${seed}`).toEqual([]);
        expect(r.versions.mode).toBe('upgrade');
        // This release's last version (2, membership) first, then the test-only next one.
        expect(r.versions.clusterVersion).toBe(SUPPORTED.stateMachine.max + 1);
        expect(r.versions.notesRefused).toBeGreaterThan(0);
        expect(r.versions.notesCommitted).toBeGreaterThan(0);
      }
    }, 300_000);
  }

  it('leaves the version and the notes alone in a run without one', async () => {
    const r = await simulate({ seed: 1, members: 3, durationMs: 5000, versions: 'same' });
    // The version rises to this release's last (2, membership) on its own, and no further.
    expect(r.versions).toEqual({ mode: 'same', notesRefused: 0, notesCommitted: 0, clusterVersion: SUPPORTED.stateMachine.max });
  });

  it(`draws an upgrade in about ${UPGRADE_SHARE * 100}% of seeds`, () => {
    let upgrades = 0;
    for (let seed = 1; seed <= 1000; seed++) if (drawVersionsMode(seed) === 'upgrade') upgrades++;
    expect(upgrades).toBeGreaterThan(1000 * UPGRADE_SHARE * 0.8);
    expect(upgrades).toBeLessThan(1000 * UPGRADE_SHARE * 1.2);
  });
});
