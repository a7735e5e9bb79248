/**
 * An HTTP app on fastify that embeds a cronraft member: run three (or more) with the same peer
 * list and the same secret, and its jobs run once across them. Configured from environment
 * variables only (examples/http-app/config.ts lists them), so that the same image runs under
 * Docker Compose (examples/compose/compose.yaml) and Kubernetes (examples/kubernetes/cronraft.yaml):
 *
 *   CRONRAFT_SECRET=$(npx cronraft secret) CRONRAFT_PEERS=127.0.0.1:7001 CRONRAFT_LISTEN=127.0.0.1:7001 \
 *     CRONRAFT_DATA_DIR=.cronraft/app APP_LISTEN=127.0.0.1:8080 node dist/examples/http-app/app.js
 *
 * It logs JSON lines (fastify's logger) on stdout: leader changes, each run of its jobs with the
 * slot and fencing token, and its shutdown. On SIGTERM (what `docker compose stop` and Kubernetes
 * send) or SIGINT it stops taking requests, stops its member gracefully (its runs finish, its
 * claims and, leading, its leadership are handed over) and exits 0; past its deadline, 1.
 */
import { fastify, LogController } from 'fastify';
import { Cluster } from 'cronraft';
import { readConfig, shutdownDeadlineMs } from './config.js';
import { registerRoutes } from './routes.js';

/** The app's server bounds: a request body (trigger takes none), and the time to receive a request. */
const BODY_LIMIT_BYTES = 1024;
const REQUEST_TIMEOUT_MS = 10_000;

const config = readConfig();
// The orchestrator's probes are not logged: every few seconds from every member, they would fill the log.
const PROBES = new Set(['/healthz', '/readyz']);
const app = fastify({
  logger: true,
  logController: new LogController({ disableRequestLogging: (request) => PROBES.has(request.url) }),
  bodyLimit: BODY_LIMIT_BYTES,
  requestTimeout: REQUEST_TIMEOUT_MS,
  // A query parameter the schema does not name is refused (400), not dropped: fastify's default
  // drops it, and `/history?jobs=report` (misspelt) answered every job's history.
  ajv: { customOptions: { removeAdditional: false } },
});

const cluster = new Cluster(config.peers, {
  listen: config.listen,
  ...(config.advertise === undefined ? {} : { advertise: config.advertise }),
  dataDir: config.dataDir,
  ...(config.secret === undefined ? {} : { secret: config.secret }),
  ...(config.secretFile === undefined ? {} : { secretFile: config.secretFile }),
  stopTimeoutMs: config.stopTimeoutMs,
  ...(config.metricsListen === undefined ? {} : { http: { listen: config.metricsListen, ...(config.token === undefined ? {} : { token: config.token }) } }),
});

cluster.on('leader', ({ leader, term }) => app.log.info({ event: 'leader', leader, term, member: cluster.id }, leader === null ? 'no leader: an election is under way' : `leader is ${leader}`));
cluster.on('failed', (run) => app.log.warn({ event: 'failed', job: run.job, slot: new Date(run.slotMs).toISOString(), error: run.error }, 'a run failed with no retry left'));
cluster.on('error', (error) => {
  // A fatal error (a failed disk, a removal): the member has stopped; let the orchestrator restart the app.
  app.log.error({ err: error }, 'the member stopped on a fatal error');
  process.exit(1);
});

// Every member schedules the same jobs; each slot runs on one of them.
cluster.schedule('report', { every: '5s' }, async (ctx) => {
  app.log.info({ event: 'run', job: ctx.job, slot: ctx.slot.toISOString(), fencingToken: ctx.fencingToken, attempt: ctx.attempt, member: cluster.id }, 'job ran');
});
cluster.schedule('nightly-cleanup', { cron: '0 0 3 * * *', tz: 'UTC' }, async (ctx) => {
  app.log.info({ event: 'run', job: ctx.job, slot: ctx.slot.toISOString(), fencingToken: ctx.fencingToken, attempt: ctx.attempt, member: cluster.id }, 'job ran');
}, { retries: 2, timeoutMs: 60_000 });

registerRoutes(app, cluster, config.token);

let stopping = false;
async function shutdown(signal: string): Promise<void> {
  if (stopping) return;
  stopping = true;
  const deadlineMs = shutdownDeadlineMs(config);
  app.log.info({ event: 'stopping', signal, deadlineMs }, 'stopping: the member hands its work over first');
  const deadline = setTimeout(() => {
    app.log.error({ event: 'stop-timeout', deadlineMs }, 'shutdown outlasted its deadline');
    process.exit(1);
  }, deadlineMs);
  try {
    await app.close();
    await cluster.stop();
    app.log.info({ event: 'stopped' }, 'stopped cleanly');
    clearTimeout(deadline);
    process.exit(0);
  } catch (error) {
    app.log.error({ err: error }, 'shutdown failed');
    process.exit(1);
  }
}
process.on('SIGTERM', () => void shutdown('SIGTERM'));
process.on('SIGINT', () => void shutdown('SIGINT'));

try {
  await app.listen({ host: config.appHost, port: config.appPort });
  await cluster.start();
  app.log.info({ event: 'started', member: cluster.id, peerId: cluster.state().peerId }, 'member started');
} catch (error) {
  // A port taken, or no cluster to join or form (CRONRAFT_JOIN_FAILED): exit for a restart.
  app.log.error({ err: error }, 'could not start');
  process.exit(1);
}
