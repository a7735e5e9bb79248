import { get, type IncomingHttpHeaders } from 'node:http';
import { connect } from 'node:net';
import { gunzipSync } from 'node:zlib';
import { FANOUT_VERSION } from '../../src/version/versions.js';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, InvalidArgumentError, type ClusterOptions } from '../../src/index.js';
import { BearerAuth } from '../../src/http/auth.js';
import { MIN_HTTP_TOKEN_LENGTH } from '../../src/http/http-options.js';
import { RouteTable, type RouteAnswer } from '../../src/http/route-table.js';
import { MAX_HTTP_HISTORY_LIMIT } from '../../src/http/routes.js';
import { HTTP_LIMITS, HttpServer, SERVER_TIMING_METRIC } from '../../src/http/server.js';
import { freePort } from '../fixtures/process-cluster.js';

const TOKEN = 'a-token-for-the-tests-0123456789';
const started: Cluster[] = [];
const servers: HttpServer[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop()));
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

interface Answer {
  readonly status: number;
  readonly headers: Headers;
  readonly body: any; // eslint-disable-line @typescript-eslint/no-explicit-any -- the JSON answered, asserted on field by field
}

async function request(cluster: Cluster, path: string, init: RequestInit = {}): Promise<Answer> {
  const r = await fetch(`http://${cluster.httpAddress}${path}`, init);
  const text = await r.text();
  return { status: r.status, headers: r.headers, body: r.headers.get('content-type')?.startsWith('application/json') ? JSON.parse(text) : text };
}

const withToken = (token = TOKEN): RequestInit => ({ method: 'POST', headers: { authorization: `Bearer ${token}` } });

/** A GET on node:http, which (unlike fetch) asks for no encoding unless told and decompresses nothing. */
function rawGet(cluster: Cluster, path: string, headers: Record<string, string>): Promise<{ headers: IncomingHttpHeaders; body: Buffer }> {
  return new Promise((resolve, reject) => {
    get(`http://${cluster.httpAddress}${path}`, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (d: Buffer) => chunks.push(d));
      res.on('end', () => resolve({ headers: res.headers, body: Buffer.concat(chunks) }));
      res.on('error', reject);
    }).on('error', reject);
  });
}

async function single(options: ClusterOptions = {}): Promise<Cluster> {
  const c = new Cluster([], { storage: 'memory', http: { listen: '127.0.0.1:0', token: TOKEN }, ...options });
  started.push(c);
  await c.start();
  await c.waitForLeader({ timeoutMs: 10_000 });
  return c;
}

/**
 * Sends `text`, a request left unfinished, to a server of `table` with timeouts of 200 ms for
 * the headers and 400 ms for the request, and reads what it answers until it closes.
 */
async function unfinished(table: RouteTable, text: string): Promise<{ received: string; elapsedMs: number }> {
  const server = new HttpServer(table, new BearerAuth(null), { ...HTTP_LIMITS, headersTimeoutMs: 200, requestTimeoutMs: 400 });
  servers.push(server);
  await server.listen('127.0.0.1', 0);
  const [host, port] = (server.address as string).split(':');
  const socket = connect(Number(port), host);
  socket.write(text);
  let received = '';
  socket.on('data', (d: Buffer) => (received += d.toString()));
  const startedMs = performance.now();
  await new Promise((resolve) => socket.on('close', resolve));
  return { received, elapsedMs: performance.now() - startedMs };
}

describe('the http option', () => {
  const cases: Array<[string, unknown, string]> = [
    ['not an object', 'yes', 'http'],
    ['a listen address without a port', { listen: '127.0.0.1' }, 'http.listen'],
    ['a listen address that is a name', { listen: 'example.com:9464' }, 'http.listen'],
    ['a port past 65535', { listen: '127.0.0.1:70000' }, 'http.listen'],
    ['a non-loopback address without a token', { listen: '0.0.0.0:9464' }, 'http.token'],
    ['a short token', { listen: '127.0.0.1:0', token: 'short' }, 'http.token'],
    ['a token with a space', { listen: '127.0.0.1:0', token: 'a token with spaces in it' }, 'http.token'],
    // A misspelt token left every action refused for want of one, unsaid.
    ['an option of another name', { listen: '127.0.0.1:0', tokn: 'a-token-of-thirty-two-characters-0123' }, 'http.tokn'],
  ];
  it.each(cases)('refuses %s at construction, naming the option', (_name, http, option) => {
    let error: unknown;
    try {
      new Cluster([], { storage: 'memory', http: http as ClusterOptions['http'] });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(InvalidArgumentError);
    expect(error).toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option });
  });

  it('never puts a refused token in its error message', () => {
    const secret = 'SECRET-BUT-HAS SPACE-0123456789';
    expect(() => new Cluster([], { http: { listen: '127.0.0.1:0', token: secret } })).toThrow(/http\.token/);
    try {
      new Cluster([], { http: { listen: '127.0.0.1:0', token: secret } });
    } catch (e) {
      expect((e as Error).message).not.toContain('SECRET');
    }
  });

  it('accepts any address with a token, loopback without, IPv6 in brackets; is off by default', async () => {
    expect(() => new Cluster([], { http: { listen: '0.0.0.0:9464', token: 'x'.repeat(MIN_HTTP_TOKEN_LENGTH) } })).not.toThrow();
    expect(() => new Cluster([], { http: { listen: '[::1]:0' } })).not.toThrow();
    expect(() => new Cluster([], { http: { listen: 'localhost:0' } })).not.toThrow();
    const off = new Cluster([], { storage: 'memory' });
    started.push(off);
    await off.start();
    expect(off.httpAddress).toBeNull();
  });

  it('listens on the port bound for port 0, shown by httpAddress while it runs, and on nothing after stop()', async () => {
    const c = new Cluster([], { storage: 'memory', http: { listen: '127.0.0.1:0' } });
    started.push(c);
    expect(c.httpAddress).toBeNull();
    await c.start();
    const address = c.httpAddress;
    expect(address).toMatch(/^127\.0\.0\.1:\d+$/);
    expect(address).not.toBe('127.0.0.1:0');
    expect((await request(c, '/healthz')).status).toBe(200);
    await c.stop();
    expect(c.httpAddress).toBeNull();
    await expect(fetch(`http://${address}/healthz`)).rejects.toThrow();
  });

  it('fails start() with CRONRAFT_LISTEN_FAILED when its port is taken, and closes what it opened', async () => {
    const first = await single();
    const port = Number(first.httpAddress?.split(':')[1]);
    const second = new Cluster([], { storage: 'memory', http: { listen: `127.0.0.1:${port}` } });
    started.push(second);
    await expect(second.start()).rejects.toMatchObject({ code: 'CRONRAFT_LISTEN_FAILED' });
    expect(second.state().status).toBe('failed');
  });
});

describe('reading over HTTP', () => {
  it('serves state(), members, jobs, one job and history as JSON, Dates as ISO strings', async () => {
    const c = await single();
    let ran = 0;
    c.schedule('tick', { every: '200ms' }, () => {
      ran++;
    });
    await expect.poll(() => c.history({ job: 'tick' }).some((h) => h.outcomes[c.id]?.outcome === 'succeeded') && ran > 0, { timeout: 10_000 }).toBe(true);
    const state = await request(c, '/v1/state');
    expect(state.status).toBe(200);
    expect(state.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(state.headers.get('cache-control')).toBe('no-store');
    expect(state.body).toMatchObject({ id: c.id, status: 'running', role: 'leader', leader: c.id });
    expect(new Date(state.body.clock.clusterTime).toISOString()).toBe(state.body.clock.clusterTime);
    const members = await request(c, '/v1/members');
    // The members as state() lists them (their clocks and contact times move between two looks).
    expect(members.body.leader).toBe(c.id);
    expect(members.body.members.map((m: { id: string }) => m.id)).toEqual(c.state().members.map((m) => m.id));
    expect(Object.keys(members.body.members[0]).sort()).toEqual(Object.keys(JSON.parse(JSON.stringify(c.state().members[0]))).sort());
    const jobs = await request(c, '/v1/jobs');
    expect(jobs.body.jobs.map((j: { name: string }) => j.name)).toEqual(['tick']);
    const job = await request(c, '/v1/jobs/tick');
    expect(job.body).toMatchObject({ name: 'tick', spec: 'every 200', mode: 'one', handlers: [c.id] });
    expect(job.body.nextSlot).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    const history = await request(c, '/v1/history?job=tick&limit=1');
    expect(history.body.history).toHaveLength(1);
    expect(history.body.history[0]).toMatchObject({ job: 'tick', assignees: [c.id] });
    expect(history.body.history[0].slot).toMatch(/Z$/);
    expect((await request(c, '/v1/history?job=other')).body).toEqual({ history: [] });
    // A name with characters that need escaping in a path comes through decoded.
    c.schedule('a job/with spaces', { every: '1h' }, () => undefined);
    await expect.poll(async () => (await request(c, `/v1/jobs/${encodeURIComponent('a job/with spaces')}`)).status, { timeout: 10_000 }).toBe(200);
  });

  it('gzips /v1/jobs and /v1/state for a client that asks for it, the same JSON; and for no other', async () => {
    const c = await single();
    for (let i = 0; i < 50; i++) c.schedule(`hourly-${i}`, { every: '1h' }, () => undefined);
    await expect.poll(() => c.state().jobs.length, { timeout: 10_000 }).toBe(50);
    for (const path of ['/v1/jobs', '/v1/state']) {
      const plain = await rawGet(c, path, {});
      const zipped = await rawGet(c, path, { 'accept-encoding': 'gzip, br' });
      expect(plain.headers['content-encoding']).toBeUndefined();
      expect(zipped.headers['content-encoding']).toBe('gzip');
      expect(zipped.headers.vary).toBe('accept-encoding');
      expect(Number(zipped.headers['content-length'])).toBe(zipped.body.length);
      expect(zipped.body.length).toBeLessThan(plain.body.length / 4);
      const [a, b] = [JSON.parse(plain.body.toString()), JSON.parse(gunzipSync(zipped.body).toString())];
      expect(b.jobs).toEqual(a.jobs);
      expect((await rawGet(c, path, { 'accept-encoding': 'gzip;q=0' })).headers['content-encoding']).toBeUndefined();
    }
  });

  it("serves fan-out's topics, and their items by state in /metrics", async () => {
    const c = await single();
    const ran: unknown[] = [];
    c.consume('thumbs', (item) => void ran.push(item), { parallelism: 2 });
    await expect.poll(() => c.state().version.active >= FANOUT_VERSION && c.state().topics.length === 1, { timeout: 10_000 }).toBe(true);
    await (await c.emitItems('thumbs', [1, 2, 3])).settled({ timeoutMs: 10_000 });
    const topics = await request(c, '/v1/topics');
    expect(topics.body.topics).toEqual([expect.objectContaining({ name: 'thumbs', emitted: 3, done: 3, pending: 0, consumers: { [c.id]: 2 } })]);
    const metrics = (await request(c, '/metrics')).body as string;
    expect(metrics).toContain('cronraft_topic_items_total{topic="thumbs",event="done"} 3');
    expect(metrics).toContain('cronraft_topic_items{topic="thumbs",state="pending"} 0');
  });

  it("pauses, resumes and triggers a job behind the token: 404 for a job the cluster does not know, 401 without the token", async () => {
    const c = await single();
    c.schedule('nightly', { every: '1h' }, () => undefined);
    await expect.poll(() => c.state().version.active >= FANOUT_VERSION && c.state().jobs.some((j) => j.name === 'nightly'), { timeout: 10_000 }).toBe(true);
    // What /v1/state and /v1/jobs answer, which they keep between answers: each change shows in the next.
    const pausedThere = async (): Promise<boolean[]> => [
      (await request(c, '/v1/state')).body.jobs.find((j: { name: string }) => j.name === 'nightly').paused,
      (await request(c, '/v1/jobs')).body.jobs.find((j: { name: string }) => j.name === 'nightly').paused,
    ];
    expect(await pausedThere()).toEqual([false, false]);
    expect((await request(c, '/v1/jobs/nightly/pause', { method: 'POST' })).status).toBe(401);
    expect(await request(c, '/v1/jobs/nightly/pause', withToken())).toMatchObject({ status: 200, body: { job: 'nightly', paused: true } });
    expect(c.state().jobs.find((j) => j.name === 'nightly')?.paused).toBe(true);
    expect(await pausedThere()).toEqual([true, true]);
    expect(await request(c, '/v1/jobs/nightly/resume', withToken())).toMatchObject({ status: 200, body: { job: 'nightly', paused: false } });
    expect(await pausedThere()).toEqual([false, false]);
    const triggered = await request(c, '/v1/jobs/nightly/trigger', withToken());
    expect(triggered).toMatchObject({ status: 200, body: { job: 'nightly', fencingToken: expect.any(Number) } });
    await expect.poll(() => c.history({ job: 'nightly' }).find((h) => h.fencingToken === triggered.body.fencingToken)?.outcomes[c.id]?.outcome, { timeout: 10_000 }).toBe('succeeded');
    expect(await request(c, '/v1/jobs/nobody/trigger', withToken())).toMatchObject({ status: 404, body: { error: { code: 'CRONRAFT_UNKNOWN_JOB' } } });
    // A body these actions do not take ({ slot }, meant for cancel) was ignored, the job paused whole.
    const withBody = (body: unknown): RequestInit => ({ ...withToken(), headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    for (const body of [{ slot: '2026-01-01T00:00:00.000Z' }, null, [], 'x']) {
      for (const action of ['pause', 'resume', 'trigger']) {
        expect(await request(c, `/v1/jobs/nightly/${action}`, withBody(body)), `${action} ${JSON.stringify(body)}`).toMatchObject({ status: 400, body: { error: { code: 'CRONRAFT_INVALID_ARGUMENT' } } });
      }
    }
    expect(c.state().jobs.find((j) => j.name === 'nightly')?.paused).toBe(false);
    expect(await request(c, '/v1/jobs/nightly/pause', withBody({}))).toMatchObject({ status: 200, body: { paused: true } });
  });

  it('cancels a job’s runs in progress behind the token, one slot when the body names it: 404 for an unknown job, 400 for a bad body, 401 without the token; counted in /metrics', async () => {
    const c = await single();
    const signals: AbortSignal[] = [];
    c.schedule('slow', { every: '1h' }, (ctx) => {
      signals.push(ctx.signal);
      return new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }));
    });
    await expect.poll(() => c.state().version.active >= FANOUT_VERSION && c.state().jobs.some((j) => j.name === 'slow'), { timeout: 10_000 }).toBe(true);
    expect((await request(c, '/v1/jobs/slow/cancel', { method: 'POST' })).status).toBe(401);
    expect(await request(c, '/v1/jobs/slow/cancel', withToken())).toMatchObject({ status: 200, body: { job: 'slow', cancelled: [] } });
    const first = await c.trigger('slow');
    await expect.poll(() => signals.length, { timeout: 10_000 }).toBe(1);
    const json = (body: unknown): RequestInit => ({ ...withToken(), headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: JSON.stringify(body) });
    // Another slot named: this run goes on.
    expect(await request(c, '/v1/jobs/slow/cancel', json({ slot: '2001-01-01T00:00:00.000Z' }))).toMatchObject({ status: 200, body: { cancelled: [] } });
    expect(signals[0]?.aborted).toBe(false);
    const answer = await request(c, '/v1/jobs/slow/cancel', json({ slot: first.slot.toISOString() }));
    expect(answer).toMatchObject({ status: 200, body: { job: 'slow', cancelled: [{ slot: first.slot.toISOString(), fencingToken: first.fencingToken }] } });
    await expect.poll(() => signals[0]?.aborted, { timeout: 5000 }).toBe(true);
    await expect.poll(() => c.history({ job: 'slow' })[0]?.outcomes[c.id]?.outcome, { timeout: 10_000 }).toBe('cancelled');
    expect((await request(c, '/metrics')).body).toContain('cronraft_job_runs_total{job="slow",outcome="cancelled"} 1');
    expect((await request(c, '/v1/history?job=slow')).body.history[0]).toMatchObject({ cancelled: { by: c.id } });
    // A day that does not exist is refused, not rolled over to another slot's (Feb 30 is Mar 2 to Date.parse).
    for (const bad of [{ slot: 'yesterday' }, { slot: '2026-01-01T00:00:00' }, { slot: '2027-02-30T00:00:00.000Z' }, { slot: 5 }, { slots: [] }, ['x'], 'slot', null]) {
      expect(await request(c, '/v1/jobs/slow/cancel', json(bad))).toMatchObject({ status: 400, body: { error: { code: 'CRONRAFT_INVALID_ARGUMENT' } } });
    }
    expect(await request(c, '/v1/jobs/nobody/cancel', withToken())).toMatchObject({ status: 404, body: { error: { code: 'CRONRAFT_UNKNOWN_JOB' } } });
  });

  it('answers /healthz while live and /readyz 200 once a leader is known and the clock is synced', async () => {
    const c = await single();
    expect(await request(c, '/healthz')).toMatchObject({ status: 200, body: { live: true } });
    await expect.poll(() => c.state().clock.synced, { timeout: 10_000 }).toBe(true);
    expect(await request(c, '/readyz')).toMatchObject({ status: 200, body: { ready: true, leader: c.id } });
  });

  it('answers /readyz 503 with the reason while no leader is known, and still serves its state', async () => {
    // One of three founding members, alone: it forms, but no quorum elects a leader.
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    const c = new Cluster(addrs, { storage: 'memory', listen: addrs[0], joinTimeoutMs: 100, http: { listen: '127.0.0.1:0' } });
    started.push(c);
    await c.start();
    expect(await request(c, '/readyz')).toMatchObject({ status: 503, body: { ready: false, reason: 'no leader is known', leader: null } });
    expect(await request(c, '/healthz')).toMatchObject({ status: 200 });
    expect((await request(c, '/v1/members')).body.members.map((m: { id: string }) => m.id)).toEqual([...addrs].sort());
  });
});

describe('errors over HTTP', () => {
  it('answers an unknown route 404, a wrong method 405 naming the right one, each as { error: { code, message } }', async () => {
    const c = await single();
    expect(await request(c, '/v1/nothing')).toMatchObject({ status: 404, body: { error: { code: 'CRONRAFT_HTTP_NOT_FOUND' } } });
    expect(await request(c, '/v1/jobs/a/b')).toMatchObject({ status: 404, body: { error: { code: 'CRONRAFT_HTTP_NOT_FOUND' } } });
    const wrong = await request(c, '/v1/state', { method: 'DELETE' });
    expect(wrong).toMatchObject({ status: 405, body: { error: { code: 'CRONRAFT_HTTP_METHOD_NOT_ALLOWED' } } });
    expect(wrong.headers.get('allow')).toBe('GET, HEAD');
    const get = await request(c, '/v1/members/x/remove');
    expect(get).toMatchObject({ status: 405 });
    expect(get.headers.get('allow')).toBe('POST');
    expect(typeof wrong.body.error.message).toBe('string');
    // A refusal of a request with no body keeps the connection: each closed it, and a prober of
    // a wrong path paid a new connection every time.
    for (const refused of [await request(c, '/v1/nothing'), wrong, get, await request(c, '/v1/members/x/remove', { method: 'POST' })]) {
      expect(refused.status).toBeGreaterThanOrEqual(400);
      expect(refused.headers.get('connection')).toBe('keep-alive');
    }
    // A path that begins with two slashes is a path: it was read as a URL's host and path, and
    // answered "No route /state".
    const doubled = await rawGet(c, '//v1/state', {});
    expect(JSON.parse(doubled.body.toString())).toMatchObject({ error: { code: 'CRONRAFT_HTTP_NOT_FOUND', message: expect.stringContaining('//v1/state') } });
  });

  it('answers HEAD wherever it answers GET, with the head alone (a health check that asks HEAD was refused 405)', async () => {
    const c = await single();
    for (const path of ['/healthz', '/readyz', '/metrics', '/', '/v1/state']) {
      const got = await fetch(`http://${c.httpAddress}${path}`);
      await got.arrayBuffer();
      const head = await fetch(`http://${c.httpAddress}${path}`, { method: 'HEAD' });
      expect(head.status, path).toBe(got.status);
      expect(head.headers.get('content-type'), path).toBe(got.headers.get('content-type'));
      expect(await head.text(), path).toBe('');
    }
    // An action is still POST alone.
    expect((await fetch(`http://${c.httpAddress}/v1/jobs/x/pause`, { method: 'HEAD' })).status).toBe(405);
  });

  it('answers an unknown job 404 and a bad query 400, with the library codes', async () => {
    const c = await single();
    expect(await request(c, '/v1/jobs/nope')).toMatchObject({ status: 404, body: { error: { code: 'CRONRAFT_UNKNOWN_JOB' } } });
    for (const query of ['limit=0', 'limit=-1', 'limit=1.5', 'limit=abc', `limit=${MAX_HTTP_HISTORY_LIMIT + 1}`, 'limit=', `job=${'x'.repeat(201)}`, 'job=', 'limit=1&limit=2', 'job=a&job=b', 'jobs=tick', 'limit=1&Job=tick']) {
      expect(await request(c, `/v1/history?${query}`), query).toMatchObject({ status: 400, body: { error: { code: 'CRONRAFT_INVALID_ARGUMENT' } } });
    }
    expect((await request(c, `/v1/history?limit=${MAX_HTTP_HISTORY_LIMIT}`)).status).toBe(200);
  });

  it('refuses an action without the token, with a wrong one or a malformed header: 401, never reaching the cluster', async () => {
    const c = await single();
    const victim = '127.0.0.1:1';
    for (const init of [{ method: 'POST' }, withToken(`${TOKEN}x`), withToken(TOKEN.slice(0, -1)), withToken('x'.repeat(TOKEN.length)), { method: 'POST', headers: { authorization: TOKEN } }, { method: 'POST', headers: { authorization: `Basic ${TOKEN}` } }]) {
      const r = await request(c, `/v1/members/${victim}/remove`, init);
      expect(r).toMatchObject({ status: 401, body: { error: { code: 'CRONRAFT_HTTP_UNAUTHORIZED' } } });
      expect(r.headers.get('www-authenticate')).toBe('Bearer realm="cronraft"');
    }
    // The scheme's name is case-insensitive (RFC 9110): the right token under `bearer` passes.
    for (const scheme of ['bearer', 'BEARER']) {
      const r = await request(c, '/v1/jobs/nobody/pause', { method: 'POST', headers: { authorization: `${scheme} ${TOKEN}` } });
      expect(r.body.error.code).not.toBe('CRONRAFT_HTTP_UNAUTHORIZED');
    }
  });

  it('refuses every action on a member without a token, even with one given', async () => {
    const c = new Cluster([], { storage: 'memory', http: { listen: '127.0.0.1:0' } });
    started.push(c);
    await c.start();
    const r = await request(c, `/v1/members/${encodeURIComponent(c.id)}/remove`, withToken());
    expect(r).toMatchObject({ status: 401, body: { error: { code: 'CRONRAFT_HTTP_UNAUTHORIZED', message: expect.stringContaining('no http.token') } } });
    expect(c.state().members).toHaveLength(1);
    expect(await request(c, '/v1/jobs/nightly/cancel', withToken())).toMatchObject({ status: 401, body: { error: { code: 'CRONRAFT_HTTP_UNAUTHORIZED' } } });
  });

  it('removes a member with the token, and answers a refusal 409 with the code and reason', async () => {
    const c = await single();
    await expect.poll(() => c.state().version.active, { timeout: 10_000 }).toBe(2);
    expect(await request(c, '/v1/members/127.0.0.1:1/remove', withToken())).toMatchObject({ status: 409, body: { error: { code: 'CRONRAFT_MEMBERSHIP_REFUSED', message: expect.stringContaining('not-member') } } });
    expect(await request(c, `/v1/members/${encodeURIComponent(c.id)}/remove`, withToken())).toMatchObject({ status: 409, body: { error: { code: 'CRONRAFT_MEMBERSHIP_REFUSED', message: expect.stringContaining('last-voter') } } });
    // A body it does not take is refused before the member is looked for.
    expect(await request(c, '/v1/members/127.0.0.1:1/remove', { ...withToken(), headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' }, body: '{"force":true}' })).toMatchObject({ status: 400, body: { error: { code: 'CRONRAFT_INVALID_ARGUMENT' } } });
  });

  it('answers a body over the bound 413 and closes the connection, declared or streamed; a body not JSON 400', async () => {
    const c = await single();
    const big = 'x'.repeat(HTTP_LIMITS.maxBodyBytes + 1);
    const declared = await request(c, '/v1/members/127.0.0.1:1/remove', { ...withToken(), body: big });
    expect(declared).toMatchObject({ status: 413, body: { error: { code: 'CRONRAFT_HTTP_BODY_TOO_LARGE' } } });
    expect(declared.headers.get('connection')).toBe('close');
    // Chunked, with no length declared: refused as the bytes pass the bound.
    const chunks = new ReadableStream<Uint8Array>({
      start(controller) {
        for (let i = 0; i < 3; i++) controller.enqueue(new Uint8Array(HTTP_LIMITS.maxBodyBytes / 2));
        controller.close();
      },
    });
    const streamed = await request(c, '/v1/members/127.0.0.1:1/remove', { ...withToken(), body: chunks, duplex: 'half' } as RequestInit);
    expect(streamed).toMatchObject({ status: 413, body: { error: { code: 'CRONRAFT_HTTP_BODY_TOO_LARGE' } } });
    expect(await request(c, '/v1/members/127.0.0.1:1/remove', { ...withToken(), body: '{not json' })).toMatchObject({ status: 400, body: { error: { code: 'CRONRAFT_HTTP_BAD_BODY' } } });
  });

  it("says in Server-Timing how long the member took on every answer: JSON, in pieces, text, an error", async () => {
    // A route that takes 40 ms of the member's time before it answers: its Server-Timing holds them.
    const slow = (answer: () => RouteAnswer) => async (): Promise<RouteAnswer> => {
      await new Promise((resolve) => setTimeout(resolve, 40));
      return answer();
    };
    const table = new RouteTable().add(
      { method: 'GET', path: '/json', action: false, handle: slow(() => ({ json: { ok: true } })) },
      { method: 'GET', path: '/pieces', action: false, handle: slow(() => ({ pieces: [Buffer.from('{"a":'), Buffer.from('1}')], contentType: 'application/json; charset=utf-8' })) },
      { method: 'GET', path: '/text', action: false, handle: slow(() => ({ text: 'up', contentType: 'text/plain', headers: {} })) },
      { method: 'GET', path: '/fails', action: false, handle: slow(() => { throw new Error('internal detail'); }) },
    );
    const server = new HttpServer(table, new BearerAuth(null));
    servers.push(server);
    await server.listen('127.0.0.1', 0);
    const timings: Record<string, number> = {};
    for (const path of ['/json', '/pieces', '/text', '/fails', '/nothing-here']) {
      const r = await fetch(`http://${server.address}${path}`);
      await r.text();
      const header = r.headers.get('server-timing') ?? '';
      expect(header, path).toMatch(new RegExp(`^${SERVER_TIMING_METRIC};dur=\\d+\\.\\d{2}$`));
      timings[path] = Number(header.split('dur=')[1]);
    }
    for (const path of ['/json', '/pieces', '/text', '/fails']) expect(timings[path], path).toBeGreaterThanOrEqual(39);
    // Refused before any route ran: the member's time is the match alone.
    expect(timings['/nothing-here']).toBeLessThan(39);
  });

  it('answers a server fault 500 without its message', async () => {
    const table = new RouteTable().add({ method: 'GET', path: '/boom', action: false, handle: () => { throw new Error('internal detail'); } });
    const server = new HttpServer(table, new BearerAuth(null));
    servers.push(server);
    await server.listen('127.0.0.1', 0);
    const r = await fetch(`http://${server.address}/boom`);
    expect(r.status).toBe(500);
    const body = await r.text();
    expect(JSON.parse(body)).toEqual({ error: { code: 'CRONRAFT_INTERNAL', message: 'The server failed to answer the request' } });
    expect(body).not.toContain('internal detail');
  });

  it('closes a client that does not finish its headers within headersTimeoutMs with 408', async () => {
    const { received, elapsedMs } = await unfinished(new RouteTable(), 'GET /healthz HTTP/1.1\r\nHost: x\r\n');
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    expect(elapsedMs).toBeGreaterThanOrEqual(150);
  });

  it('answers 408 to a client that does not finish its body within requestTimeoutMs', async () => {
    const table = new RouteTable().add({ method: 'POST', path: '/echo', action: false, handle: ({ body }) => ({ json: body }) });
    const { received, elapsedMs } = await unfinished(table, 'POST /echo HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{"half":');
    expect(received).toMatch(/^HTTP\/1\.1 408/);
    expect(elapsedMs).toBeGreaterThanOrEqual(300);
  });

  it('refuses a head past maxHeaderBytes (431) and takes one within it', async () => {
    const head = (bytes: number): string => `GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\nX-Pad: ${'a'.repeat(bytes)}\r\n\r\n`;
    expect((await unfinished(new RouteTable(), head(HTTP_LIMITS.maxHeaderBytes))).received).toMatch(/^HTTP\/1\.1 431/);
    expect((await unfinished(new RouteTable(), head(HTTP_LIMITS.maxHeaderBytes - 1024))).received).toMatch(/^HTTP\/1\.1 404/);
  });

  it('past maxConnections closes the oldest connection with no request under way, and refuses a new one only when every one has', async () => {
    // Before, a new one was always refused: 64 connections that sent nothing kept /healthz from
    // answering until their headers' timeout (found by an attack).
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let slowStarted = 0;
    let bothSlowStarted!: () => void;
    const bothSlow = new Promise<void>((resolve) => (bothSlowStarted = resolve));
    const slow = async (): Promise<{ json: number }> => {
      if (++slowStarted === 2) bothSlowStarted();
      await held;
      return { json: 2 };
    };
    const table = new RouteTable()
      .add({ method: 'GET', path: '/x', action: false, handle: () => ({ json: 1 }) })
      .add({ method: 'GET', path: '/slow', action: false, handle: slow });
    const server = new HttpServer(table, new BearerAuth(null), { ...HTTP_LIMITS, maxConnections: 2 });
    servers.push(server);
    await server.listen('127.0.0.1', 0);
    const [host, port] = (server.address as string).split(':');
    const open = (): { socket: ReturnType<typeof connect>; answered: Promise<string>; closed: Promise<string> } => {
      const socket = connect(Number(port), host);
      let received = '';
      const answered = new Promise<string>((resolve) => socket.on('data', (d: Buffer) => resolve((received += d.toString()))));
      const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(received)));
      socket.on('error', () => undefined);
      return { socket, answered, closed };
    };
    const connected = (c: ReturnType<typeof open>): Promise<void> => new Promise((resolve) => c.socket.once('connect', () => resolve()));
    // Two that send nothing: a third is served, the oldest of them closed to make room.
    const silent = [open(), open()];
    for (const c of silent) await connected(c);
    const third = open();
    third.socket.write('GET /x HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await third.answered).toMatch(/^HTTP\/1\.1 200/);
    expect(await silent[0]!.closed).toBe('');
    // Two with a request under way each: a third is refused, closed without an answer.
    for (const c of [...silent, third]) c.socket.destroy();
    const busy = [open(), open()];
    for (const c of busy) c.socket.write('GET /slow HTTP/1.1\r\nHost: x\r\n\r\n');
    await bothSlow;
    const refused = open();
    refused.socket.write('GET /x HTTP/1.1\r\nHost: x\r\n\r\n');
    expect(await refused.closed).toBe('');
    release();
    for (const c of busy) expect(await c.answered).toMatch(/^HTTP\/1\.1 200/);
    for (const c of busy) c.socket.destroy();
  });

  it('answers a GET that announces a body 400 at once, rather than wait for a body it never sends (found by a review)', async () => {
    // Such a request held its connection, as one under way, until requestTimeoutMs: no making of
    // room past maxConnections could take it back.
    const table = new RouteTable().add({ method: 'GET', path: '/x', action: false, handle: () => ({ json: 1 }) });
    for (const framing of ['Content-Length: 10', 'Transfer-Encoding: chunked']) {
      const { received } = await unfinished(table, `GET /x HTTP/1.1\r\nHost: x\r\n${framing}\r\n\r\n`);
      expect(received, framing).toMatch(/^HTTP\/1\.1 400/);
      expect(received, framing).toContain('CRONRAFT_HTTP_BAD_BODY');
    }
  });

  it('answers a request target the URL parser refuses 404, not as a fault of the server', async () => {
    const server = new HttpServer(new RouteTable(), new BearerAuth(null));
    servers.push(server);
    await server.listen('127.0.0.1', 0);
    const [host, port] = (server.address as string).split(':');
    for (const target of ['//[/v1/state', 'http://[/v1/state', '//a:99999/v1/state']) {
      const socket = connect(Number(port), host);
      let received = '';
      socket.on('data', (d: Buffer) => (received += d.toString()));
      socket.write(`GET ${target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
      await new Promise((resolve) => socket.on('close', resolve));
      expect(received, target).toMatch(/^HTTP\/1\.1 404/);
      expect(JSON.parse(received.slice(received.indexOf('\r\n\r\n') + 4)), target).toMatchObject({ error: { code: 'CRONRAFT_HTTP_NOT_FOUND' } });
    }
  });

  /** A server of one route (GET /x), `limits` over HTTP_LIMITS, and a client connected to it that reads nothing until told. */
  async function pipelining(limits: Partial<typeof HTTP_LIMITS>, answerBytes = 10_000): Promise<{ socket: ReturnType<typeof connect>; read: () => Promise<{ answers: number; elapsedMs: number }> }> {
    const answer = 'x'.repeat(answerBytes);
    const table = new RouteTable().add({ method: 'GET', path: '/x', action: false, handle: () => ({ json: answer }) });
    const server = new HttpServer(table, new BearerAuth(null), { ...HTTP_LIMITS, ...limits });
    servers.push(server);
    await server.listen('127.0.0.1', 0);
    const [host, port] = (server.address as string).split(':');
    const socket = connect(Number(port), host);
    socket.pause();
    socket.on('error', () => undefined);
    await new Promise((resolve) => socket.on('connect', resolve));
    const startedMs = performance.now();
    const read = async (): Promise<{ answers: number; elapsedMs: number }> => {
      let received = '';
      socket.on('data', (d: Buffer) => (received += d.toString('latin1')));
      socket.resume();
      await new Promise((resolve) => socket.on('close', resolve));
      return { answers: received.split('HTTP/1.1 200').length - 1, elapsedMs: performance.now() - startedMs };
    };
    return { socket, read };
  }

  it('closes a connection that pipelines more than maxPipelinedRequests unanswered requests, rather than keep an answer for each', async () => {
    const { socket, read } = await pipelining({ maxPipelinedRequests: 4 });
    // 2,000 requests in one write, and not one answer read: the fifth closes the connection.
    socket.write('GET /x HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(2000));
    const { answers } = await read();
    expect(answers).toBeLessThanOrEqual(4);
  });

  it('answers pipelined requests within maxPipelinedRequests, in order', async () => {
    const { socket, read } = await pipelining({ maxPipelinedRequests: 4 });
    socket.write('GET /x HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(3) + 'GET /x HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n');
    expect((await read()).answers).toBe(4);
  });

  it('closes a connection whose client reads none of its answers within stalledTimeoutMs', async () => {
    // Eight answers of 4 MB, more than loopback's socket buffers hold: the server's writes stall
    // until the client reads. (Without the timeout, every answer came once it read, and the idle
    // connection closed after keepAliveTimeoutMs.)
    const { socket, read } = await pipelining({ stalledTimeoutMs: 300, keepAliveTimeoutMs: 200 }, 4_000_000);
    socket.write('GET /x HTTP/1.1\r\nHost: x\r\n\r\n'.repeat(8));
    await new Promise((resolve) => setTimeout(resolve, 1500));
    // Closed meanwhile: what the kernel's buffers held arrives, never all eight.
    const { answers, elapsedMs } = await read();
    expect(answers).toBeLessThan(8);
    expect(elapsedMs).toBeGreaterThanOrEqual(300);
  });

  it('refuses two routes for one method and path', () => {
    const route = { method: 'GET', path: '/x', action: false, handle: () => ({ json: null }) } as const;
    expect(() => new RouteTable().add(route, route)).toThrow(/Two routes for GET \/x/);
  });
});
