import { describe, expect, it } from 'vitest';
import { LeaseEchoes } from '../../src/runtime/lease-echoes.js';

const LEASE_MS = 500;

describe('LeaseEchoes', () => {
  it("tells a follower of its latest answer taken in, on its own clock, and nothing before it answered", () => {
    const echoes = new LeaseEchoes(LEASE_MS);
    expect(echoes.heardAt('b', 10, 10)).toBeUndefined();
    // A leader's first answer from a follower ends a silence: fenced at the log's end (10), which b holds and which is committed.
    echoes.answered('b', 73_000.5, 1_000, 10);
    expect(echoes.heardAt('b', 10, 10)).toBe(73_000.5);
    echoes.answered('b', 73_050.5, 1_050, 12);
    expect(echoes.heardAt('b', 10, 10)).toBe(73_050.5);
    expect(echoes.heardAt('c', 10, 10)).toBeUndefined();
  });

  it('after a silence as long as the lease, says nothing until the follower holds, and the leader committed, the log as it then ended', () => {
    const echoes = new LeaseEchoes(LEASE_MS);
    echoes.answered('b', 100, 1_000, 10);
    expect(echoes.heardAt('b', 10, 10)).toBe(100);
    // Silent for the lease: its work may have moved, at indexes up to 15.
    echoes.answered('b', 700, 1_000 + LEASE_MS, 15);
    expect(echoes.heardAt('b', 14, 15)).toBeUndefined();
    expect(echoes.heardAt('b', 15, 14)).toBeUndefined();
    // Later answers keep the fence until it is passed.
    echoes.answered('b', 750, 1_550, 16);
    expect(echoes.heardAt('b', 14, 16)).toBeUndefined();
    expect(echoes.heardAt('b', 15, 15)).toBe(750);
    // Passed once, gone: a follower a little behind is told at once.
    echoes.answered('b', 800, 1_600, 18);
    expect(echoes.heardAt('b', 16, 17)).toBe(800);
  });

  it('forgets a follower whose connection closed, and every follower as its leading ends', () => {
    const echoes = new LeaseEchoes(LEASE_MS);
    echoes.answered('b', 100, 1_000, 10);
    echoes.answered('c', 200, 1_000, 10);
    echoes.forget('b');
    expect(echoes.heardAt('b', 10, 10)).toBeUndefined();
    expect([...echoes.peers()]).toEqual(['c']);
    echoes.reset();
    expect(echoes.heardAt('c', 10, 10)).toBeUndefined();
  });
});
