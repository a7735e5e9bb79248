import { describe, expect, it } from 'vitest';
import { VersionNotActiveError, VersionTooOldError } from '../../src/errors.js';
import { ClusterVersionState, MAX_MEMBERS_SAVED } from '../../src/version/cluster-version.js';
import type { ClusterCommand } from '../../src/version/cluster-command.js';
import { Notes, testNextVersion } from '../../src/version/test-next-version.js';
import { SUPPORTED, type VersionSupport } from '../../src/version/versions.js';

const members = new Set(['a', 'b']);
const state = (support: VersionSupport = SUPPORTED): ClusterVersionState => new ClusterVersionState(support, (id) => members.has(id));
const announce = (member: string, max: number): ClusterCommand => ({ type: 'announce', member, protocol: [1, 1], stateMachine: [1, max] });
const activate = (from: number, to: number): ClusterCommand => ({ type: 'activate', from, to });
/** The highest cluster version this release reads (3, fanout), and the test-only next one. */
const C = SUPPORTED.stateMachine.max;
const N = C + 1;
/** Raises `s` one version at a time up to `to`, from index `at` on. */
function raise(s: ClusterVersionState, to: number, at = 1): void {
  for (let v = s.active; v < to; v++) s.apply(activate(v, v + 1), at++);
}

describe('ClusterVersionState.apply', () => {
  it('records announcements of members, and ignores those of others', () => {
    const s = state();
    expect(s.apply(announce('a', 1), 1)).toBe('applied');
    expect(s.apply(announce('stranger', 1), 2)).toBe('ignored');
    expect([...s.members.keys()]).toEqual(['a']);
    expect(s.members.get('a')).toEqual({ protocol: { min: 1, max: 1 }, stateMachine: { min: 1, max: 1 } });
  });

  it('applies an activation once: a duplicate, a jump or one from another version is ignored', () => {
    const s = state(testNextVersion());
    expect(s.apply(activate(1, 3), 1)).toBe('ignored');
    expect(s.apply(activate(2, 3), 2)).toBe('ignored');
    expect(s.apply(activate(1, 2), 3)).toBe('applied');
    expect([s.active, s.activatedAt]).toEqual([2, 3]);
    expect(s.apply(activate(1, 2), 4)).toBe('ignored');
    expect([s.active, s.activatedAt]).toEqual([2, 3]);
    // The extension's state begins with its version, the one after this release's last.
    expect(s.extension).toBeNull();
    raise(s, C, 5);
    expect(s.extension).toBeNull();
    expect(s.apply(activate(C, N), 10)).toBe('applied');
    expect(s.extension).toBeInstanceOf(Notes);
  });

  it('throws VersionTooOldError at an activation past what it reads, and changes nothing', () => {
    const s = state();
    raise(s, C);
    expect(() => s.apply(activate(C, N), 7)).toThrow(VersionTooOldError);
    expect(s.active).toBe(C);
  });

  it('gates a feature on the version in force', () => {
    const s = state(testNextVersion());
    expect(() => s.require('membership changes', 2)).toThrow(VersionNotActiveError);
    expect(() => s.require('test-note', N)).toThrow(VersionNotActiveError);
    raise(s, 2);
    expect(() => s.require('membership changes', 2)).not.toThrow();
    expect(() => s.require('test-note', N)).toThrow(VersionNotActiveError);
    raise(s, N, 2);
    expect(() => s.require('test-note', N)).not.toThrow();
  });
});

describe('ClusterVersionState save and restore', () => {
  it('round-trips, the extension too, into a member of the same release', () => {
    const s = state(testNextVersion());
    s.apply(announce('b', 2), 1);
    s.apply(announce('a', 2), 2);
    raise(s, N, 3);
    s.applyExtension({ type: 'test-note', text: 'hello' }, 9);
    const saved = s.save();
    const t = state(testNextVersion());
    expect(t.accepts(saved)).toBe(true);
    t.restore(saved);
    expect(t.save()).toEqual(saved);
    // Members are saved sorted, so equal states give equal bytes.
    expect((saved[2] as unknown[][]).map((m) => m[0])).toEqual(['a', 'b']);
  });

  it('refuses a saved state of a version this member cannot read with VersionTooOldError', () => {
    const s = state(testNextVersion());
    raise(s, N);
    const old = state();
    expect(() => old.accepts(s.save())).toThrow(VersionTooOldError);
    expect(() => old.restore(s.save())).toThrow(VersionTooOldError);
    expect(old.active).toBe(1);
  });

  it('refuses hostile saved values without throwing, and keeps its state', () => {
    const next = testNextVersion();
    const tooMany = Array.from({ length: MAX_MEMBERS_SAVED + 1 }, (_, i) => [`m${i}`, 1, 1, 1, 1]);
    const hostile: unknown[] = [
      null, 7, 'x', {}, [], [1, 0], [1, 0, [], undefined, 5],
      [0, 0, []], [1.5, 0, []], [1, -1, []], [1, 0.5, []], [1, 0, 'x'], [1, 0, tooMany],
      [1, 0, [['a', 1, 1, 1]]], [1, 0, [['', 1, 1, 1, 1]]], [1, 0, [['a', 2, 1, 1, 1]]], [1, 0, [['a', 1, 1, 2, 1]]], [1, 0, [[7, 1, 1, 1, 1]]],
      // The first version with an extension's state, and the next without one, or a bad one.
      [1, 0, [], []], [C, 1, [], []], [N, 1, []], [N, 1, [], 'not notes'], [N, 1, [], ['x'.repeat(1000)]],
    ];
    for (const value of hostile) {
      const s = state(next);
      s.apply(announce('a', 2), 1);
      expect(s.accepts(value), JSON.stringify(value)).toBe(false);
      expect(() => s.restore(value)).toThrow(TypeError);
      expect(s.members.size).toBe(1);
    }
  });

  it('resets to the first version with no member announced (a snapshot of 0.1.0)', () => {
    const s = state(testNextVersion());
    s.apply(announce('a', 2), 1);
    s.apply(activate(1, 2), 2);
    s.reset();
    expect([s.active, s.activatedAt, s.members.size, s.extension]).toEqual([1, 0, 0, null]);
  });
});
