import { describe, expect, it } from 'vitest';
import { LoopBlocks, type LoopBlocked } from '../../src/runtime/loop-blocks.js';

const LEASE_MS = 500;

function watch(): { blocks: LoopBlocks; told: LoopBlocked[] } {
  const told: LoopBlocked[] = [];
  return { blocks: new LoopBlocks(LEASE_MS, (b) => told.push(b)), told };
}

const run = (job: string): (() => { kind: 'run'; job: string; slot: Date; fencingToken: number }) => () => ({ kind: 'run', job, slot: new Date(0), fencingToken: 7 });

describe('LoopBlocks', () => {
  it("tells a handler's hold from its lease on, and a late tick's lateness less the holds told since the last tick", () => {
    const { blocks, told } = watch();
    blocks.handler(LEASE_MS - 1, run('short'));
    blocks.tickLate(LEASE_MS - 1);
    expect(told).toEqual([]);
    // One hold: told as the handler's; the tick after it, late by as much and a little, is the same hold.
    blocks.handler(600, run('a'));
    blocks.tickLate(610);
    expect(told).toEqual([{ kind: 'run', job: 'a', slot: new Date(0), fencingToken: 7, ms: 600, leaseMs: LEASE_MS }]);
    // Two holds told with no tick between, and the loop held on after them: the rest is the loop's.
    blocks.handler(600, run('b'));
    blocks.handler(600, () => ({ kind: 'item', topic: 't', id: 3, fencingToken: 9 }));
    blocks.tickLate(1_210 + 550);
    expect(told.slice(1)).toEqual([
      { kind: 'run', job: 'b', slot: new Date(0), fencingToken: 7, ms: 600, leaseMs: LEASE_MS },
      { kind: 'item', topic: 't', id: 3, fencingToken: 9, ms: 600, leaseMs: LEASE_MS },
      { kind: 'loop', ms: 560, leaseMs: LEASE_MS },
    ]);
    // What was told is forgotten at each tick: a later stall alone is the loop's, whole.
    blocks.tickLate(700);
    expect(told.at(-1)).toEqual({ kind: 'loop', ms: 700, leaseMs: LEASE_MS });
    expect(told).toHaveLength(5);
  });

  it("ends no run when the app's listener throws", () => {
    const blocks = new LoopBlocks(LEASE_MS, () => {
      throw new Error("the app's listener");
    });
    expect(() => blocks.handler(600, run('a'))).not.toThrow();
    expect(() => blocks.tickLate(600)).not.toThrow();
  });
});
