import { describe, expect, it } from 'vitest';
import { serialPhases, WINDOW_COMMITS, type SerialSide } from '../../bench/serial-sides.js';

/** A side whose every commit takes `ms`, recording each window it is asked for in `log`. */
function side(name: string, ms: number, log: string[], failAfter = Number.POSITIVE_INFINITY): SerialSide {
  let windows = 0;
  return {
    commits: (count) => {
      log.push(`${name}${count}`);
      if (++windows > failAfter) return Promise.reject(new Error(`${name} broke`));
      return Promise.resolve(Array.from({ length: count }, () => ms));
    },
    // No pid: no CPU figure, as where /proc cannot be read.
    pids: () => [undefined],
  };
}

describe('bench/serial-sides.ts: the serial phases of two systems in alternating windows', () => {
  it('gives each side its cold commits, warm-up and serial commits in windows taken in turn, the order rotating each round', async () => {
    const log: string[] = [];
    const [a, b] = await serialPhases([side('a', 1, log), side('b', 2, log)], { coldCommits: 2 * WINDOW_COMMITS + 10, warmupMs: 2 * WINDOW_COMMITS * 2, serialCount: WINDOW_COMMITS + 1 });
    const w = WINDOW_COMMITS;
    expect(log).toEqual([
      // Cold: three rounds, the last window only what is left; a first, then b first, then a.
      `a${w}`, `b${w}`, `b${w}`, `a${w}`, 'a10', 'b10',
      // Warm-up, in windows of twice as many, until each side's commits add up to warmupMs:
      // a (1 ms a commit) needs two windows, b (2 ms) one, and sits out the second round.
      `a${2 * w}`, `b${2 * w}`, `a${2 * w}`,
      // Serial: a window each, then what is left.
      `a${w}`, `b${w}`, 'b1', 'a1',
    ]);
    expect([a?.cold.length, b?.cold.length]).toEqual([2 * w + 10, 2 * w + 10]);
    expect(b?.serial).toEqual(Array.from({ length: w + 1 }, () => 2));
    expect([a?.error, b?.error, a?.serialCpuUsPerCommit]).toEqual([null, null, null]);
  });

  it('leaves a side that failed out of the later rounds, keeping its error, while the other goes on', async () => {
    const log: string[] = [];
    const [a, b] = await serialPhases([side('a', 1, log), side('b', 1, log, 1)], { coldCommits: 3 * WINDOW_COMMITS, warmupMs: 0, serialCount: WINDOW_COMMITS });
    expect(log).toEqual([`a${WINDOW_COMMITS}`, `b${WINDOW_COMMITS}`, `b${WINDOW_COMMITS}`, `a${WINDOW_COMMITS}`, `a${WINDOW_COMMITS}`, `a${WINDOW_COMMITS}`]);
    expect((b?.error as Error).message).toBe('b broke');
    expect(a?.error).toBeNull();
    expect([a?.cold.length, a?.serial.length, b?.cold.length]).toEqual([3 * WINDOW_COMMITS, WINDOW_COMMITS, WINDOW_COMMITS]);
  });
});
