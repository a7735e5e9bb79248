import { execFile } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Cluster } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';

const run = promisify(execFile);
/** The compiled command, as `npx cronraft` runs it (test/global-setup.ts builds first). */
const cli = join(import.meta.dirname, '..', '..', 'dist', 'src', 'cli', 'main.js');
const TOKEN = 'cli-test-token-0123456789abcdef';

async function cronraft(args: readonly string[], env: Record<string, string> = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    // The command's own environment variables come from the test alone.
    const { CRONRAFT_URL: _url, CRONRAFT_TOKEN: _token, ...inherited } = process.env;
    const { stdout, stderr } = await run(process.execPath, [cli, ...args], { timeout: 60_000, env: { ...inherited, ...env } });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const e = error as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

const members: Cluster[] = [];
let leader: Cluster;
let follower: Cluster;
const urlOf = (c: Cluster): string => `http://${c.httpAddress}`;

beforeAll(async () => {
  const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
  members.push(...addrs.map((listen) => new Cluster(addrs, { storage: 'memory', listen, heartbeatMs: 50, electionTimeoutMs: 500, stopTimeoutMs: 2000, http: { listen: '127.0.0.1:0', token: TOKEN } })));
  await Promise.all(members.map((m) => m.start()));
  const { leader: id } = await members[0]!.waitForLeader({ timeoutMs: 10_000 });
  leader = members.find((m) => m.id === id)!;
  follower = members.find((m) => m.id !== id)!;
  for (const m of members) m.schedule('report', { every: '300ms' }, () => undefined);
  // The actions need cluster version 2, and the tables a run to show.
  await vi.waitFor(() => expect(members.every((m) => m.state().clock.synced && m.state().version.active >= 2)).toBe(true), { timeout: 15_000, interval: 50 });
  await vi.waitFor(() => expect(leader.history({ job: 'report' }).some((h) => Object.values(h.outcomes).some((o) => o.outcome === 'succeeded'))).toBe(true), { timeout: 15_000, interval: 50 });
});

afterAll(async () => {
  await Promise.all(members.map((m) => m.stop()));
});

describe('cronraft against a running cluster of three', () => {
  it('status: a table for people, JSON for scripts, exit 0 when ready', async () => {
    const text = await cronraft(['status', '--url', urlOf(follower)]);
    expect(text).toMatchObject({ code: 0, stderr: '' });
    expect(text.stdout).toMatch(new RegExp(`^member +${follower.id}$`, 'm'));
    expect(text.stdout).toMatch(new RegExp(`^leader +${leader.id}$`, 'm'));
    expect(text.stdout).toMatch(/^ready +yes$/m);
    const json = await cronraft(['status', '--url', urlOf(leader), '--json']);
    expect(json.code).toBe(0);
    const parsed = JSON.parse(json.stdout) as { ready: boolean; reason: null; state: { id: string; role: string; members: unknown[] } };
    expect(parsed).toMatchObject({ ready: true, reason: null, state: { id: leader.id, role: 'leader' } });
    expect(parsed.state.members).toHaveLength(3);
  });

  it('members: one row per member, the leader named; --json as the member answered', async () => {
    const text = await cronraft(['members', '--url', urlOf(leader)]);
    expect(text.code).toBe(0);
    const lines = text.stdout.trim().split('\n');
    expect(lines[0]).toMatch(/^ID +ROLE +REACHABLE +LAG +CLOCK OFFSET MS +LAST CONTACT MS$/);
    expect(lines).toHaveLength(4);
    expect(lines.find((l) => l.startsWith(leader.id))).toMatch(/ leader +yes +0 /);
    // Whole milliseconds, as the clock offset beside is rounded (it printed 0.7435900000000402).
    for (const line of lines.slice(1)) expect(line).toMatch(/ (\d+|-)$/);
    const json = JSON.parse((await cronraft(['members', '--url', urlOf(leader), '--json'])).stdout) as { leader: string; members: Array<{ id: string }> };
    expect(json.leader).toBe(leader.id);
    expect(json.members.map((m) => m.id).sort()).toEqual(members.map((m) => m.id).sort());
  });

  it('jobs and history: the job, its spec and its outcomes; --job and --limit passed on, 20 by default; the URL from CRONRAFT_URL', async () => {
    const jobs = await cronraft(['jobs', '--url', urlOf(follower)]);
    expect(jobs.code).toBe(0);
    expect(jobs.stdout).toMatch(/^NAME +SPEC +MODE +PAUSED +NEXT SLOT +LAST SLOT +LAST OUTCOME +MISSED +SKIPPED +RUNNING$/m);
    expect(jobs.stdout).toMatch(/^report +every 300 +one +no +\d{4}-/m);
    const history = await cronraft(['history', '--url', urlOf(leader), '--job', 'report', '--limit', '2', '--json']);
    expect(history.code).toBe(0);
    const entries = (JSON.parse(history.stdout) as { history: Array<{ job: string; slot: string }> }).history;
    expect(entries.length).toBeGreaterThan(0);
    expect(entries.length).toBeLessThanOrEqual(2);
    expect(entries.every((h) => h.job === 'report' && h.slot.endsWith('Z'))).toBe(true);
    const table = await cronraft(['history', '--url', urlOf(leader), '--job', 'report']);
    expect(table.stdout).toMatch(/=succeeded/);
    // With the URL from CRONRAFT_URL and no --limit: the latest 20 slots claimed, in the member's
    // order (the log's, by each slot's first claim: a slot moved at the start keeps its place,
    // under its new token), which slots claimed since may only precede.
    await vi.waitFor(() => expect(leader.history({ limit: 1000 }).length).toBeGreaterThan(21), { timeout: 15_000, interval: 100 });
    const byDefault = await cronraft(['history', '--json'], { CRONRAFT_URL: urlOf(leader) });
    expect(byDefault.code).toBe(0);
    const slots = (JSON.parse(byDefault.stdout) as { history: Array<{ slot: string }> }).history.map((h) => h.slot);
    expect(slots).toHaveLength(20);
    const all = leader.history({ limit: 1000 }).map((h) => h.slot.toISOString());
    const from = all.indexOf(slots[0]!);
    expect(all.slice(from, from + 20)).toEqual(slots);
  });

  it('exit 2 on a usage error: no --url, a bad --url, a bad --limit (past the bound a member takes too), a bad --job (it asked the member, exit 1), a bad --slot (a day that does not exist too), remove-member without a token, an unknown command', async () => {
    const cancel = (slot: string): string[] => ['cancel', '--url', urlOf(leader), '--token', TOKEN, 'report', '--slot', slot];
    for (const args of [['status'], ['status', '--url', 'not a url'], ['jobs', '--url', 'ftp://127.0.0.1'], ['history', '--url', urlOf(leader), '--limit', 'x'], ['history', '--url', urlOf(leader), '--limit', '5000'], ['history', '--url', urlOf(leader), '--job', '..'], cancel('noon'), cancel('2027-02-30T00:00:00.000Z'), ['remove-member', '--url', urlOf(leader), follower.id], ['frobnicate']]) {
      const r = await cronraft(args);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr.length, args.join(' ')).toBeGreaterThan(0);
    }
  });

  it('exit 2, quoting no secret, for a job name no member takes, a token no member holds, and a --url with a user and password', async () => {
    // Before, `trigger ..` asked the member and printed its "No route", exit 1; a token with a
    // newline, or a --url with a password, came back whole in fetch's error on stderr.
    const url = urlOf(leader);
    const withPassword = url.replace('http://', 'http://user:hunter2hunter2@');
    for (const [args, env] of [
      [['trigger', '--url', url, '--token', TOKEN, '..'], {}],
      [['cancel', '--url', url, '--token', TOKEN, ''], {}],
      [['pause', '--url', url, 'report'], { CRONRAFT_TOKEN: 'a-secret-token\nwith-a-newline' }],
      [['resume', '--url', withPassword, '--token', TOKEN, 'report'], {}],
    ] as const) {
      const r = await cronraft(args, env);
      expect(r.code, args.join(' ')).toBe(2);
      expect(r.stderr, args.join(' ')).not.toMatch(/a-secret-token|hunter2/);
    }
  });

  it('exit 1 when the request fails: nothing listening, an error answered (the code on stderr), a wrong token', async () => {
    const unreachable = await cronraft(['status', '--url', `http://127.0.0.1:${await freePort()}`]);
    expect(unreachable.code).toBe(1);
    expect(unreachable.stderr).toContain('ECONNREFUSED');
    const refused = await cronraft(['remove-member', '--url', urlOf(leader), '--token', TOKEN, '127.0.0.1:1']);
    expect(refused).toMatchObject({ code: 1 });
    expect(refused.stderr).toContain('CRONRAFT_MEMBERSHIP_REFUSED');
    const wrong = await cronraft(['remove-member', '--url', urlOf(leader), '127.0.0.1:1'], { CRONRAFT_TOKEN: `${TOKEN}-not` });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('CRONRAFT_HTTP_UNAUTHORIZED');
  });

  it("exit 1, saying so, when what answers is no member (an app's own port answering JSON of another shape)", async () => {
    for (const answer of ['null', '[]', '{}', '{"ready":true}']) {
      const server = createServer((_request, response) => response.writeHead(200, { 'content-type': 'application/json' }).end(answer));
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      try {
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
        for (const command of ['status', 'members', 'jobs', 'history']) {
          // Before: Cannot read properties of undefined (reading 'map'), and the like.
          const r = await cronraft([command, '--url', url]);
          expect(r.code, `${command} against ${answer}`).toBe(1);
          expect(r.stderr, `${command} against ${answer}`).toMatch(/the answer is no cronraft member's \(it has no "\w+"\): is --url a member's http address/);
        }
      } finally {
        await new Promise((resolve) => server.close(resolve));
      }
    }
  });

  it('exit 3 from status when the member answers but is not ready', async () => {
    const addrs = [`127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`, `127.0.0.1:${await freePort()}`];
    const alone = new Cluster(addrs, { storage: 'memory', listen: addrs[0], joinTimeoutMs: 100, http: { listen: '127.0.0.1:0' } });
    try {
      await alone.start();
      const r = await cronraft(['status', '--url', urlOf(alone)]);
      expect(r.code).toBe(3);
      expect(r.stdout).toMatch(/^ready +no: no leader is known$/m);
    } finally {
      await alone.stop();
    }
  });

  it('pause, resume and trigger a job with the token', async () => {
    await vi.waitFor(() => expect(members.every((m) => m.state().version.active >= 3)).toBe(true), { timeout: 15_000, interval: 50 });
    const paused = await cronraft(['pause', '--url', urlOf(follower), '--token', TOKEN, 'report']);
    expect(paused).toMatchObject({ code: 0, stderr: '', stdout: 'report paused\n' });
    expect(leader.state().jobs.find((j) => j.name === 'report')?.paused).toBe(true);
    // The table says so, as the JSON does (it did not).
    await vi.waitFor(async () => expect((await cronraft(['jobs', '--url', urlOf(follower)])).stdout).toMatch(/^report +every 300 +one +yes /m), { timeout: 10_000, interval: 50 });
    expect(await cronraft(['resume', '--url', urlOf(follower), '--token', TOKEN, 'report'])).toMatchObject({ code: 0, stdout: 'report resumed\n' });
    const triggered = await cronraft(['trigger', '--url', urlOf(leader), '--token', TOKEN, 'report', '--json']);
    expect(triggered.code).toBe(0);
    expect(JSON.parse(triggered.stdout)).toMatchObject({ job: 'report', fencingToken: expect.any(Number) });
    expect(await cronraft(['trigger', '--url', urlOf(leader), '--token', TOKEN, 'nobody'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/CRONRAFT_UNKNOWN_JOB/) });
    expect((await cronraft(['pause', '--url', urlOf(leader), 'report'])).code).toBe(2);
  });

  it("cancel a job's run in progress with the token, one slot with --slot; says when nothing was running", async () => {
    await vi.waitFor(() => expect(members.every((m) => m.state().version.active >= 3)).toBe(true), { timeout: 15_000, interval: 50 });
    const signals: AbortSignal[] = [];
    for (const m of members) m.schedule('slow', { every: '1h' }, (ctx) => new Promise((resolve) => (signals.push(ctx.signal), ctx.signal.addEventListener('abort', resolve, { once: true }))));
    await vi.waitFor(() => expect(members.every((m) => m.state().jobs.some((j) => j.name === 'slow'))).toBe(true), { timeout: 10_000, interval: 50 });
    const slot = await leader.trigger('slow');
    // Its start in the log, so that the answer names the member running it.
    await vi.waitFor(() => expect(Object.keys(follower.history({ job: 'slow' })[0]?.running ?? {})).toHaveLength(1), { timeout: 10_000, interval: 20 });
    const runner = Object.keys(follower.history({ job: 'slow' })[0]!.running)[0]!;
    const cancelled = await cronraft(['cancel', '--url', urlOf(follower), '--token', TOKEN, 'slow', '--slot', slot.slot.toISOString()]);
    expect(cancelled).toMatchObject({ code: 0, stderr: '' });
    expect(cancelled.stdout).toBe(`cancelled 1 slot of slow:\n  slot ${slot.slot.toISOString()} (fencing token ${slot.fencingToken}) running on ${runner}\n`);
    await vi.waitFor(() => expect(signals.map((s) => s.aborted)).toEqual([true]), { timeout: 5000, interval: 20 });
    const again = await cronraft(['cancel', '--url', urlOf(leader), '--token', TOKEN, 'slow', '--json']);
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toEqual({ job: 'slow', cancelled: [] });
    expect(await cronraft(['cancel', '--url', urlOf(leader), '--token', TOKEN, 'slow'])).toMatchObject({ code: 0, stdout: 'slow: nothing was running, nothing cancelled\n' });
    expect(await cronraft(['cancel', '--url', urlOf(leader), '--token', TOKEN, 'nobody'])).toMatchObject({ code: 1, stderr: expect.stringMatching(/CRONRAFT_UNKNOWN_JOB/) });
    expect(await cronraft(['cancel', '--url', urlOf(leader), '--token', TOKEN, 'slow', '--slot', 'noon'])).toMatchObject({ code: 2, stderr: expect.stringMatching(/Invalid --slot/) });
    expect((await cronraft(['cancel', '--url', urlOf(leader), 'slow'])).code).toBe(2);
  });

  it('remove-member with the token from CRONRAFT_TOKEN: the member leaves the configuration', async () => {
    const r = await cronraft(['remove-member', '--url', urlOf(leader), follower.id], { CRONRAFT_TOKEN: TOKEN });
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(new RegExp(`^removed ${follower.id} \\(the change applied at index \\d+\\)$`, 'm'));
    expect(leader.state().configuration.voters).not.toContain(follower.id);
  });
});
