/**
 * A sealed store (format 3) keeps each snapshot's data in a file of its own (snapshot-files.ts),
 * which its snapshot record points to with the data's length and CRC-32.
 */
import { readFile, readdir, truncate, unlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { encode } from 'cborg';
import { afterEach, describe, expect, it } from 'vitest';
import { crc32 } from '../../src/bytes/crc32.js';
import type { HardState } from '../../src/raft/types.js';
import { decodeSnapshot, encodeSnapshotFileRecord, unsealValue } from '../../src/storage/level-codec.js';
import { metaKeys } from '../../src/storage/level-layout.js';
import { LevelLogStorage } from '../../src/storage/level-log-storage.js';
import { SEALED_STORE_VERSION } from '../../src/version/versions.js';
import { describeLogStorageCompliance, entries, snapshotAt } from './storage-compliance.js';
import { StoreDirectories, expectStorageError, rawRead, rawWrite } from '../fixtures/level-store.js';

/** fast-check runs against level, as for the unsealed store (storage.test.ts). */
const LEVEL_PROPERTY_RUNS = 30;

/** A LevelLogStorage that seals from its open on, as a member's does once the cluster runs SEALED_STORE_VERSION. */
class SealedStore extends LevelLogStorage {
  override async open(): ReturnType<LevelLogStorage['open']> {
    const state = await super.open();
    this.clusterVersionInForce(SEALED_STORE_VERSION);
    return state;
  }
}

const hard = (term: number, commit: number): HardState => ({ term, vote: null, commit });

async function snapshotFiles(path: string): Promise<string[]> {
  return (await readdir(path)).filter((name) => name.startsWith('snapshot-')).sort();
}

describe('a sealed LevelLogStorage', () => {
  const dirs = new StoreDirectories();
  afterEach(() => dirs.removeAll());

  describeLogStorageCompliance(
    'level, sealed',
    {
      create: async () => new SealedStore(await dirs.storePath()),
      reopen: async (previous) => new SealedStore((previous as LevelLogStorage).path),
    },
    { propertyRuns: LEVEL_PROPERTY_RUNS },
  );

  /** A sealed store holding entries 1..10 at term 1, committed to 8. */
  async function opened(): Promise<LevelLogStorage> {
    const store = new SealedStore(await dirs.storePath());
    await store.open();
    await store.save({ entries: entries(1, 10, 1), hardState: hard(1, 8) });
    return store;
  }

  it("writes a compaction's data to its own file and its length and CRC-32 in the record; the file before goes once the next is durable", async () => {
    const store = await opened();
    const first = snapshotAt(4, 1);
    await store.compact(first);
    expect(await snapshotFiles(store.path)).toEqual(['snapshot-4-1']);
    expect(Buffer.from(await readFile(join(store.path, 'snapshot-4-1')))).toEqual(Buffer.from(first.data));
    const second = snapshotAt(7, 1, new Uint8Array(100_000).fill(7));
    await store.compact(second);
    await store.close();
    expect(await snapshotFiles(store.path)).toEqual(['snapshot-7-1']);
    const record = unsealValue((await rawRead(store.path, metaKeys.snapshot))!);
    expect(Buffer.from(record)).toEqual(Buffer.from(encodeSnapshotFileRecord(second, crc32(second.data))));
    expect(record.byteLength).toBeLessThan(32);
    expect(decodeSnapshot(record)).toEqual({ file: { index: 7, term: 1, length: 100_000, crc: crc32(second.data) } });

    const again = new SealedStore(store.path);
    const state = await again.open();
    expect(state.snapshot).toEqual(second);
    expect(state.entries).toEqual(entries(8, 10, 1));
    await again.close();
  });

  it("writes an installed snapshot's data to its own file, with its configuration in the record", async () => {
    const store = await opened();
    const installed = { ...snapshotAt(20, 2), conf: { voters: ['a', 'b', 'c'], learners: [], peerIds: [] as [string, string][] } };
    await store.save({ entries: [], snapshot: installed, hardState: hard(2, 20) });
    await store.close();
    expect(await snapshotFiles(store.path)).toEqual(['snapshot-20-2']);
    const again = new SealedStore(store.path);
    expect((await again.open()).snapshot).toEqual(installed);
    await again.close();
  });

  it('removes at open the files no record points to: one a crash left before its record was written, or half-written, or the one before', async () => {
    const store = await opened();
    await store.compact(snapshotAt(4, 1));
    await store.close();
    await writeFile(join(store.path, 'snapshot-3-1'), 'the snapshot before');
    await writeFile(join(store.path, 'snapshot-9-1'), 'a snapshot whose record a crash kept from being written');
    await writeFile(join(store.path, 'snapshot-9-1.tmp'), 'half');
    const again = new SealedStore(store.path);
    expect((await again.open()).snapshot).toEqual(snapshotAt(4, 1));
    await again.close();
    expect(await snapshotFiles(store.path)).toEqual(['snapshot-4-1']);
  });

  it("refuses, as corrupt and naming the store, a snapshot's file that is missing, cut short or has a byte changed, and reads nothing of it", async () => {
    const damages: [string, (file: string) => Promise<void>, RegExp][] = [
      ['missing', (file) => unlink(file), /snapshot-4-1, which its record points to, is missing/],
      ['cut short', (file) => truncate(file, 3), /holds 3 bytes where its record says 7/],
      ['a byte changed', async (file) => writeFile(file, Buffer.from('state@5')), /checksum does not match its bytes/],
    ];
    for (const [, damage, message] of damages) {
      const store = await opened();
      await store.compact(snapshotAt(4, 1));
      await store.close();
      await damage(join(store.path, 'snapshot-4-1'));
      const error = await expectStorageError(new SealedStore(store.path).open(), 'CRONRAFT_STORAGE_CORRUPT', store.path);
      expect(error.message).toMatch(message);
    }
  });

  it("refuses, as corrupt, a record whose file's length or CRC-32 is not one, or a length past its file's, without reading the file", async () => {
    for (const [place, message] of [
      [[-1, 0], /its file's \[length, CRC-32\]/],
      [[7, 2 ** 32], /its file's \[length, CRC-32\]/],
      [[2 ** 53 - 1, 0], /holds 7 bytes where its record says 9007199254740991/],
    ] as const) {
      const store = await opened();
      await store.compact(snapshotAt(4, 1));
      await store.close();
      await rawWrite(store.path, [{ key: metaKeys.snapshot, value: encode([4, 1, place]) }]);
      const error = await expectStorageError(new SealedStore(store.path).open(), 'CRONRAFT_STORAGE_CORRUPT', store.path);
      expect(error.message).toMatch(message);
    }
  });

  it("refuses a directory that holds a snapshot's file but no LevelDB database", async () => {
    const store = await opened();
    await store.compact(snapshotAt(4, 1));
    await store.close();
    for (const name of await readdir(store.path)) if (!name.startsWith('snapshot-')) await unlink(join(store.path, name));
    const error = await expectStorageError(new SealedStore(store.path).open(), 'CRONRAFT_STORAGE_CORRUPT', store.path);
    expect(error.message).toMatch(/holds a snapshot's file \(snapshot-4-1\) but no LevelDB database/);
  });
});
