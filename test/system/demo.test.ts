/**
 * `npm start`'s demo (examples/demo.ts), as the README's first line runs it: three member
 * processes elect a leader and run a job, and none outlives the demo, however it ends. Killed
 * with SIGTERM, it left its three members running, with their data.
 */
import { spawn, execFileSync, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';

const DEMO = fileURLToPath(new URL('../../dist/examples/demo.js', import.meta.url));
const WAIT_MS = 30_000;

interface Demo {
  readonly child: ChildProcess;
  readonly output: () => string;
  readonly exited: Promise<number | null>;
}

const started: Demo[] = [];
const roots: string[] = [];

afterEach(() => {
  for (const d of started.splice(0)) d.child.kill('SIGKILL');
  for (const root of roots.splice(0)) {
    for (const pid of membersOf(root)) process.kill(pid, 'SIGKILL');
    rmSync(root, { recursive: true, force: true });
  }
});

function demo(args: readonly string[] = []): Demo {
  const child = spawn(process.execPath, [DEMO, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let text = '';
  child.stdout?.on('data', (d: Buffer) => (text += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (text += d.toString()));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const d = { child, output: () => text, exited };
  started.push(d);
  return d;
}

/** Resolves with the demo's output once `pattern` shows in it; fails after WAIT_MS. */
async function waitFor(d: Demo, pattern: RegExp): Promise<string> {
  await expect.poll(d.output, { timeout: WAIT_MS, interval: 50 }).toMatch(pattern);
  return d.output();
}

/** The data directory the demo names in its first line. */
async function rootOf(d: Demo): Promise<string> {
  const root = /data in (\S+)/.exec(await waitFor(d, /data in \S+/))?.[1] as string;
  roots.push(root);
  return root;
}

/** The pids of the processes whose command line names `root`: the demo's members. */
function membersOf(root: string): number[] {
  const lines = execFileSync('ps', ['-eo', 'pid=,args='], { encoding: 'utf8' }).split('\n');
  return lines.filter((l) => l.includes(root)).map((l) => Number.parseInt(l.trim(), 10));
}

async function noMembersOf(root: string): Promise<void> {
  await expect.poll(() => membersOf(root), { timeout: WAIT_MS, interval: 100 }).toEqual([]);
}

describe('npm start (examples/demo.ts)', () => {
  it('runs its job on three members, then stops them and removes its data when its time is up', async () => {
    const d = demo(['--duration', '8']);
    const root = await rootOf(d);
    await waitFor(d, /ran "report"/);
    expect(membersOf(root)).toHaveLength(3);
    expect(await d.exited).toBe(0);
    await noMembersOf(root);
    expect(existsSync(root)).toBe(false);
  });

  it('stops its members on SIGTERM, and its members stop by themselves should it die of SIGKILL', async () => {
    const d = demo();
    const root = await rootOf(d);
    await waitFor(d, /ran "report"/);
    d.child.kill('SIGTERM');
    expect(await d.exited).toBe(0);
    await noMembersOf(root);
    expect(existsSync(root)).toBe(false);

    const killed = demo();
    const other = await rootOf(killed);
    await waitFor(killed, /ran "report"/);
    killed.child.kill('SIGKILL');
    await killed.exited;
    await noMembersOf(other);
  });
});
