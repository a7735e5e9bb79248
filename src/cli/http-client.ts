import { InvalidArgumentError } from '../errors.js';

/** How long the command waits for a member's answer (an action waits for the log: the member's requestTimeoutMs is shorter). */
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
 * An answer is returned whatever its status; the caller decides which are failures.
 * @throws RequestFailedError when no JSON answer came (unreachable, too slow, too large, not JSON)
 */
export async function ask(base: URL, path: string, options: { readonly method?: 'GET' | 'POST'; readonly token?: string; readonly json?: unknown } = {}): Promise<Answer> {
  const url = new URL(`${base.pathname.replace(/\/$/, '')}${path}`, base);
  let response: Response;
  try {
    response = await fetch(url, {
      method: options.method ?? 'GET',
      headers: { ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }), ...(options.json === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(options.json === undefined ? {} : { body: JSON.stringify(options.json) }),
      signal: AbortSignal.timeout(CLI_REQUEST_TIMEOUT_MS),
    });
  } catch (error) {
    const cause = (error as { cause?: { code?: string; message?: string } }).cause;
    const why = error instanceof Error && error.name === 'TimeoutError' ? `no answer within ${CLI_REQUEST_TIMEOUT_MS} ms` : (cause?.code ?? cause?.message ?? String(error));
    throw new RequestFailedError(`${url.origin}: ${why}`);
  }
  const text = await boundedText(response, url);
  try {
    return { status: response.status, body: JSON.parse(text) as unknown };
  } catch {
    throw new RequestFailedError(`${url.href} answered ${response.status} with a body that is not JSON`);
  }
}

/** The error an answer carries (`{ error: { code, message } }`), or null when it carries none. */
export function answeredError(answer: Answer): RequestFailedError | null {
  const error = (answer.body as { error?: { code?: unknown; message?: unknown } } | null)?.error;
  if (answer.status < 400 && error === undefined) return null;
  const code = typeof error?.code === 'string' ? error.code : `HTTP_${answer.status}`;
  const message = typeof error?.message === 'string' ? error.message : `the member answered ${answer.status}`;
  return new RequestFailedError(`${code}: ${message}`, code);
}

async function boundedText(response: Response, url: URL): Promise<string> {
  const reader = response.body?.getReader();
  if (reader === undefined) return '';
  const chunks: Uint8Array[] = [];
  let bytes = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    bytes += value.byteLength;
    if (bytes > MAX_CLI_ANSWER_BYTES) {
      await reader.cancel();
      throw new RequestFailedError(`${url.href} answered more than ${MAX_CLI_ANSWER_BYTES} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}
