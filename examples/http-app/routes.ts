/**
 * The app's own routes on fastify, over the member it embeds: the probes an orchestrator asks
 * (`/healthz`, `/readyz`), what the cluster knows of its jobs, and one action, running a job now
 * (`cluster.trigger`), behind a bearer token.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { FastifyInstance, FastifyReply } from 'fastify';
import { CronraftError, type Cluster, type ClusterState } from 'cronraft';

/** Longest job name the app accepts in a path; cronraft checks the name itself too. */
export const MAX_JOB_NAME_LENGTH = 200;

/** Most history entries one request may ask for, as cronraft's own `/v1/history`. */
export const MAX_HISTORY_LIMIT = 1000;

/** The HTTP status each cronraft error code is answered with; any other is a 500. */
const STATUS_OF_CODE: Readonly<Record<string, number>> = {
  CRONRAFT_INVALID_ARGUMENT: 400,
  CRONRAFT_UNKNOWN_JOB: 404,
  CRONRAFT_VERSION_NOT_ACTIVE: 409,
  CRONRAFT_BACKPRESSURE: 429,
  CRONRAFT_NOT_LEADER: 503,
  CRONRAFT_NOT_RUNNING: 503,
  CRONRAFT_CLOCK_UNSYNCED: 503,
  CRONRAFT_TIMEOUT: 504,
  CRONRAFT_OUTCOME_UNKNOWN: 504,
};

/**
 * Why the member is not ready for work, or null when it is: it runs, knows a leader and has
 * learned the cluster's time (as cronraft's own `/readyz`). Kubernetes sends no traffic to a pod
 * until then; the members find one another regardless (the Service publishes pods not ready).
 */
export function notReadyReason(state: ClusterState): string | null {
  if (state.status !== 'running') return `the member is ${state.status}`;
  if (state.leader === null) return 'no leader is known';
  if (!state.clock.synced) return "the member has not learned the cluster's time";
  return null;
}

export function registerRoutes(app: FastifyInstance, cluster: Cluster, token: string | undefined): void {
  // Digests of equal length, so that the comparison takes the same time whatever is sent.
  const digest = (value: string): Buffer => createHash('sha256').update(value).digest();
  const expected = token === undefined ? null : digest(token);
  // The scheme is case-insensitive (RFC 9110), as cronraft's own server takes it.
  const authorized = (header: string | undefined): boolean => {
    const given = /^Bearer ([\x21-\x7e]+)$/i.exec(header ?? '')?.[1];
    return expected !== null && given !== undefined && timingSafeEqual(digest(given), expected);
  };

  app.get('/healthz', async () => ({ live: true }));

  app.get('/readyz', async (_request, reply) => {
    const state = cluster.state();
    const reason = notReadyReason(state);
    if (reason !== null) return reply.code(503).send({ ready: false, reason, leader: state.leader });
    return { ready: true, leader: state.leader, member: cluster.id };
  });

  app.get('/jobs', async () => {
    const state = cluster.state();
    return {
      leader: state.leader,
      jobs: state.jobs.map((job) => ({ name: job.name, spec: job.spec, mode: job.mode, handlers: job.handlers, paused: job.paused, nextSlot: job.nextSlot, missedSlots: job.missedSlots })),
    };
  });

  app.get<{ Querystring: { job?: string; limit?: number } }>(
    '/history',
    {
      schema: {
        querystring: {
          type: 'object',
          properties: { job: { type: 'string', minLength: 1, maxLength: MAX_JOB_NAME_LENGTH }, limit: { type: 'integer', minimum: 1, maximum: MAX_HISTORY_LIMIT } },
          additionalProperties: false,
        },
      },
    },
    async (request, reply) => {
      try {
        return { history: cluster.history({ ...(request.query.job === undefined ? {} : { job: request.query.job }), limit: request.query.limit ?? 20 }) };
      } catch (error) {
        // A name cronraft refuses (`?job=.`, say) is the caller's error, a 400, not a 500.
        return sendError(reply, error, 'history');
      }
    },
  );

  app.post<{ Params: { name: string } }>(
    '/jobs/:name/trigger',
    { schema: { params: { type: 'object', properties: { name: { type: 'string', minLength: 1, maxLength: MAX_JOB_NAME_LENGTH } }, required: ['name'] } } },
    async (request, reply) => {
      if (!authorized(request.headers.authorization)) {
        return reply.code(401).send({ error: { code: 'APP_UNAUTHORIZED', message: expected === null ? 'actions are off: APP_TOKEN is not set' : 'a valid Authorization: Bearer <APP_TOKEN> header is needed' } });
      }
      try {
        const { job, slot, fencingToken } = await cluster.trigger(request.params.name);
        request.log.info({ event: 'trigger', job, slot, fencingToken }, 'triggered a slot');
        return { job, slot, fencingToken };
      } catch (error) {
        return sendError(reply, error, 'trigger');
      }
    },
  );
}

function sendError(reply: FastifyReply, error: unknown, what: string): FastifyReply {
  if (error instanceof CronraftError) {
    const status = STATUS_OF_CODE[error.code] ?? 500;
    // A 500's details stay in the log: they may say more than a caller should read.
    if (status === 500) reply.log.error({ err: error }, `${what} failed`);
    return reply.code(status).send({ error: { code: error.code, message: status === 500 ? 'internal error' : error.message } });
  }
  reply.log.error({ err: error }, `${what} failed`);
  return reply.code(500).send({ error: { code: 'APP_INTERNAL', message: 'internal error' } });
}
