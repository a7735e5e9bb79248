import { describe, expect, it } from 'vitest';
import type { ClusterState } from '../../src/api/state.js';
import { StateJson } from '../../src/http/state-json.js';

type Job = ClusterState['jobs'][number];

/** A frozen job view, as JobStates hands them out, that counts how often it is written as JSON. */
function job(name: string, writes: { count: number }): Job {
  const view = { name, spec: 'every 1000', mode: 'one', handlers: ['a'], conflicts: {}, nextSlot: new Date(Date.UTC(2030, 0, 1)), lastClaim: null, missedSlots: 0, skippedRuns: 0, running: [] };
  Object.defineProperty(view, 'toJSON', {
    value: () => {
      writes.count++;
      return { ...view };
    },
  });
  return Object.freeze(view) as unknown as Job;
}

describe('StateJson', () => {
  it("writes the state as JSON.stringify does, and each job's text once while it is handed out again", () => {
    const writes = { count: 0 };
    const jobs = Object.freeze([job('a', writes), job('b', writes)]);
    const state = { id: 'm', term: 3, clock: { synced: true, clusterTime: new Date(0) }, jobs } as unknown as ClusterState;
    const json = new StateJson();
    const text = json.state(state);
    expect(writes.count).toBe(2);
    // The same list again, and a new list holding one job changed beside one handed out again.
    expect(json.state(state)).toBe(text);
    const changed = Object.freeze([jobs[0] as Job, job('b', writes)]);
    const changedText = json.jobs(changed);
    expect(writes.count).toBe(3);
    expect(JSON.parse(text)).toEqual(JSON.parse(JSON.stringify(state)));
    expect(JSON.parse(text).jobs[0].nextSlot).toBe('2030-01-01T00:00:00.000Z');
    expect(JSON.parse(changedText)).toEqual(JSON.parse(JSON.stringify(changed)));
  });
});
