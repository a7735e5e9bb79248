/**
 * The serial phases of the raft bench (the cold commits, the warm-up, the warm serial commits),
 * run for cronraft and its peer (etcd) at once, in alternating windows. Run one system after
 * the other, each measured its own minutes of a shared machine: on this one other work came and
 * went meanwhile (the load average rose from 1.7 to 11 within one run), so a tail could tell
 * which system went first rather than which was faster. Windows of a few hundred milliseconds,
 * alternating, give both the same load, as the codec bench's alternating windows do.
 */
import { processesCpuMs } from './proc-cpu.js';

/** One system's serial commits, one after another, and the processes whose CPU they cost. */
export interface SerialSide {
  /** `count` commits one after another; their latencies, ms. */
  commits(count: number): Promise<number[]>;
  /** Every member process; a side with a pid unknown or gone has no CPU figure. */
  pids(): ReadonlyArray<number | undefined>;
}

export interface SerialPhasesOptions {
  /** Commits of the cold phase, counted from the start of each system. */
  readonly coldCommits: number;
  /** Serial commits of each system before measuring, until their latencies add up to this. */
  readonly warmupMs: number;
  readonly serialCount: number;
}

/** What one side measured; `error` once it failed, after which it took no more turns. */
export interface SerialPhasesResult {
  readonly cold: number[];
  readonly serial: number[];
  /** CPU of the side's processes per serial commit, in its own windows alone; null without /proc. */
  serialCpuUsPerCommit: number | null;
  error: unknown;
}

/**
 * Commits per window: each window takes a few hundred milliseconds, short beside the way other
 * work on the machine comes and goes, and long beside a switch between the systems.
 */
export const WINDOW_COMMITS = 100;

/**
 * The serial phases for every side at once: each phase in rounds, each round a window of each
 * side in turn, the order rotating by one each round so that no side always follows the other.
 * A side that fails is left out of the rounds after it (its error kept); the others go on.
 */
export async function serialPhases(sides: readonly SerialSide[], o: SerialPhasesOptions): Promise<SerialPhasesResult[]> {
  const results: SerialPhasesResult[] = sides.map(() => ({ cold: [], serial: [], serialCpuUsPerCommit: null, error: null }));
  const cpuMs: Array<number | null> = sides.map(() => 0);
  /** One round: `turn(i)` for each live side, in the rotated order. */
  const round = async (r: number, turn: (i: number) => Promise<void>): Promise<void> => {
    for (let k = 0; k < sides.length; k++) {
      const i = (r + k) % sides.length;
      if ((results[i] as SerialPhasesResult).error !== null) continue;
      try {
        await turn(i);
      } catch (error) {
        (results[i] as SerialPhasesResult).error = error;
      }
    }
  };
  const live = (): boolean => results.some((x) => x.error === null);

  for (let r = 0; live() && results.some((x) => x.error === null && x.cold.length < o.coldCommits); r++) {
    await round(r, async (i) => {
      const res = results[i] as SerialPhasesResult;
      const n = Math.min(WINDOW_COMMITS, o.coldCommits - res.cold.length);
      if (n > 0) res.cold.push(...(await (sides[i] as SerialSide).commits(n)));
    });
  }

  const warmed = sides.map(() => 0);
  for (let r = 0; live() && warmed.some((ms, i) => (results[i] as SerialPhasesResult).error === null && ms < o.warmupMs); r++) {
    await round(r, async (i) => {
      if ((warmed[i] as number) >= o.warmupMs) return;
      // Its own time is the time its commits took, as each side measures it.
      const latencies = await (sides[i] as SerialSide).commits(2 * WINDOW_COMMITS);
      warmed[i] = latencies.reduce((a, b) => a + b, warmed[i] as number);
    });
  }

  for (let r = 0; live() && results.some((x) => x.error === null && x.serial.length < o.serialCount); r++) {
    await round(r, async (i) => {
      const res = results[i] as SerialPhasesResult;
      const n = Math.min(WINDOW_COMMITS, o.serialCount - res.serial.length);
      if (n <= 0) return;
      const side = sides[i] as SerialSide;
      const before = processesCpuMs(side.pids());
      res.serial.push(...(await side.commits(n)));
      const after = processesCpuMs(side.pids());
      const sum = cpuMs[i] as number | null;
      cpuMs[i] = sum === null || before === null || after === null ? null : sum + after - before;
    });
  }
  results.forEach((res, i) => {
    const ms = cpuMs[i] as number | null;
    res.serialCpuUsPerCommit = ms === null || res.serial.length === 0 ? null : (ms / res.serial.length) * 1000;
  });
  return results;
}
