import { isoInstantMs } from './iso-instant.js';
import type { SlotHistory } from '../api/history.js';
import type { ClusterState } from '../api/state.js';
import { InvalidArgumentError, UnknownJobError } from '../errors.js';
import { validateName } from '../job-options.js';
import type { CancelledRuns, JobPause, TriggeredSlot } from '../runtime/scheduler/job-operations.js';
import type { Route, RouteAnswer } from './route-table.js';
import { JSON_CONTENT_TYPE, StateJson } from './state-json.js';

/** What the routes read and act on: the Cluster, narrowed to the calls they make. */
export interface HttpSource {
  state(): ClusterState;
  history(options: { job?: string; limit?: number }): SlotHistory[];
  removeMember(id: string): Promise<{ index: number }>;
  pause(name: string): Promise<JobPause>;
  resume(name: string): Promise<JobPause>;
  trigger(name: string): Promise<TriggeredSlot>;
  cancel(name: string, options?: { readonly slot?: Date }): Promise<CancelledRuns>;
}

/** The most claims one `/v1/history` answer holds: an answer stays a small JSON document. */
export const MAX_HTTP_HISTORY_LIMIT = 1000;

/** Claims a `/v1/history` answer holds when `limit` is not given (history()'s own default). */
export const DEFAULT_HTTP_HISTORY_LIMIT = 100;

/**
 * Why this member is not ready to do work, or null when it is: it runs, knows a leader, and has
 * learned the cluster's time (until then its slots fire on its own clock).
 */
export function notReadyReason(state: ClusterState): string | null {
  if (state.failure !== null) return `the member is failed: ${state.failure.message} (${state.failure.code})`;
  if (state.status !== 'running') return `the member is ${state.status}`;
  if (state.leader === null) return 'no leader is known';
  if (!state.clock.synced) return "the member has not learned the cluster's time from a leader";
  return null;
}

/** The probes: `/healthz` answers while the process lives, `/readyz` while the member is ready (notReadyReason). */
export function probeRoutes(source: HttpSource): Route[] {
  return [
    { method: 'GET', path: '/healthz', action: false, handle: () => ({ json: { live: true } }) },
    {
      method: 'GET',
      path: '/readyz',
      action: false,
      handle: () => {
        const state = source.state();
        const reason = notReadyReason(state);
        return reason === null ? { json: { ready: true, leader: state.leader } } : { status: 503, json: { ready: false, reason, leader: state.leader } };
      },
    },
  ];
}

const JOBS_OPEN = new TextEncoder().encode('{"jobs":');
const JOBS_CLOSE = new TextEncoder().encode('}');

/** The read-only routes: `state()` and `history()` as JSON (Dates as ISO strings; the jobs' bytes kept between calls, state-json.ts). */
export function readRoutes(source: HttpSource, json = new StateJson()): Route[] {
  const text = (body: string): RouteAnswer => ({ text: body, contentType: JSON_CONTENT_TYPE });
  const pieces = (body: readonly Uint8Array[]): RouteAnswer => ({ pieces: body, contentType: JSON_CONTENT_TYPE });
  return [
    { method: 'GET', path: '/v1/state', action: false, handle: () => pieces(json.state(source.state())) },
    {
      method: 'GET',
      path: '/v1/members',
      action: false,
      handle: () => {
        const { leader, members } = source.state();
        return { json: { leader, members } };
      },
    },
    { method: 'GET', path: '/v1/jobs', action: false, handle: () => pieces([JOBS_OPEN, ...json.jobs(source.state().jobs), JOBS_CLOSE]) },
    { method: 'GET', path: '/v1/jobs/:name', action: false, handle: ({ params }) => text(json.job(jobOf(source.state(), params.name as string))) },
    { method: 'GET', path: '/v1/history', action: false, handle: ({ query }) => ({ json: { history: source.history(historyQuery(query)) } }) },
    { method: 'GET', path: '/v1/topics', action: false, handle: () => ({ json: { topics: source.state().topics } }) },
  ];
}

/**
 * The actions, each behind the token. A later action is one more entry here.
 */
export function actionRoutes(source: HttpSource): Route[] {
  return [
    {
      method: 'POST',
      path: '/v1/members/:id/remove',
      action: true,
      handle: async ({ params, body }): Promise<RouteAnswer> => {
        noBody(body);
        return { json: await source.removeMember(params.id as string) };
      },
    },
    // A job's operations (cluster.pause, resume, trigger): an unknown job is 404, before cluster version 3 409.
    ...(['pause', 'resume', 'trigger'] as const).map(
      (operation): Route => ({
        method: 'POST',
        path: `/v1/jobs/:name/${operation}`,
        action: true,
        handle: async ({ params, body }): Promise<RouteAnswer> => {
          noBody(body);
          return { json: await source[operation](params.name as string) };
        },
      }),
    ),
    // cluster.cancel: the body, optional, may name the one slot whose runs to cancel.
    {
      method: 'POST',
      path: '/v1/jobs/:name/cancel',
      action: true,
      handle: async ({ params, body }): Promise<RouteAnswer> => ({ json: await source.cancel(params.name as string, cancelBody(body)) }),
    },
  ];
}

/**
 * The body of an action that takes none: none, or `{}`. Anything else is refused, so that a
 * body meant for another action (`{ "slot" }` sent to pause) is not taken as done.
 */
function noBody(body: unknown): void {
  if (body === undefined) return;
  if (typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0) return;
  throw new InvalidArgumentError('body', body, 'no body, or {}');
}

/**
 * The body of a cancel checked: none, `{}`, or `{ "slot": iso }` with an ISO 8601 instant (the
 * form history's `slot` has). Anything else is refused, so that a typo never cancels every run.
 */
function cancelBody(body: unknown): { slot?: Date } {
  if (body === undefined) return {};
  if (body === null) throw new InvalidArgumentError('body', body, 'no body, or a JSON object { "slot"?: ISO 8601 instant }');
  if (typeof body !== 'object' || Array.isArray(body)) throw new InvalidArgumentError('body', body, 'a JSON object { "slot"?: ISO 8601 instant }');
  const fields = Object.keys(body);
  const unknown = fields.find((f) => f !== 'slot');
  if (unknown !== undefined) throw new InvalidArgumentError('body', unknown, 'no field but "slot"');
  const slot = (body as { slot?: unknown }).slot;
  if (slot === undefined) return {};
  const ms = typeof slot === 'string' ? isoInstantMs(slot) : null;
  if (ms === null) throw new InvalidArgumentError('slot', slot, 'an ISO 8601 instant such as 2026-01-01T00:00:00.000Z');
  return { slot: new Date(ms) };
}

function jobOf(state: ClusterState, name: string): ClusterState['jobs'][number] {
  const job = state.jobs.find((j) => j.name === name);
  if (job === undefined) throw new UnknownJobError(name);
  return job;
}

/**
 * `?job=&limit=` checked: a job name as `schedule()` takes it, a limit from 1 to
 * MAX_HTTP_HISTORY_LIMIT, each given once (`limit=1&limit=2` took the first unsaid), and no
 * other parameter: a misspelt one (`?jobs=nightly`) answered every job's history as if it were
 * the one asked for.
 */
function historyQuery(query: URLSearchParams): { job?: string; limit: number } {
  for (const name of query.keys()) {
    if (name !== 'job' && name !== 'limit') throw new InvalidArgumentError('query', name, 'no parameter but job and limit');
  }
  for (const name of ['job', 'limit']) {
    const values = query.getAll(name);
    if (values.length > 1) throw new InvalidArgumentError(name, values, 'one value');
  }
  const job = query.get('job');
  const limitText = query.get('limit');
  if (job !== null) {
    try {
      validateName(job);
    } catch {
      throw new InvalidArgumentError('job', job, 'a job name');
    }
  }
  const limit = limitText === null ? DEFAULT_HTTP_HISTORY_LIMIT : Number(limitText);
  if (!/^\d+$/.test(limitText ?? '1') || limit < 1 || limit > MAX_HTTP_HISTORY_LIMIT) {
    throw new InvalidArgumentError('limit', limitText, `an integer from 1 to ${MAX_HTTP_HISTORY_LIMIT}`);
  }
  return job === null ? { limit } : { job, limit };
}
