import { describe, expect, it } from 'vitest';
import { NotRunningError, VersionNotActiveError } from '../../src/errors.js';
import { MAX_VERSION_WAITS, VersionWaits } from '../../src/runtime/version-waits.js';
import { ClusterVersionState } from '../../src/version/cluster-version.js';
import { SUPPORTED } from '../../src/version/versions.js';
import { ManualTimers } from '../fixtures/manual-timers.js';

const TIMEOUT_MS = 5000;
const MEMBERS = ['a', 'b', 'c'];

/** Waits over a fresh cluster state of a, b and c (version 1, nothing announced), and a way to apply its cluster commands. */
function setup(): { waits: VersionWaits; versions: ClusterVersionState; timers: ManualTimers; announce: (member: string, max: number) => void; raise: () => void } {
  const versions = new ClusterVersionState(SUPPORTED, () => true);
  const timers = new ManualTimers();
  const waits = new VersionWaits({ versions, members: () => MEMBERS, timers, timeoutMs: TIMEOUT_MS });
  let index = 0;
  return {
    waits,
    versions,
    timers,
    announce: (member, max) => {
      versions.apply({ type: 'announce', member, protocol: [1, SUPPORTED.protocol.max], stateMachine: [1, max] }, ++index);
      waits.changed();
    },
    raise: () => {
      versions.apply({ type: 'activate', from: versions.active, to: versions.active + 1 }, ++index);
      waits.changed();
    },
  };
}

/** What a promise settled with so far: 'pending', 'resolved', or its error. */
function watch(p: Promise<void>): () => 'pending' | 'resolved' | unknown {
  let outcome: unknown = 'pending';
  p.then(
    () => (outcome = 'resolved'),
    (error: unknown) => (outcome = error),
  );
  return () => outcome;
}

const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('calls waiting for a cluster version', () => {
  it('resolve at once when it is in force, and once it is raised when it is not, each at its own version', async () => {
    const { waits, raise } = setup();
    await expect(waits.whenActive('x', 1)).resolves.toBeUndefined();
    const two = watch(waits.whenActive('a membership change', 2));
    const three = watch(waits.whenActive('fan-out', 3));
    await settled();
    expect([two(), three(), waits.waiting]).toEqual(['pending', 'pending', 2]);
    raise();
    await settled();
    expect([two(), three(), waits.waiting]).toEqual(['resolved', 'pending', 1]);
    raise();
    await settled();
    expect([three(), waits.waiting]).toEqual(['resolved', 0]);
  });

  it('are refused with VersionNotActiveError once they waited timeoutMs', async () => {
    const { waits, timers } = setup();
    const three = watch(waits.whenActive('fan-out', 3));
    timers.advance(TIMEOUT_MS - 1);
    await settled();
    expect(three()).toBe('pending');
    timers.advance(1);
    await settled();
    expect(three()).toBeInstanceOf(VersionNotActiveError);
    expect(three()).toMatchObject({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', feature: 'fan-out', needs: 3, active: 1 });
    expect(waits.waiting).toBe(0);
  });

  it('name in their refusal the members that never said what they read, which the version waits for however long (a founding member never started)', async () => {
    const { waits, timers, announce } = setup();
    announce('a', 3);
    announce('b', 3);
    const two = watch(waits.whenActive('A membership change', 2));
    timers.advance(TIMEOUT_MS);
    await settled();
    expect(two()).toMatchObject({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', silent: ['c'], message: expect.stringContaining('It waits for c, which never said what it reads since the cluster formed: start a member of this release at that address') });
    // None silent: the message says only what it always did.
    announce('c', 3);
    const three = watch(waits.whenActive('fan-out', 3));
    timers.advance(TIMEOUT_MS);
    await settled();
    expect(three()).toMatchObject({ silent: [] });
    expect((three() as Error).message).not.toContain('never said');
  });

  it('are refused at once while a member of the configuration announced it cannot read the version, and when one announces it meanwhile', async () => {
    const { waits, announce, timers } = setup();
    // b announced it reads up to 2: a rolling upgrade under way, version 3 waits for b's.
    announce('b', 2);
    await expect(waits.whenActive('fan-out', 3)).rejects.toMatchObject({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', needs: 3 });
    const two = watch(waits.whenActive('a membership change', 2));
    await settled();
    expect(two()).toBe('pending');
    // A member outside the configuration counts for nothing.
    announce('z', 1);
    await settled();
    expect(two()).toBe('pending');
    announce('c', 1);
    await settled();
    expect(two()).toMatchObject({ code: 'CRONRAFT_VERSION_NOT_ACTIVE', needs: 2 });
    expect(waits.waiting).toBe(0);
    // The refused wait's timer was cleared: nothing fires later.
    expect(timers.pending).toBe(0);
  });

  it('are bounded: past MAX_VERSION_WAITS a call is refused at once', async () => {
    const { waits, raise } = setup();
    const all = Array.from({ length: MAX_VERSION_WAITS }, () => waits.whenActive('fan-out', 2));
    await expect(waits.whenActive('fan-out', 2)).rejects.toBeInstanceOf(VersionNotActiveError);
    raise();
    await expect(Promise.all(all)).resolves.toHaveLength(MAX_VERSION_WAITS);
    await expect(waits.whenActive('fan-out', 2)).resolves.toBeUndefined();
  });

  it('are rejected with NotRunningError when the member stops or fails, and so are calls after', async () => {
    const { waits, timers } = setup();
    const three = watch(waits.whenActive('fan-out', 3));
    waits.stop();
    await settled();
    expect(three()).toBeInstanceOf(NotRunningError);
    expect(three()).toMatchObject({ state: 'stopped' });
    expect(timers.pending).toBe(0);
    await expect(waits.whenActive('fan-out', 3)).rejects.toBeInstanceOf(NotRunningError);
    const failed = setup().waits;
    const two = watch(failed.whenActive('a membership change', 2));
    failed.stop('failed');
    await settled();
    expect(two()).toMatchObject({ code: 'CRONRAFT_NOT_RUNNING', state: 'failed' });
  });
});

describe('ClusterVersionState.cannotRead', () => {
  it('names the members given that announced a highest version below the one asked, not the silent ones', () => {
    const versions = new ClusterVersionState(SUPPORTED, () => true);
    versions.apply({ type: 'announce', member: 'a', protocol: [1, 1], stateMachine: [1, 2] }, 1);
    versions.apply({ type: 'announce', member: 'b', protocol: [1, 1], stateMachine: [1, 3] }, 2);
    expect(versions.cannotRead(3, ['a', 'b', 'c'])).toEqual(['a']);
    expect(versions.cannotRead(2, ['a', 'b', 'c'])).toEqual([]);
    expect(versions.cannotRead(3, ['b', 'c'])).toEqual([]);
  });
});
