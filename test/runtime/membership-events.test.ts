import { describe, expect, it } from 'vitest';
import { encodeConfChange, type ConfChange } from '../../src/raft/conf-change.js';
import { EntryType, type Entry } from '../../src/raft/types.js';
import { LEAVE_PID_SUFFIX, membershipEventOf } from '../../src/runtime/membership-events.js';

const entry = (change: ConfChange, pid = 'boot.1'): Entry => ({ index: 9, term: 2, type: EntryType.ConfChange, data: encodeConfChange(change), pid });

describe('membershipEventOf', () => {
  it('names each change, and tells a leave from a removal by its proposal id', () => {
    expect(membershipEventOf(entry({ type: 'add-learner', id: 'm4' }))).toEqual({ type: 'member-joined', id: 'm4', index: 9 });
    expect(membershipEventOf(entry({ type: 'promote', id: 'm4' }))).toEqual({ type: 'member-promoted', id: 'm4', index: 9 });
    expect(membershipEventOf(entry({ type: 'remove', id: 'm4' }))).toEqual({ type: 'member-removed', id: 'm4', index: 9 });
    expect(membershipEventOf(entry({ type: 'remove', id: 'm4' }, `boot.2${LEAVE_PID_SUFFIX}`))).toEqual({ type: 'member-left', id: 'm4', index: 9 });
  });

  it('makes none of another entry', () => {
    expect(membershipEventOf({ index: 3, term: 1, type: EntryType.Normal, data: new Uint8Array([1]), pid: 'a' })).toBeNull();
    expect(membershipEventOf({ index: 3, term: 1, type: EntryType.ConfChange, data: new Uint8Array([9]), pid: 'a' })).toBeNull();
  });

  it('makes none of a binding, which changes no member (a founding member was reported removed as its peer id was bound)', () => {
    expect(membershipEventOf(entry({ type: 'bind', id: 'm1', peerId: '12D3KooWNpEjHiwXBKhVJvQy5aGA5n6TgqSEAHMAbkjYZj9nVKPL' }))).toBeNull();
  });
});
