import { encode } from 'cborg';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { CodecError, VersionTooOldError } from '../../src/errors.js';
import type { Entry } from '../../src/raft/types.js';
import { EntryType } from '../../src/raft/types.js';
import { encodeCommand } from '../../src/runtime/commands.js';
import { MEMBER_SNAPSHOT_VERSION, decodeMemberSnapshot, encodeClusterPart, encodeMemberSnapshot } from '../../src/runtime/member-snapshot.js';
import { ClusterVersionState } from '../../src/version/cluster-version.js';
import { JOB_ROOM_VERSION, SUPPORTED } from '../../src/version/versions.js';
import { memberStateMachine } from '../../src/runtime/member-state-machine.js';
import type { SchedulerRuntime } from '../../src/runtime/scheduler/scheduler-runtime.js';
import { SchedulerState } from '../../src/scheduler/state.js';
import type { SchedulerCommand } from '../../src/scheduler/command.js';
import { encodeSchedulerSnapshot, restoreSchedulerSnapshot } from '../../src/scheduler/state-snapshot.js';
import { testNextVersion, type Notes } from '../../src/version/test-next-version.js';
import type { SchedulerStateParts } from '../../src/scheduler/records.js';
import { expectSameBytes } from '../fixtures/bytes.js';

/** A scheduler that records what each restore was given: bytes to decode, or parts decoded already. */
function recordingScheduler(): { scheduler: SchedulerRuntime; restored: string[] } {
  const restored: string[] = [];
  const state = new SchedulerState();
  const scheduler = {
    state,
    apply: () => ({ ok: true }),
    versionRaised: (version: number) => state.versionRaised(version),
    restore: (snapshot: Uint8Array | SchedulerStateParts) => restored.push(snapshot instanceof Uint8Array ? 'bytes' : 'parts'),
  } as unknown as SchedulerRuntime;
  return { scheduler, restored };
}

function clusterState(): ClusterVersionState {
  return new ClusterVersionState(SUPPORTED, () => true);
}

describe("a member's state machine", () => {
  it('restores a snapshot it just accepted from what the check decoded, once', () => {
    const { scheduler, restored } = recordingScheduler();
    const sm = memberStateMachine(() => scheduler, clusterState());
    const data = sm.snapshot();
    expect(sm.acceptsSnapshot(data)).toBe(true);
    sm.restore(data);
    // The decoded parts go to one restore only; the same bytes again are decoded again.
    sm.restore(data);
    expect(restored).toEqual(['parts', 'bytes']);
  });

  it('decodes bytes that are not the snapshot last accepted', () => {
    const { scheduler, restored } = recordingScheduler();
    const sm = memberStateMachine(() => scheduler, clusterState());
    const first = sm.snapshot();
    const second = sm.snapshot();
    expect(sm.acceptsSnapshot(first)).toBe(true);
    expect(sm.acceptsSnapshot(second)).toBe(true);
    sm.restore(first);
    // The stored snapshot at start was never checked by acceptsSnapshot.
    sm.restore(Uint8Array.from(second));
    expect(restored).toEqual(['bytes', 'bytes']);
  });

  it('refuses bytes that are not a snapshot, and a restore of them throws CodecError', () => {
    const { scheduler, restored } = recordingScheduler();
    const sm = memberStateMachine(() => scheduler, clusterState());
    const garbage = Uint8Array.of(0xff, 0x00);
    expect(sm.acceptsSnapshot(garbage)).toBe(false);
    expect(() => sm.restore(garbage)).toThrow(CodecError);
    expect(restored).toEqual([]);
  });

  it('hands application entries to the hook only while it wants them, and scheduler commands always to the scheduler', () => {
    const { scheduler } = recordingScheduler();
    const applied: number[] = [];
    const seen: string[] = [];
    let wanted = false;
    const sm = memberStateMachine(() => ({ ...scheduler, apply: (index: number) => (applied.push(index), { ok: true }) }) as unknown as typeof scheduler, clusterState(), {
      wantsUserEntries: () => wanted,
      onUserEntry: (entry, data) => seen.push(`${entry.index}:${new TextDecoder().decode(data)}`),
    });
    const entry = (index: number, data: Uint8Array): Entry => ({ index, term: 1, type: EntryType.Normal, data, pid: `p${index}` });
    const user = (text: string): Uint8Array => encodeCommand({ kind: 'user', data: new TextEncoder().encode(text) });
    const command = encodeCommand({ kind: 'scheduler', command: { type: 'unregister', job: 'j', member: 'a' } });
    expect(sm.apply(entry(1, user('quiet')))).toBeUndefined();
    expect(sm.apply(entry(2, command))).toEqual({ ok: true });
    wanted = true;
    expect(sm.apply(entry(3, user('heard')))).toBeUndefined();
    expect(sm.apply(entry(4, command))).toEqual({ ok: true });
    expect(seen).toEqual(['3:heard']);
    expect(applied).toEqual([2, 4]);
  });

  it('hands every application entry to a hook that does not say whether it wants them', () => {
    const { scheduler } = recordingScheduler();
    const seen: number[] = [];
    const sm = memberStateMachine(() => scheduler, clusterState(), { onUserEntry: (entry) => seen.push(entry.index) });
    for (const index of [1, 2]) sm.apply({ index, term: 1, type: EntryType.Normal, data: encodeCommand({ kind: 'user', data: Uint8Array.of(index) }), pid: '' });
    expect(seen).toEqual([1, 2]);
  });
});

describe('member snapshot bytes', () => {
  it("are cborg's encoding of [version, scheduler bytes, cluster], whatever the length and however the bytes come in pieces", () => {
    const saved = clusterState().save();
    const cluster = encodeClusterPart(saved);
    // Lengths around every size of a CBOR length head, and the pieces cut anywhere.
    const length = fc.constantFrom(0, 1, 23, 24, 255, 256, 65_535, 65_536, 70_000);
    fc.assert(
      fc.property(length, fc.array(fc.nat(), { maxLength: 4 }), fc.nat(255), (n, cuts, seed) => {
        const bytes = Uint8Array.from({ length: n }, (_, i) => (i * 31 + seed) & 0xff);
        const at = [...new Set(cuts.map((c) => (n === 0 ? 0 : c % n)))].sort((a, b) => a - b);
        const pieces = [0, ...at].map((from, i) => bytes.subarray(from, at[i] ?? n));
        const expected = encode([MEMBER_SNAPSHOT_VERSION, bytes, saved]);
        expectSameBytes(encodeMemberSnapshot(bytes, cluster), expected);
        expectSameBytes(encodeMemberSnapshot(pieces, cluster), expected);
        const decoded = decodeMemberSnapshot(expected);
        expect(decoded).not.toBeNull();
        expectSameBytes(decoded?.scheduler ?? new Uint8Array(), bytes);
        expect(decoded?.cluster).toEqual(saved);
      }),
      { numRuns: 60 },
    );
  });
});

describe("a member snapshot's cluster part", () => {
  const next = testNextVersion();
  const entry = (index: number, command: Parameters<typeof encodeCommand>[0]): Entry => ({ index, term: 1, type: EntryType.Normal, data: encodeCommand(command), pid: `p${index}` });
  /** A state machine of the next release, its scheduler's state real, with the version raised and a note applied. */
  function raised(): { readonly sm: ReturnType<typeof memberStateMachine>; readonly versions: ClusterVersionState } {
    const state = new SchedulerState();
    const scheduler = { state, apply: (index: number, command: SchedulerCommand) => state.apply(index, command), versionRaised: (version: number) => state.versionRaised(version), restore: (s: Uint8Array | SchedulerStateParts) => (s instanceof Uint8Array ? restoreSchedulerSnapshot(state, s) : state.restoreFrom(s)) } as unknown as SchedulerRuntime;
    const versions = new ClusterVersionState(next, () => true);
    const sm = memberStateMachine(() => scheduler, versions);
    sm.apply(entry(1, { kind: 'cluster', command: { type: 'announce', member: 'a', protocol: [1, 1], stateMachine: [1, next.stateMachine.max] } }));
    // One version at a time: up to this release's last, then the test-only next.
    let index = 2;
    for (let v = 1; v < next.stateMachine.max; v++) sm.apply(entry(index++, { kind: 'cluster', command: { type: 'activate', from: v, to: v + 1 } }));
    sm.apply(entry(index, { kind: 'extension', version: next.stateMachine.max, command: { type: 'test-note', text: 'hello' } }));
    return { sm, versions };
  }
  function restoredFrom(data: Uint8Array): ClusterVersionState {
    const state = new SchedulerState();
    const scheduler = { state, restore: (s: Uint8Array | SchedulerStateParts) => (s instanceof Uint8Array ? restoreSchedulerSnapshot(state, s) : state.restoreFrom(s)) } as unknown as SchedulerRuntime;
    const versions = new ClusterVersionState(next, () => true);
    const sm = memberStateMachine(() => scheduler, versions);
    expect(sm.acceptsSnapshot(data)).toBe(true);
    sm.restore(data);
    return versions;
  }

  it('holds the version in force, the announcements and the next version’s state, taken at once or in steps', () => {
    const { sm, versions } = raised();
    expect(versions.active).toBe(next.stateMachine.max);
    const steps = sm.snapshotInSteps?.();
    let stepped: Uint8Array | null = null;
    while (stepped === null) stepped = steps?.step() ?? null;
    for (const data of [sm.snapshot(), stepped]) {
      const restored = restoredFrom(data);
      expect(restored.save()).toEqual(versions.save());
      expect(restored.active).toBe(next.stateMachine.max);
      // The test-only version's activation, the last entry before the note.
      expect(restored.activatedAt).toBe(next.stateMachine.max);
      expect((restored.extension as Notes).texts).toEqual(['hello']);
    }
    expectSameBytes(stepped, sm.snapshot());
  });

  it('reads a snapshot of format 1 (cronraft 0.1.0) as the first version with nobody announced', () => {
    const data = encode([1, encodeSchedulerSnapshot(new SchedulerState())]);
    const restored = restoredFrom(data);
    expect(restored.active).toBe(1);
    expect(restored.members.size).toBe(0);
  });

  it('refuses a cluster part that is not one, and one this member cannot read stops it', () => {
    const scheduler = encodeSchedulerSnapshot(new SchedulerState());
    const { sm } = raised();
    for (const bad of [[0, 0, []], [1, -1, []], [1, 0, [['a', 2, 1, 1, 1]]], [1, 0, 'x'], [1, 0, [], ['extension before its version']]]) {
      expect(sm.acceptsSnapshot(encodeMemberSnapshot(scheduler, encodeClusterPart(bad)))).toBe(false);
    }
    const onCurrent = memberStateMachine(() => recordingScheduler().scheduler, clusterState());
    expect(() => onCurrent.acceptsSnapshot(encodeMemberSnapshot(scheduler, encodeClusterPart([SUPPORTED.stateMachine.max + 1, 5, []])))).toThrow(VersionTooOldError);
  });

  it(`makes room for a new job at the cap of jobs only once the cluster runs version ${JOB_ROOM_VERSION}`, () => {
    const state = new SchedulerState({ maxJobs: 2 });
    const scheduler = { state, apply: (index: number, command: SchedulerCommand, version?: number) => state.apply(index, command, version), versionRaised: (version: number) => state.versionRaised(version) } as unknown as SchedulerRuntime;
    const versions = clusterState();
    const sm = memberStateMachine(() => scheduler, versions);
    const at = (index: number, command: SchedulerCommand): Entry => ({ index, term: 1, type: EntryType.Normal, data: encodeCommand({ kind: 'scheduler', command }), pid: `p${index}` });
    const register = (job: string): SchedulerCommand => ({ type: 'register', job, spec: { kind: 'every', everyMs: 1000 }, mode: 'one', policy: { retries: 0, retryDelayMs: 1000, catchUp: { policy: 'latest' } }, member: 'a', atMs: 0 });
    let index = 1;
    sm.apply(entry(index++, { kind: 'cluster', command: { type: 'announce', member: 'a', protocol: [1, SUPPORTED.protocol.max], stateMachine: [1, SUPPORTED.stateMachine.max] } }));
    sm.apply(at(index++, register('j1')));
    sm.apply(at(index++, register('j2')));
    sm.apply(at(index++, { type: 'unregister', job: 'j1', member: 'a' }));
    expect(sm.apply(at(index++, register('j3')))).toEqual({ ok: false, reason: 'too-many-jobs' });
    for (let v = 1; v < JOB_ROOM_VERSION; v++) sm.apply(entry(index++, { kind: 'cluster', command: { type: 'activate', from: v, to: v + 1 } }));
    expect(versions.active).toBe(JOB_ROOM_VERSION);
    expect(sm.apply(at(index, register('j3')))).toEqual({ ok: true });
    expect([...state.jobs.keys()]).toEqual(['j2', 'j3']);
  });
});
