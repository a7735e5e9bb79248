/**
 * The deployment examples run: the Docker Compose file (examples/compose/compose.yaml) and the
 * Kubernetes manifest (examples/kubernetes/cronraft.yaml) are read with `yaml`, and each
 * member's command and environment are taken from them and run as real processes of the HTTP
 * app (examples/http-app/, compiled: test/global-setup.ts builds first) on loopback. Docker and
 * Kubernetes themselves are not needed: the only change is a small, explicit mapping of the
 * members' names and ports to 127.0.0.1 and free ports, and of the data directory to a
 * temporary one (`localize`). Then: a leader is elected, /readyz turns 200 on every member, the
 * example's job runs once across the cluster, and SIGTERM stops a member cleanly (exit code 0).
 * The manifests' facts that an orchestrator acts on are asserted beside it.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { afterEach, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { MAX_PEERS, readConfig, shutdownDeadlineMs } from '../../examples/http-app/config.js';
import { freePort } from '../fixtures/process-cluster.js';

const root = join(import.meta.dirname, '..', '..');
/** Bound on every wait below: a member's start, an election, a slot, a stop, on a loaded machine. */
const WAIT_MS = 30_000;
/** How often a wait looks at its condition again. */
const POLL_MS = 50;
/** Bound on one HTTP request to a member. */
const REQUEST_TIMEOUT_MS = 5_000;
/** The ports the examples use inside their containers: the member's (libp2p) and the app's HTTP. */
const MEMBER_PORT = 7001;
const APP_PORT = 8080;
/** The namespace the Kubernetes test places its pods in (`metadata.namespace` of each pod). */
const NAMESPACE = 'default';

type Env = Record<string, string>;

/** A member as a manifest describes it: its command and its environment, before localize. */
interface MemberSpec {
  readonly name: string;
  readonly command: readonly string[];
  readonly env: Env;
}

// ---------------------------------------------------------------------------------------------
// Reading the manifests.

interface ComposeService {
  command: string[];
  environment: Env;
  env_file: string | string[];
  stop_grace_period: string;
  volumes: string[];
}

function readCompose(): { services: Record<string, ComposeService> } {
  // Compose reads YAML merge keys (`<<: *member`), which YAML 1.2 leaves to the parser.
  return parse(readFileSync(join(root, 'examples', 'compose', 'compose.yaml'), 'utf8'), { merge: true }) as { services: Record<string, ComposeService> };
}

/** Compose's members, with the env file's variables (the secrets) given by the test. */
function composeMembers(envFile: Env): MemberSpec[] {
  return Object.entries(readCompose().services).map(([name, service]) => ({ name, command: service.command, env: { ...envFile, ...service.environment } }));
}

interface K8sEnvVar {
  name: string;
  value?: string;
  valueFrom?: { fieldRef?: { fieldPath: string }; secretKeyRef?: { name: string; key: string } };
}
interface K8sContainer {
  command: string[];
  env: K8sEnvVar[];
  ports: Array<{ name: string; containerPort: number }>;
  readinessProbe: { httpGet: { path: string; port: string } };
  livenessProbe: { httpGet: { path: string; port: string } };
  volumeMounts: Array<{ name: string; mountPath: string }>;
}
interface K8sObject {
  kind: string;
  metadata: { name: string };
  spec: Record<string, unknown>;
}
interface StatefulSetSpec {
  serviceName: string;
  replicas: number;
  podManagementPolicy: string;
  template: { spec: { terminationGracePeriodSeconds: number; containers: K8sContainer[] } };
  volumeClaimTemplates: Array<{ metadata: { name: string } }>;
}

function readK8s(): K8sObject[] {
  return parseAllDocuments(readFileSync(join(root, 'examples', 'kubernetes', 'cronraft.yaml'), 'utf8'))
    .map((doc) => doc.toJS() as K8sObject | null)
    .filter((o): o is K8sObject => o !== null);
}

function statefulSet(objects: K8sObject[]): { name: string; spec: StatefulSetSpec; container: K8sContainer } {
  const sets = objects.filter((o) => o.kind === 'StatefulSet');
  expect(sets).toHaveLength(1);
  const set = sets[0] as K8sObject;
  const spec = set.spec as unknown as StatefulSetSpec;
  expect(spec.template.spec.containers).toHaveLength(1);
  return { name: set.metadata.name, spec, container: spec.template.spec.containers[0] as K8sContainer };
}

/**
 * A pod's environment as the kubelet makes it: `fieldRef` from the pod's own name and
 * namespace, `secretKeyRef` from the Secrets given, and `$(VAR)` replaced by the variables
 * defined before it.
 */
function podEnv(vars: readonly K8sEnvVar[], pod: { name: string; namespace: string }, secrets: Record<string, Env>): Env {
  const env: Env = {};
  for (const v of vars) {
    let value: string | undefined;
    if (v.value !== undefined) value = v.value.replace(/\$\(([A-Za-z_][A-Za-z0-9_]*)\)/g, (whole, name: string) => env[name] ?? whole);
    else if (v.valueFrom?.fieldRef?.fieldPath === 'metadata.name') value = pod.name;
    else if (v.valueFrom?.fieldRef?.fieldPath === 'metadata.namespace') value = pod.namespace;
    else if (v.valueFrom?.secretKeyRef !== undefined) value = secrets[v.valueFrom.secretKeyRef.name]?.[v.valueFrom.secretKeyRef.key];
    if (value === undefined) throw new Error(`the test cannot make the value of ${v.name}`);
    env[v.name] = value;
  }
  return env;
}

function k8sMembers(secrets: Record<string, Env>): MemberSpec[] {
  const { name, spec, container } = statefulSet(readK8s());
  return Array.from({ length: spec.replicas }, (_, i) => ({
    name: `${name}-${i}`,
    command: container.command,
    env: podEnv(container.env, { name: `${name}-${i}`, namespace: NAMESPACE }, secrets),
  }));
}

// ---------------------------------------------------------------------------------------------
// Running them on loopback.

interface Placement {
  /** The address each member's name stands for, in the manifest's `host:port` form. */
  readonly memberAddress: string;
  readonly port: number;
  readonly appPort: number;
  readonly dataDir: string;
}

/**
 * The mapping from a container's world to this machine's, the only change made to what the
 * manifests say: every member's address (`<its name>:7001`) to 127.0.0.1 and its free port, the
 * member's own listen addresses (`0.0.0.0:7001`, `0.0.0.0:8080`) to 127.0.0.1 and its ports, and
 * its data directory to a temporary one. Each variable is mapped item by item of its
 * comma-separated list, so that an address the mapping does not know stays as it is and fails
 * the check below.
 */
function localize(env: Env, self: Placement, all: readonly Placement[]): Env {
  const table = new Map<string, string>([
    ...all.map((p): [string, string] => [p.memberAddress, `127.0.0.1:${p.port}`]),
    [`0.0.0.0:${MEMBER_PORT}`, `127.0.0.1:${self.port}`],
    [`0.0.0.0:${APP_PORT}`, `127.0.0.1:${self.appPort}`],
  ]);
  const local: Env = {};
  for (const [name, value] of Object.entries(env)) {
    local[name] = name === 'CRONRAFT_DATA_DIR' ? self.dataDir : value.split(',').map((item) => table.get(item) ?? item).join(',');
  }
  for (const name of ['CRONRAFT_PEERS', 'CRONRAFT_LISTEN', 'CRONRAFT_ADVERTISE', 'APP_LISTEN']) {
    for (const address of (local[name] ?? '').split(',').filter((a) => a !== '')) expect(address, name).toMatch(/^127\.0\.0\.1:\d+$/);
  }
  return local;
}

interface LogLine {
  event?: string;
  job?: string;
  slot?: string;
  fencingToken?: number;
  member?: string;
  msg?: string;
}

class AppProcess {
  readonly lines: LogLine[] = [];
  readonly output: string[] = [];
  readonly exited: Promise<number | null>;
  readonly #child: ChildProcess;

  constructor(
    readonly name: string,
    readonly url: string,
    command: readonly string[],
    env: Env,
  ) {
    // The image's working directory holds the build as dist/ does here: the command's script
    // path is the same. Only PATH is kept from this process's environment.
    expect(command[0]).toBe('node');
    this.#child = spawn(process.execPath, command.slice(1), { cwd: root, env: { PATH: process.env.PATH ?? '', ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    for (const stream of [this.#child.stdout, this.#child.stderr]) {
      if (stream === null) continue;
      createInterface({ input: stream }).on('line', (line) => {
        this.output.push(line);
        try {
          this.lines.push(JSON.parse(line) as LogLine);
        } catch {
          // Not a log record (a stack trace, say): kept in output for the failure message.
        }
      });
    }
    this.exited = new Promise((resolve) => this.#child.once('exit', (code) => resolve(code)));
  }

  get running(): boolean {
    return this.#child.exitCode === null && this.#child.signalCode === null;
  }

  signal(signal: NodeJS.Signals): void {
    if (this.running) this.#child.kill(signal);
  }

  async get(path: string): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${this.url}${path}`, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    return { status: response.status, body: await response.json() };
  }

  async post(path: string, token: string, scheme = 'Bearer'): Promise<{ status: number; body: unknown }> {
    const response = await fetch(`${this.url}${path}`, { method: 'POST', headers: { authorization: `${scheme} ${token}` }, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    return { status: response.status, body: await response.json() };
  }

  runs(): LogLine[] {
    return this.lines.filter((l) => l.event === 'run');
  }
}

/** Waits until `check` returns a value other than undefined, looking every POLL_MS, at most WAIT_MS. */
async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, apps: readonly AppProcess[]): Promise<T> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const value = await Promise.resolve(check()).catch(() => undefined);
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${WAIT_MS} ms\n${apps.map((a) => `--- ${a.name}\n${a.output.slice(-30).join('\n')}`).join('\n')}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

const started: AppProcess[] = [];
const dirs: string[] = [];

async function startCluster(specs: readonly MemberSpec[], memberName: (spec: MemberSpec) => string): Promise<AppProcess[]> {
  const dir = mkdtempSync(join(tmpdir(), 'cronraft-examples-'));
  dirs.push(dir);
  const placements: Placement[] = [];
  for (const spec of specs) placements.push({ memberAddress: `${memberName(spec)}:${MEMBER_PORT}`, port: await freePort(), appPort: await freePort(), dataDir: join(dir, spec.name) });
  return specs.map((spec, i) => {
    const placement = placements[i] as Placement;
    const app = new AppProcess(spec.name, `http://127.0.0.1:${placement.appPort}`, spec.command, localize(spec.env, placement, placements));
    started.push(app);
    return app;
  });
}

afterEach(async () => {
  // Whatever a test left running is killed, not stopped: its assertions are done.
  for (const app of started.splice(0)) {
    app.signal('SIGKILL');
    await app.exited;
  }
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** /readyz turns 200 on every member, all naming one leader, one of them: returns which. */
async function waitForReady(apps: readonly AppProcess[]): Promise<{ index: number; id: string }> {
  const ready = await waitFor(
    'every member ready under one leader',
    async () => {
      const answers = await Promise.all(apps.map((a) => a.get('/readyz')));
      if (!answers.every((a) => a.status === 200)) return undefined;
      const leaders = new Set(answers.map((a) => (a.body as { leader: string }).leader));
      return leaders.size === 1 ? answers.map((a) => a.body as { leader: string; member: string }) : undefined;
    },
    apps,
  );
  const index = ready.findIndex((r) => r.member === r.leader);
  expect(index).toBeGreaterThanOrEqual(0);
  return { index, id: (ready[index] as { member: string }).member };
}

/** Runs of `job` at `slot` logged by every member. */
function runsAt(apps: readonly AppProcess[], job: string, slot: string): LogLine[] {
  return apps.flatMap((a) => a.runs().filter((r) => r.job === job && r.slot === slot));
}

/**
 * Waits until the slot's outcome is recorded in the log as succeeded (so its run is over), then
 * asserts that exactly one member ran it.
 */
async function expectRanOnce(apps: readonly AppProcess[], job: string, slot: string): Promise<void> {
  await waitFor(
    `${job} at ${slot} recorded succeeded`,
    async () => {
      const { body } = await apps[0]!.get(`/history?job=${encodeURIComponent(job)}&limit=50`);
      const entry = (body as { history: Array<{ slot: string; outcomes: Record<string, { outcome: string }> }> }).history.find((h) => h.slot === slot);
      return entry !== undefined && Object.values(entry.outcomes).some((o) => o.outcome === 'succeeded') ? true : undefined;
    },
    apps,
  );
  const runs = runsAt(apps, job, slot);
  expect(runs.map((r) => r.member)).toHaveLength(1);
}

/** Triggers `job` on a member until the cluster runs the version that has trigger, and returns the slot. */
async function triggerOnce(app: AppProcess, job: string, token: string, apps: readonly AppProcess[]): Promise<string> {
  // The refusal without the token is the route's own, before the cluster is asked.
  expect((await app.post(`/jobs/${job}/trigger`, 'not-the-token')).status).toBe(401);
  expect((await app.post(`/jobs/${job}/trigger`, token, 'Basic')).status).toBe(401);
  const answer = await waitFor(
    'a trigger answered',
    async () => {
      // The scheme in any case, as RFC 9110 has it.
      const a = await app.post(`/jobs/${job}/trigger`, token, 'bearer');
      // 409: the cluster version that has trigger is not in force yet (it rises by itself).
      return a.status === 409 ? undefined : a;
    },
    apps,
  );
  expect(answer.status, JSON.stringify(answer.body)).toBe(200);
  const triggered = answer.body as { job: string; slot: string; fencingToken: number };
  expect(triggered.job).toBe(job);
  return triggered.slot;
}

/** SIGTERM to the leader: it exits 0 having stopped cleanly, and the others elect another. */
async function expectCleanStop(apps: readonly AppProcess[], leader: { index: number; id: string }): Promise<void> {
  const victim = apps[leader.index] as AppProcess;
  victim.signal('SIGTERM');
  const code = await Promise.race([victim.exited, new Promise<'timeout'>((resolve) => setTimeout(() => resolve('timeout'), WAIT_MS))]);
  expect(code, victim.output.slice(-20).join('\n')).toBe(0);
  expect(victim.lines.some((l) => l.event === 'stopped')).toBe(true);
  const others = apps.filter((a) => a !== victim);
  await waitFor(
    'a new leader among the others',
    async () => {
      const answers = await Promise.all(others.map((a) => a.get('/readyz')));
      const leaders = new Set(answers.map((a) => (a.status === 200 ? (a.body as { leader: string }).leader : null)));
      return leaders.size === 1 && !leaders.has(null) && !leaders.has(leader.id) ? true : undefined;
    },
    apps,
  );
}

function secrets(): { secret: string; token: string } {
  return { secret: randomBytes(32).toString('base64url'), token: randomBytes(32).toString('base64url') };
}

/** A Compose or Kubernetes duration (`30s`, `1m30s`, `500ms`) in milliseconds. */
function durationMs(value: string): number {
  const parts = [...value.matchAll(/(\d+)(ms|s|m|h)/g)];
  expect(parts.map((p) => p[0]).join('')).toBe(value);
  const unit: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
  return parts.reduce((sum, p) => sum + Number(p[1]) * (unit[p[2] as string] as number), 0);
}

// ---------------------------------------------------------------------------------------------

describe('examples/http-app/config.ts', () => {
  it('refuses a bad variable at once, naming it, and never repeats the token', () => {
    const refused = (env: Env): string => {
      try {
        readConfig(env);
      } catch (error) {
        expect((error as { code?: string }).code).toBe('CRONRAFT_INVALID_ARGUMENT');
        return (error as Error).message;
      }
      throw new Error(`accepted ${JSON.stringify(env)}`);
    };
    expect(refused({ APP_LISTEN: '8080' })).toContain('APP_LISTEN');
    expect(refused({ APP_LISTEN: '0.0.0.0:99999' })).toContain('APP_LISTEN');
    expect(refused({ CRONRAFT_STOP_TIMEOUT_MS: '5s' })).toContain('CRONRAFT_STOP_TIMEOUT_MS');
    expect(refused({ CRONRAFT_STOP_TIMEOUT_MS: '600000' })).toContain('CRONRAFT_STOP_TIMEOUT_MS');
    expect(refused({ CRONRAFT_PEERS: Array.from({ length: MAX_PEERS + 1 }, (_, i) => `10.0.0.${i % 250}:${7000 + i}`).join(',') })).toContain('CRONRAFT_PEERS');
    const short = 'too-short-token';
    const message = refused({ APP_TOKEN: short });
    expect(message).toContain('APP_TOKEN');
    expect(message).not.toContain(short);
    expect(refused({ APP_TOKEN: 'has a space in it, sixteen+' })).toContain('APP_TOKEN');
  });

  it('takes the defaults the manifests rely on, and trims what it reads', () => {
    const config = readConfig({ CRONRAFT_PEERS: ' a:7001, b:7001 ,', APP_LISTEN: '[::1]:8080' });
    expect(config).toMatchObject({ peers: ['a:7001', 'b:7001'], listen: '0.0.0.0:7001', appHost: '::1', appPort: 8080, stopTimeoutMs: 5000, token: undefined });
    expect(shutdownDeadlineMs(config)).toBeGreaterThan(3 * config.stopTimeoutMs);
  });
});

describe('examples/compose/compose.yaml', () => {
  it('names three members that share one peer list, each advertising its service name, the secrets from an env file, a grace period above the shutdown deadline', () => {
    const { services } = readCompose();
    const names = Object.keys(services);
    expect(names).toHaveLength(3);
    for (const [name, service] of Object.entries(services)) {
      expect(service.environment.CRONRAFT_PEERS?.split(',')).toEqual(names.map((n) => `${n}:${MEMBER_PORT}`));
      expect(service.environment.CRONRAFT_ADVERTISE).toBe(`${name}:${MEMBER_PORT}`);
      // The secrets are never written in the file: they come from the env file.
      expect(service.env_file).toBe('cluster.env');
      expect(Object.keys(service.environment)).not.toContain('CRONRAFT_SECRET');
      expect(Object.keys(service.environment)).not.toContain('APP_TOKEN');
      const deadline = shutdownDeadlineMs(readConfig(service.environment));
      expect(durationMs(service.stop_grace_period)).toBeGreaterThan(deadline);
      // The data directory is on a volume, kept across restarts.
      expect(service.volumes.some((v) => (service.environment.CRONRAFT_DATA_DIR ?? '').startsWith(`${v.split(':')[1]}/`))).toBe(true);
    }
  });

  it('runs: a leader, /readyz 200 on each, the job once per slot (scheduled and triggered), SIGTERM exits 0', async () => {
    const { secret, token } = secrets();
    const apps = await startCluster(composeMembers({ CRONRAFT_SECRET: secret, APP_TOKEN: token }), (spec) => spec.name);
    expect((await waitFor('/healthz', () => apps[0]!.get('/healthz'), apps)).status).toBe(200);
    const leader = await waitForReady(apps);
    // A misspelt parameter is refused, not dropped (which answered every job's history), and a
    // name cronraft refuses is a 400, not a 500.
    expect(await apps[0]!.get('/history?jobs=report')).toMatchObject({ status: 400 });
    expect(await apps[0]!.get('/history?job=.')).toMatchObject({ status: 400, body: { error: { code: 'CRONRAFT_INVALID_ARGUMENT' } } });
    expect(await apps[0]!.get('/history?job=report&limit=2')).toMatchObject({ status: 200 });
    // The job `report` runs every 5 s, from its registration: its first slot, once.
    const first = await waitFor('a run of report', () => apps.flatMap((a) => a.runs()).find((r) => r.job === 'report')?.slot, apps);
    await expectRanOnce(apps, 'report', first);
    const slot = await triggerOnce(apps[(leader.index + 1) % apps.length] as AppProcess, 'report', token, apps);
    await expectRanOnce(apps, 'report', slot);
    await expectCleanStop(apps, leader);
  });
});

describe('examples/kubernetes/cronraft.yaml', () => {
  it('a StatefulSet of 3 behind a headless Service that publishes pods not ready, started in parallel, peers from the stable names, the secret from a Secret, a volume per member, a grace period above the shutdown deadline', () => {
    const objects = readK8s();
    const { name, spec, container } = statefulSet(objects);
    expect(spec.replicas).toBe(3);
    const service = objects.find((o) => o.kind === 'Service' && o.metadata.name === spec.serviceName);
    expect(service?.spec).toMatchObject({ clusterIP: 'None', publishNotReadyAddresses: true });
    // Under OrderedReady the second pod would wait for the first to be ready, which needs a majority.
    expect(spec.podManagementPolicy).toBe('Parallel');
    // The secrets come from a Secret made apart, never from this file.
    expect(objects.some((o) => o.kind === 'Secret')).toBe(false);
    const env = (n: string): K8sEnvVar | undefined => container.env.find((v) => v.name === n);
    expect(env('CRONRAFT_SECRET')?.valueFrom?.secretKeyRef).toEqual({ name: 'cronraft', key: 'secret' });
    expect(env('APP_TOKEN')?.valueFrom?.secretKeyRef).toEqual({ name: 'cronraft', key: 'token' });
    const pod = podEnv(container.env, { name: `${name}-1`, namespace: NAMESPACE }, { cronraft: { secret: 'x'.repeat(32), token: 'y'.repeat(32) } });
    const stable = (i: number): string => `${name}-${i}.${spec.serviceName}.${NAMESPACE}.svc.cluster.local:${MEMBER_PORT}`;
    expect(pod.CRONRAFT_PEERS?.split(',')).toEqual([0, 1, 2].map(stable));
    expect(pod.CRONRAFT_ADVERTISE).toBe(stable(1));
    // The probes ask the app's routes on its HTTP port (the runs below show they answer).
    const http = container.ports.find((p) => p.name === 'http');
    expect(http?.containerPort).toBe(Number(pod.APP_LISTEN?.split(':')[1]));
    expect(container.readinessProbe.httpGet).toEqual({ path: '/readyz', port: 'http' });
    expect(container.livenessProbe.httpGet).toEqual({ path: '/healthz', port: 'http' });
    expect(spec.template.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(shutdownDeadlineMs(readConfig(pod)));
    const data = container.volumeMounts.find((m) => spec.volumeClaimTemplates.some((t) => t.metadata.name === m.name));
    expect((pod.CRONRAFT_DATA_DIR ?? '').startsWith(`${data?.mountPath}/`)).toBe(true);
  });

  it('runs: the probes answer (/healthz, /readyz 200 under one leader), a triggered slot runs once, SIGTERM exits 0', async () => {
    const { secret, token } = secrets();
    const specs = k8sMembers({ cronraft: { secret, token } });
    const { spec } = statefulSet(readK8s());
    const apps = await startCluster(specs, (s) => `${s.name}.${spec.serviceName}.${NAMESPACE}.svc.cluster.local`);
    for (const app of apps) expect((await waitFor('/healthz', () => app.get('/healthz'), apps)).status).toBe(200);
    const leader = await waitForReady(apps);
    const slot = await triggerOnce(apps[(leader.index + 1) % apps.length] as AppProcess, 'report', token, apps);
    await expectRanOnce(apps, 'report', slot);
    await expectCleanStop(apps, leader);
  });
});
