import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Linux's clock ticks per second, in which /proc reports CPU time (almost always 100). */
function clockTicksPerSecond(): number {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return Number.isInteger(ticks) && ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
}

let ticksPerSecond: number | undefined;

/**
 * The CPU time, user and system, that processes have used so far, in ms, from /proc: every
 * thread counted (the libuv thread pool, V8's GC helpers), for any program, so that cronraft
 * members and etcd members are measured the same way. Null where there is no /proc (not Linux)
 * or a process is gone.
 */
export function processesCpuMs(pids: readonly (number | undefined)[]): number | null {
  ticksPerSecond ??= clockTicksPerSecond();
  let total = 0;
  for (const pid of pids) {
    if (pid === undefined) return null;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return null;
    }
    // The command name, in parentheses, may hold spaces: the fields are counted after it.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    total += Number(fields[11]) + Number(fields[12]);
  }
  return (total / ticksPerSecond) * 1000;
}

/** CPU per commit in µs between two readings of processesCpuMs, or null if either failed. */
export function cpuPerCommitUs(before: number | null, after: number | null, commits: number): number | null {
  return before === null || after === null || commits === 0 ? null : ((after - before) / commits) * 1000;
}
