import { describe, expect, it } from 'vitest';
import { VersionTooOldError } from '../../src/errors.js';
import { EntryType, type Entry } from '../../src/raft/types.js';
import { encodeCommand } from '../../src/runtime/commands.js';
import { encodeClusterPart, encodeMemberSnapshot } from '../../src/runtime/member-snapshot.js';
import { encodeSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import type { StoredState } from '../../src/storage/log-storage.js';
import type { ClusterCommand } from '../../src/version/cluster-command.js';
import { checkStoredVersion, storedClusterVersion, storedWireVersion } from '../../src/version/stored-version.js';
import { testNextVersion } from '../../src/version/test-next-version.js';
import { SUPPORTED } from '../../src/version/versions.js';

const cluster = (index: number, command: ClusterCommand): Entry => ({ index, term: 1, type: EntryType.Normal, data: encodeCommand({ kind: 'cluster', command }), pid: `p${index}` });
const activate = (index: number, from: number, to: number): Entry => cluster(index, { type: 'activate', from, to });
const empty = { index: 0, term: 0, data: new Uint8Array(0) };

function stored(entries: readonly Entry[], commit: number, snapshot: StoredState['snapshot'] = empty): StoredState {
  return { identity: null, hardState: { term: 1, vote: null, commit }, snapshot, entries };
}

/** A member snapshot at `index` whose cluster's state has `active` in force. */
function snapshotAt(index: number, active: number): StoredState['snapshot'] {
  return { index, term: 1, data: encodeMemberSnapshot(encodeSchedulerSnapshot(new SchedulerState()), encodeClusterPart([active, index, []])) };
}

describe('the cluster version a data directory was left at', () => {
  it('is the first version for a new directory', () => {
    expect(storedClusterVersion(stored([], 0))).toBe(1);
  });

  it('rises with each committed activation, one step from the version in force', () => {
    const entries = [cluster(1, { type: 'announce', member: 'a', protocol: [1, 1], stateMachine: [1, 3] }), activate(2, 1, 2), activate(3, 1, 2), activate(4, 2, 4), activate(5, 2, 3)];
    expect(storedClusterVersion(stored(entries, 5))).toBe(3);
  });

  it('ignores an activation beyond the commit index: it may still be replaced', () => {
    expect(storedClusterVersion(stored([activate(1, 1, 2)], 0))).toBe(1);
    expect(storedClusterVersion(stored([activate(1, 1, 2), activate(2, 2, 3)], 1))).toBe(2);
  });

  it('gives the wire every activation in the log, uncommitted ones too (each was proposed once every member read it)', () => {
    expect(storedWireVersion(stored([activate(1, 1, 2)], 0))).toBe(2);
    expect(storedWireVersion(stored([activate(1, 1, 2), activate(2, 2, 3)], 1))).toBe(3);
    expect(storedWireVersion(stored([], 0, snapshotAt(5, 2)))).toBe(2);
    expect(storedWireVersion(stored([], 0))).toBe(1);
  });

  it('starts from the snapshot’s version, and skips entries it cannot read', () => {
    const entries = [{ index: 11, term: 1, type: EntryType.Normal, data: Uint8Array.of(0x82, 0x02, 0xff), pid: 'x' }, activate(12, 2, 3)];
    expect(storedClusterVersion(stored(entries, 12, snapshotAt(10, 2)))).toBe(3);
  });

  it('refuses a directory at a version this member cannot read with CRONRAFT_VERSION_TOO_OLD', () => {
    // This release reads up to C; the test-only next one, C + 1.
    const C = SUPPORTED.stateMachine.max;
    const raises = Array.from({ length: C }, (_, i) => activate(i + 1, i + 1, i + 2));
    const state = stored(raises, C);
    expect(() => checkStoredVersion(state, testNextVersion(), '/data')).not.toThrow();
    expect(() => checkStoredVersion(stored(raises.slice(0, C - 1), C - 1), SUPPORTED, '/data')).not.toThrow();
    expect(() => checkStoredVersion(state, SUPPORTED, '/data')).toThrow(expect.objectContaining({ code: 'CRONRAFT_VERSION_TOO_OLD', needs: C + 1, reads: C, message: expect.stringContaining('/data') }));
    expect(() => checkStoredVersion(stored([], 0, snapshotAt(5, C + 1)), SUPPORTED, '/data')).toThrow(VersionTooOldError);
  });
});
