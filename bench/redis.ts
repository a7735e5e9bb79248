/**
 * Redis for the BullMQ comparison of the fan-out bench (bench/bullmq.ts): Debian's
 * `redis-server`, installed with apt-get when missing (as bench/etcd-cluster.ts does for etcd),
 * run as a child process on a free 127.0.0.1 port with a temporary directory, and stopped after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../test/fixtures/process-cluster.js';
import { ensureVersionedProgram } from '../test/fixtures/debian-package.js';
import { sleep } from './etcd-cluster.js';

/** Where Debian's redis-server package puts the server; the only place we look. */
export const REDIS_BIN = '/usr/bin/redis-server';
const VERSION_TIMEOUT_MS = 10_000;
/** Bound on Redis's start: it loads nothing (an empty directory) and listens within a few ms. */
const START_TIMEOUT_MS = 10_000;
const POLL_INTERVAL_MS = 20;
/** After SIGTERM Redis writes its append-only file and exits; past this it is killed. */
const STOP_TIMEOUT_MS = 5_000;

/**
 * Makes sure redis-server is installed, installing Debian's redis-server with apt-get if it is
 * not (saying so first). Returns the version, or why the comparison has to be skipped.
 */
export function ensureRedis(): Promise<{ version: string } | { skipped: string }> {
  return ensureVersionedProgram('redis-server', REDIS_BIN, /v=(\S+)/, VERSION_TIMEOUT_MS);
}

/** Whether something accepts TCP connections on 127.0.0.1:port. */
function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

/**
 * One redis-server on 127.0.0.1, its files in a temporary directory. Durable as BullMQ's guide
 * asks of production: the append-only file on, fsynced once a second (Redis's default policy
 * for it; an fsync per write is `always`); no RDB snapshots; maxmemory-policy noeviction.
 */
export class RedisServer {
  readonly port: number;
  readonly #dir: string;
  readonly #child: ChildProcess;
  /** The last lines Redis wrote, for an error message. */
  readonly #log: string[] = [];

  private constructor(port: number, dir: string, child: ChildProcess) {
    this.port = port;
    this.#dir = dir;
    this.#child = child;
    const keep = (chunk: Buffer): void => {
      this.#log.push(...chunk.toString('utf8').split('\n').filter((l) => l.length > 0));
      this.#log.splice(0, Math.max(0, this.#log.length - 20));
    };
    child.stdout?.on('data', keep);
    child.stderr?.on('data', keep);
  }

  static async start(): Promise<RedisServer> {
    const dir = await mkdtemp(join(tmpdir(), 'cronraft-redis-'));
    const port = await freePort();
    const args = ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'yes', '--appendfsync', 'everysec', '--maxmemory-policy', 'noeviction', '--daemonize', 'no'];
    const child = spawn(REDIS_BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    const server = new RedisServer(port, dir, child);
    const deadline = Date.now() + START_TIMEOUT_MS;
    while (!(await listening(port))) {
      if (child.exitCode !== null || Date.now() > deadline) {
        await server.stop();
        throw new Error(`redis-server did not listen on ${port} within ${START_TIMEOUT_MS} ms: ${server.#log.join(' | ')}`);
      }
      await sleep(POLL_INTERVAL_MS);
    }
    return server;
  }

  get pid(): number | undefined {
    return this.#child.pid;
  }

  async stop(): Promise<void> {
    const child = this.#child;
    if (child.exitCode === null && child.signalCode === null) {
      const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
      await exited;
      clearTimeout(timer);
    }
    await rm(this.#dir, { recursive: true, force: true });
  }
}
