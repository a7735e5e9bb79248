import { connect } from 'node:net';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { encode } from 'cborg';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterIdOf } from '../../src/cluster-options.js';
import { Cluster, InvalidArgumentError, type ClusterOptions } from '../../src/index.js';
import { pskFromSecret } from '../../src/transport/cluster-secret.js';
import { TYPE_CODES } from '../../src/transport/codec.js';
import { FRAME_FORMAT_VERSION } from '../../src/transport/constants.js';
import { withPrefix } from '../../src/transport/framing.js';
import { hostileNode, openRaw } from '../fixtures/hostile-node.js';
import { freePort } from '../fixtures/process-cluster.js';

const WAIT = { timeout: 10_000, interval: 10 };
const SECRET = 'q7Hc1v9ZrKx0mT4aYw2LdNf8';

const cleanups: (() => Promise<void>)[] = [];

afterEach(async () => {
  await Promise.all(cleanups.splice(0).map((cleanup) => cleanup()));
});

function refusal(run: () => unknown): InvalidArgumentError {
  try {
    run();
  } catch (error) {
    if (error instanceof InvalidArgumentError) return error;
    throw error;
  }
  throw new Error('not refused');
}

async function tempDir(): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), 'cronraft-secret-'));
  cleanups.push(() => rm(dir, { recursive: true, force: true }));
  return dir;
}

/** Three members on loopback; `options(i)` gives each its own. */
async function startThree(options: (i: number) => ClusterOptions): Promise<Cluster[]> {
  const addrs: string[] = [];
  for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
  // An election timeout long enough that a busy machine does not start an honest election,
  // which would move the term this file watches.
  const members = addrs.map((listen, i) => new Cluster(addrs, { storage: 'memory', listen, electionTimeoutMs: 1000, ...options(i) }));
  cleanups.push(async () => void (await Promise.all(members.map((m) => m.stop()))));
  await Promise.all(members.map((m) => m.start()));
  await Promise.all(members.map((m) => m.waitForLeader()));
  return members;
}

describe('the secret options', () => {
  it.each([
    ['0.0.0.0:7001'],
    ['/ip4/0.0.0.0/tcp/0'],
    ['10.0.0.2:7001'],
    ['[::]:7001'],
    ['/dns4/node-1.example.com/tcp/7001'],
  ])('refuses to listen on %s without a secret, naming secret', (listen) => {
    const error = refusal(() => new Cluster([], { listen, storage: 'memory' }));
    expect(error.option).toBe('secret');
    expect(error.message).toContain('insecure');
    expect(new Cluster([], { listen, storage: 'memory', secret: SECRET })).toBeInstanceOf(Cluster);
    expect(new Cluster([], { listen, storage: 'memory', insecure: true })).toBeInstanceOf(Cluster);
  });

  it('runs on loopback without a secret', () => {
    for (const listen of ['127.0.0.1:7001', '127.3.0.1:7001', '[::1]:7001', 'localhost:7001']) {
      expect(new Cluster([], { listen, storage: 'memory' }).id).toBe(listen);
    }
  });

  it.each<[string, ClusterOptions, string]>([
    ['a short secret', { secret: 'hunter2' }, 'secret'],
    ['a secret that is not a string', { secret: 42 as unknown as string }, 'secret'],
    ['both secret and secretFile', { secret: SECRET, secretFile: '/run/secrets/cronraft' }, 'secretFile'],
    ['an empty secretFile', { secretFile: '' }, 'secretFile'],
    ['insecure that is not a boolean', { insecure: 'yes' as unknown as boolean }, 'insecure'],
  ])('refuses %s with InvalidArgumentError naming the option, and never echoes a secret', (_, options, option) => {
    const error = refusal(() => new Cluster([], { storage: 'memory', ...options }));
    expect(error).toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option });
    expect(error.message).not.toContain('hunter2');
  });

  it('reads secretFile at start, refusing one others may read or that is missing', async () => {
    const dir = await tempDir();
    const open = join(dir, 'open');
    await writeFile(open, `${SECRET}\n`);
    await chmod(open, 0o644);
    for (const secretFile of [open, join(dir, 'missing')]) {
      const member = new Cluster([], { storage: 'memory', secretFile });
      await expect(member.start()).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'secretFile' });
    }
  });

  it('forms a cluster whose members got the secret from a file (owner-only, with a trailing newline) and as an option', async () => {
    const file = join(await tempDir(), 'secret');
    await writeFile(file, `${SECRET}\n`, { mode: 0o600 });
    const members = await startThree((i) => (i === 0 ? { secretFile: file } : { secret: SECRET }));
    const { index } = await members[0]!.propose('hello');
    for (const m of members) await expect.poll(() => m.state().appliedIndex, WAIT).toBeGreaterThanOrEqual(index);
  });
});

describe('a cluster with a secret', () => {
  it('gives a process without it no frame to the protocol: no term change, no entry, each connection counted', async () => {
    const members = await startThree(() => ({ secret: SECRET }));
    const leader = members.find((m) => m.state().role === 'leader');
    const victim = members.find((m) => m.state().role === 'follower');
    if (leader === undefined || victim === undefined) throw new Error('no leader and follower');
    const applied: string[] = [];
    victim.on('applied', ({ data }) => applied.push(new TextDecoder().decode(data)));
    await leader.propose('before');
    await victim.barrier();
    const { term } = victim.state();
    const [address] = victim.state().members.find((m) => m.id === victim.id)?.addrs ?? [];
    // The forgery that deposed leaders before the secret: a heartbeat from the leader at a higher term.
    const forged = withPrefix(encode([FRAME_FORMAT_VERSION, clusterIdOf(members.map((m) => m.id).sort()), TYPE_CODES.heartbeat, leader.id, victim.id, term + 5, 0, 0]));

    for (const psk of [undefined, pskFromSecret('not the cluster secret at all')]) {
      const attacker = await hostileNode(psk === undefined ? {} : { psk });
      cleanups.push(() => attacker.stop());
      await expect(openRaw(attacker, address ?? '')).rejects.toThrow();
    }
    const port = Number(victim.id.split(':')[1]);
    const socket = connect(port, '127.0.0.1');
    socket.on('error', () => undefined);
    await new Promise<void>((resolve) => socket.once('connect', resolve));
    socket.write(forged);
    await new Promise<void>((resolve) => socket.once('close', resolve));

    await expect.poll(() => victim.state().transport.inboundConnections?.handshakeFailed, WAIT).toBeGreaterThanOrEqual(3);
    const after = victim.state();
    expect(after).toMatchObject({ term, leader: leader.id });
    expect(after.transport).toMatchObject({ droppedMalformed: 0, droppedUnexpected: 0 });
    expect(after.invalidMessages).toBe(0);
    // The members, which hold the secret, still commit through the member attacked.
    await victim.propose('after');
    await victim.barrier();
    expect(applied).toEqual(['before', 'after']);
    for (const m of members) expect(m.state().term, m.id).toBe(term);
  });

  it('shows a member started with another secret, and its peers, why they do not reach one another: each unreachable, its dials failing their handshake', async () => {
    const addrs: string[] = [];
    for (let i = 0; i < 3; i++) addrs.push(`127.0.0.1:${await freePort()}`);
    // The third machine's secret has a typo: it finds nobody, and forms as the founding member it is.
    const members = addrs.map((listen, i) => new Cluster(addrs, { storage: 'memory', listen, joinTimeoutMs: 500, secret: i === 2 ? `${SECRET}x` : SECRET }));
    cleanups.push(async () => void (await Promise.all(members.map((m) => m.stop()))));
    const [a, , stray] = members as [Cluster, Cluster, Cluster];
    await Promise.all(members.map((m) => m.start()));
    await a.waitForLeader();
    const others = addrs.slice(0, 2).sort();
    await expect.poll(() => stray.state().members.filter((m) => m.id !== stray.id).map((m) => [m.id, m.reachable, m.dialFailure]), WAIT).toEqual(others.map((id) => [id, false, 'handshake']));
    // The members with the secret see the same of it; of each other, nothing failed.
    await expect.poll(() => Object.fromEntries(a.state().members.map((m) => [m.id, m.dialFailure])), WAIT).toEqual(Object.fromEntries(addrs.map((id) => [id, id === stray.id ? 'handshake' : null])));
  });

  it("binds every member's peer id once the cluster runs version 2; then one with the secret but not a member's key gets nothing in", async () => {
    const members = await startThree(() => ({ secret: SECRET }));
    const peerIds = Object.fromEntries(members.map((m) => [m.id, m.state().peerId]));
    for (const m of members) await expect.poll(() => m.state().configuration.peerIds, WAIT).toEqual(peerIds);
    const victim = members[0] as Cluster;
    const { term } = victim.state();
    const [address] = victim.state().members.find((m) => m.id === victim.id)?.addrs ?? [];
    // It holds the secret: before binding it could speak for any member. Now every member is
    // bound: it gets in only as a visitor (as a joiner would, to ask to join), and whatever it
    // says as a member is dropped.
    const impostor = await hostileNode({ psk: pskFromSecret(SECRET) });
    cleanups.push(() => impostor.stop());
    const stream = await openRaw(impostor, address ?? '');
    const other = (members[1] as Cluster).id;
    stream.send(withPrefix(encode([FRAME_FORMAT_VERSION, clusterIdOf(members.map((m) => m.id).sort()), TYPE_CODES.heartbeat, other, victim.id, term + 5, 0, 0])));
    await expect.poll(() => victim.state().transport.droppedPeerIdMismatch, WAIT).toBe(1);
    expect(victim.state()).toMatchObject({ term, transport: { droppedUnexpected: 0, inboundConnections: { visitors: 1 } } });
    const { index } = await victim.propose('after');
    for (const m of members) await expect.poll(() => m.state().appliedIndex, WAIT).toBeGreaterThanOrEqual(index);
  });
});
