import { cp, readFile, readdir, rm, stat, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { DURABLE_MARK_FILE } from '../../src/storage/durable-mark.js';
import { decodeHardState } from '../../src/storage/level-codec.js';
import { LevelLogStorage } from '../../src/storage/level-log-storage.js';
import { entries, snapshotAt } from './storage-compliance.js';
import { StoreDirectories, expectStorageError } from '../fixtures/level-store.js';

/**
 * Entries a store writes before its write-ahead log is cut: one synced save each, enough for the
 * log to lose hundreds of them when cut to half.
 */
const WRITES = 400;

/**
 * Writes entries `from`..`to` at term 1, one synced save each, each committing the entry before
 * it: what a single member writes (its commit point rides with its next write).
 */
async function writeCommitted(store: LevelLogStorage, from: number, to: number): Promise<void> {
  for (const one of entries(from, to, 1)) await store.save({ entries: [one], hardState: { term: 1, vote: null, commit: one.index - 1 } });
}

/** Cuts LevelDB's write-ahead log (the one `*.log` file of the store) to half its size. */
async function cutWriteAheadLog(path: string): Promise<void> {
  const logs = (await readdir(path)).filter((name) => name.endsWith('.log'));
  expect(logs.length).toBe(1);
  const file = join(path, logs[0] as string);
  const { size } = await stat(file);
  expect(size).toBeGreaterThan(0);
  await truncate(file, Math.floor(size / 2));
}

describe('LevelLogStorage whose write-ahead log lost synced writes', () => {
  const dirs = new StoreDirectories();
  afterEach(() => dirs.removeAll());

  /** The files of an open store as a crash would leave them: every synced write is in them. */
  async function crashImage(path: string): Promise<string> {
    const image = join(await dirs.directory(), 'crashed');
    await cp(path, image, { recursive: true });
    return image;
  }

  it('refuses to open, naming the path, after its log was cut to half following a clean close, and keeps refusing', async () => {
    const path = await dirs.storePath();
    const store = new LevelLogStorage(path);
    await store.open();
    await writeCommitted(store, 1, WRITES);
    await store.close();
    await cutWriteAheadLog(path);

    const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
    expect(error.message).toContain(`the one ${DURABLE_MARK_FILE} records (term 1, commit ${WRITES - 1})`);
    expect(error.message).toMatch(/lost writes it had made durable/);
    // LevelDB has by now replayed what was left of its log into a table: the refusal must not
    // depend on the damaged file still being there.
    await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
  });

  it('refuses to open after a crash when its log lost writes that a compaction had marked durable', async () => {
    const path = await dirs.storePath();
    const store = new LevelLogStorage(path);
    await store.open();
    await writeCommitted(store, 1, WRITES);
    await store.compact(snapshotAt(WRITES / 2, 1));
    const image = await crashImage(path);
    await store.close();
    await cutWriteAheadLog(image);
    const error = await expectStorageError(new LevelLogStorage(image).open(), 'CRONRAFT_STORAGE_CORRUPT', image);
    expect(error.message).toContain(`commit ${WRITES - 1})`);
  });

  it('opens after a crash whose log was cut only as Raft cuts it: a suffix replaced past the commit point, a snapshot installed', async () => {
    const path = await dirs.storePath();
    const store = new LevelLogStorage(path);
    await store.open();
    await store.save({ entries: entries(1, 10, 1), hardState: { term: 1, vote: 'a', commit: 5 } });
    await store.compact(snapshotAt(3, 1));
    // A new leader replaces 7..10: the log is shorter than when the mark was written.
    await store.save({ entries: entries(7, 7, 2), hardState: { term: 2, vote: null, commit: 5 } });
    const replaced = await crashImage(path);
    await store.save({ snapshot: snapshotAt(20, 3), entries: [], hardState: { term: 3, vote: null, commit: 20 } });
    const installed = await crashImage(path);
    await store.close();

    const afterReplace = new LevelLogStorage(replaced);
    const state = await afterReplace.open();
    await afterReplace.close();
    expect(state.entries).toEqual([...entries(4, 6, 1), ...entries(7, 7, 2)]);
    const afterInstall = new LevelLogStorage(installed);
    expect((await afterInstall.open()).snapshot).toEqual(snapshotAt(20, 3));
    await afterInstall.close();
  });

  it('marks a store that has no mark yet (written by an earlier version) when it opens it, for its owner alone', async () => {
    const path = await dirs.storeWith(5);
    const markPath = join(path, DURABLE_MARK_FILE);
    await rm(markPath);
    const store = new LevelLogStorage(path);
    const state = await store.open();
    expect(decodeHardState(await readFile(markPath))).toEqual(state.hardState);
    expect((await stat(markPath)).mode & 0o777).toBe(0o600);
    await store.close();
  });

  it('refuses a damaged mark, naming its file, and a mark left without its LevelDB database', async () => {
    const damaged = await dirs.storeWith(2);
    const markPath = join(damaged, DURABLE_MARK_FILE);
    await writeFile(markPath, Uint8Array.of(0xff, 0x00));
    const error = await expectStorageError(new LevelLogStorage(damaged).open(), 'CRONRAFT_STORAGE_CORRUPT', markPath);
    expect(error.message).toContain('durable mark is damaged');

    const orphan = await dirs.storeWith(2);
    for (const name of await readdir(orphan)) if (name !== DURABLE_MARK_FILE) await rm(join(orphan, name));
    expect((await expectStorageError(new LevelLogStorage(orphan).open(), 'CRONRAFT_STORAGE_CORRUPT', orphan)).message).toContain('no LevelDB database');
    expect(await readdir(orphan)).toEqual([DURABLE_MARK_FILE]);
  });

  it('reports corruption LevelDB finds in a table while the store is read as corrupt', async () => {
    const path = await dirs.storeWith(20);
    // Opened once more: LevelDB moves what its log held into a table.
    const reopened = new LevelLogStorage(path);
    await reopened.open();
    await reopened.close();
    const table = (await readdir(path)).find((name) => name.endsWith('.ldb'));
    expect(table).toBeDefined();
    const file = join(path, table as string);
    const bytes = await readFile(file);
    bytes.fill(0xff, 0, 64);
    await writeFile(file, bytes);
    const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
    expect(error.message).toContain('LevelDB reports corruption');
  });
});
