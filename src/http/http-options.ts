import { isIP } from 'node:net';
import { InvalidArgumentError } from '../errors.js';
import { onlyKnownKeys } from '../option-checks.js';
import { isLoopbackHost } from '../transport/cluster-secret.js';

/** The `http` option of Cluster: operations over HTTP (README, "Operating a cluster"). */
export interface HttpOptions {
  /**
   * `host:port` to serve on (`[::1]:9464` for IPv6); port 0 takes a free one, shown in
   * `cluster.httpAddress` once started. A non-loopback host needs a `token`.
   */
  readonly listen: string;
  /**
   * The bearer token that actions (`POST`) need: `Authorization: Bearer <token>`. At least
   * MIN_HTTP_TOKEN_LENGTH characters. Without one, actions are refused and only a loopback
   * `listen` is accepted. Reads (`GET`) need none.
   */
  readonly token?: string | undefined;
}

/** The `http` option checked. */
export interface HttpSettings {
  readonly host: string;
  readonly port: number;
  readonly token: string | null;
}

/**
 * The shortest token accepted: a token is compared in constant time, but a short one is guessed
 * by trying, and nothing slows down the tries.
 */
export const MIN_HTTP_TOKEN_LENGTH = 16;

/** The longest token accepted: it travels in a header, whose size the server bounds. */
export const MAX_HTTP_TOKEN_LENGTH = 1024;

/** A token is printable ASCII without spaces, as an HTTP header carries it unchanged. */
const TOKEN_CHARS = /^[\x21-\x7e]+$/;

/** What a token must be, as an error says it (never quoting the token). */
export const HTTP_TOKEN_FORM = `${MIN_HTTP_TOKEN_LENGTH} to ${MAX_HTTP_TOKEN_LENGTH} printable ASCII characters without spaces`;

/** Whether `value` is a token the option takes, and so one a member may hold (the CLI checks its --token so). */
export function isHttpToken(value: string): boolean {
  return value.length >= MIN_HTTP_TOKEN_LENGTH && value.length <= MAX_HTTP_TOKEN_LENGTH && TOKEN_CHARS.test(value);
}

const HOST_PORT = /^(?:\[([^\]]+)\]|([^:[\]]+)):(\d{1,5})$/;

/** Checks the `http` option: null when it is off (the default). */
export function httpSettings(value: unknown): HttpSettings | null {
  if (value === undefined) return null;
  if (typeof value !== 'object' || value === null) throw new InvalidArgumentError('http', value, "{ listen: 'host:port', token? }");
  // A misspelt `tokn` left every action refused for want of a token, unsaid.
  onlyKnownKeys(value, ['listen', 'token'], 'http');
  const { listen, token } = value as { listen?: unknown; token?: unknown };
  const match = typeof listen === 'string' ? HOST_PORT.exec(listen) : null;
  const host = match?.[1] ?? match?.[2];
  const port = Number(match?.[3]);
  if (match === null || host === undefined || (isIP(host) === 0 && host !== 'localhost') || port > 65_535) {
    throw new InvalidArgumentError('http.listen', listen, "'host:port' with an IP address or localhost, port 0 to 65535 (e.g. '127.0.0.1:9464')");
  }
  if (token !== undefined && (typeof token !== 'string' || !isHttpToken(token))) {
    throw new InvalidArgumentError('http.token', typeof token !== 'string' ? token : `${token.length} characters`, HTTP_TOKEN_FORM);
  }
  // Anyone who reaches a non-loopback address could remove members: it takes a token.
  if (token === undefined && !isLoopbackHost(host)) {
    throw new InvalidArgumentError('http.token', undefined, `a token when http.listen is ${host}, which other machines can reach`);
  }
  return { host, port, token: token ?? null };
}
