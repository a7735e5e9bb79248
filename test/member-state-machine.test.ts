import { describe, expect, it } from 'vitest';
import { CodecError } from '../src/errors.js';
import { memberStateMachine } from '../src/runtime/member-state-machine.js';
import type { SchedulerRuntime } from '../src/runtime/scheduler-runtime.js';
import { SchedulerState, type SchedulerStateParts } from '../src/scheduler/state.js';

/** A scheduler that records what each restore was given: bytes to decode, or parts decoded already. */
function recordingScheduler(): { scheduler: SchedulerRuntime; restored: string[] } {
  const restored: string[] = [];
  const state = new SchedulerState();
  const scheduler = {
    state,
    apply: () => ({ ok: true }),
    restore: (snapshot: Uint8Array | SchedulerStateParts) => restored.push(snapshot instanceof Uint8Array ? 'bytes' : 'parts'),
  } as unknown as SchedulerRuntime;
  return { scheduler, restored };
}

describe("a member's state machine", () => {
  it('restores a snapshot it just accepted from what the check decoded, once', () => {
    const { scheduler, restored } = recordingScheduler();
    const sm = memberStateMachine(() => scheduler);
    const data = sm.snapshot();
    expect(sm.acceptsSnapshot(data)).toBe(true);
    sm.restore(data);
    // The decoded parts go to one restore only; the same bytes again are decoded again.
    sm.restore(data);
    expect(restored).toEqual(['parts', 'bytes']);
  });

  it('decodes bytes that are not the snapshot last accepted', () => {
    const { scheduler, restored } = recordingScheduler();
    const sm = memberStateMachine(() => scheduler);
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
    const sm = memberStateMachine(() => scheduler);
    const garbage = Uint8Array.of(0xff, 0x00);
    expect(sm.acceptsSnapshot(garbage)).toBe(false);
    expect(() => sm.restore(garbage)).toThrow(CodecError);
    expect(restored).toEqual([]);
  });
});
