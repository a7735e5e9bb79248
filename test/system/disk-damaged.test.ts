/**
 * A member's LevelDB files damaged on disk. A table (.ldb) with a byte flipped: LevelDB checks
 * its blocks' checksums only when asked, which classic-level never does, so before the values
 * carried their own (storage format 3) the member started and applied other bytes than it had
 * committed. A manifest gone.
 */
import { randomBytes } from 'node:crypto';
import { readFileSync, readdirSync, unlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { Cluster, type ClusterOptions } from '../../src/index.js';
import { SEALED_STORE_VERSION } from '../../src/version/versions.js';
import { freePort } from '../fixtures/process-cluster.js';
import { cleanupDisks, tempDir } from '../fixtures/disks.js';

const started: Cluster[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((c) => c.stop().catch(() => undefined)));
  cleanupDisks();
});

const ENTRIES = 100;

/** Random bytes after a marker: snappy leaves them uncompressed in the table, as most compressed or encrypted payloads are. */
function payload(i: number): Buffer {
  return Buffer.concat([Buffer.from(`ENTRY${String(i).padStart(4, '0')}:`), randomBytes(400)]);
}

/** A single member with ENTRIES proposals, stopped, then opened and stopped once more, so that LevelDB moved its log into a table. */
async function build(extra: Partial<ClusterOptions> = {}): Promise<{ options: ClusterOptions; store: string }> {
  const dataDir = tempDir('cronraft-damaged-');
  const options: ClusterOptions = { listen: `127.0.0.1:${await freePort()}`, dataDir, ...extra };
  const c = new Cluster([], options);
  await c.start();
  // The store seals its values once the cluster runs SEALED_STORE_VERSION (a new cluster raises
  // its version within seconds); before, it writes as the release before, for a downgrade.
  for (let i = 0; i < 500 && c.state().version.active < SEALED_STORE_VERSION; i++) await new Promise((r) => setTimeout(r, 20));
  expect(c.state().version.active).toBeGreaterThanOrEqual(SEALED_STORE_VERSION);
  for (let i = 0; i < ENTRIES; i++) await c.propose(payload(i));
  await c.stop();
  const again = new Cluster([], options);
  await again.start();
  await again.stop();
  return { options, store: join(dataDir, 'raft') };
}

/** Starts a member on `options`' damaged directory: the error it refused with, and the indexes it applied meanwhile. */
async function startDamaged(options: ClusterOptions): Promise<{ error: { code?: string; path?: string; message?: string } | null; applied: number[] }> {
  const c = new Cluster([], options);
  started.push(c);
  const applied: number[] = [];
  c.on('applied', (e) => applied.push(e.index));
  const error = await c.start().then(() => null, (e: { code?: string; path?: string; message?: string }) => e);
  return { error, applied };
}

describe('a byte flipped in a LevelDB table', () => {
  for (const [where, offset] of [
    ['in the middle of an entry’s data', 100],
    ['in an entry record’s head', -3],
  ] as const) {
    it(`${where}: the member refuses to start with CRONRAFT_STORAGE_CORRUPT naming its store, rather than apply other bytes`, async () => {
      const { options, store } = await build();
      const table = readdirSync(store).find((name) => name.endsWith('.ldb'));
      expect(table).toBeDefined();
      const file = join(store, table!);
      const bytes = readFileSync(file);
      const at = bytes.indexOf(offset > 0 ? 'ENTRY0050:' : 'ENTRY0000:');
      expect(at).toBeGreaterThan(0);
      bytes[at + offset] = (bytes[at + offset] as number) ^ 0xff;
      writeFileSync(file, bytes);
      const { error, applied } = await startDamaged(options);
      expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_CORRUPT', path: store });
      expect(error?.message).toMatch(/checksum does not match/);
      expect(applied).toEqual([]);
    });
  }

  it('a manifest removed, or CURRENT naming one that is not there: refused as CRONRAFT_STORAGE_CORRUPT naming the store (it was UNREADABLE, as for a lock or permissions)', async () => {
    for (const damage of [
      (store: string) => unlinkSync(join(store, readdirSync(store).find((n) => n.startsWith('MANIFEST'))!)),
      (store: string) => writeFileSync(join(store, 'CURRENT'), 'MANIFEST-000099\n'),
    ]) {
      const { options, store } = await build();
      damage(store);
      const { error } = await startDamaged(options);
      expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_CORRUPT', path: store });
    }
  });
});

describe("the file of a member's last snapshot", () => {
  it('missing, or with a byte changed: the member refuses to start with CRONRAFT_STORAGE_CORRUPT naming its store, and applies nothing', async () => {
    for (const damage of [
      (file: string) => unlinkSync(file),
      (file: string) => {
        const bytes = readFileSync(file);
        bytes[bytes.length >> 1] = (bytes[bytes.length >> 1] as number) ^ 0x01;
        writeFileSync(file, bytes);
      },
    ]) {
      // Compacted every 20 entries: the member took snapshots, each in a file of its own once sealed.
      const { options, store } = await build({ snapshotEveryEntries: 20, snapshotRetainEntries: 5 });
      const files = readdirSync(store).filter((name) => name.startsWith('snapshot-'));
      expect(files).toHaveLength(1);
      damage(join(store, files[0]!));
      const { error, applied } = await startDamaged(options);
      expect(error).toMatchObject({ code: 'CRONRAFT_STORAGE_CORRUPT', path: store });
      expect(error?.message).toMatch(/snapshot's file snapshot-\d+-\d+/);
      expect(applied).toEqual([]);
    }
  });
});
