import { methodNotAllowed, notFound } from './errors.js';

export type Method = 'GET' | 'POST';

/** What a route's handler is given of its request, checked for size but not for meaning. */
export interface RouteRequest {
  /** The path's `:name` segments, decoded. */
  readonly params: Readonly<Record<string, string>>;
  readonly query: URLSearchParams;
  /** The body parsed as JSON; undefined when there was none. */
  readonly body: unknown;
}

/**
 * A route's answer: JSON by default, or text of its own type (the metrics' exposition format,
 * the dashboard's page) with headers of its own (the page's content security policy), or bytes
 * already encoded, in pieces written one after the other (the state's JSON, kept between
 * answers: state-json.ts).
 */
export type RouteAnswer =
  | { readonly status?: number; readonly json: unknown }
  | { readonly status?: number; readonly text: string; readonly contentType: string; readonly headers?: Readonly<Record<string, string>> }
  | { readonly status?: number; readonly pieces: readonly Uint8Array[]; readonly contentType: string };

/**
 * One route: `path` of literal segments and `:name` parameters. An `action` changes the cluster
 * and needs the token (auth.ts); every other route only reads.
 */
export interface Route {
  readonly method: Method;
  readonly path: string;
  readonly action: boolean;
  readonly handle: (request: RouteRequest) => RouteAnswer | Promise<RouteAnswer>;
}

interface CompiledRoute {
  readonly route: Route;
  readonly segments: readonly string[];
}

/**
 * The routes a server answers, matched by path then method: a path no route has is a 404, a
 * path some route has under other methods a 405 that names them. An action is one more `add`.
 */
export class RouteTable {
  readonly #routes: CompiledRoute[] = [];

  /** @throws Error for a route whose method and path another route has already. */
  add(...routes: readonly Route[]): this {
    for (const route of routes) {
      if (this.#routes.some((r) => r.route.method === route.method && r.route.path === route.path)) throw new Error(`Two routes for ${route.method} ${route.path}`);
      this.#routes.push({ route, segments: route.path.split('/').slice(1) });
    }
    return this;
  }

  /**
   * The route for `method` and `pathname` with its parameters. HEAD takes a GET route, as HTTP
   * has every server do (a load balancer's health check may ask so): Node sends the head of the
   * answer and drops its body. @throws HttpRequestError 404 or 405
   */
  match(method: string, pathname: string): { readonly route: Route; readonly params: Record<string, string> } {
    const parts = pathname.split('/').slice(1);
    const wanted = method === 'HEAD' ? 'GET' : method;
    const allowed: string[] = [];
    for (const { route, segments } of this.#routes) {
      const params = paramsOf(segments, parts);
      if (params === null) continue;
      if (route.method === wanted) return { route, params };
      allowed.push(route.method);
      if (route.method === 'GET') allowed.push('HEAD');
    }
    if (allowed.length === 0) throw notFound(pathname);
    throw methodNotAllowed(method, pathname, allowed);
  }
}

/** The parameters of `parts` under `segments`, or null when they do not match. */
function paramsOf(segments: readonly string[], parts: readonly string[]): Record<string, string> | null {
  if (segments.length !== parts.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < segments.length; i++) {
    const segment = segments[i] as string;
    const part = parts[i] as string;
    if (segment.startsWith(':')) {
      const value = decoded(part);
      if (value === null || value.length === 0) return null;
      params[segment.slice(1)] = value;
    } else if (segment !== part) {
      return null;
    }
  }
  return params;
}

function decoded(part: string): string | null {
  try {
    return decodeURIComponent(part);
  } catch {
    return null;
  }
}
