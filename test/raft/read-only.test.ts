import { describe, expect, it } from 'vitest';
import { hasQuorum } from '../../src/raft/quorum.js';
import { ReadOnly } from '../../src/raft/read-only.js';

const ofThree = (acks: ReadonlySet<string>): boolean => hasQuorum(['a', 'b', 'c'], acks);

describe("a leader's reads (ReadOnly)", () => {
  it('releases reads, oldest first, once a quorum acknowledged their round or a later one', () => {
    const reads = new ReadOnly(10);
    const first = reads.add({ from: 'a', ctx: 1 }, 5, 'a');
    const second = reads.add({ from: 'b', ctx: 2 }, 7, 'a');
    expect(second).toBeGreaterThan(first);
    expect(reads.lastSeq).toBe(second);
    // b's ack of the first round alone: with a, a quorum of 3 for the first read only.
    expect(reads.ack('b', first, ofThree).map((r) => r.ctx)).toEqual([1]);
    // c's ack of the second round confirms it (and would confirm every earlier one).
    expect(reads.ack('c', second, ofThree).map((r) => [r.from, r.ctx, r.index])).toEqual([['b', 2, 7]]);
    expect(reads.ack('c', second, ofThree)).toEqual([]);
    expect(reads.lastSeq).toBe(0);
  });

  it('holds a later read until its own round is acknowledged, even if an earlier one is', () => {
    const reads = new ReadOnly(10);
    const first = reads.add({ from: 'a', ctx: 1 }, 5, 'a');
    reads.add({ from: 'a', ctx: 2 }, 6, 'a');
    expect(reads.ack('b', first, ofThree).map((r) => r.ctx)).toEqual([1]);
    expect(reads.lastSeq).not.toBe(0);
  });

  it('is full at its bound, counting deferred reads, and hands every read back on step-down', () => {
    const reads = new ReadOnly(3);
    reads.defer({ from: 'a', ctx: 1 });
    reads.add({ from: 'b', ctx: 2 }, 4, 'a');
    expect(reads.full).toBe(false);
    reads.defer({ from: 'c', ctx: 3 });
    expect(reads.full).toBe(true);
    expect(reads.deferredCount).toBe(2);
    expect(reads.takeAll().map((r) => r.ctx)).toEqual([2, 1, 3]);
    expect(reads.full).toBe(false);
    expect(reads.takeDeferred()).toEqual([]);
  });

  it('hands deferred reads back once, for the leader to ask again', () => {
    const reads = new ReadOnly(3);
    reads.defer({ from: 'a', ctx: 1 });
    expect(reads.takeDeferred()).toEqual([{ from: 'a', ctx: 1 }]);
    expect(reads.deferredCount).toBe(0);
  });
});
