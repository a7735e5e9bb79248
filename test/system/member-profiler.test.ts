import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { startProfile, stopProfile } from '../fixtures/member-profiler.js';

/** Work that allocates, for the profiles to see. */
function busy(): number {
  let n = 0;
  for (let i = 0; i < 20_000; i++) n += JSON.stringify({ i, s: 'x'.repeat(i % 64) }).length;
  return n;
}

describe("test/fixtures/member-profiler.ts: a window's profile, as benches ask a member for one", () => {
  let dir: string | null = null;
  afterEach(async () => {
    if (dir !== null) await rm(dir, { recursive: true, force: true });
    dir = null;
  });

  it('writes a CPU profile and a sampled allocation profile that Chrome\'s tools read, one at a time', async () => {
    dir = await mkdtemp(join(tmpdir(), 'cronraft-profile-'));
    await startProfile('cpu');
    await expect(startProfile('heap')).rejects.toThrow(/already running/);
    busy();
    await stopProfile(join(dir, 'a.cpuprofile'));
    const cpu = JSON.parse(await readFile(join(dir, 'a.cpuprofile'), 'utf8')) as { nodes: unknown[]; samples: unknown[] };
    expect(cpu.nodes.length).toBeGreaterThan(0);
    expect(cpu.samples.length).toBeGreaterThan(0);

    await startProfile('heap');
    busy();
    await stopProfile(join(dir, 'a.heapprofile'));
    const heap = JSON.parse(await readFile(join(dir, 'a.heapprofile'), 'utf8')) as { head: { children: unknown[] }; samples: unknown[] };
    expect(heap.head.children.length).toBeGreaterThan(0);
    expect(heap.samples.length).toBeGreaterThan(0);
    await expect(stopProfile(join(dir, 'b.cpuprofile'))).rejects.toThrow(/no profile/);
  });
});
