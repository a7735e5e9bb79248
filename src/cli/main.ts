#!/usr/bin/env node
/**
 * The `cronraft` command: `cronraft simulate`, which runs the deterministic simulator
 * (simulations/) on one seed or sweeps many, and exits non-zero on a violated invariant with the
 * command that replays it; and `cronraft secret`, which prints a new cluster secret.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseDurationMs } from '../../simulations/duration.js';
import { FAULT_ALIASES, FAULT_NAMES, switchesFromNames } from '../../simulations/faults.js';
import { renderReport, reportInput } from '../../simulations/report/page.js';
import { simulate, type FaultSwitches, type SimulationResult } from '../../simulations/simulate.js';
import { InvalidArgumentError } from '../errors.js';
import { generateSecret } from '../transport/cluster-secret.js';

const USAGE = `usage: cronraft secret  (prints a new random cluster secret: the \`secret\` option of every member)
       cronraft simulate [--seed N | --seeds N [--from N]] [--members N] [--duration 60s]
                         [--faults partition,loss,crash,clock,pause,disk | --faults none] [--json]
                         [--proposals on|off]  (application proposals besides the scheduler's)
                         [--parallel N|auto]  (a sweep in N processes; auto: one per core)
                         [--report run.html]  (one seed: an HTML timeline of the run)`;

function faultSwitches(value: string): FaultSwitches {
  const names = value === 'none' ? [] : value.split(',').map((s) => s.trim());
  for (const name of names) {
    if (!(FAULT_NAMES as readonly string[]).includes(name) && FAULT_ALIASES[name] === undefined) {
      throw new InvalidArgumentError('--faults', value, `a list of ${FAULT_NAMES.join(', ')} (skew is clock), or none`);
    }
  }
  return switchesFromNames(names);
}

function positiveInt(value: string, option: string): number {
  const n = Number(value);
  if (!Number.isInteger(n) || n <= 0) throw new InvalidArgumentError(option, value, 'a positive integer');
  return n;
}

async function main(argv: string[]): Promise<number> {
  const { positionals, values } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      seed: { type: 'string' },
      seeds: { type: 'string' },
      from: { type: 'string', default: '1' },
      members: { type: 'string', default: '5' },
      duration: { type: 'string', default: '60s' },
      faults: { type: 'string', default: FAULT_NAMES.join(',') },
      json: { type: 'boolean', default: false },
      report: { type: 'string' },
      proposals: { type: 'string', default: 'on' },
      parallel: { type: 'string', default: '1' },
      help: { type: 'boolean', default: false },
    },
  });
  if (!values.help && positionals[0] === 'secret' && positionals.length === 1) {
    console.log(generateSecret());
    return 0;
  }
  if (values.help || positionals[0] !== 'simulate') {
    console.log(USAGE);
    return values.help ? 0 : 2;
  }
  const members = positiveInt(values.members, '--members');
  const durationMs = parseDurationMs(values.duration, '--duration');
  const faults = faultSwitches(values.faults);
  if (values.proposals !== 'on' && values.proposals !== 'off') throw new InvalidArgumentError('--proposals', values.proposals, 'on or off');
  const proposals = values.proposals === 'on';
  const first = values.seed === undefined ? positiveInt(values.from, '--from') : positiveInt(values.seed, '--seed');
  const count = values.seed === undefined && values.seeds !== undefined ? positiveInt(values.seeds, '--seeds') : 1;
  const started = performance.now();
  let simulatedMs = 0;
  const failed: SimulationResult[] = [];
  if (values.report !== undefined && count > 1) throw new InvalidArgumentError('--report', values.report, 'used with one seed (--seed N)');
  const replay = (r: SimulationResult): string =>
    `npx cronraft simulate --seed ${r.seed} --members ${members} --duration ${values.duration} --faults ${values.faults}${proposals ? '' : ' --proposals off'}`;
  const parallel = Math.min(values.parallel === 'auto' ? availableParallelism() : positiveInt(values.parallel, '--parallel'), count);
  const results = parallel > 1 ? inProcesses(argv, first, count, parallel) : inThisProcess(first, count, { members, durationMs, faults, proposals, timeline: values.report !== undefined });
  for await (const result of results) {
    simulatedMs += result.simulatedMs;
    if (result.violations.length > 0) failed.push(result);
    if (values.report !== undefined) {
      const html = renderReport(reportInput(result, `${replay(result)} --report ${values.report}`));
      writeFileSync(values.report, html);
      if (!values.json) console.log(`report: ${values.report}`);
    }
    // The timeline is for the report; JSON lines stay one summary per seed.
    const { timeline: _timeline, ...summary } = result;
    if (values.json) console.log(JSON.stringify(summary));
    else if (count === 1 || result.violations.length > 0) report(result);
  }
  const wallMs = performance.now() - started;
  if (!values.json) {
    console.log(`${count} seed(s), ${(simulatedMs / 3_600_000).toFixed(2)} simulated hours in ${(wallMs / 1000).toFixed(1)} s (${(simulatedMs / wallMs).toFixed(0)}x real time); ${failed.length} violated an invariant`);
    for (const r of failed) console.log(`replay: ${replay(r)}`);
  }
  return failed.length > 0 ? 1 : 0;
}

type Options = Omit<Parameters<typeof simulate>[0], 'seed'>;

async function* inThisProcess(first: number, count: number, options: Options): AsyncGenerator<SimulationResult> {
  for (let seed = first; seed < first + count; seed++) yield await simulate({ ...options, seed });
}

/**
 * A sweep split over `parallel` child processes of this command, each running a contiguous
 * share of the seeds with --json; results come back in the order they finish.
 */
async function* inProcesses(argv: readonly string[], first: number, count: number, parallel: number): AsyncGenerator<SimulationResult> {
  const self = fileURLToPath(import.meta.url);
  // The child gets the same options but its own share of seeds, one process, JSON lines.
  const base = argv.filter((_, i) => !['--from', '--seeds', '--parallel'].includes(argv[i] ?? '') && !['--from', '--seeds', '--parallel'].includes(argv[i - 1] ?? ''));
  const share = Math.ceil(count / parallel);
  const queue: SimulationResult[] = [];
  let wake: (() => void) | null = null;
  let running = 0;
  for (let from = first; from < first + count; from += share) {
    const child = spawn(process.execPath, [self, ...base.filter((a) => a !== '--json'), '--json', '--from', String(from), '--seeds', String(Math.min(share, first + count - from))], { stdio: ['ignore', 'pipe', 'inherit'] });
    running++;
    createInterface({ input: child.stdout }).on('line', (line) => {
      queue.push(JSON.parse(line) as SimulationResult);
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

function report(r: SimulationResult): void {
  console.log(`seed ${r.seed}: ${r.violations.length === 0 ? 'ok' : 'VIOLATION'}; ${r.committed} entries committed, ${r.acknowledged} proposals acknowledged, ${r.crashes} crashes, ${r.delivered} messages delivered, ${r.dropped} dropped; trace ${r.traceHash}`);
  console.log(`  drawn: ${Object.entries(r.drawn).map(([k, v]) => `${k}=${v}`).join(' ')}`);
  // The rest of the settings are Cluster's defaults (CLUSTER_DEFAULTS).
  const varied = Object.entries(r.varied);
  console.log(`  settings: ${varied.length === 0 ? "Cluster's defaults" : `Cluster's defaults but ${varied.map(([k, v]) => `${k}=${v}`).join(' ')}`}`);
  for (const j of r.jobs) {
    const l = j.latenessMs;
    const byOutcome: Array<[number, string]> = [[j.failed, 'failed'], [j.aborted, 'aborted or interrupted'], [j.skipped, 'skipped or replaced'], [j.expired, 'expired'], [j.noOutcome, 'with no outcome yet']];
    const others = byOutcome.filter(([n]) => n > 0).map(([n, what]) => `${n} ${what}`);
    const lateness = l === null ? 'none started' : `p50 ${l.p50.toFixed(1)} ms, p99 ${l.p99.toFixed(1)} ms, max ${l.max.toFixed(1)} ms`;
    console.log(`  job ${j.name}: ${j.claimed} slots claimed, ${j.succeeded} succeeded${others.length > 0 ? ` (${others.join(', ')})` : ''}, ${j.missed} missed by catch-up; lateness of the first start ${lateness}`);
  }
  for (const v of r.violations) console.log(`  ${v}`);
}

main(process.argv.slice(2)).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    console.error(error instanceof Error ? error.message : String(error));
    console.error(USAGE);
    process.exitCode = 2;
  },
);
