import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { ListenError } from '../errors.js';
import type { BearerAuth } from './auth.js';
import { badBody, bodyTooLarge, errorAnswer, notFound } from './errors.js';
import { acceptsGzip, gzipPieces } from './gzip-pieces.js';
import type { RouteAnswer, RouteTable } from './route-table.js';
import { byteLength, JSON_CONTENT_TYPE } from './state-json.js';

/** The limits of the HTTP server: every request is bounded in size and time. */
export interface HttpLimits {
  /** The largest request body read; a larger one is answered 413 and its connection closed. */
  readonly maxBodyBytes: number;
  /** The largest request head (request line and headers); Node answers a larger one 431. */
  readonly maxHeaderBytes: number;
  /** How long a client may take to send a request's headers; Node answers 408 after it. */
  readonly headersTimeoutMs: number;
  /** How long a client may take to send a whole request; Node answers 408 after it. */
  readonly requestTimeoutMs: number;
  /** How long an idle keep-alive connection stays open. */
  readonly keepAliveTimeoutMs: number;
  /**
   * Connections open at once, so that a flood of clients costs a bounded amount. Past it, the
   * oldest connection with no request under way (idle between requests, or still sending its
   * first request's head) is closed to make room; when every one has a request under way, the
   * new one is refused. Before, the new one was always refused: a client that opened as many
   * connections and sent nothing kept /healthz from answering until their headers' timeout.
   */
  readonly maxConnections: number;
  /**
   * Requests of one connection read and not yet answered in full (pipelined): past it the
   * connection is closed. Node reads every request a client sent at once and answers each in
   * turn, keeping the answers the client has not read.
   */
  readonly maxPipelinedRequests: number;
  /** How long a connection may move no byte either way (a client that does not read its answers) before it is closed. */
  readonly stalledTimeoutMs: number;
}

export const HTTP_LIMITS: HttpLimits = {
  /** Actions take small JSON bodies (or none): 64 KiB is far above any. */
  maxBodyBytes: 64 * 1024,
  /** Node's own default: an Authorization header with the longest token fits many times. */
  maxHeaderBytes: 16 * 1024,
  /** Short: a legitimate client (a scraper, the CLI) sends its headers at once. */
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  /** Operators, a scraper and a few probes: far fewer. */
  maxConnections: 64,
  /** The CLI, a scraper and the dashboard send one request at a time; browsers never pipeline. */
  maxPipelinedRequests: 8,
  stalledTimeoutMs: 30_000,
};

/** Headers of every answer: JSON or text that no cache keeps and no browser sniffs as something else. */
const COMMON_HEADERS = { 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' } as const;

/**
 * The HTTP server on `node:http` (no dependency: the routes are few and fixed). It matches a
 * request to its route (route-table.ts), checks an action's token before reading anything else
 * (auth.ts), reads a bounded body, and answers JSON: the route's, or `{ error: { code, message } }`
 * (errors.ts).
 */
export class HttpServer {
  readonly #routes: RouteTable;
  readonly #auth: BearerAuth;
  readonly #limits: HttpLimits;
  readonly #server: Server;
  /** Per connection, its requests read and not yet answered (see #pipelined). */
  readonly #unanswered = new WeakMap<Socket, number>();
  /** The connections open, oldest first (see #admit). */
  readonly #open = new Set<Socket>();
  #address: string | null = null;

  constructor(routes: RouteTable, auth: BearerAuth, limits: HttpLimits = HTTP_LIMITS) {
    this.#routes = routes;
    this.#auth = auth;
    this.#limits = limits;
    const timeouts = {
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node looks for requests past their timeouts this often (30 s by default): a tenth of the
      // shortest keeps a timeout within a tenth of its length.
      connectionsCheckingInterval: Math.ceil(Math.min(limits.headersTimeoutMs, limits.requestTimeoutMs) / 10),
    };
    this.#server = createServer({ maxHeaderSize: limits.maxHeaderBytes, ...timeouts }, (req, res) => {
      if (this.#pipelined(req, res)) void this.#handle(req, res);
    });
    this.#server.on('connection', (socket: Socket) => this.#admit(socket));
    // Node's timeouts end once a request is read: a client that reads no answer would otherwise
    // keep its connection, and the answers written to it, for as long as it likes.
    this.#server.timeout = limits.stalledTimeoutMs;
  }

  /** `host:port` it listens on (the port bound, when asked for 0), or null when it does not. */
  get address(): string | null {
    return this.#address;
  }

  /** @throws ListenError when it cannot listen (the port is taken, say). */
  async listen(host: string, port: number): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      const failed = (error: Error): void => reject(new ListenError(`${host}:${port} (http)`, { cause: error }));
      this.#server.once('error', failed);
      this.#server.listen(port, host, () => {
        this.#server.off('error', failed);
        // Once listening, an error of the listening socket (a failed accept, out of file
        // descriptors) leaves it listening: it must not become the app's uncaught exception.
        this.#server.on('error', () => undefined);
        resolve();
      });
    });
    const bound = this.#server.address() as AddressInfo;
    this.#address = bound.family === 'IPv6' ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`;
  }

  /** Stops listening and closes every connection, idle or not: requests under way get no answer. */
  async close(): Promise<void> {
    if (this.#address === null) return;
    this.#address = null;
    const closed = new Promise<void>((resolve) => this.#server.close(() => resolve()));
    this.#server.closeAllConnections();
    await closed;
  }

  /** Keeps the new connection within maxConnections: see HttpLimits.maxConnections. */
  #admit(socket: Socket): void {
    if (this.#open.size >= this.#limits.maxConnections) {
      let idle: Socket | null = null;
      for (const open of this.#open) {
        if ((this.#unanswered.get(open) ?? 0) === 0) {
          idle = open;
          break;
        }
      }
      if (idle === null) {
        socket.destroy();
        return;
      }
      this.#open.delete(idle);
      idle.destroy();
    }
    this.#open.add(socket);
    socket.once('close', () => this.#open.delete(socket));
  }

  /**
   * Counts the request among its connection's unanswered ones (until its answer is written or the
   * connection goes); past maxPipelinedRequests, closes the connection instead: its answers would
   * be kept for a client that does not read them. Returns whether to answer it.
   */
  #pipelined(req: IncomingMessage, res: ServerResponse): boolean {
    const socket = req.socket;
    const waiting = (this.#unanswered.get(socket) ?? 0) + 1;
    if (waiting > this.#limits.maxPipelinedRequests) {
      socket.destroy();
      return false;
    }
    this.#unanswered.set(socket, waiting);
    res.once('close', () => this.#unanswered.set(socket, (this.#unanswered.get(socket) ?? 1) - 1));
    return true;
  }

  async #handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let startedAt = performance.now();
    try {
      const url = requestUrl(req.url);
      const { route, params } = this.#routes.match(req.method ?? 'GET', url.pathname);
      if (route.action) {
        const refused = this.#auth.check(req.headers.authorization);
        if (refused !== null) throw refused;
      } else if ((req.method === 'GET' || req.method === 'HEAD') && hasBody(req)) {
        // A read takes no body: one announced and never sent held its connection, as a request
        // under way, until requestTimeoutMs, which no making of room for new connections could
        // take back (see HttpLimits.maxConnections).
        throw badBody('a GET or HEAD takes no body');
      }
      const body = await this.#readBody(req);
      // The member's time is from the request read: a client slow to send its body is not it.
      startedAt = performance.now();
      this.#answer(res, startedAt, await route.handle({ params, query: url.searchParams, body }), {}, acceptsGzip(req.headers['accept-encoding']));
    } catch (error) {
      const { status, headers, body } = errorAnswer(error);
      // An unread or oversized body is left unread: the connection goes with the answer. A
      // request with none keeps it (a 404 or a 401 closed it, and a prober that asked a wrong
      // path paid a new connection each time).
      if (!req.complete && hasBody(req)) res.setHeader('connection', 'close');
      this.#answer(res, startedAt, { status, json: body }, headers);
    }
  }

  /**
   * The body parsed as JSON (undefined when empty), at most maxBodyBytes. A larger one is left
   * unread, paused rather than destroyed (which would close the socket before the 413 goes out).
   */
  async #readBody(req: IncomingMessage): Promise<unknown> {
    const { maxBodyBytes } = this.#limits;
    if (Number(req.headers['content-length'] ?? 0) > maxBodyBytes) throw bodyTooLarge(maxBodyBytes);
    const bytes = await new Promise<Buffer>((resolve, reject) => {
      const chunks: Buffer[] = [];
      let length = 0;
      const done = (): void => {
        req.off('data', onData).off('end', onEnd).off('error', reject);
      };
      const onData = (chunk: Buffer): void => {
        length += chunk.length;
        if (length <= maxBodyBytes) {
          chunks.push(chunk);
          return;
        }
        done();
        req.pause();
        reject(bodyTooLarge(maxBodyBytes));
      };
      const onEnd = (): void => {
        done();
        resolve(Buffer.concat(chunks));
      };
      req.on('data', onData).on('end', onEnd).on('error', reject);
    });
    if (bytes.length === 0) return undefined;
    try {
      return JSON.parse(bytes.toString('utf8')) as unknown;
    } catch {
      throw badBody('The request body is not JSON');
    }
  }

  /**
   * `gzip`: the client accepts it, and an answer in pieces goes gzipped when that pays
   * (gzip-pieces.ts). Every answer says in `Server-Timing` how long this member took to make it,
   * from the request read, its body too (performance.now() at `startedAt`), to its head: a
   * client that finds an answer slow tells the member's part from the time it waited (the
   * network, a loop busy before the request was read, its own). Node's own answers (408, 431, a
   * request it cannot parse) have none.
   */
  #answer(res: ServerResponse, startedAt: number, answer: RouteAnswer, headers: Readonly<Record<string, string>> = {}, gzip = false): void {
    if (res.headersSent || res.destroyed) return;
    if ('pieces' in answer) {
      const zipped = gzip ? gzipPieces(answer.pieces) : null;
      const pieces = zipped ?? answer.pieces;
      const encoding = zipped === null ? {} : { 'content-encoding': 'gzip' };
      // Vary: a cache between must not hand the gzipped answer to a client that did not ask for it.
      res.writeHead(answer.status ?? 200, { ...COMMON_HEADERS, ...headers, vary: 'accept-encoding', ...encoding, 'content-type': answer.contentType, 'content-length': byteLength(pieces), ...serverTiming(startedAt) });
      // Corked, the pieces go to the socket in one write, as they are: no copy of the whole.
      res.cork();
      for (const piece of pieces) res.write(piece);
      res.end();
      res.uncork();
      return;
    }
    const text = 'json' in answer ? JSON.stringify(answer.json) : answer.text;
    const contentType = 'json' in answer ? JSON_CONTENT_TYPE : answer.contentType;
    const own = 'json' in answer ? {} : answer.headers;
    res.writeHead(answer.status ?? 200, { ...COMMON_HEADERS, ...own, ...headers, 'content-type': contentType, 'content-length': Buffer.byteLength(text), ...serverTiming(startedAt) });
    res.end(text);
  }
}

/** Whether the request announces a body: a length above 0, or a chunked one. */
function hasBody(req: IncomingMessage): boolean {
  return req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
}

/**
 * The request's address, its path and query read against this server. A request line Node takes
 * but the URL parser does not (`GET //[/x`, an authority with a bad port) names no route here:
 * answered 404, not as a fault of the server.
 */
function requestUrl(target: string | undefined): URL {
  try {
    // An origin-form target is a path: `//v1/state` read as a URL names host v1 and path /state,
    // and was answered "No route /state".
    // An absolute-form target (`http://host/v1/state`) is read as it is.
    return target?.startsWith('/') === true ? new URL(`http://localhost${target}`) : new URL(target ?? '/', 'http://localhost');
  } catch {
    throw notFound(target ?? '/');
  }
}

/** The metric's name in `Server-Timing` (W3C Server Timing; browsers' developer tools show it). */
export const SERVER_TIMING_METRIC = 'member';

/** `Server-Timing`: this member's time on the request since `startedAt` (performance.now()), in ms to the hundredth. */
function serverTiming(startedAt: number): { 'server-timing': string } {
  return { 'server-timing': `${SERVER_TIMING_METRIC};dur=${(performance.now() - startedAt).toFixed(2)}` };
}
