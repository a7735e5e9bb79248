import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import type { ClusterState } from '../../src/api/state.js';
import { gzipPieces } from '../../src/http/gzip-pieces.js';
import { STATE_JSON_BLOCK_JOBS, StateJson } from '../../src/http/state-json.js';
import { STATE_WARM_BLOCKS_PER_TURN, STATE_WARM_EVERY_MS, StateWarmer } from '../../src/http/state-warmer.js';

type Job = ClusterState['jobs'][number];

/** A frozen job view that counts how often it is written as JSON. */
function job(name: string, writes: { count: number }): Job {
  const view = { name, spec: 'every 3600000', mode: 'one', handlers: ['a', 'b', 'c'], conflicts: {}, nextSlot: new Date(Date.UTC(2030, 0, 1)), lastClaim: null, missedSlots: 0, skippedRuns: 0, paused: false, running: [] };
  Object.defineProperty(view, 'toJSON', {
    value: () => {
      writes.count++;
      return { ...view };
    },
  });
  return Object.freeze(view) as unknown as Job;
}

const BLOCKS = 10;
const jobsOf = (writes: { count: number }): ClusterState['jobs'] => Object.freeze(Array.from({ length: BLOCKS * STATE_JSON_BLOCK_JOBS - 3 }, (_, i) => job(`job-${i}`, writes)));

describe('StateWarmer', () => {
  it('writes every job once, a few blocks a turn, so that an answer after it writes none', async () => {
    const writes = { count: 0 };
    const list = jobsOf(writes);
    const json = new StateJson();
    const warmer = new StateWarmer(() => list, json);
    // Turns of the event loop that other work had while the warmer ran.
    let turns = 0;
    let counting = true;
    const count = (): void => {
      turns++;
      if (counting) setImmediate(count);
    };
    setImmediate(count);
    await warmer.warm();
    counting = false;
    expect(writes.count).toBe(list.length);
    expect(turns).toBeGreaterThanOrEqual(Math.ceil(BLOCKS / STATE_WARM_BLOCKS_PER_TURN) - 1);
    // The answer's list: written already, to the JSON of the list, and compressed already.
    const pieces = json.jobs(list);
    expect(writes.count).toBe(list.length);
    expect(JSON.parse(Buffer.concat(pieces).toString())).toEqual(JSON.parse(JSON.stringify(list)));
    expect(writes.count).toBe(list.length * 2); // the line above wrote them once more, for the comparison
    expect(JSON.parse(gunzipSync(Buffer.concat(gzipPieces(pieces) ?? [])).toString())).toHaveLength(list.length);
  });

  it('writes again only the blocks of jobs changed since; a warm of a list warmed already writes nothing', async () => {
    const writes = { count: 0 };
    let list = jobsOf(writes);
    const json = new StateJson();
    const warmer = new StateWarmer(() => list, json);
    await warmer.warm();
    await warmer.warm();
    expect(writes.count).toBe(list.length);
    const changed = [...list];
    changed[STATE_JSON_BLOCK_JOBS + 1] = job('changed', writes);
    list = Object.freeze(changed);
    await warmer.warm();
    // One block of STATE_JSON_BLOCK_JOBS jobs, of which one job's view is new.
    expect(writes.count).toBe(BLOCKS * STATE_JSON_BLOCK_JOBS - 3 + 1);
    expect(json.warm(list, 0, Infinity).written).toHaveLength(0);
  });

  it('stops between turns once stopped', async () => {
    const writes = { count: 0 };
    const list = jobsOf(writes);
    const warmer = new StateWarmer(() => list, new StateJson());
    const warming = warmer.warm();
    warmer.stop();
    await warming;
    expect(writes.count).toBe(STATE_WARM_BLOCKS_PER_TURN * STATE_JSON_BLOCK_JOBS);
  });

  it('keeps running when state() throws, and warms once it answers again', async () => {
    const writes = { count: 0 };
    const list = jobsOf(writes);
    let failing = true;
    let failures = 0;
    const warmer = new StateWarmer(() => {
      if (failing) {
        failures++;
        throw new Error('state() failed');
      }
      return list;
    }, new StateJson());
    warmer.start();
    try {
      // Two looks failed (an unhandled rejection would fail the test run), then state() answers.
      await expect.poll(() => failures, { timeout: 50 * STATE_WARM_EVERY_MS }).toBeGreaterThanOrEqual(2);
      failing = false;
      await expect.poll(() => writes.count, { timeout: 5_000 }).toBe(list.length);
    } finally {
      warmer.stop();
    }
  });
});
