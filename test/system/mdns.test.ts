import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoopbackNamespace } from '../fixtures/loopback-netns.js';
import type { MdnsRun } from '../fixtures/mdns-members.js';

const execFileAsync = promisify(execFile);

/** The members, run from dist/ (vitest's global setup builds it). */
const SCRIPT = join(process.cwd(), 'dist/test/fixtures/mdns-members.js');
const COUNT = 3;
const JOIN_TIMEOUT_MS = 3000;
/** How long the members may take to agree once started: a look of JOIN_TIMEOUT_MS, a yield as long, an election and two joins. */
const AGREE_DEADLINE_MS = 30_000;

describe('members finding one another by mDNS (real network: a namespace of its own, loopback only)', () => {
  let ns: LoopbackNamespace | { readonly skip: string } = { skip: 'not set up' };
  beforeAll(async () => {
    ns = await LoopbackNamespace.create();
    if ('skip' in ns) console.warn(`mDNS test skipped: ${ns.skip}`);
  });
  afterAll(async () => {
    if (ns instanceof LoopbackNamespace) await ns.cleanup();
  });

  it('three members started together with mdns and no peers end up in one cluster, the lowest id forming it; mDNS opens no socket when off and closes its own on stop', async (ctx) => {
    const lab = ns;
    if (!(lab instanceof LoopbackNamespace)) return ctx.skip(lab.skip);
    const [command, ...args] = lab.launcher;
    const config = { count: COUNT, joinTimeoutMs: JOIN_TIMEOUT_MS, deadlineMs: AGREE_DEADLINE_MS };
    const { stdout } = await execFileAsync(command ?? 'ip', [...args, process.execPath, SCRIPT, JSON.stringify(config)], { timeout: AGREE_DEADLINE_MS + 20_000 });
    const run = JSON.parse(stdout.trim().split('\n').at(-1) ?? '{}') as MdnsRun;

    expect(run.startErrors).toEqual([null, null, null]);
    const lowest = [...run.ids].sort()[0];
    const all = [...run.ids].sort();
    // One cluster: the same leader and every member in the configuration, on every member.
    for (const state of run.states) {
      expect(state.status).toBe('running');
      expect(state.leader).toBe(run.states[0]?.leader);
      expect(state.leader).not.toBeNull();
      expect([...state.configuration.voters, ...state.configuration.learners].sort()).toEqual(all);
      expect(state.configuration.voters).toContain(lowest);
      expect(state.discovery).toMatchObject({ peers: COUNT - 1, dropped: 0 });
    }
    // The lowest id formed it alone; the others yielded, asked it, and it added them.
    for (const state of run.states) expect(state.joins.accepted).toBe(state.id === lowest ? COUNT - 1 : 0);
    expect(run.udpWithMdnsOff).toBe(0);
    expect(run.udpWithMdnsOn).toBe(COUNT);
    expect(run.udpAfterStop).toBe(0);
  });
});
