/**
 * Helpers for the etcd peer comparison (bench/etcd.ts): installing etcd 3.4 from Debian's
 * `etcd-server` package when it is missing, running a cluster of etcd members as child processes
 * on 127.0.0.1, and a minimal client for etcd 3.4's gRPC JSON gateway over node:http (no new
 * dependency).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { request, type Agent } from 'node:http';
import { createServer, type AddressInfo, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureVersionedProgram } from '../test/fixtures/debian-package.js';

/** Where Debian's etcd-server package puts the server; the only place we look. */
export const ETCD_BIN = '/usr/bin/etcd';
const HOST = '127.0.0.1';
const VERSION_TIMEOUT_MS = 10_000;
/** Bound on one /v3/maintenance/status call: a live member answers in a few ms. */
const STATUS_TIMEOUT_MS = 1_000;
const POLL_INTERVAL_MS = 50;
/** After SIGKILL the kernel reaps at once; this only guards against a hung wait. */
const EXIT_TIMEOUT_MS = 5_000;
/** Lines of each member's log kept for error messages (the rest is dropped unread). */
const LOG_TAIL_LINES = 30;
/** Characters of a gateway error body kept in the error message. */
const ERROR_BODY_CHARS = 200;

export const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Makes sure etcd is installed, installing Debian's etcd-server with apt-get if it is not.
 * Returns the version, or why the comparison has to be skipped.
 */
export function ensureEtcd(): Promise<{ version: string } | { skipped: string }> {
  return ensureVersionedProgram('etcd-server', ETCD_BIN, /etcd Version:\s*(\S+)/, VERSION_TIMEOUT_MS);
}

/**
 * Picks `n` distinct free ports by binding 127.0.0.1:0 (like freePort in
 * test/fixtures/process-cluster.ts), holding all of them until the last is bound so that the
 * kernel cannot hand out the same port twice.
 */
async function freePorts(n: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < n; i++) {
      const server = createServer();
      servers.push(server);
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(0, HOST, resolve);
      });
      ports.push((server.address() as AddressInfo).port);
    }
    return ports;
  } finally {
    await Promise.all(servers.map((s) => new Promise<void>((resolve) => (s.listening ? s.close(() => resolve()) : resolve()))));
  }
}

export class GatewayError extends Error {
  /** A short, stable description for counting errors by kind. */
  readonly kind: string;

  constructor(kind: string, message: string) {
    super(message);
    this.kind = kind;
  }
}

/** POSTs a JSON body to the gateway; resolves with the parsed reply of a 200, rejects otherwise. */
export function postJson(agent: Agent, port: number, path: string, body: string, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const req = request({ agent, host: HOST, port, path, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('error', (e) => fail(new GatewayError(`response ${e.message}`, e.message)));
      res.on('end', () => {
        clearTimeout(timer);
        const text = Buffer.concat(chunks).toString('utf8');
        if (res.statusCode !== 200) {
          // The gateway maps gRPC errors to HTTP statuses and puts the etcd error in the body.
          let detail = text.slice(0, ERROR_BODY_CHARS);
          try {
            detail = String((JSON.parse(text) as { error?: unknown }).error ?? detail);
          } catch {
            // Not JSON (e.g. a 404 page): keep the raw text.
          }
          reject(new GatewayError(`HTTP ${res.statusCode ?? '?'}: ${detail}`, `POST :${port}${path}: HTTP ${res.statusCode ?? '?'}: ${detail}`));
          return;
        }
        try {
          resolve(JSON.parse(text) as unknown);
        } catch {
          reject(new GatewayError('bad JSON', `POST :${port}${path}: bad JSON: ${text.slice(0, ERROR_BODY_CHARS)}`));
        }
      });
    });
    const fail = (e: GatewayError): void => {
      clearTimeout(timer);
      req.destroy();
      reject(e);
    };
    // A whole-request deadline, not a socket idle timeout: a put forwarded to a dead leader
    // must give up after exactly this long.
    const timer = setTimeout(() => fail(new GatewayError('timeout', `POST :${port}${path}: no reply within ${timeoutMs} ms`)), timeoutMs);
    req.on('error', (e: NodeJS.ErrnoException) => fail(new GatewayError(e.code ?? e.message, `POST :${port}${path}: ${e.message}`)));
    req.end(body);
  });
}

export interface MemberStatus {
  /** etcd member ids are uint64, so they stay decimal strings. */
  readonly memberId: string;
  /** "0" when the member knows no leader. */
  readonly leader: string;
  readonly raftIndex: number;
  readonly raftAppliedIndex: number;
}

export class EtcdMember {
  readonly name: string;
  readonly peerPort: number;
  readonly clientPort: number;
  readonly dataDir: string;
  child: ChildProcess | null = null;
  readonly log: string[] = [];
  #exited: Promise<void> = Promise.resolve();

  constructor(name: string, peerPort: number, clientPort: number, dataDir: string) {
    this.name = name;
    this.peerPort = peerPort;
    this.clientPort = clientPort;
    this.dataDir = dataDir;
  }

  get peerUrl(): string {
    return `http://${HOST}:${this.peerPort}`;
  }

  get running(): boolean {
    return this.child !== null && this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Starts etcd with default heartbeat, election timeout and fsync; only addresses are set. */
  start(initialCluster: string, state: 'new' | 'existing'): void {
    const clientUrl = `http://${HOST}:${this.clientPort}`;
    const child = spawn(
      ETCD_BIN,
      [
        '--name', this.name,
        '--data-dir', this.dataDir,
        '--listen-peer-urls', this.peerUrl,
        '--initial-advertise-peer-urls', this.peerUrl,
        '--listen-client-urls', clientUrl,
        '--advertise-client-urls', clientUrl,
        '--initial-cluster', initialCluster,
        '--initial-cluster-state', state,
        '--initial-cluster-token', 'cronraft-bench',
        // capnslog, 3.4's default, prints a deprecation warning; zap is the supported logger.
        '--logger', 'zap',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    this.child = child;
    this.log.length = 0;
    // The log must be drained or etcd blocks on a full pipe; the tail explains failures.
    child.stderr?.setEncoding('utf8').on('data', (chunk: string) => {
      this.log.push(...chunk.split('\n').filter((l) => l !== ''));
      if (this.log.length > LOG_TAIL_LINES) this.log.splice(0, this.log.length - LOG_TAIL_LINES);
    });
    child.on('error', (e) => this.log.push(`spawn error: ${e.message}`));
    this.#exited = new Promise((resolve) => child.once('exit', () => resolve()));
  }

  /** kill -9: no clean-up, no flush. Bounded, in case the exit is never reported. */
  async kill(): Promise<void> {
    if (!this.running) return;
    this.child?.kill('SIGKILL');
    await Promise.race([this.#exited, sleep(EXIT_TIMEOUT_MS)]);
  }

  async status(agent: Agent): Promise<MemberStatus> {
    const r = (await postJson(agent, this.clientPort, '/v3/maintenance/status', '{}', STATUS_TIMEOUT_MS)) as {
      header?: { member_id?: string };
      leader?: string;
      raftIndex?: string;
      raftAppliedIndex?: string;
    };
    // The gateway omits zero-valued fields, so a missing leader means "no leader".
    return { memberId: r.header?.member_id ?? '', leader: r.leader ?? '0', raftIndex: Number(r.raftIndex ?? 0), raftAppliedIndex: Number(r.raftAppliedIndex ?? 0) };
  }

  describe(): string {
    return `${this.name} (client :${this.clientPort}, ${this.running ? 'running' : `exited ${this.child?.exitCode ?? this.child?.signalCode ?? ''}`}):\n  ${this.log.slice(-5).join('\n  ')}`;
  }
}

/** Kills members left running if the bench exits abruptly (process.exit, uncaught error). */
const live = new Set<EtcdMember>();
process.once('exit', () => {
  for (const m of live) m.child?.kill('SIGKILL');
});

export class EtcdCluster {
  readonly root: string;
  readonly members: readonly EtcdMember[];

  private constructor(root: string, members: EtcdMember[]) {
    this.root = root;
    this.members = members;
  }

  static async create(size: number): Promise<EtcdCluster> {
    const root = await mkdtemp(join(tmpdir(), 'cronraft-etcd-'));
    try {
      const ports = await freePorts(2 * size);
      const members = Array.from({ length: size }, (_, i) => new EtcdMember(`m${i}`, ports[2 * i] as number, ports[2 * i + 1] as number, join(root, `m${i}`)));
      return new EtcdCluster(root, members);
    } catch (e) {
      await rm(root, { recursive: true, force: true });
      throw e;
    }
  }

  get initialCluster(): string {
    return this.members.map((m) => `${m.name}=${m.peerUrl}`).join(',');
  }

  startAll(): void {
    for (const m of this.members) this.start(m, 'new');
  }

  /** Restarts a killed member on its old data dir and ports. */
  restart(m: EtcdMember): void {
    this.start(m, 'existing');
  }

  private start(m: EtcdMember, state: 'new' | 'existing'): void {
    m.start(this.initialCluster, state);
    live.add(m);
  }

  /** Polls the running members until all of them answer and agree on one leader; returns it. */
  async waitForLeader(agent: Agent, timeoutMs: number): Promise<EtcdMember> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const running = this.members.filter((m) => m.running);
      // Without a majority of processes alive no leader can come; waiting would only hide that.
      if (running.length <= this.members.length / 2) throw new Error(`etcd: only ${running.length} of ${this.members.length} members are running\n${this.describe()}`);
      const statuses = await Promise.all(running.map((m) => m.status(agent).catch(() => null)));
      const leaders = new Set(statuses.map((s) => s?.leader ?? null));
      const leaderId = [...leaders][0];
      if (leaders.size === 1 && leaderId !== null && leaderId !== undefined && leaderId !== '0') {
        const leader = running.find((_, i) => statuses[i]?.memberId === leaderId);
        if (leader !== undefined) return leader;
      }
      if (Date.now() > deadline) throw new Error(`etcd: no agreed leader within ${timeoutMs} ms: ${JSON.stringify(statuses)}\n${this.describe()}`);
      await sleep(POLL_INTERVAL_MS);
    }
  }

  /** Waits until every running member has applied the leader's last log index. */
  async waitCaughtUp(agent: Agent, leader: EtcdMember, timeoutMs: number): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    const { raftIndex } = await leader.status(agent);
    for (const m of this.members.filter((x) => x.running)) {
      for (;;) {
        const s = await m.status(agent).catch(() => null);
        if (s !== null && s.raftAppliedIndex >= raftIndex) break;
        if (Date.now() > deadline) throw new Error(`etcd: ${m.name} did not reach index ${raftIndex} within ${timeoutMs} ms (at ${s?.raftAppliedIndex ?? 'n/a'})\n${this.describe()}`);
        await sleep(POLL_INTERVAL_MS);
      }
    }
  }

  describe(): string {
    return this.members.map((m) => m.describe()).join('\n');
  }

  async cleanup(): Promise<void> {
    await Promise.all(this.members.map((m) => m.kill()));
    for (const m of this.members) live.delete(m);
    await rm(this.root, { recursive: true, force: true });
  }
}
