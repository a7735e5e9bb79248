import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { addSimulateCommand } from '../../src/cli/simulate-command.js';
import { CLUSTER_DEFAULTS } from '../../src/cluster-options.js';
import { switchesFromNames } from '../../simulations/faults.js';
import { drawSettings } from '../../simulations/settings.js';
import type { JobSummary } from '../../simulations/summary.js';
import { checkSecret } from '../../src/transport/cluster-secret.js';
import { expectedRow, tableRow } from '../fixtures/report-table.js';

const run = promisify(execFile);
/** The compiled command, as `npx cronraft` runs it (test/global-setup.ts builds first). */
const cli = join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');

async function cronraft(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { timeout: 60_000 });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('cronraft simulate', () => {
  it("runs a seed and prints its result as JSON, the same twice; with --report, writes a page whose table shows the JSON's job summaries, count for count", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'cronraft-report-'));
    try {
      const path = join(dir, 'run.html');
      // The second run is the same seed with a report: the run the page shows is the one the
      // replay command gives (recording its timeline changes nothing in it).
      const a = await cronraft('simulate', '--seed', '3', '--members', '3', '--duration', '3s', '--json');
      const b = await cronraft('simulate', '--seed', '3', '--members', '3', '--duration', '3s', '--report', path, '--json');
      expect([a.code, b.code]).toEqual([0, 0]);
      const result = JSON.parse(a.stdout) as { seed: number; violations: string[]; traceHash: string };
      expect(result).toMatchObject({ seed: 3, violations: [] });
      const { jobs, traceHash } = JSON.parse(b.stdout) as { jobs: JobSummary[]; traceHash: string };
      expect(traceHash).toBe(result.traceHash);
      const html = readFileSync(path, 'utf8');
      expect(jobs.reduce((n, j) => n + j.claimed, 0)).toBeGreaterThan(0);
      for (const job of jobs) expect(tableRow(html, job.name)).toEqual(expectedRow(job));
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('sweeps seeds and reports the speed, and how far it is on stderr as it goes', async () => {
    const r = await cronraft('simulate', '--seeds', '3', '--from', '10', '--members', '3', '--duration', '2s', '--progress', '1ms');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/3 seed\(s\), .* simulated hours in .* real time\); 0 violated an invariant/);
    // After each seed but the last (a sweep without it printed nothing until its end: hours, for npm run sim:soak).
    expect(r.stderr.trim().split('\n')).toEqual([expect.stringMatching(/^1 of 3 seeds run, 0 violated an invariant, \d+ s so far$/), expect.stringMatching(/^2 of 3 seeds run, 0/)]);
    // None at the default of 30 s in a sweep this short, and none with --json.
    expect((await cronraft('simulate', '--seeds', '2', '--from', '10', '--members', '3', '--duration', '2s')).stderr).toBe('');
    expect((await cronraft('simulate', '--seeds', '2', '--from', '10', '--members', '3', '--duration', '2s', '--json', '--progress', '1ms')).stderr).toBe('');
  });

  it("takes the issue's fault names, skew among them, and turns off the others", async () => {
    const r = await cronraft('simulate', '--seed', '5', '--members', '3', '--duration', '2s', '--faults', 'partition,skew,crash,loss', '--json');
    expect(r.code).toBe(0);
    const result = JSON.parse(r.stdout) as { drawn: Record<string, number> };
    // Disk stalls were not asked for.
    expect(result.drawn.diskStallPermille).toBe(0);
    expect(switchesFromNames(['partition', 'skew', 'crash', 'loss'])).toEqual({ partitions: true, clocks: true, crashes: true, loss: true, pauses: false, disks: false });
  });

  it('says in its summary which workloads the seed ran, asked for or drawn', async () => {
    const asked = await cronraft('simulate', '--seed', '4', '--members', '3', '--duration', '2s', '--locks', 'on', '--fanout', 'off', '--barriers', 'on', '--deploy', 'off');
    expect(asked.stdout).toMatch(/\n {2}ran: fanout=off locks=on barriers=on deploy=off membership=\S+ versions=\S+\n/);
  });

  it('says which settings the seed varied from the defaults, in its summary and its JSON', async () => {
    const { varied } = drawSettings(4, true);
    const text = await cronraft('simulate', '--seed', '4', '--members', '3', '--duration', '2s');
    expect(text.stdout).toContain(`settings: Cluster's defaults but ${Object.entries(varied).map(([k, v]) => `${k}=${v}`).join(' ')}`);
    const json = JSON.parse((await cronraft('simulate', '--seed', '4', '--members', '3', '--duration', '2s', '--json')).stdout) as { varied: unknown; settings: { timing: { requestTimeoutMs: number } } };
    expect(json.varied).toEqual(varied);
    expect(json.settings.timing.requestTimeoutMs).toBe(varied.requestTimeoutMs ?? CLUSTER_DEFAULTS.requestTimeoutMs);
  });

  it('runs fan-out in the seed with --fanout on and none with off; refuses a bad --fanout, --max-emit or --max-concurrent', async () => {
    const args = ['simulate', '--seed', '3', '--members', '3', '--duration', '3s', '--json'];
    const on = JSON.parse((await cronraft(...args, '--fanout', 'on', '--max-emit', '2')).stdout) as { fanout: { topics: string[] } | null };
    const off = JSON.parse((await cronraft(...args, '--fanout', 'off')).stdout) as { fanout: unknown };
    expect(on.fanout?.topics.length).toBeGreaterThan(0);
    expect(off.fanout).toBeNull();
    const bad = await cronraft('simulate', '--fanout', 'sometimes');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Invalid --fanout');
    expect((await cronraft('simulate', '--max-emit', '0')).stderr).toContain('Invalid --max-emit');
    expect((await cronraft('simulate', '--max-concurrent', '0')).stderr).toContain('Invalid --max-concurrent');
  });

  it('runs runExclusive’s calls, read barriers and a deploy in the seed with --locks on, --barriers on and --deploy on, and none with off; refuses a bad --locks, --barriers or --deploy', async () => {
    const args = ['simulate', '--seed', '3', '--members', '3', '--duration', '3s', '--json'];
    const on = JSON.parse((await cronraft(...args, '--locks', 'on', '--barriers', 'on', '--deploy', 'on')).stdout) as { locks: { names: string[] } | null; barriers: { asked: number } | null; deploy: { jobsChanged: string[] } | null };
    const off = JSON.parse((await cronraft(...args, '--locks', 'off', '--barriers', 'off', '--deploy', 'off')).stdout) as { locks: unknown; barriers: unknown; deploy: unknown };
    expect(on.locks?.names.length).toBeGreaterThan(0);
    expect(on.barriers?.asked).toBeGreaterThan(0);
    expect(on.deploy?.jobsChanged).toEqual(['every-second', 'cron-5s', 'all-members', 'flaky']);
    expect([off.locks, off.barriers, off.deploy]).toEqual([null, null, null]);
    expect((await cronraft('simulate', '--deploy', 'sometimes')).stderr).toContain('Invalid --deploy');
    const bad = await cronraft('simulate', '--locks', 'sometimes');
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('Invalid --locks');
    expect((await cronraft('simulate', '--barriers', 'sometimes')).stderr).toContain('Invalid --barriers');
  });

  it('rejects a bad option with the usage and exit status 2', async () => {
    const r = await cronraft('simulate', '--faults', 'gremlins');
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('Invalid --faults');
  });

  it('refuses a seed past 32 bits, more members than a configuration holds, and a duration that rounds to nothing, with exit status 2', async () => {
    // A seed of 2^53 ran no seed and said so with exit 0; past 2^32 a seed replayed a smaller
    // one's faults; 257 members simulated a cluster that cannot form, for minutes; 0.4ms ran
    // with no fault phase at all.
    for (const [args, option] of [
      [['--seed', '9007199254740993'], '--seed'],
      [['--seed', '4294967296'], '--seed'],
      [['--from', '4294967290', '--seeds', '10'], '--seeds'],
      [['--members', '257'], '--members'],
      [['--duration', '0.4ms'], '--duration'],
      [['--seed', '-1'], '--seed'],
      [['--seed', '1.5'], '--seed'],
      // Both ran one seed, saying nothing of the sweep asked for.
      [['--seed', '5', '--seeds', '2'], '--seeds'],
      // A stranger's --duration 30 ran 30 ms; --max-emit 100000 failed or not by the seed, naming
      // maxPending; a report to a folder that is not there failed after the run, with exit 1.
      [['--duration', '30'], '--duration'],
      [['--max-emit', '25001'], '--max-emit'],
      [['--seed', '1', '--report', '/nonexistent-folder/run.html'], '--report'],
    ] as const) {
      const r = await cronraft('simulate', ...args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).toContain(`Invalid ${option}`);
    }
  });

  it('replays seed 0, which simulate() takes (it refused it with exit status 2)', async () => {
    const r = await cronraft('simulate', '--seed', '0', '--members', '3', '--duration', '1s');
    expect({ code: r.code, stderr: r.stderr }).toEqual({ code: 0, stderr: '' });
    expect(r.stdout).toMatch(/^seed 0: ok/);
  });

  it('fails a parallel sweep whose process ended before its seeds did, naming how many did not run', async () => {
    // A child that died took its seeds with it, and the sweep said "0 violated an invariant".
    const dir = mkdtempSync(join(tmpdir(), 'cronraft-sweep-'));
    try {
      // Each child runs one seed of its share, then dies.
      const script = join(dir, 'dying-child.mjs');
      writeFileSync(script, `const from = Number(process.argv[process.argv.indexOf('--from') + 1]);\nconsole.log(JSON.stringify({ seed: from, simulatedMs: 1, violations: [] }));\nconsole.log('not a result');\nprocess.exit(3);\n`);
      const out: string[] = [];
      const err: string[] = [];
      const program = new Command().exitOverride();
      let code = -1;
      addSimulateCommand(program, { out: (t) => out.push(t), err: (t) => err.push(t) }, { script, argv: ['simulate', '--seeds', '4', '--parallel', '2'] }, (c) => (code = c));
      await program.parseAsync(['simulate', '--seeds', '4', '--parallel', '2'], { from: 'user' });
      await expect.poll(() => code, { timeout: 10_000 }).toBe(1);
      expect(err.join('\n')).toContain('2 of 4 seed(s) did not run');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('prints a replay command that a shell takes as it is: values with spaces or quotes quoted', async () => {
    const dir = mkdtempSync(join(tmpdir(), "cronraft ci's runs-"));
    try {
      const path = join(dir, 'run.html');
      const r = await cronraft('simulate', '--seed', '2', '--members', '1', '--duration', '1ms', '--faults', 'partition, clock', '--proposals', 'off', '--max-concurrent', '2', '--report', path);
      expect(r.code).toBe(0);
      const command = /npx cronraft simulate [^<]*/.exec(readFileSync(path, 'utf8'))?.[0] ?? '';
      // The page escapes its text: what a reader copies is the command unescaped.
      const copied = command.replaceAll('&#39;', "'").replaceAll('&quot;', '"').replaceAll('&amp;', '&').trim();
      expect(copied).toContain("--faults 'partition, clock'");
      // Run by a shell, it replays the run (the same seed, without its report).
      const { stdout } = await run('sh', ['-c', `${copied.replace(/^npx cronraft/, `"${process.execPath}" "${cli}"`)} --json`], { timeout: 60_000 });
      // The replay runs with the members' maxConcurrent too.
      expect(JSON.parse(stdout.trim().split('\n').at(-1) ?? '')).toMatchObject({ seed: 2, settings: { timing: { maxConcurrent: 2 } } });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('cronraft secret', () => {
  it('prints a new secret each time, one that every member accepts', async () => {
    const [a, b] = [await cronraft('secret'), await cronraft('secret')];
    expect([a.code, b.code]).toEqual([0, 0]);
    const secret = a.stdout.trim();
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect(b.stdout.trim()).not.toBe(secret);
    expect(checkSecret(secret, 'secret')).toBe(secret);
  });
});

describe('cronraft, its start', () => {
  it('starts without loading the simulator or a member, as the commands that operate a cluster do', async () => {
    // Each command loaded the whole simulator and library first (about 250 modules, half a
    // second) though only `simulate` runs it; `simulate`'s options still name the faults and read
    // durations. A loader hook prints every module the process loads.
    const dir = mkdtempSync(join(tmpdir(), 'cronraft-modules-'));
    try {
      const hooks = join(dir, 'hooks.mjs');
      writeFileSync(hooks, `export async function load(url, context, next) { if (url.startsWith('file:')) process.stderr.write('loaded ' + url + '\\n'); return next(url, context); }\n`);
      const register = `data:text/javascript,${encodeURIComponent(`import { register } from 'node:module'; register(${JSON.stringify(pathToFileURL(hooks).href)});`)}`;
      for (const args of [['secret'], ['status', '--url', 'http://127.0.0.1:9']]) {
        const r = await run(process.execPath, ['--import', register, cli, ...args], { timeout: 60_000 }).catch((error: unknown) => error as { stderr: string });
        const loaded = r.stderr.split('\n').filter((line) => line.startsWith('loaded '));
        expect(loaded.length, args.join(' ')).toBeGreaterThan(0);
        expect(loaded.filter((line) => /\/simulations\/(?!faults\.js|duration\.js)|\/src\/runtime\/(?!clock-sync\.js)|\/libp2p|\/classic-level\//.test(line)), args.join(' ')).toEqual([]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
