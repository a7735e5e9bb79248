import { CronraftError } from '../errors.js';

/**
 * A request the HTTP server refuses for what it is (its route, method, token or size), rather
 * than for what the cluster answered: the code is stable (README, "Errors"), the status the
 * HTTP one it is sent with.
 */
export class HttpRequestError extends CronraftError {
  readonly status: number;
  /** Headers the status calls for: `Allow` with a 405, `WWW-Authenticate` with a 401. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(status: 400 | 401 | 404 | 405 | 413, code: string, message: string, headers: Readonly<Record<string, string>> = {}) {
    super(code, message);
    this.status = status;
    this.headers = headers;
  }
}

/** The HTTP status each error code of the library is answered with; any other code is a 500. */
const STATUS_OF_CODE: Readonly<Record<string, number>> = {
  CRONRAFT_INVALID_ARGUMENT: 400,
  CRONRAFT_UNKNOWN_JOB: 404,
  // The change was refused for the cluster's configuration or version as it is: a conflict.
  CRONRAFT_MEMBERSHIP_REFUSED: 409,
  CRONRAFT_VERSION_NOT_ACTIVE: 409,
  CRONRAFT_BACKPRESSURE: 429,
  // This member cannot serve the request now; another member, or a retry later, may.
  CRONRAFT_NOT_LEADER: 503,
  CRONRAFT_NOT_RUNNING: 503,
  CRONRAFT_REMOVED: 503,
  CRONRAFT_CLOCK_UNSYNCED: 503,
  CRONRAFT_PROPOSAL_DROPPED: 503,
  // The cluster did not answer in time: the action may or may not have taken effect.
  CRONRAFT_TIMEOUT: 504,
  CRONRAFT_OUTCOME_UNKNOWN: 504,
};

/** The JSON body of every error answer: `{ error: { code, message } }`. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string };
}

/**
 * What an error is answered with. A CronraftError keeps its code and message; anything else is
 * a fault of the server's own, answered without its message (which may hold internals).
 */
export function errorAnswer(error: unknown): { readonly status: number; readonly headers?: Readonly<Record<string, string>>; readonly body: ErrorBody } {
  if (error instanceof HttpRequestError) return { status: error.status, headers: error.headers, body: { error: { code: error.code, message: error.message } } };
  if (error instanceof CronraftError) return { status: STATUS_OF_CODE[error.code] ?? 500, body: { error: { code: error.code, message: error.message } } };
  return { status: 500, body: { error: { code: 'CRONRAFT_INTERNAL', message: 'The server failed to answer the request' } } };
}

export const notFound = (path: string): HttpRequestError => new HttpRequestError(404, 'CRONRAFT_HTTP_NOT_FOUND', `No route ${path}`);

export const methodNotAllowed = (method: string, path: string, allowed: readonly string[]): HttpRequestError =>
  new HttpRequestError(405, 'CRONRAFT_HTTP_METHOD_NOT_ALLOWED', `${path} takes ${allowed.join(', ')}, not ${method}`, { allow: allowed.join(', ') });

export const unauthorized = (why: string): HttpRequestError => new HttpRequestError(401, 'CRONRAFT_HTTP_UNAUTHORIZED', why, { 'www-authenticate': 'Bearer realm="cronraft"' });

export const bodyTooLarge = (limitBytes: number): HttpRequestError => new HttpRequestError(413, 'CRONRAFT_HTTP_BODY_TOO_LARGE', `The request body is larger than ${limitBytes} bytes`);

export const badBody = (why: string): HttpRequestError => new HttpRequestError(400, 'CRONRAFT_HTTP_BAD_BODY', why);
