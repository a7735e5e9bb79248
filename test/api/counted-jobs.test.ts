import { describe, expect, it } from 'vitest';
import type { ClusterState } from '../../src/api/state.js';
import { CountedJobs } from '../../src/http/counted-jobs.js';

type Job = ClusterState['jobs'][number];

const job = (name: string, missedSlots = 0, skippedRuns = 0): Job => Object.freeze({ name, spec: 'every 1000', mode: 'one', handlers: [], conflicts: {}, nextSlot: null, lastClaim: null, missedSlots, skippedRuns, running: [], paused: false });
const names = (counted: ReadonlyMap<string, Job>): string[] => [...counted.keys()].sort();

describe('CountedJobs', () => {
  it('holds the views with a missed or a skipped slot, and follows a view replaced at its place', () => {
    const counted = new CountedJobs();
    const a = job('a');
    const b = job('b', 2);
    const c = job('c', 0, 1);
    expect(names(counted.update([a, b, c]))).toEqual(['b', 'c']);
    // b's counts go to 0, a gets one: new views at their places.
    const a2 = job('a', 1);
    const b2 = job('b');
    const counts = counted.update([a2, b2, c]);
    expect(names(counts)).toEqual(['a', 'c']);
    expect(counts.get('a')).toBe(a2);
  });

  it('keeps a view that moved to another place, and drops a job gone', () => {
    const counted = new CountedJobs();
    const a = job('a', 1);
    const b = job('b', 1);
    const c = job('c', 1);
    counted.update([a, b, c]);
    // a removed: b and c move one place back, the same views.
    expect(names(counted.update([b, c]))).toEqual(['b', 'c']);
    // b moves after c; c's view at its old place is another job's.
    const d = job('d');
    expect(names(counted.update([c, d, b]))).toEqual(['b', 'c']);
    expect(names(counted.update([d]))).toEqual([]);
  });

  it('reads no view of a list it saw last, nor one at the place it was', () => {
    const counted = new CountedJobs();
    let reads = 0;
    const watched = (name: string): Job =>
      new Proxy(job(name), {
        get(target, key, receiver) {
          if (key === 'missedSlots' || key === 'skippedRuns') reads++;
          return Reflect.get(target, key, receiver) as unknown;
        },
      });
    const list = [watched('a'), watched('b'), watched('c')];
    counted.update(list);
    expect(reads).toBeGreaterThan(0);
    reads = 0;
    counted.update(list);
    counted.update([...list]);
    expect(reads).toBe(0);
    counted.update([list[0]!, job('b', 1), list[2]!]);
    expect(reads).toBe(0);
    expect(names(counted.update([list[0]!, job('b', 1), list[2]!]))).toEqual(['b']);
  });
});
