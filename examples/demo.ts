/**
 * `npm start`: a local three-member cluster in one terminal. Each member is its own process
 * (examples/member.ts); their output is shown side by side with a prefix.
 *
 * Keys: k = kill -9 the leader, r = restart killed members, s = show who leads, q = quit.
 * Flags for a scripted run: --kill-leader-after <s>, --restart-after <s>, --duration <s>.
 */
import { fork, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const { values } = parseArgs({
  options: {
    'kill-leader-after': { type: 'string' },
    'restart-after': { type: 'string' },
    duration: { type: 'string' },
  },
});

const colors = ['\x1b[36m', '\x1b[33m', '\x1b[35m'];
const reset = '\x1b[0m';
const here = dirname(fileURLToPath(import.meta.url));
const root = mkdtempSync(join(tmpdir(), 'cronraft-demo-'));

interface Member {
  readonly name: string;
  readonly address: string;
  readonly color: string;
  child: ChildProcess | null;
}

async function freePort(): Promise<number> {
  return new Promise((resolve) => {
    const s = createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

const members: Member[] = [];
for (let i = 0; i < 3; i++) {
  members.push({ name: `m${i + 1}`, address: `127.0.0.1:${await freePort()}`, color: colors[i] as string, child: null });
}
const peers = members.map((m) => m.address).join(',');
let leader: string | null = null;

function say(text: string): void {
  console.log(`\x1b[1m[demo]${reset} ${text}`);
}

function start(m: Member): void {
  const child = fork(join(here, 'member.js'), ['--listen', m.address, '--peers', peers, '--data-dir', join(root, m.name), '--name', m.name], {
    stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
  });
  m.child = child;
  const prefix = `${m.color}[${m.name} ${m.address}]${reset} `;
  for (const stream of [child.stdout, child.stderr]) {
    if (stream !== null) createInterface({ input: stream }).on('line', (line) => console.log(prefix + line));
  }
  child.on('message', (msg: { event?: string; leader?: string | null }) => {
    if (msg.event === 'leader' && msg.leader !== undefined) leader = msg.leader;
  });
  child.on('exit', (code, signal) => {
    if (m.child === child) m.child = null;
    say(`${m.name} exited (${signal ?? code})`);
  });
}

function killLeader(): void {
  const victim = members.find((m) => m.address === leader && m.child !== null);
  if (victim === undefined) {
    say('no live leader to kill yet');
    return;
  }
  say(`kill -9 ${victim.name}, the leader: watch the others elect a new one`);
  victim.child?.kill('SIGKILL');
  leader = null;
}

function restartKilled(): void {
  for (const m of members) {
    if (m.child === null) {
      say(`restarting ${m.name} from its data directory: it keeps its log and catches up`);
      start(m);
    }
  }
}

/** How long quit() waits for a member to stop gracefully before it kills it. */
const STOP_WAIT_MS = 10_000;

async function quit(): Promise<void> {
  say('stopping all members');
  await Promise.all(
    members.map(
      (m) =>
        new Promise<void>((resolve) => {
          const child = m.child;
          if (child === null) return resolve();
          const killer = setTimeout(() => child.kill('SIGKILL'), STOP_WAIT_MS);
          child.once('exit', () => {
            clearTimeout(killer);
            resolve();
          });
          child.send('stop');
        }),
    ),
  );
  rmSync(root, { recursive: true, force: true });
  process.exit(0);
}

say(`three members on 127.0.0.1, data in ${root}`);
if (process.stdin.isTTY) say('keys: k = kill -9 the leader, r = restart killed members, s = show the leader, q = quit');
for (const m of members) start(m);

if (process.stdin.isTTY) {
  process.stdin.setRawMode(true);
  process.stdin.resume();
  process.stdin.on('data', (key: Buffer) => {
    const k = key.toString();
    if (k === 'k') killLeader();
    else if (k === 'r') restartKilled();
    else if (k === 's') say(`leader: ${leader ?? 'none known'}`);
    else if (k === 'q' || k === '\u0003') void quit();
  });
}

const seconds = (v: string | undefined): number | null => (v === undefined ? null : Number(v) * 1000);
const killAfter = seconds(values['kill-leader-after']);
const restartAfter = seconds(values['restart-after']);
const duration = seconds(values.duration);
if (killAfter !== null) {
  setTimeout(() => {
    killLeader();
    if (restartAfter !== null) setTimeout(restartKilled, restartAfter);
  }, killAfter);
}
if (duration !== null) setTimeout(() => void quit(), duration);
// A terminal's Ctrl-C, or a supervisor's SIGTERM: either way the members stop too (they also
// stop should this process die unasked, when their IPC channel closes: member.ts).
process.on('SIGINT', () => void quit());
process.on('SIGTERM', () => void quit());
