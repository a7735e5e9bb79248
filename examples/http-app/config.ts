/**
 * The HTTP app's settings, read from environment variables only, so that the same image runs
 * under Docker Compose (examples/compose/) and Kubernetes (examples/kubernetes/) with nothing
 * but its environment changed. Every variable is checked here, before anything starts: a bad
 * one stops the app at once with InvalidArgumentError naming it.
 *
 * | variable | default | meaning |
 * |---|---|---|
 * | `CRONRAFT_PEERS` | none (a single member) | the founding members' addresses, comma-separated, the same on every member (its own included) |
 * | `CRONRAFT_LISTEN` | `0.0.0.0:7001` | where the member listens |
 * | `CRONRAFT_ADVERTISE` | `CRONRAFT_LISTEN` | the address the others know it by (its member id): needed with `0.0.0.0` |
 * | `CRONRAFT_DATA_DIR` | `/data` | the member's data directory: keep it across restarts |
 * | `CRONRAFT_SECRET` / `CRONRAFT_SECRET_FILE` | none | the cluster secret, or a file holding it |
 * | `CRONRAFT_STOP_TIMEOUT_MS` | `5000` | how long a graceful stop lets a run finish (the member's `stopTimeoutMs`) |
 * | `CRONRAFT_METRICS_LISTEN` | off | the member's own HTTP server (metrics, dashboard), e.g. `0.0.0.0:9464`; needs `APP_TOKEN` beyond loopback |
 * | `APP_LISTEN` | `0.0.0.0:8080` | the app's HTTP server (fastify): probes, jobs, trigger |
 * | `APP_TOKEN` | none | the bearer token `POST /jobs/:name/trigger` needs (16 to 1024 printable characters); without it, the action is refused |
 */
import { CLUSTER_DEFAULTS, InvalidArgumentError } from 'cronraft';

/** The app's settings, checked. */
export interface AppConfig {
  readonly peers: readonly string[];
  readonly listen: string;
  readonly advertise: string | undefined;
  readonly dataDir: string;
  readonly secret: string | undefined;
  readonly secretFile: string | undefined;
  readonly stopTimeoutMs: number;
  readonly metricsListen: string | undefined;
  readonly appHost: string;
  readonly appPort: number;
  readonly token: string | undefined;
}

/** Most founding members a peer list may name: a cluster votes with a handful, five by default. */
export const MAX_PEERS = 64;

/** The longest graceful stop the app lets its member ask for; longer would outlast any orchestrator's patience. */
export const MAX_STOP_TIMEOUT_MS = 60_000;

/** What the app's shutdown adds to the member's stop: closing its HTTP server and the process's exit. */
export const SHUTDOWN_MARGIN_MS = 2_000;

/** The shortest and longest `APP_TOKEN`, as cronraft's own `http.token`. */
export const MIN_TOKEN_LENGTH = 16;
export const MAX_TOKEN_LENGTH = 1024;

const HOST_PORT = /^(?:\[([0-9a-fA-F:.]+)\]|([a-zA-Z0-9.-]+)):(\d{1,5})$/;
const TOKEN_CHARS = /^[\x21-\x7e]+$/;

/**
 * The most a graceful `cluster.stop()` takes with this stop timeout: its runs finish (or are
 * reported interrupted) within it, the claims left settle for an election timeout, and a leader
 * then waits for its handover twice within it (the transfer, and a new leader heard of). An
 * orchestrator's grace period must exceed `shutdownDeadlineMs`, which adds the app's own margin,
 * or it kills the member in the middle of its handover.
 */
export function memberStopBoundMs(stopTimeoutMs: number): number {
  return 3 * stopTimeoutMs + CLUSTER_DEFAULTS.electionTimeoutMs;
}

/** The app's deadline for its whole shutdown, past which it exits with status 1. */
export function shutdownDeadlineMs(config: Pick<AppConfig, 'stopTimeoutMs'>): number {
  return memberStopBoundMs(config.stopTimeoutMs) + SHUTDOWN_MARGIN_MS;
}

/** Reads the settings from `env` (process.env by default). */
export function readConfig(env: NodeJS.ProcessEnv = process.env): AppConfig {
  const text = (name: string): string | undefined => {
    const value = env[name]?.trim();
    return value === undefined || value === '' ? undefined : value;
  };
  const peers = (text('CRONRAFT_PEERS') ?? '').split(',').map((p) => p.trim()).filter((p) => p !== '');
  // The member checks each address itself (new Cluster); the app only bounds the list.
  if (peers.length > MAX_PEERS) throw new InvalidArgumentError('CRONRAFT_PEERS', `${peers.length} addresses`, `at most ${MAX_PEERS}`);
  const app = hostPort(text('APP_LISTEN') ?? '0.0.0.0:8080', 'APP_LISTEN');
  const token = text('APP_TOKEN');
  if (token !== undefined && (token.length < MIN_TOKEN_LENGTH || token.length > MAX_TOKEN_LENGTH || !TOKEN_CHARS.test(token))) {
    // The token itself is never repeated in an error.
    throw new InvalidArgumentError('APP_TOKEN', `${token.length} characters`, `${MIN_TOKEN_LENGTH} to ${MAX_TOKEN_LENGTH} printable ASCII characters without spaces`);
  }
  return {
    peers,
    listen: text('CRONRAFT_LISTEN') ?? '0.0.0.0:7001',
    advertise: text('CRONRAFT_ADVERTISE'),
    dataDir: text('CRONRAFT_DATA_DIR') ?? '/data',
    secret: text('CRONRAFT_SECRET'),
    secretFile: text('CRONRAFT_SECRET_FILE'),
    stopTimeoutMs: milliseconds(text('CRONRAFT_STOP_TIMEOUT_MS') ?? '5000', 'CRONRAFT_STOP_TIMEOUT_MS', MAX_STOP_TIMEOUT_MS),
    metricsListen: text('CRONRAFT_METRICS_LISTEN'),
    appHost: app.host,
    appPort: app.port,
    token,
  };
}

function hostPort(value: string, name: string): { host: string; port: number } {
  const match = HOST_PORT.exec(value);
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (match === null || host === undefined || port > 65_535) throw new InvalidArgumentError(name, value, "'host:port', e.g. '0.0.0.0:8080'");
  return { host, port };
}

function milliseconds(value: string, name: string, max: number): number {
  const ms = /^\d{1,9}$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(ms) || ms > max) throw new InvalidArgumentError(name, value, `whole milliseconds, 0 to ${max}`);
  return ms;
}
