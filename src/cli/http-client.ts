import { request as httpRequest } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { InvalidArgumentError } from '../errors.js';

/**
 * How long the command waits for a member's answer. An action waits for the log: with the
 * default requestTimeoutMs (5 s) a pause waits at most that long for the cluster version, then
 * for a read barrier and its proposal, each within it.
 */
export const CLI_REQUEST_TIMEOUT_MS = 15_000;

/** The largest answer read: a member's state with the most jobs it keeps is far smaller. */
export const MAX_CLI_ANSWER_BYTES = 64 * 1024 * 1024;

/** A request that got no usable answer, or an error answer: the command exits 1. */
export class RequestFailedError extends Error {
  /** The member's error code, when it answered one. */
  readonly code: string | null;

  constructor(message: string, code: string | null = null) {
    super(message);
    this.name = 'RequestFailedError';
    this.code = code;
  }
}

/** A member's answer: its status and its JSON. */
export interface Answer {
  readonly status: number;
  readonly body: unknown;
}

/** `--url` checked: an http or https URL, whose path the requests' paths go under. */
export function memberUrl(value: string): URL {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw new InvalidArgumentError('--url', value, 'a URL such as http://127.0.0.1:9464');
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new InvalidArgumentError('--url', value, 'an http:// or https:// URL');
  // The member takes a bearer token, not a user and password; and an error would print them.
  if (url.username !== '' || url.password !== '') throw new InvalidArgumentError('--url', `${url.protocol}//…@${url.host}`, 'a URL without a user or password (actions take --token)');
  return url;
}

/**
 * Asks the member at `base` for `path`, with the token when given, within CLI_REQUEST_TIMEOUT_MS.
 * An answer is returned whatever its status; the caller decides which are failures. On
 * node:http, not fetch: fetch refuses the ports browsers block (6666, 10080 and others: "bad
 * port"), on which a member listens all the same.
 * @throws RequestFailedError when no JSON answer came (unreachable, too slow, too large, not JSON)
 */
export async function ask(base: URL, path: string, options: { readonly method?: 'GET' | 'POST'; readonly token?: string; readonly json?: unknown } = {}): Promise<Answer> {
  const url = new URL(`${base.pathname.replace(/\/$/, '')}${path}`, base);
  const body = options.json === undefined ? undefined : JSON.stringify(options.json);
  const headers: Record<string, string> = {};
  if (options.token !== undefined) headers.authorization = `Bearer ${options.token}`;
  if (body !== undefined) {
    headers['content-type'] = 'application/json';
    headers['content-length'] = String(Buffer.byteLength(body));
  }
  const { status, text } = await exchange(url, options.method ?? 'GET', headers, body);
  try {
    return { status, body: JSON.parse(text) as unknown };
  } catch {
    throw new RequestFailedError(`${url.href} answered ${status} with a body that is not JSON`);
  }
}

/** One request and its whole answer, read up to MAX_CLI_ANSWER_BYTES, within CLI_REQUEST_TIMEOUT_MS. */
function exchange(url: URL, method: string, headers: Record<string, string>, body: string | undefined): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    // Why the command gave up on the request, when it did: told whichever error the abort raises.
    let gaveUp: RequestFailedError | null = null;
    const giveUp = (why: string): void => {
      gaveUp = new RequestFailedError(why);
      request.destroy(gaveUp);
    };
    // No pooled connection: one kept open would hold the command's process up once it is done.
    const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, { method, headers, agent: false }, (response) => {
      const chunks: Buffer[] = [];
      let bytes = 0;
      response.on('data', (chunk: Buffer) => {
        bytes += chunk.byteLength;
        if (bytes > MAX_CLI_ANSWER_BYTES) giveUp(`${url.href} answered more than ${MAX_CLI_ANSWER_BYTES} bytes`);
        else chunks.push(chunk);
      });
      response.on('end', () => {
        clearTimeout(timer);
        if (gaveUp === null) resolve({ status: response.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') });
      });
      response.on('error', fail);
    });
    const timer = setTimeout(() => giveUp(`${url.origin}: no answer within ${CLI_REQUEST_TIMEOUT_MS} ms`), CLI_REQUEST_TIMEOUT_MS);
    function fail(error: Error): void {
      clearTimeout(timer);
      reject(gaveUp ?? new RequestFailedError(`${url.origin}: ${(error as NodeJS.ErrnoException).code ?? error.message}`));
    }
    request.on('error', fail);
    request.end(body);
  });
}

/** The error an answer carries (`{ error: { code, message } }`), or null when it carries none. */
export function answeredError(answer: Answer): RequestFailedError | null {
  const error = (answer.body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (answer.status < 400 && error === undefined) return null;
  const code = typeof error?.code === 'string' ? error.code : `HTTP_${answer.status}`;
  const message = typeof error?.message === 'string' ? error.message : `the member answered ${answer.status}`;
  return new RequestFailedError(`${code}: ${message}`, code);
}
