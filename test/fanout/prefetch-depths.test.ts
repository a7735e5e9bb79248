import { describe, expect, it } from 'vitest';
import type { ConsumerSettings } from '../../src/fanout/command.js';
import { MAX_PREFETCH_PER_PARALLELISM, PREFETCH_PER_PARALLELISM } from '../../src/fanout/prefetch.js';
import { PrefetchDepths } from '../../src/fanout/prefetch-depths.js';
import { FanoutState } from '../../src/fanout/state.js';

const SETTINGS: ConsumerSettings = { parallelism: 2, retries: 0, timeoutMs: 1000, backoffMs: 100, ratePerSecond: null, maxPending: null };
/** What a member of parallelism 2 holds at the first depth. */
const FIRST = 2 * (1 + PREFETCH_PER_PARALLELISM);
const NONE = new Set<string>();

/** A state with topic `t` consumed by `a` and `b`, `count` items emitted; its commands at the next index (a lease's is its token). */
function stateWith(count: number): { state: FanoutState; lease: (member: string, ids: number[]) => number; done: (member: string, ids: number[], token: number) => void } {
  const state = new FanoutState();
  let index = 0;
  state.apply(++index, { type: 'consume', topic: 't', member: 'a', settings: SETTINGS });
  state.apply(++index, { type: 'consume', topic: 't', member: 'b', settings: SETTINGS });
  state.apply(++index, { type: 'emit', topic: 't', items: Array.from({ length: count }, (_, i) => ({ data: Uint8Array.of(i), key: null })), origin: null, atMs: 0 });
  return {
    state,
    lease: (member, ids) => {
      state.apply(++index, { type: 'lease', member, ids, atMs: 0 });
      return index;
    },
    done: (member, ids, token) => {
      state.apply(++index, { type: 'done', member, outcomes: ids.map((id) => ({ id, token, error: null })), atMs: 0 });
    },
  };
}

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

/** `a` is leased items 1 to FIRST, the leader looks, `a` runs them all, and the leader looks again (`busy`: with a lease of a's in flight). */
function runOut(t: ReturnType<typeof stateWith>, depths: PrefetchDepths, busy: ReadonlySet<string> = NONE): void {
  const token = t.lease('a', range(1, FIRST));
  depths.update(t.state, NONE);
  t.done('a', range(1, FIRST), token);
  depths.update(t.state, busy);
}

describe('how deep the leader fills each prefetch (PrefetchDepths)', () => {
  it('goes deeper for a member that ran out of items while more waited, and only for it', () => {
    const t = stateWith(10 * FIRST);
    const depths = new PrefetchDepths();
    depths.update(t.state, NONE);
    // Nothing held yet: a first look says nothing of how fast a member runs.
    expect([depths.of('t', 'a'), depths.of('t', 'b')]).toEqual([PREFETCH_PER_PARALLELISM, PREFETCH_PER_PARALLELISM]);
    // `a` runs all it held before the leader looks again; `b` still holds its items.
    t.lease('b', range(FIRST + 1, FIRST));
    runOut(t, depths);
    expect(depths.of('t', 'a')).toBe(MAX_PREFETCH_PER_PARALLELISM);
    expect(depths.of('t', 'b')).toBe(PREFETCH_PER_PARALLELISM);
    expect(depths.of('other', 'a')).toBe(PREFETCH_PER_PARALLELISM);
  });

  it('tops a member that still holds items up to the first depth only, deeper once it has run out again', () => {
    const t = stateWith(10 * FIRST);
    const depths = new PrefetchDepths();
    runOut(t, depths);
    expect(depths.of('t', 'a')).toBe(MAX_PREFETCH_PER_PARALLELISM);
    // Leased deeper, it has run all but one when the leader looks: topped up to the first depth.
    const deep = 2 * (1 + MAX_PREFETCH_PER_PARALLELISM);
    const second = t.lease('a', range(FIRST + 1, deep));
    depths.update(t.state, NONE);
    expect(depths.of('t', 'a')).toBe(PREFETCH_PER_PARALLELISM);
    t.done('a', range(FIRST + 1, deep - 1), second);
    depths.update(t.state, NONE);
    expect(depths.of('t', 'a')).toBe(PREFETCH_PER_PARALLELISM);
    t.done('a', [FIRST + deep], second);
    depths.update(t.state, NONE);
    expect(depths.of('t', 'a')).toBe(MAX_PREFETCH_PER_PARALLELISM);
  });

  it('does not go deeper when fewer items wait than a first depth, nor judge a member whose lease is in flight', () => {
    const few = stateWith(FIRST + 2);
    const depths = new PrefetchDepths();
    const token = few.lease('a', range(1, 2));
    depths.update(few.state, NONE);
    few.done('a', [1, 2], token);
    depths.update(few.state, NONE);
    // FIRST items wait, no more: a first depth takes them all.
    expect(depths.of('t', 'a')).toBe(PREFETCH_PER_PARALLELISM);

    const busy = stateWith(10 * FIRST);
    // A member with a lease in flight gets nothing this round: it is judged once that lease applied.
    runOut(busy, depths, new Set(['a']));
    expect(depths.of('t', 'a')).toBe(PREFETCH_PER_PARALLELISM);
    depths.update(busy.state, NONE);
    expect(depths.of('t', 'a')).toBe(MAX_PREFETCH_PER_PARALLELISM);
  });

  it('forgets a member that no longer consumes the topic', () => {
    const t = stateWith(10 * FIRST);
    const depths = new PrefetchDepths();
    runOut(t, depths);
    expect(depths.of('t', 'a')).toBe(MAX_PREFETCH_PER_PARALLELISM);
    t.state.apply(100, { type: 'unconsume', topic: 't', member: 'a' });
    depths.update(t.state, NONE);
    t.state.apply(101, { type: 'consume', topic: 't', member: 'a', settings: SETTINGS });
    depths.update(t.state, NONE);
    expect(depths.of('t', 'a')).toBe(PREFETCH_PER_PARALLELISM);
  });
});
