import { describe, expect, it } from 'vitest';
import type { ClusterState } from '../../src/api/state.js';
import { byteLength, STATE_JSON_BLOCK_JOBS, StateJson } from '../../src/http/state-json.js';

type Job = ClusterState['jobs'][number];

/** A frozen job view, as JobStates hands them out, that counts how often it is written as JSON. */
function job(name: string, writes: { count: number }, missedSlots = 0): Job {
  const view = { name, spec: 'every 1000', mode: 'one', handlers: ['a'], conflicts: {}, nextSlot: new Date(Date.UTC(2030, 0, 1)), lastClaim: null, missedSlots, skippedRuns: 0, running: [] };
  Object.defineProperty(view, 'toJSON', {
    value: () => {
      writes.count++;
      return { ...view };
    },
  });
  return Object.freeze(view) as unknown as Job;
}

const text = (pieces: readonly Uint8Array[]): string => {
  const joined = Buffer.concat(pieces);
  expect(joined.length).toBe(byteLength(pieces));
  return joined.toString('utf8');
};

describe('StateJson', () => {
  it("writes the state as JSON.stringify does, and each job's text once while it is handed out again", () => {
    const writes = { count: 0 };
    const jobs = Object.freeze([job('a', writes), job('b', writes)]);
    const state = { id: 'm', term: 3, clock: { synced: true, clusterTime: new Date(0) }, jobs } as unknown as ClusterState;
    const json = new StateJson();
    const written = text(json.state(state));
    expect(writes.count).toBe(2);
    // The same list again, and a new list holding one job changed beside one handed out again.
    expect(text(json.state(state))).toBe(written);
    const changed = Object.freeze([jobs[0] as Job, job('b', writes)]);
    const changedText = text(json.jobs(changed));
    expect(writes.count).toBe(3);
    expect(JSON.parse(written)).toEqual(JSON.parse(JSON.stringify(state)));
    expect(JSON.parse(written).jobs[0].nextSlot).toBe('2030-01-01T00:00:00.000Z');
    expect(JSON.parse(changedText)).toEqual(JSON.parse(JSON.stringify(changed)));
  });

  it('shows a change of one job among thousands in the next answer, writing only its block again', () => {
    const writes = { count: 0 };
    const count = STATE_JSON_BLOCK_JOBS * 3 + 5;
    const jobs = Object.freeze(Array.from({ length: count }, (_, i) => job(`job${i}`, writes)));
    const json = new StateJson();
    const first = json.jobs(jobs);
    expect(writes.count).toBe(count);
    // The same list: the same pieces, nothing written.
    expect(json.jobs(jobs)).toBe(first);
    expect(writes.count).toBe(count);
    expect(JSON.parse(text(first))).toEqual(JSON.parse(JSON.stringify(jobs)));

    // One job of the second block changed: the next answer shows it, the other blocks are the bytes kept.
    const changedAt = STATE_JSON_BLOCK_JOBS + 7;
    const changed = Object.freeze(jobs.map((j, i) => (i === changedAt ? job(j.name, writes, 1) : j)));
    const before = writes.count;
    const second = json.jobs(changed);
    expect(writes.count - before).toBe(1);
    expect(JSON.parse(text(second))[changedAt].missedSlots).toBe(1);
    expect(JSON.parse(text(second))).toEqual(JSON.parse(JSON.stringify(changed)));
    expect(second.filter((piece) => first.includes(piece)).length).toBe(first.length - 1);

    // A job gone and one more: the list as it is now, not as it was.
    const fewer = Object.freeze([...changed.slice(0, 3), ...changed.slice(4), job('new', writes)]);
    expect(JSON.parse(text(json.jobs(fewer)))).toEqual(JSON.parse(JSON.stringify(fewer)));
    const none = Object.freeze([] as Job[]);
    expect(text(json.jobs(none))).toBe('[]');
  });
});
