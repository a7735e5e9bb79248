import { describe, expect, it } from 'vitest';
import { nextMembershipChange, PROMOTE_STABLE_MS, type MemberView, type MembershipInput } from '../../src/runtime/membership-decide.js';
import type { NodeId } from '../../src/raft/types.js';

const DEAD_MS = 300_000;
const LIVE: MemberView = { live: true, match: 100, caughtUpForMs: 0, silentForMs: 0 };
const READY: MemberView = { ...LIVE, caughtUpForMs: PROMOTE_STABLE_MS };
const DEAD: MemberView = { live: false, match: 10, caughtUpForMs: 0, silentForMs: DEAD_MS };

function input(voters: NodeId[], learners: NodeId[], views: Record<NodeId, MemberView>, targetVoters = 5): MembershipInput {
  return { self: 'a', conf: { voters, learners, peerIds: [] }, views: new Map(Object.entries(views)), targetVoters, deadMemberAfterMs: DEAD_MS };
}

describe('nextMembershipChange', () => {
  it('promotes a learner caught up for the stable time, not before, and not one that is not live', () => {
    expect(nextMembershipChange(input(['a', 'b'], ['c'], { b: LIVE, c: READY }))).toEqual({ kind: 'promote', id: 'c' });
    expect(nextMembershipChange(input(['a', 'b'], ['c'], { b: LIVE, c: { ...READY, caughtUpForMs: PROMOTE_STABLE_MS - 1 } }))).toEqual({ kind: 'none' });
    expect(nextMembershipChange(input(['a', 'b'], ['c'], { b: LIVE, c: { ...READY, live: false } }))).toEqual({ kind: 'none' });
  });

  it('measures the stable time given (promoteStableMs, which tests of real processes shorten) instead of the default', () => {
    const soon = { ...input(['a', 'b'], ['c'], { b: LIVE, c: { ...LIVE, caughtUpForMs: 500 } }), promoteStableMs: 500 };
    expect(nextMembershipChange(soon)).toEqual({ kind: 'promote', id: 'c' });
    expect(nextMembershipChange({ ...soon, promoteStableMs: 501 })).toEqual({ kind: 'none' });
  });

  it('keeps the voters odd: from an odd count only with two learners ready, and never past the target', () => {
    expect(nextMembershipChange(input(['a', 'b', 'c'], ['d'], { b: LIVE, c: LIVE, d: READY }))).toEqual({ kind: 'none' });
    expect(nextMembershipChange(input(['a', 'b', 'c'], ['d', 'e'], { b: LIVE, c: LIVE, d: READY, e: READY }))).toEqual({ kind: 'promote', id: 'd' });
    expect(nextMembershipChange(input(['a', 'b', 'c'], ['d', 'e'], { b: LIVE, c: LIVE, d: READY, e: READY }, 3))).toEqual({ kind: 'none' });
    expect(nextMembershipChange(input(['a', 'b', 'c', 'd', 'e'], ['f', 'g'], { b: LIVE, c: LIVE, d: LIVE, e: LIVE, f: READY, g: READY }))).toEqual({ kind: 'none' });
    // A single member and one learner stay so: two voters would need both.
    expect(nextMembershipChange(input(['a'], ['b'], { b: READY }))).toEqual({ kind: 'none' });
    expect(nextMembershipChange(input(['a'], ['b', 'c'], { b: READY, c: READY }))).toEqual({ kind: 'promote', id: 'b' });
  });

  it('replaces a dead voter: removes it when a learner is ready to take its place, then promotes', () => {
    expect(nextMembershipChange(input(['a', 'b', 'c'], ['d'], { b: LIVE, c: DEAD, d: READY }))).toEqual({ kind: 'remove', id: 'c', voter: true });
    expect(nextMembershipChange(input(['a', 'b'], ['d'], { b: LIVE, d: READY }))).toEqual({ kind: 'promote', id: 'd' });
    // Not yet dead: nothing.
    expect(nextMembershipChange(input(['a', 'b', 'c'], ['d'], { b: LIVE, c: { ...DEAD, silentForMs: DEAD_MS - 1 }, d: READY }))).toEqual({ kind: 'none' });
  });

  it('removes a dead voter without a replacement only while three voters are left', () => {
    expect(nextMembershipChange(input(['a', 'b', 'c'], [], { b: LIVE, c: DEAD }))).toEqual({ kind: 'none' });
    expect(nextMembershipChange(input(['a', 'b', 'c', 'd', 'e'], [], { b: LIVE, c: LIVE, d: DEAD, e: DEAD }))).toEqual({ kind: 'remove', id: 'd', voter: true });
    expect(nextMembershipChange(input(['a', 'b', 'c', 'e'], [], { b: LIVE, c: LIVE, e: DEAD }))).toEqual({ kind: 'remove', id: 'e', voter: true });
  });

  it('never removes a voter when the voters left would not hold a majority of live ones', () => {
    // Five voters, two dead and one merely not live now: three left, of which only two live.
    const views = { b: LIVE, c: { ...LIVE, live: false }, d: DEAD, e: DEAD };
    expect(nextMembershipChange(input(['a', 'b', 'c', 'd', 'e'], [], views))).toEqual({ kind: 'none' });
    // Nor with a learner ready: after the removal, the promotion would need a quorum it lacks.
    expect(nextMembershipChange(input(['a', 'b', 'c', 'd', 'e'], ['f'], { ...views, f: READY }))).toEqual({ kind: 'none' });
  });

  it('never removes itself, and removes a dead learner', () => {
    expect(nextMembershipChange({ ...input(['a', 'b', 'c', 'd'], [], { b: LIVE, c: LIVE, d: LIVE }), views: new Map([['a', DEAD]]) })).toEqual({ kind: 'none' });
    expect(nextMembershipChange(input(['a', 'b', 'c'], ['d', 'e'], { b: LIVE, c: LIVE, d: LIVE, e: DEAD }))).toEqual({ kind: 'remove', id: 'e', voter: false });
  });
});
