import { spawn } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encode } from 'cborg';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { MAX_TERM } from '../../src/raft/bounds.js';
import { encodeFormat, encodeHardState, encodeSnapshot } from '../../src/storage/level-codec.js';
import { entryKey, metaKeys, parseKey } from '../../src/storage/level-layout.js';
import { LevelLogStorage } from '../../src/storage/level-log-storage.js';
import type { LogStorage } from '../../src/storage/log-storage.js';
import { MemoryDisk } from '../../src/storage/memory-disk.js';
import { MemoryLogStorage } from '../../src/storage/memory-log-storage.js';
import { describeLogStorageCompliance, entries, entry, snapshotAt } from './storage-compliance.js';
import { workloadIdentity, workloadStateAfter } from '../fixtures/storage-workload.js';
import { StoreDirectories, expectStorageError, formatOneEntry, rawWrite, storedEntryIndexes } from '../fixtures/level-store.js';

const REPO_ROOT = dirname(dirname(dirname(fileURLToPath(import.meta.url))));
const WRITER_FIXTURE = join(REPO_ROOT, 'test', 'fixtures', 'storage-writer.ts');
/** Acknowledged batches to wait for before killing the writer. */
const ACKS_BEFORE_KILL = 300;
/** fast-check runs against level: every run opens, syncs and closes real stores several times. */
const LEVEL_PROPERTY_RUNS = 30;

describe('entry keys', () => {
  it('read back as their index and sort as LevelDB compares them, in index order', () => {
    const index = fc.nat({ max: Number.MAX_SAFE_INTEGER });
    fc.assert(
      fc.property(index, index, (a, b) => {
        expect(parseKey(entryKey(a))).toEqual({ kind: 'entry', index: a });
        expect(Math.sign(Buffer.compare(entryKey(a), entryKey(b)))).toBe(Math.sign(a - b));
      }),
    );
  });
});

describe('MemoryLogStorage', () => {
  describeLogStorageCompliance('memory', {
    create: async () => new MemoryLogStorage(new MemoryDisk()),
    reopen: async (previous) => new MemoryLogStorage((previous as MemoryLogStorage).disk),
  });

  describe('with manual sync (for the simulator)', () => {
    it('resolves a save only once synced, and keeps synced writes through a crash', async () => {
      const disk = new MemoryDisk({ manualSync: true });
      const store = new MemoryLogStorage(disk);
      await store.open();
      let acknowledged = false;
      const saving = store.save({ entries: entries(1, 2, 1) }).then(() => {
        acknowledged = true;
      });
      await Promise.resolve();
      expect(acknowledged).toBe(false);
      expect(disk.unsyncedWrites).toBe(1);
      disk.sync();
      await saving;
      expect(acknowledged).toBe(true);
      disk.crash();
      const state = await new MemoryLogStorage(disk).open();
      expect(state.entries).toEqual(entries(1, 2, 1));
    });

    it('loses unsynced writes in a crash, and the dead store writes nothing after it', async () => {
      const disk = new MemoryDisk({ manualSync: true });
      const store = new MemoryLogStorage(disk);
      await store.open();
      const synced = store.save({ entries: entries(1, 2, 1) });
      disk.sync();
      await synced;
      void store.save({ entries: entries(3, 4, 1), hardState: { term: 1, vote: null, commit: 4 } });
      disk.crash();
      const restarted = new MemoryLogStorage(disk);
      const state = await restarted.open();
      expect(state.entries).toEqual(entries(1, 2, 1));
      expect(state.hardState.commit).toBe(0);
      // The store from before the crash is a dead process: what it writes never lands.
      void store.save({ entries: entries(5, 5, 9) });
      disk.sync();
      await restarted.close();
      expect((await new MemoryLogStorage(disk).open()).entries).toEqual(entries(1, 2, 1));
    });

    /** A store over a manually synced disk holding entries 1..6 at term 1, committed up to 4, all synced. */
    async function syncedStore(disk: MemoryDisk): Promise<MemoryLogStorage> {
      const store = new MemoryLogStorage(disk);
      await store.open();
      const saving = store.save({ entries: entries(1, 6, 1), hardState: { term: 1, vote: null, commit: 4 } });
      disk.sync();
      await saving;
      return store;
    }

    it('makes a compaction one write: unsynced, a crash loses all of it', async () => {
      const disk = new MemoryDisk({ manualSync: true });
      const store = await syncedStore(disk);
      let compacted = false;
      void store.compact(snapshotAt(3, 1)).then(() => {
        compacted = true;
      });
      await Promise.resolve();
      expect(compacted).toBe(false);
      expect(disk.unsyncedWrites).toBe(1);
      disk.crash();
      const state = await new MemoryLogStorage(disk).open();
      expect(state.snapshot).toEqual({ index: 0, term: 0, data: new Uint8Array(0) });
      expect(state.entries).toEqual(entries(1, 6, 1));
      expect(state.hardState.commit).toBe(4);
    });

    it('keeps a synced compaction through a crash, and answers durableTerm from the snapshot', async () => {
      const disk = new MemoryDisk({ manualSync: true });
      const store = await syncedStore(disk);
      const compacting = store.compact(snapshotAt(3, 1));
      disk.sync();
      await compacting;
      void store.save({ entries: entries(7, 7, 2) });
      disk.crash();
      const state = await new MemoryLogStorage(disk).open();
      expect(state.snapshot).toEqual(snapshotAt(3, 1));
      expect(state.entries).toEqual(entries(4, 6, 1));
      expect(disk.durableTerm(3)).toBe(1);
      expect(disk.durableTerm(2)).toBeUndefined();
      expect(disk.durableTerm(6)).toBe(1);
      expect(disk.durableTerm(7)).toBeUndefined();
    });

    it('makes an installed snapshot one write: unsynced, a crash loses all of it', async () => {
      const disk = new MemoryDisk({ manualSync: true });
      const store = await syncedStore(disk);
      void store.save({ snapshot: snapshotAt(20, 2), hardState: { term: 2, vote: null, commit: 21 }, entries: entries(21, 22, 2) });
      expect(store.firstIndex()).toBe(21);
      disk.crash();
      const restarted = new MemoryLogStorage(disk);
      const state = await restarted.open();
      expect(state.snapshot.index).toBe(0);
      expect(state.entries).toEqual(entries(1, 6, 1));
      expect(state.hardState).toEqual({ term: 1, vote: null, commit: 4 });
      expect(restarted.firstIndex()).toBe(1);
      // The restarted store checks against what survived, not what the dead one believed.
      const compacting = restarted.compact(snapshotAt(4, 1));
      disk.sync();
      await compacting;
      await restarted.close();
      expect((await new MemoryLogStorage(disk).open()).entries).toEqual(entries(5, 6, 1));
    });

    it('gives back copies: a caller changing what open() returned does not change the disk', async () => {
      const disk = new MemoryDisk();
      const store = new MemoryLogStorage(disk);
      await store.open();
      await store.save({ entries: entries(1, 2, 1), hardState: { term: 1, vote: null, commit: 2 } });
      await store.compact(snapshotAt(1, 1, Uint8Array.of(5)));
      await store.close();
      const first = await new MemoryLogStorage(disk).open();
      first.snapshot.data.fill(0);
      expect(Array.from(disk.read().snapshot.data)).toEqual([5]);
    });
  });
});

describe('LevelLogStorage', () => {
  const dirs = new StoreDirectories();
  afterEach(() => dirs.removeAll());
  const tempDirectory = (): Promise<string> => dirs.directory();
  const newStorePath = (): Promise<string> => dirs.storePath();
  const storeWith = (count: number): Promise<string> => dirs.storeWith(count);

  describeLogStorageCompliance(
    'level',
    {
      create: async () => new LevelLogStorage(await newStorePath()),
      reopen: async (previous) => new LevelLogStorage((previous as LevelLogStorage).path),
    },
    { propertyRuns: LEVEL_PROPERTY_RUNS },
  );

  it('creates the directories of a new store, and opens an empty directory as a new store', async () => {
    const nested = join(await tempDirectory(), 'a', 'b', 'store');
    const store = new LevelLogStorage(nested);
    expect((await store.open()).entries).toEqual([]);
    await store.close();
    const empty = await tempDirectory();
    const other = new LevelLogStorage(empty);
    expect((await other.open()).entries).toEqual([]);
    await other.close();
  });

  it.each([
    ['', 'unsealed'],
    [', sealed (each snapshot in a file of its own)', 'sealed'],
  ])('keeps every acknowledged write, saves and compactions, when the writing process is killed with SIGKILL%s', async (_, mode) => {
    const path = await newStorePath();
    const child = spawn(process.execPath, ['--import', 'tsx', WRITER_FIXTURE, path, mode], { cwd: REPO_ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk;
    });
    const closed = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
      child.on('close', (code, signal) => resolve({ code, signal }));
    });
    let lastAck = 0;
    let ready = false;
    let pending = '';
    let onProgress: (() => void) | null = null;
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      pending += chunk;
      const lines = pending.split('\n');
      pending = lines.pop() ?? '';
      for (const line of lines) {
        if (line === 'ready') ready = true;
        const match = /^ack (\d+)$/.exec(line);
        if (match?.[1] !== undefined) lastAck = Number(match[1]);
      }
      onProgress?.();
    });

    // Wait on the writer's own output, or its death, never on a timer.
    await new Promise<void>((resolve, reject) => {
      onProgress = () => {
        if (lastAck >= ACKS_BEFORE_KILL) resolve();
      };
      void closed.then(({ code }) => reject(new Error(`the writer exited early (code ${code}): ${stderr}`)));
    });
    onProgress = null;
    expect(ready).toBe(true);

    // While the writer runs it holds the store's lock: another process cannot open it.
    await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_UNREADABLE', path);

    child.kill('SIGKILL');
    const { signal } = await closed;
    expect(signal).toBe('SIGKILL');
    expect(lastAck).toBeGreaterThanOrEqual(ACKS_BEFORE_KILL);

    const store = new LevelLogStorage(path);
    const state = await store.open();
    await store.close();
    // The write in flight at the kill may or may not have landed, but whole or not at all; the
    // entries a compaction folded in are gone whether or not their removal finished.
    const acknowledged = workloadStateAfter(lastAck);
    const withNext = workloadStateAfter(lastAck + 1);
    const matches = [acknowledged, withNext].filter(
      (expected) =>
        JSON.stringify(expected.hardState) === JSON.stringify(state.hardState) &&
        expected.snapshot.index === state.snapshot.index &&
        Buffer.compare(expected.snapshot.data, state.snapshot.data) === 0 &&
        sameEntries(expected.entries.slice(expected.snapshot.index), state.entries),
    );
    expect(matches.length, `the store after the kill at ack ${lastAck} holds neither write ${lastAck} nor ${lastAck + 1}`).toBe(1);
    expect(acknowledged.snapshot.index, 'the workload compacted before the kill').toBeGreaterThan(0);
    expect(state.identity).toEqual(workloadIdentity);
    state.entries.forEach((stored, i) => expect(stored.index).toBe(state.snapshot.index + i + 1));
    // A sealed store keeps its snapshot's file and, once opened, no other (one the kill left half-written or unreferenced included).
    const files = (await readdir(path)).filter((name) => name.startsWith('snapshot-'));
    expect(files).toEqual(mode === 'sealed' ? [`snapshot-${state.snapshot.index}-${state.snapshot.term}`] : []);
  });

  it('reports a value that does not decode as corrupt, naming the path and the key', async () => {
    const path = await storeWith(3);
    await rawWrite(path, [{ key: entryKey(2), value: Uint8Array.of(0xff, 0x00, 0x13) }]);
    const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
    expect(error.message).toContain('entry key 2');
  });

  it('reports a value of the wrong shape as corrupt', async () => {
    const path = await storeWith(3);
    await rawWrite(path, [{ key: metaKeys.hardstate, value: encodeFormat(7) }]);
    const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
    expect(error.message).toContain('"hardstate"');
  });

  it('reports a stored term no member may hold as corrupt, rather than adopt it', async () => {
    // 2^53 - 1 once reached the disk from one forged heartbeat, and kept the cluster from ever electing again.
    for (const term of [MAX_TERM, Number.MAX_SAFE_INTEGER]) {
      const path = await storeWith(3);
      await rawWrite(path, [{ key: metaKeys.hardstate, value: encodeHardState({ term, vote: null, commit: 3 }) }]);
      const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
      expect(error.message).toContain('"hardstate"');
      expect(error.message).toContain(`expected a term from 0 to ${MAX_TERM - 1}`);
    }
    const entryPath = await storeWith(3);
    await rawWrite(entryPath, [{ key: entryKey(3), value: formatOneEntry(entry(3, MAX_TERM)) }]);
    expect((await expectStorageError(new LevelLogStorage(entryPath).open(), 'CRONRAFT_STORAGE_CORRUPT', entryPath)).message).toContain('entry key 3');
    // The last term a member may hold is read back.
    const last = await storeWith(3);
    await rawWrite(last, [{ key: metaKeys.hardstate, value: encodeHardState({ term: MAX_TERM - 1, vote: null, commit: 3 }) }]);
    const store = new LevelLogStorage(last);
    expect((await store.open()).hardState.term).toBe(MAX_TERM - 1);
    await store.close();
  });

  it('reports a gap in the log as corrupt', async () => {
    const path = await storeWith(5);
    await rawWrite(path, [{ key: entryKey(3), value: null }]);
    const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
    expect(error.message).toMatch(/gap/);
    expect(error.message).toContain('entry key 4');
  });

  it('reports an entry stored under another index, a falling term and a commit past the log as corrupt', async () => {
    const misplaced = await storeWith(3);
    await rawWrite(misplaced, [{ key: entryKey(2), value: formatOneEntry(entry(3, 1)) }]);
    expect((await expectStorageError(new LevelLogStorage(misplaced).open(), 'CRONRAFT_STORAGE_CORRUPT', misplaced)).message).toContain('entry key 2');

    const falling = await storeWith(3);
    await rawWrite(falling, [{ key: entryKey(2), value: formatOneEntry(entry(2, 5)) }]);
    expect((await expectStorageError(new LevelLogStorage(falling).open(), 'CRONRAFT_STORAGE_CORRUPT', falling)).message).toContain('entry key 3');

    const pastCommit = await storeWith(3);
    await rawWrite(pastCommit, [1, 2, 3].map((index) => ({ key: entryKey(index), value: null })));
    expect((await expectStorageError(new LevelLogStorage(pastCommit).open(), 'CRONRAFT_STORAGE_CORRUPT', pastCommit)).message).toContain('past the last index 0');
  });

  it('removes the compacted entry keys after the snapshot, by the time close() resolves', async () => {
    const path = await storeWith(50);
    const store = new LevelLogStorage(path);
    await store.open();
    await store.save({ hardState: { term: 1, vote: null, commit: 40 }, entries: [] });
    await store.compact(snapshotAt(30, 1));
    await store.close();
    const indexes = await storedEntryIndexes(path);
    expect(indexes[0]).toBe(31);
    expect(indexes.length).toBe(20);
  });

  it('removes every stored entry key when a snapshot is installed, by the time close() resolves', async () => {
    const path = await storeWith(50);
    const store = new LevelLogStorage(path);
    await store.open();
    await store.save({ snapshot: snapshotAt(10, 2), hardState: { term: 2, vote: null, commit: 10 }, entries: entries(11, 12, 2) });
    await store.close();
    // Entries 11 and 12 came in one save: one segment.
    expect(await storedEntryIndexes(path)).toEqual([11]);
  });

  it('reports a snapshot value of the wrong shape as corrupt, naming the key', async () => {
    const bad = [
      Uint8Array.of(0xff, 0x00, 0x13),
      // The shape before snapshots kept their data: never written by a released version.
      encode([3, 1]),
      encode([3, 1, 'not bytes']),
      encode([-3, 1, new Uint8Array(0)]),
      encode([3, 1.5, new Uint8Array(0)]),
    ];
    for (const value of bad) {
      const path = await storeWith(3);
      await rawWrite(path, [{ key: metaKeys.snapshot, value }]);
      const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
      expect(error.message).toContain('key "snapshot"');
    }
  });

  it('reports a commit point below the snapshot as corrupt', async () => {
    const behind = await storeWith(5);
    await rawWrite(behind, [{ key: metaKeys.snapshot, value: encodeSnapshot(snapshotAt(3, 1)) }, ...[1, 2, 3].map((index) => ({ key: entryKey(index), value: null }))]);
    const error = await expectStorageError(new LevelLogStorage(behind).open(), 'CRONRAFT_STORAGE_CORRUPT', behind);
    expect(error.message).toContain('commit 1, below the index 3 of key "snapshot"');
  });

  it('ignores and removes entries at or below the snapshot, as a crash during the removal after a compaction leaves them', async () => {
    // The snapshot at 4 is durable, and the removal of 1..4 stopped after 1 and 2.
    const path = await storeWith(8);
    await rawWrite(path, [
      { key: metaKeys.snapshot, value: encodeSnapshot(snapshotAt(4, 1)) },
      { key: metaKeys.hardstate, value: encodeHardState({ term: 1, vote: null, commit: 5 }) },
      ...[1, 2].map((index) => ({ key: entryKey(index), value: null })),
    ]);
    const store = new LevelLogStorage(path);
    const state = await store.open();
    expect(state.snapshot).toEqual(snapshotAt(4, 1));
    expect(state.entries).toEqual(entries(5, 8, 1));
    expect(store.firstIndex()).toBe(5);
    await store.close();
    expect(await storedEntryIndexes(path)).toEqual([5, 6, 7, 8]);
  });

  it('fails every later write once the removal of compacted entries fails', async () => {
    const path = await storeWith(20);
    const store = new LevelLogStorage(path);
    await store.open();
    await store.save({ hardState: { term: 1, vote: null, commit: 20 }, entries: [] });
    // The one way to make LevelDB's range delete fail on demand: replace it on the open database.
    const session = (store as unknown as { session: { db: { clear: () => Promise<void> } } }).session;
    let removal: Promise<void> | undefined;
    session.db.clear = () => (removal = Promise.reject(new Error('disk gone')));
    await store.compact(snapshotAt(10, 1));
    await removal?.catch(() => undefined);
    const error = await expectStorageError(store.save({ entries: entries(21, 21, 1) }), 'CRONRAFT_STORAGE_UNREADABLE', path);
    expect(error.message).toContain('removing compacted entries failed');
    expect(error.message).toContain('disk gone');
    await store.close();
    // Reopened, the store has the snapshot, removes what was left below it, and lost nothing acknowledged.
    const again = new LevelLogStorage(path);
    const state = await again.open();
    expect(state.snapshot).toEqual(snapshotAt(10, 1));
    expect(state.entries).toEqual(entries(11, 20, 1));
    await again.close();
    expect(await storedEntryIndexes(path)).toEqual(entries(11, 20, 1).map((e) => e.index));
  });

  it('refuses an unknown format version, a missing one and keys it does not know', async () => {
    const future = await storeWith(1);
    await rawWrite(future, [{ key: metaKeys.format, value: encodeFormat(4) }]);
    expect((await expectStorageError(new LevelLogStorage(future).open(), 'CRONRAFT_STORAGE_CORRUPT', future)).message).toContain('version 4');

    const missing = await storeWith(1);
    await rawWrite(missing, [{ key: metaKeys.format, value: null }]);
    expect((await expectStorageError(new LevelLogStorage(missing).open(), 'CRONRAFT_STORAGE_CORRUPT', missing)).message).toContain('"format"');

    const stranger = await storeWith(1);
    await rawWrite(stranger, [{ key: new TextEncoder().encode('someone-else'), value: Uint8Array.of(1) }]);
    expect((await expectStorageError(new LevelLogStorage(stranger).open(), 'CRONRAFT_STORAGE_CORRUPT', stranger)).message).toContain('unknown key');
  });

  it('refuses a directory of unrelated files and leaves them untouched', async () => {
    const path = await tempDirectory();
    await writeFile(join(path, 'notes.txt'), 'not a database');
    await mkdir(join(path, 'photos'));
    await writeFile(join(path, 'photos', 'cat.jpg'), Uint8Array.of(0xff, 0xd8, 0xff));
    const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_UNREADABLE', path);
    expect(error.message).toContain('notes.txt');
    expect((await readdir(path)).sort()).toEqual(['notes.txt', 'photos']);
    expect(await readdir(join(path, 'photos'))).toEqual(['cat.jpg']);
    expect(await readFile(join(path, 'notes.txt'), 'utf8')).toBe('not a database');
  });

  it('refuses a path that is a file', async () => {
    const path = join(await tempDirectory(), 'file');
    await writeFile(path, 'x');
    await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_UNREADABLE', path);
    expect(await readFile(path, 'utf8')).toBe('x');
  });

  it('refuses a LevelDB directory whose files are damaged, without replacing it', async () => {
    const path = await storeWith(2);
    await writeFile(join(path, 'CURRENT'), 'MANIFEST-999999\n');
    const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
    expect(error.cause).toBeDefined();
    expect(await readFile(join(path, 'CURRENT'), 'utf8')).toBe('MANIFEST-999999\n');
    // CURRENT overwritten with another name, as a stranger did: damaged too, not unreadable.
    await writeFile(join(path, 'CURRENT'), 'garbage\n');
    await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_CORRUPT', path);
  });

  it('refuses a store that is already open (its LOCK is held)', async () => {
    const path = await newStorePath();
    const first = new LevelLogStorage(path);
    await first.open();
    try {
      const error = await expectStorageError(new LevelLogStorage(path).open(), 'CRONRAFT_STORAGE_UNREADABLE', path);
      expect(error.message).toMatch(/LOCK/);
      expect(error.cause).toBeDefined();
    } finally {
      await first.close();
    }
  });

  it('refuses the identity of another cluster or member after a restart', async () => {
    const path = await newStorePath();
    const first: LogStorage = new LevelLogStorage(path);
    await first.open();
    await first.setIdentity({ clusterId: 'alpha', nodeId: '127.0.0.1:7001' });
    await first.close();
    const second = new LevelLogStorage(path);
    expect((await second.open()).identity).toEqual({ clusterId: 'alpha', nodeId: '127.0.0.1:7001' });
    try {
      const error = await expectStorageError(second.setIdentity({ clusterId: 'beta', nodeId: '127.0.0.1:7001' }), 'CRONRAFT_STORAGE_MISMATCH', path);
      expect(error.message).toContain('belongs to cluster "alpha" member "127.0.0.1:7001", not cluster "beta" member "127.0.0.1:7001"');
    } finally {
      await second.close();
    }
  });
});

function sameEntries(a: readonly { index: number; term: number; type: number; data: Uint8Array; pid: string }[], b: typeof a): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i];
    return y !== undefined && x.index === y.index && x.term === y.term && x.type === y.type && x.pid === y.pid && Buffer.compare(x.data, y.data) === 0;
  });
}
