import { spawn } from 'node:child_process';
import { accessSync, constants, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { dirname, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import type { Command } from 'commander';
import { parseDurationMs } from '../../simulations/duration.js';
import { FAULT_ALIASES, FAULT_NAMES, switchesFromNames } from '../../simulations/faults.js';
import type { FaultSwitches, SimulationOptions, SimulationResult } from '../../simulations/simulate.js';
import { InvalidArgumentError } from '../errors.js';
import { MAX_MEMBERS } from '../raft/configuration.js';
import { EXIT, type CliOutput } from './exit-codes.js';

/** `cronraft simulate`'s options, as commander parses them (every value a string but the switches). */
interface SimulateFlags {
  readonly seed?: string;
  readonly seeds?: string;
  readonly from: string;
  readonly members: string;
  readonly duration: string;
  readonly faults: string;
  readonly json: boolean;
  readonly report?: string;
  readonly proposals: string;
  readonly parallel: string;
  readonly fanout: string;
  readonly locks: string;
  readonly barriers: string;
  readonly deploy: string;
  readonly maxEmit?: string;
  readonly maxConcurrent?: string;
  readonly progress: string;
}

/**
 * `cronraft simulate`: runs the deterministic simulator (simulations/) on one seed or sweeps
 * many, and exits non-zero on a violated invariant with the command that replays it. `self`:
 * this command's script and its arguments as given, which a parallel sweep runs again.
 */
export function addSimulateCommand(program: Command, io: CliOutput, self: { readonly script: string; readonly argv: readonly string[] }, exit: (code: number) => void): void {
  program
    .command('simulate')
    .description('run the deterministic simulator on one seed or sweep many; exits 1 on a violated invariant, printing the command that replays it')
    .option('--seed <n>', 'one seed')
    .option('--seeds <n>', 'how many seeds to sweep')
    .option('--from <n>', 'the first seed of a sweep', '1')
    .option('--members <n>', 'members of the simulated cluster', '5')
    .option('--duration <time>', 'simulated time per seed, with its unit (60s, 10m)', '60s')
    .option('--faults <list>', `faults to inject: ${FAULT_NAMES.join(',')} (skew is clock), or none`, FAULT_NAMES.join(','))
    .option('--json', 'one JSON line per seed', false)
    .option('--report <file>', 'one seed: an HTML timeline of the run')
    .option('--proposals <on|off>', "application proposals besides the scheduler's", 'on')
    .option('--parallel <n|auto>', 'a sweep in N processes; auto: one per core', '1')
    .option('--fanout <on|off|drawn>', 'fan-out in the swarm: in every seed, none, or drawn from the seed (about a quarter)', 'drawn')
    .option('--locks <on|off|drawn>', 'runExclusive in the swarm: in every seed, none, or drawn from the seed (about a quarter)', 'drawn')
    .option('--barriers <on|off|drawn>', 'read barriers in the swarm: in every seed, none, or drawn from the seed (about a quarter)', 'drawn')
    .option('--deploy <on|off|drawn>', "a rolling deploy that changes the default jobs' specs and policies: in every seed, none, or drawn from the seed (about a quarter)", 'drawn')
    .option('--max-emit <n>', "the largest emit of a run's fan-out")
    .option('--max-concurrent <n>', "runs at once on each member (Cluster's maxConcurrent option; default: no limit); more wait for a free one")
    .option('--progress <time>', 'a sweep without --json: a line on stderr of the seeds run so far, at most this often', '30s')
    .action(async (flags: SimulateFlags) => {
      exit(await runSimulate(flags, io, self));
    });
}

function faultSwitches(value: string): FaultSwitches {
  const names = value === 'none' ? [] : value.split(',').map((s) => s.trim());
  for (const name of names) {
    if (!(FAULT_NAMES as readonly string[]).includes(name) && FAULT_ALIASES[name] === undefined) {
      throw new InvalidArgumentError('--faults', value, `a list of ${FAULT_NAMES.join(', ')} (skew is clock), or none`);
    }
  }
  return switchesFromNames(names);
}

function positiveInt(value: string, option: string, max = Number.MAX_SAFE_INTEGER, min = 1): number {
  const n = Number(value);
  if (!/^\d+$/.test(value) || !Number.isSafeInteger(n) || n < min || n > max) throw new InvalidArgumentError(option, value, `an integer from ${min} to ${max}`);
  return n;
}

/** InvalidArgumentError unless `path` names a file that can be written: in a folder there is, and writable. */
function writableFile(path: string, option: string): void {
  try {
    accessSync(dirname(resolve(path)), constants.W_OK);
  } catch (error) {
    throw new InvalidArgumentError(option, path, `a file in a folder that exists and can be written (${error instanceof Error ? error.message : String(error)})`);
  }
}

/** `value` as one word of a POSIX shell, quoted when it needs to be: a replay command is pasted as it is printed. */
export function shellWord(value: string): string {
  return /^[\w./:=,+@%-]+$/.test(value) ? value : `'${value.replaceAll("'", `'\\''`)}'`;
}

/** The workloads of the swarm that each seed draws unless told: `--fanout on` (or `off`) sets fan-out for every seed, and so on. */
const SWARM_WORKLOADS = ['fanout', 'locks', 'barriers', 'deploy'] as const;

/** The swarm's workloads as simulate() takes them (none for `drawn`), and as the replay command gives them again. */
function swarmSwitches(values: SimulateFlags): { readonly options: Partial<Record<(typeof SWARM_WORKLOADS)[number], boolean>>; readonly flags: string } {
  const options: Partial<Record<(typeof SWARM_WORKLOADS)[number], boolean>> = {};
  let flags = '';
  for (const name of SWARM_WORKLOADS) {
    const value = values[name];
    if (value !== 'on' && value !== 'off' && value !== 'drawn') throw new InvalidArgumentError(`--${name}`, value, 'on, off or drawn');
    if (value === 'drawn') continue;
    options[name] = value === 'on';
    flags += ` --${name} ${value}`;
  }
  return { options, flags };
}

async function runSimulate(values: SimulateFlags, io: CliOutput, self: { readonly script: string; readonly argv: readonly string[] }): Promise<number> {
  // The simulator is loaded by the command that runs it: the other commands start without it.
  const [{ simulate }, { renderReport, reportInput }, { MAX_SIM_EMIT_BOUND, MAX_SIM_SEED }] = await Promise.all([import('../../simulations/simulate.js'), import('../../simulations/report/page.js'), import('../../simulations/world.js')]);
  const members = positiveInt(values.members, '--members', MAX_MEMBERS);
  const durationMs = parseDurationMs(values.duration, '--duration');
  const faults = faultSwitches(values.faults);
  if (values.proposals !== 'on' && values.proposals !== 'off') throw new InvalidArgumentError('--proposals', values.proposals, 'on or off');
  const proposals = values.proposals === 'on';
  const swarm = swarmSwitches(values);
  const maxEmit = values.maxEmit === undefined ? {} : { maxEmit: positiveInt(values.maxEmit, '--max-emit', MAX_SIM_EMIT_BOUND) };
  const maxConcurrent = values.maxConcurrent === undefined ? {} : { maxConcurrent: positiveInt(values.maxConcurrent, '--max-concurrent') };
  // One seed, or a sweep from --from: both asked for ran one seed, saying nothing of the sweep.
  if (values.seed !== undefined && values.seeds !== undefined) throw new InvalidArgumentError('--seeds', values.seeds, 'not with --seed, which runs one seed (a sweep starts at --from)');
  // Seed 0 is a seed as simulate() takes it: a seed a test found through the function replays here.
  const first = values.seed === undefined ? positiveInt(values.from, '--from', MAX_SIM_SEED, 0) : positiveInt(values.seed, '--seed', MAX_SIM_SEED, 0);
  const count = values.seed === undefined && values.seeds !== undefined ? positiveInt(values.seeds, '--seeds', MAX_SIM_SEED - first + 1) : 1;
  const started = performance.now();
  let simulatedMs = 0;
  const failed: SimulationResult[] = [];
  if (values.report !== undefined && count > 1) throw new InvalidArgumentError('--report', values.report, 'used with one seed (--seed N)');
  // Looked at before the run: a report that could not be written failed after it, with the exit
  // status of a violation.
  if (values.report !== undefined) writableFile(values.report, '--report');
  const replay = (r: SimulationResult): string =>
    `npx cronraft simulate --seed ${r.seed} --members ${members} --duration ${shellWord(values.duration)} --faults ${shellWord(values.faults)}${proposals ? '' : ' --proposals off'}${swarm.flags}${values.maxEmit === undefined ? '' : ` --max-emit ${shellWord(values.maxEmit)}`}${maxConcurrent.maxConcurrent === undefined ? '' : ` --max-concurrent ${maxConcurrent.maxConcurrent}`}`;
  const parallel = Math.min(values.parallel === 'auto' ? availableParallelism() : positiveInt(values.parallel, '--parallel'), count);
  const results = parallel > 1 ? inProcesses(self, first, count, parallel) : inThisProcess(simulate, first, count, { members, durationMs, faults, proposals, ...swarm.options, ...maxEmit, ...maxConcurrent, timeline: values.report !== undefined });
  // A sweep prints its results at its end: a long one (npm run sim:soak) says meanwhile how far it is.
  const progressMs = parseDurationMs(values.progress, '--progress');
  let progressAtMs = started;
  let ran = 0;
  for await (const result of results) {
    ran++;
    simulatedMs += result.simulatedMs;
    if (result.violations.length > 0) failed.push(result);
    if (!values.json && count > 1 && ran < count && performance.now() - progressAtMs >= progressMs) {
      progressAtMs = performance.now();
      io.err(`${ran} of ${count} seeds run, ${failed.length} violated an invariant, ${((progressAtMs - started) / 1000).toFixed(0)} s so far`);
    }
    if (values.report !== undefined) {
      const html = renderReport(reportInput(result, `${replay(result)} --report ${shellWord(values.report)}`));
      writeFileSync(values.report, html);
      if (!values.json) io.out(`report: ${values.report}`);
    }
    // The timeline is for the report; JSON lines stay one summary per seed.
    const { timeline: _timeline, ...summary } = result;
    if (values.json) io.out(JSON.stringify(summary));
    else if (count === 1 || result.violations.length > 0) report(result, io);
  }
  const wallMs = performance.now() - started;
  // A sweep process that died (out of memory, an exception) took its seeds with it: a sweep
  // that said nothing of them would pass on seeds it never ran.
  if (ran < count) {
    io.err(`cronraft: ${count - ran} of ${count} seed(s) did not run: a sweep process ended before its seeds did`);
    return EXIT.failed;
  }
  if (!values.json) {
    io.out(`${count} seed(s), ${(simulatedMs / 3_600_000).toFixed(2)} simulated hours in ${(wallMs / 1000).toFixed(1)} s (${(simulatedMs / wallMs).toFixed(0)}x real time); ${failed.length} violated an invariant`);
    for (const r of failed) io.out(`replay: ${replay(r)}`);
  }
  return failed.length > 0 ? EXIT.failed : EXIT.ok;
}

type Options = Omit<SimulationOptions, 'seed'>;

async function* inThisProcess(simulate: (options: SimulationOptions) => Promise<SimulationResult>, first: number, count: number, options: Options): AsyncGenerator<SimulationResult> {
  for (let seed = first; seed < first + count; seed++) yield await simulate({ ...options, seed });
}

/** Options a child of a parallel sweep is given its own value of. */
const SHARE_OPTIONS = ['--from', '--seeds', '--parallel'];

/**
 * A sweep split over `parallel` child processes of this command, each running a contiguous
 * share of the seeds with --json; results come back in the order they finish.
 */
async function* inProcesses(self: { readonly script: string; readonly argv: readonly string[] }, first: number, count: number, parallel: number): AsyncGenerator<SimulationResult> {
  const { argv } = self;
  // The child gets the same options but its own share of seeds, one process, JSON lines.
  const base = argv.filter((arg, i) => !SHARE_OPTIONS.includes(arg) && !SHARE_OPTIONS.includes(argv[i - 1] ?? '') && !SHARE_OPTIONS.some((o) => arg.startsWith(`${o}=`)));
  const share = Math.ceil(count / parallel);
  const queue: SimulationResult[] = [];
  let wake: (() => void) | null = null;
  let running = 0;
  for (let from = first; from < first + count; from += share) {
    const child = spawn(process.execPath, [self.script, ...base.filter((a) => a !== '--json'), '--json', '--from', String(from), '--seeds', String(Math.min(share, first + count - from))], { stdio: ['ignore', 'pipe', 'inherit'] });
    running++;
    createInterface({ input: child.stdout }).on('line', (line) => {
      // A line that is not a result (a child's stray output) is no seed run: the count says so.
      try {
        queue.push(JSON.parse(line) as SimulationResult);
      } catch {
        return;
      }
      wake?.();
    });
    child.on('close', () => {
      running--;
      wake?.();
    });
  }
  while (running > 0 || queue.length > 0) {
    const next = queue.shift();
    if (next !== undefined) yield next;
    else await new Promise<void>((resolve) => (wake = resolve));
  }
}

function report(r: SimulationResult, io: CliOutput): void {
  io.out(`seed ${r.seed}: ${r.violations.length === 0 ? 'ok' : 'VIOLATION'}; ${r.committed} entries committed, ${r.acknowledged} proposals acknowledged, ${r.crashes} crashes, ${r.delivered} messages delivered, ${r.dropped} dropped; trace ${r.traceHash}`);
  io.out(`  drawn: ${Object.entries(r.drawn).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  // The rest of the settings are Cluster's defaults (CLUSTER_DEFAULTS).
  const varied = Object.entries(r.varied);
  io.out(`  settings: ${varied.length === 0 ? "Cluster's defaults" : `Cluster's defaults but ${varied.map(([k, v]) => `${k}=${v}`).join(' ')}`}`);
  // What the seed ran besides the jobs, drawn or asked for (--locks on and the like): a stranger
  // could tell only from --json whether a mode had taken effect.
  const on = (ran: boolean): string => (ran ? 'on' : 'off');
  io.out(`  ran: fanout=${on(r.fanout !== null)} locks=${on(r.locks !== null)} barriers=${on(r.barriers !== null)} deploy=${on(r.deploy !== null)} membership=${r.membership.mode} versions=${r.versions.mode}`);
  for (const j of r.jobs) {
    const l = j.latenessMs;
    const byOutcome: Array<[number, string]> = [[j.failed, 'failed'], [j.aborted, 'aborted or interrupted'], [j.skipped, 'skipped or replaced'], [j.expired, 'expired'], [j.noOutcome, 'with no outcome yet']];
    const others = byOutcome.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
    const lateness = l === null ? 'none started' : `p50 ${l.p50.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms, max ${l.max.toFixed(1)} ms`;
    io.out(`  job ${j.name}: ${j.claimed} slots claimed, ${j.succeeded} succeeded${others.length > 0 ? ` (${others.join(', ')})` : ''}, ${j.missed} missed by catch-up; lateness of the first start ${lateness}`);
  }
  for (const v of r.violations) io.out(`  ${v}`);
}
