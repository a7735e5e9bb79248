import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { ask, RequestFailedError } from '../../src/cli/http-client.js';

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => new Promise((resolve) => s.close(resolve))));
});

/** A server that answers every request with what it got, as JSON (or, `json` false, with text that is not); on `port` (0: any free one). */
async function echo(port: number, json = true): Promise<Server> {
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      res.setHeader('content-type', 'application/json');
      res.end(!json ? 'not json' : JSON.stringify({ method: req.method, url: req.url, authorization: req.headers.authorization ?? null, body }));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  servers.push(server);
  return server;
}

const urlOf = (server: Server): URL => new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}/base/`);

/** Ports a member may listen on that fetch refuses ("bad port"), as browsers block them. */
const FETCH_BLOCKED_PORTS = [6665, 6666, 6667, 6668, 6669, 10080];

describe("the CLI's requests to a member", () => {
  it('asks under the URL\'s path, with the token and the JSON body when given', async () => {
    const base = urlOf(await echo(0));
    expect(await ask(base, '/v1/state')).toEqual({ status: 200, body: { method: 'GET', url: '/base/v1/state', authorization: null, body: '' } });
    expect(await ask(base, '/v1/jobs/a/pause', { method: 'POST', token: 't0k', json: { x: 1 } })).toEqual({
      status: 200,
      body: { method: 'POST', url: '/base/v1/jobs/a/pause', authorization: 'Bearer t0k', body: '{"x":1}' },
    });
  });

  it('fails with RequestFailedError when nothing listens, or the answer is not JSON', async () => {
    const server = await echo(0);
    const gone = urlOf(server);
    await new Promise((resolve) => server.close(resolve));
    servers.splice(servers.indexOf(server), 1);
    await expect(ask(gone, '/healthz')).rejects.toThrow(RequestFailedError);
    await expect(ask(gone, '/healthz')).rejects.toThrow(/ECONNREFUSED/);
    await expect(ask(urlOf(await echo(0, false)), '/healthz')).rejects.toThrow(/not JSON/);
  });

  it('reaches a member on a port fetch refuses (before: "bad port"), when one of them is free here', async (ctx) => {
    let server: Server | null = null;
    for (const port of FETCH_BLOCKED_PORTS) {
      server = await echo(port).catch(() => null);
      if (server !== null) break;
    }
    if (server === null) {
      console.log(`skipped: none of the ports ${FETCH_BLOCKED_PORTS.join(', ')} is free on this machine`);
      ctx.skip();
      return;
    }
    const base = urlOf(server);
    await expect(fetch(new URL('/v1/state', base))).rejects.toThrow();
    expect((await ask(base, '/v1/state')).status).toBe(200);
  });
});
