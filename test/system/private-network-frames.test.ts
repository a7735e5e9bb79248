/**
 * Large frames through the private network between real members: a stranger's attack found
 * members with a secret dying on a RangeError of the WebAssembly memory that `xsalsa20` (pnet's
 * cipher) shares between every connection, two of three within a minute of proposals of 900 KB,
 * and a process without the secret doing the same with a few thousand connections of 24 bytes
 * (test/transport/private-network.test.ts holds the cipher to itself).
 */
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster } from '../../src/index.js';
import { freePort } from '../fixtures/process-cluster.js';

const members: Cluster[] = [];
afterEach(async () => {
  await Promise.all(members.splice(0).map((m) => m.stop()));
});

describe('the private network under large frames (real network, loopback)', () => {
  it('commits forty proposals of 900 KB on three members with a secret, none of them failing', async () => {
    const seeds: string[] = [];
    for (let i = 0; i < 3; i++) seeds.push(`127.0.0.1:${await freePort()}`);
    const secret = 'a secret for the frames of this test';
    for (const listen of seeds) members.push(new Cluster(seeds, { listen, storage: 'memory', secret, sync: false }));
    const errors: unknown[] = [];
    for (const m of members) m.on('error', (e) => errors.push(e));
    await Promise.all(members.map((m) => m.start()));
    const { leader: leaderId } = await (members[0] as Cluster).waitForLeader({ timeoutMs: 10_000 });
    const leader = members.find((m) => m.id === leaderId) as Cluster;
    let last = 0;
    for (let i = 0; i < 40; i++) last = (await leader.propose(randomBytes(900_000))).index;
    await expect.poll(() => members.every((m) => m.state().appliedIndex >= last), { timeout: 20_000, interval: 50 }).toBe(true);
    expect(errors).toEqual([]);
    expect(members.map((m) => m.state().status)).toEqual(['running', 'running', 'running']);
  });
});
