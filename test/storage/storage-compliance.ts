import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { CronraftError, StorageError } from '../../src/errors.js';
import { MAX_TERM } from '../../src/raft/bounds.js';
import { EntryType, emptyHardState } from '../../src/raft/types.js';
import type { Entry, HardState, Snapshot } from '../../src/raft/types.js';
import type { LogStorage, StorageBatch, StoredState } from '../../src/storage/log-storage.js';

/**
 * The behaviour every LogStorage must have, run against each implementation (as abstract-level's
 * shared suite is run against every level). A factory makes stores that are not yet open.
 */
export interface LogStorageFactory {
  /** A store over new, empty data. */
  create(): Promise<LogStorage>;
  /** Another store over the data of `previous`, as a restarted process would make. Does not close `previous`. */
  reopen(previous: LogStorage): Promise<LogStorage>;
}

export interface ComplianceOptions {
  /** fast-check runs of the random-batches property; each opens and syncs a real store several times. */
  readonly propertyRuns?: number;
}

const DEFAULT_PROPERTY_RUNS = 100;
const LARGE_BATCH = 10_000;

export function entry(index: number, term: number, data: Uint8Array = Uint8Array.of(index & 0xff), pid = `m#${index}`): Entry {
  return { index, term, type: EntryType.Normal, data, pid };
}

/** A snapshot at `index` whose data names it, so that a test can tell two snapshots apart. */
export function snapshotAt(index: number, term: number, data: Uint8Array = new TextEncoder().encode(`state@${index}`)): Snapshot {
  return { index, term, data };
}

const EMPTY_SNAPSHOT: Snapshot = Object.freeze({ index: 0, term: 0, data: new Uint8Array(0) });

export function entries(from: number, to: number, term: number): Entry[] {
  const result: Entry[] = [];
  for (let index = from; index <= to; index++) result.push(entry(index, term));
  return result;
}

export function describeLogStorageCompliance(name: string, factory: LogStorageFactory, options: ComplianceOptions = {}): void {
  describe(`LogStorage compliance: ${name}`, () => {
    const live: LogStorage[] = [];

    afterEach(async () => {
      for (const store of live.splice(0)) await store.close();
    });

    async function created(): Promise<LogStorage> {
      const store = await factory.create();
      live.push(store);
      return store;
    }

    async function opened(): Promise<{ store: LogStorage; state: StoredState }> {
      const store = await created();
      return { store, state: await store.open() };
    }

    /** Closes `previous` and opens its data again, as after a restart. */
    async function restart(previous: LogStorage): Promise<{ store: LogStorage; state: StoredState }> {
      await previous.close();
      const store = await factory.reopen(previous);
      live.push(store);
      return { store, state: await store.open() };
    }

    async function expectStorageError(promise: Promise<unknown>, code: string): Promise<StorageError> {
      const error: unknown = await promise.then(
        () => null,
        (reason: unknown) => reason,
      );
      expect(error).toBeInstanceOf(StorageError);
      expect((error as StorageError).code).toBe(code);
      return error as StorageError;
    }

    async function expectInvalid(promise: Promise<unknown>, option?: string): Promise<void> {
      await expect(promise).rejects.toMatchObject(option === undefined ? { code: 'CRONRAFT_INVALID_ARGUMENT' } : { code: 'CRONRAFT_INVALID_ARGUMENT', option });
    }

    /** Restarts `previous` and expects it to hold exactly this. */
    async function expectAfterRestart(previous: LogStorage, expected: { snapshot: Snapshot; entries: Entry[]; hardState: HardState }): Promise<LogStorage> {
      const { store, state } = await restart(previous);
      expect(state.snapshot).toEqual(expected.snapshot);
      expect(state.entries).toEqual(expected.entries);
      expect(state.hardState).toEqual(expected.hardState);
      expect(store.firstIndex()).toBe(expected.snapshot.index + 1);
      expect(store.snapshot()).toEqual({ index: expected.snapshot.index, term: expected.snapshot.term });
      return store;
    }

    describe('a new store', () => {
      it('opens empty', async () => {
        const { store, state } = await opened();
        expect(state).toEqual({ identity: null, hardState: emptyHardState, snapshot: EMPTY_SNAPSHOT, entries: [] });
        expect(store.firstIndex()).toBe(1);
        expect(store.snapshot()).toEqual({ index: 0, term: 0 });
      });

      it('is still empty after a restart', async () => {
        const { store } = await opened();
        const { store: again, state } = await restart(store);
        expect(state).toEqual({ identity: null, hardState: emptyHardState, snapshot: EMPTY_SNAPSHOT, entries: [] });
        expect(again.firstIndex()).toBe(1);
      });

      it('refuses calls before open() and after close()', async () => {
        const store = await created();
        expect(() => store.firstIndex()).toThrow(CronraftError);
        await expect(store.save({ entries: [] })).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
        await store.open();
        await store.close();
        expect(() => store.snapshot()).toThrow(/not open/);
        await expect(store.setIdentity({ clusterId: 'c', nodeId: 'n' })).rejects.toMatchObject({ code: 'CRONRAFT_NOT_RUNNING' });
      });

      it('cannot be opened twice at once', async () => {
        const { store } = await opened();
        const second = await factory.reopen(store);
        const error = await expectStorageError(second.open(), 'CRONRAFT_STORAGE_UNREADABLE');
        expect(error.message).toMatch(/lock|in use|already open/i);
        await store.close();
        live.push(second);
        await expect(second.open()).resolves.toBeDefined();
      });
    });

    describe('save and restart', () => {
      it('round-trips hard state and entries', async () => {
        const { store } = await opened();
        const hardState: HardState = { term: 3, vote: '127.0.0.1:7002', commit: 2 };
        const written = [entry(1, 1), { ...entry(2, 2), type: EntryType.Noop, data: new Uint8Array(0), pid: '' }, entry(3, 3)];
        await store.save({ hardState, entries: written });
        const { state } = await restart(store);
        expect(state.hardState).toEqual(hardState);
        expect(state.entries).toEqual(written);
      });

      it('appends across batches', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 3, 1) });
        await store.save({ entries: entries(4, 4, 1), hardState: { term: 1, vote: null, commit: 4 } });
        await store.save({ entries: entries(5, 9, 2) });
        const { state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 4, 1), ...entries(5, 9, 2)]);
        expect(state.hardState).toEqual({ term: 1, vote: null, commit: 4 });
      });

      it('replaces a suffix with a shorter one and deletes what is past it', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 10, 1) });
        await store.save({ entries: entries(6, 7, 2) });
        const { store: again, state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 5, 1), ...entries(6, 7, 2)]);
        // The removed entries stay removed when the log grows back over them.
        await again.save({ entries: entries(8, 8, 3) });
        const { state: later } = await restart(again);
        expect(later.entries).toEqual([...entries(1, 5, 1), ...entries(6, 7, 2), entry(8, 3)]);
      });

      it('replaces a suffix with a longer one', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 4, 1) });
        await store.save({ entries: entries(3, 8, 2) });
        const { state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 2, 1), ...entries(3, 8, 2)]);
      });

      it('replaces the whole log', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 6, 1) });
        await store.save({ entries: entries(1, 2, 2) });
        const { state } = await restart(store);
        expect(state.entries).toEqual(entries(1, 2, 2));
      });

      it('saves hard state without entries, keeping the log', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 2, 1) });
        await store.save({ hardState: { term: 5, vote: 'b', commit: 0 }, entries: [] });
        await store.save({ hardState: { term: 5, vote: 'b', commit: 2 }, entries: [] });
        const { state } = await restart(store);
        expect(state.hardState).toEqual({ term: 5, vote: 'b', commit: 2 });
        expect(state.entries).toEqual(entries(1, 2, 1));
      });

      it('saves entries without hard state, keeping the hard state', async () => {
        const { store } = await opened();
        await store.save({ hardState: { term: 2, vote: 'a', commit: 0 }, entries: [] });
        await store.save({ entries: entries(1, 3, 2) });
        const { state } = await restart(store);
        expect(state.hardState).toEqual({ term: 2, vote: 'a', commit: 0 });
        expect(state.entries).toEqual(entries(1, 3, 2));
      });

      it('treats an empty batch as a no-op', async () => {
        const { store } = await opened();
        await store.save({ entries: [] });
        const { state } = await restart(store);
        expect(state.entries).toEqual([]);
        expect(state.hardState).toEqual(emptyHardState);
      });

      it('keeps the order of saves that were not awaited one by one', async () => {
        const { store } = await opened();
        const saves: Promise<void>[] = [];
        for (let index = 1; index <= 50; index++) {
          saves.push(store.save({ entries: [entry(index, 1)], hardState: { term: 1, vote: null, commit: Math.min(index - 1, 40) } }));
        }
        // A replacement queued behind the appends must land after them.
        saves.push(store.save({ entries: entries(41, 45, 2) }));
        await Promise.all(saves);
        const { state } = await restart(store);
        expect(state.entries).toEqual([...entries(1, 40, 1), ...entries(41, 45, 2)]);
        expect(state.hardState.commit).toBe(40);
      });

      it(`saves and reads back a batch of ${LARGE_BATCH} entries`, async () => {
        const { store } = await opened();
        const many = entries(1, LARGE_BATCH, 7);
        // Committed up to 10: the suffix replaced below never reaches a committed entry.
        await store.save({ hardState: { term: 7, vote: 'x', commit: 10 }, entries: many });
        const { store: again, state } = await restart(store);
        expect(state.entries.length).toBe(LARGE_BATCH);
        expect(state.entries).toEqual(many);
        // Truncating most of it deletes every removed entry.
        await again.save({ hardState: { term: 8, vote: 'y', commit: 10 }, entries: entries(11, 11, 8) });
        const { state: later } = await restart(again);
        expect(later.entries).toEqual([...entries(1, 10, 7), entry(11, 8)]);
      });
    });

    describe('data fidelity', () => {
      it('keeps empty, binary, view and Buffer data byte for byte', async () => {
        const { store } = await opened();
        const everyByte = Uint8Array.from({ length: 256 }, (_, i) => i);
        const backing = Uint8Array.from({ length: 64 }, (_, i) => 255 - i);
        const view = backing.subarray(10, 20);
        const buffer = Buffer.from([0, 0xff, 0x80, 0x7f]);
        await store.save({
          entries: [entry(1, 1, new Uint8Array(0), ''), entry(2, 1, everyByte), entry(3, 1, view), entry(4, 1, buffer, 'ünïcødé#✓')],
        });
        const { state } = await restart(store);
        const data = state.entries.map((stored) => stored.data);
        for (const bytes of data) expect(bytes).toBeInstanceOf(Uint8Array);
        expect(data.map((bytes) => Array.from(bytes))).toEqual([[], Array.from(everyByte), Array.from(view), [0, 0xff, 0x80, 0x7f]]);
        expect(state.entries[3]?.pid).toBe('ünïcødé#✓');
      });

      it('copies what it is given: the caller may reuse its arrays and buffers', async () => {
        const { store } = await opened();
        const data = Uint8Array.of(1, 2, 3);
        const batch: Entry[] = [entry(1, 1, data)];
        const saving = store.save({ entries: batch });
        data.fill(9);
        batch.length = 0;
        await saving;
        const { state } = await restart(store);
        expect(Array.from(state.entries[0]?.data ?? [])).toEqual([1, 2, 3]);
      });
    });

    describe('identity', () => {
      const identity = { clusterId: 'cluster-a', nodeId: '127.0.0.1:7001' };

      it('is written once and kept across restarts', async () => {
        const { store, state } = await opened();
        expect(state.identity).toBeNull();
        await store.setIdentity(identity);
        await store.setIdentity({ ...identity });
        const { store: again, state: reopened } = await restart(store);
        expect(reopened.identity).toEqual(identity);
        await again.setIdentity(identity);
      });

      it("keeps a joined member's founding voters, given once, across restarts", async () => {
        const { store } = await opened();
        const voters = ['127.0.0.1:7002', '127.0.0.1:7003'];
        await store.setIdentity({ ...identity, foundingVoters: voters });
        voters.length = 0;
        const { store: again, state } = await restart(store);
        expect(state.identity).toEqual({ ...identity, foundingVoters: ['127.0.0.1:7002', '127.0.0.1:7003'] });
        // A restart gives the cluster id and its own id; the voters stay as stored.
        await again.setIdentity(identity);
        await expectInvalid(again.setIdentity({ ...identity, foundingVoters: [] }));
      });

      it('refuses another cluster or member, naming both', async () => {
        const { store } = await opened();
        await store.setIdentity(identity);
        const error = await expectStorageError(store.setIdentity({ clusterId: 'cluster-b', nodeId: identity.nodeId }), 'CRONRAFT_STORAGE_MISMATCH');
        expect(error.message).toContain('cluster-a');
        expect(error.message).toContain('cluster-b');
        // The same founding member in another cluster: its peers list changed, which it says.
        expect(error.message).toContain('a founding member starts with the peers it formed the cluster with');
        const { store: again } = await restart(store);
        const other = await expectStorageError(again.setIdentity({ clusterId: identity.clusterId, nodeId: '127.0.0.1:7002' }), 'CRONRAFT_STORAGE_MISMATCH');
        expect(other.message).toContain('127.0.0.1:7001');
        expect(other.message).toContain('127.0.0.1:7002');
        expect(other.message).not.toContain('founding member');
      });
    });

    describe('bad batches', () => {
      it('rejects a batch that would break the log and leaves the store as it was', async () => {
        const { store } = await opened();
        await store.save({ entries: entries(1, 3, 2), hardState: { term: 2, vote: null, commit: 3 } });
        await expectInvalid(store.save({ entries: [entry(5, 2)] }));
        await expectInvalid(store.save({ entries: [entry(4, 2), entry(6, 2)] }));
        await expectInvalid(store.save({ entries: [entry(4, 1)] }));
        await expectInvalid(store.save({ entries: [entry(4, 3), entry(5, 2)] }));
        await expectInvalid(store.save({ entries: [entry(0, 2)] }));
        await expectInvalid(store.save({ entries: [], hardState: { term: 2, vote: null, commit: 4 } }));
        await expectInvalid(store.save({ entries: [entry(2, 2)], hardState: { term: 2, vote: null, commit: 3 } }));
        await expectInvalid(store.save({ entries: [{ ...entry(4, 2), data: 'text' as unknown as Uint8Array }] }));
        // A term no member may hold (see src/raft/bounds.ts), which open() would refuse as corrupt.
        await expectInvalid(store.save({ entries: [], hardState: { term: MAX_TERM, vote: null, commit: 3 } }), 'batch.hardState.term');
        await expectInvalid(store.save({ entries: [entry(4, MAX_TERM)] }), 'batch.entries[0].term');
        // Cutting the log below the stored commit point, even without a new hard state.
        await expectInvalid(store.save({ entries: [entry(2, 3)] }));
        const { state } = await restart(store);
        expect(state.entries).toEqual(entries(1, 3, 2));
        expect(state.hardState).toEqual({ term: 2, vote: null, commit: 3 });
      });

      it('rejects a hard state that goes back on the stored one, as Raft never does, and leaves the store as it was', async () => {
        const { store } = await opened();
        const stored: HardState = { term: 3, vote: 'a', commit: 2 };
        await store.save({ entries: entries(1, 3, 2), hardState: stored });
        const refusals = [
          [{ ...stored, term: 2, vote: null }, 'term 2 is below term 3'],
          [{ ...stored, vote: null }, 'the vote in term 3 is null, not "a"'],
          [{ ...stored, vote: 'b' }, 'the vote in term 3 is "b", not "a"'],
          [{ ...stored, commit: 1 }, 'commit 1 is below commit 2'],
        ] as const;
        for (const [hardState, reason] of refusals) {
          await expect(store.save({ entries: [], hardState })).rejects.toMatchObject({ code: 'CRONRAFT_INVALID_ARGUMENT', option: 'batch.hardState', message: expect.stringContaining(reason) });
        }
        // A vote may be cast in a term it was not yet cast in; a new term clears it.
        await store.save({ entries: [], hardState: { term: 4, vote: null, commit: 2 } });
        await store.save({ entries: [], hardState: { term: 4, vote: 'b', commit: 3 } });
        const { state } = await restart(store);
        expect(state.hardState).toEqual({ term: 4, vote: 'b', commit: 3 });
      });
    });

    describe('compaction', () => {
      const committed: HardState = { term: 2, vote: 'a', commit: 8 };

      /** A store holding entries 1..5 at term 1 and 6..10 at term 2, committed up to 8. */
      async function withLog(): Promise<LogStorage> {
        const { store } = await opened();
        await store.save({ hardState: committed, entries: [...entries(1, 5, 1), ...entries(6, 10, 2)] });
        return store;
      }

      it('keeps the snapshot with its data and only the later entries across a restart', async () => {
        const store = await withLog();
        const snapshot = snapshotAt(6, 2);
        await store.compact(snapshot);
        expect(store.firstIndex()).toBe(7);
        expect(store.snapshot()).toEqual({ index: 6, term: 2 });
        const again = await expectAfterRestart(store, { snapshot, entries: entries(7, 10, 2), hardState: committed });
        // The log grows on after the snapshot.
        await again.save({ entries: entries(11, 12, 3) });
        await expectAfterRestart(again, { snapshot, entries: [...entries(7, 10, 2), ...entries(11, 12, 3)], hardState: committed });
      });

      it("keeps the snapshot's configuration across a restart; a snapshot without one reads back without one", async () => {
        const store = await withLog();
        const snapshot: Snapshot = { ...snapshotAt(6, 2), conf: { voters: ['a', 'b', 'd'], learners: ['e'], peerIds: [['a', '12D3KooWA'], ['e', '12D3KooWE']] } };
        await store.compact(snapshot);
        const again = await expectAfterRestart(store, { snapshot, entries: entries(7, 10, 2), hardState: committed });
        await again.compact(snapshotAt(8, 2));
        // toEqual fails on a property the expected snapshot lacks: none is read back.
        await expectAfterRestart(again, { snapshot: snapshotAt(8, 2), entries: entries(9, 10, 2), hardState: committed });
      });

      it('compacts twice, across a restart, and up to the last entry', async () => {
        const store = await withLog();
        await store.compact(snapshotAt(3, 1));
        const again = await expectAfterRestart(store, { snapshot: snapshotAt(3, 1), entries: [...entries(4, 5, 1), ...entries(6, 10, 2)], hardState: committed });
        await again.compact(snapshotAt(8, 2));
        const third = await expectAfterRestart(again, { snapshot: snapshotAt(8, 2), entries: entries(9, 10, 2), hardState: committed });
        // Once everything is committed, the whole log folds into the snapshot.
        const allCommitted = { ...committed, commit: 10 };
        await third.save({ hardState: allCommitted, entries: [] });
        await third.compact(snapshotAt(10, 2));
        await expectAfterRestart(third, { snapshot: snapshotAt(10, 2), entries: [], hardState: allCommitted });
      });

      it('accepts the current snapshot index: stores the snapshot given and removes nothing', async () => {
        const { store: fresh } = await opened();
        await fresh.compact(EMPTY_SNAPSHOT);
        expect(fresh.firstIndex()).toBe(1);
        const store = await withLog();
        await store.compact(snapshotAt(4, 1));
        const rewritten = snapshotAt(4, 1, Uint8Array.of(4, 4, 4));
        await store.compact(rewritten);
        expect(store.firstIndex()).toBe(5);
        await expectAfterRestart(store, { snapshot: rewritten, entries: [entry(5, 1), ...entries(6, 10, 2)], hardState: committed });
      });

      it('refuses a snapshot past the commit point or the log, below the current one, with the wrong term or malformed, and loses nothing', async () => {
        const store = await withLog();
        await store.compact(snapshotAt(2, 1));
        await expectInvalid(store.compact(snapshotAt(9, 2)), 'snapshot.index');
        await expectInvalid(store.compact(snapshotAt(11, 2)), 'snapshot.index');
        await expectInvalid(store.compact(snapshotAt(1, 1)), 'snapshot.index');
        await expectInvalid(store.compact(snapshotAt(7, 1)), 'snapshot.term');
        await expectInvalid(store.compact(snapshotAt(2, 2)), 'snapshot.term');
        await expectInvalid(store.compact(snapshotAt(-1, 0)), 'snapshot.index');
        await expectInvalid(store.compact(snapshotAt(2.5, 1)), 'snapshot.index');
        await expectInvalid(store.compact({ index: 3, term: 1, data: 'state' as unknown as Uint8Array }), 'snapshot.data');
        await expectInvalid(store.compact(null as unknown as Snapshot), 'snapshot');
        expect(store.firstIndex()).toBe(3);
        // An entry at or before the snapshot can no longer be written.
        await expectInvalid(store.save({ entries: [entry(2, 2)] }), 'batch.entries[0].index');
        await expectAfterRestart(store, { snapshot: snapshotAt(2, 1), entries: [...entries(3, 5, 1), ...entries(6, 10, 2)], hardState: committed });
      });

      it('replaces a suffix after a compaction', async () => {
        const store = await withLog();
        await store.compact(snapshotAt(7, 2));
        await store.save({ entries: entries(9, 9, 3) });
        await expectAfterRestart(store, { snapshot: snapshotAt(7, 2), entries: [entry(8, 2), entry(9, 3)], hardState: committed });
      });

      it('replaces the log from its first retained entry when the snapshot is at the commit point', async () => {
        const { store } = await opened();
        const hardState: HardState = { term: 1, vote: null, commit: 4 };
        await store.save({ hardState, entries: entries(1, 6, 1) });
        await store.compact(snapshotAt(4, 1));
        await store.save({ entries: entries(5, 5, 2) });
        await expectAfterRestart(store, { snapshot: snapshotAt(4, 1), entries: [entry(5, 2)], hardState });
      });

      it('is ordered after the saves made before it, awaited or not', async () => {
        const { store } = await opened();
        const writes: Promise<void>[] = [];
        for (let index = 1; index <= 30; index++) writes.push(store.save({ entries: [entry(index, 1)], hardState: { term: 1, vote: null, commit: index } }));
        writes.push(store.compact(snapshotAt(20, 1)));
        writes.push(store.save({ entries: entries(31, 32, 2) }));
        writes.push(store.compact(snapshotAt(25, 1)));
        await Promise.all(writes);
        await expectAfterRestart(store, { snapshot: snapshotAt(25, 1), entries: [...entries(26, 30, 1), ...entries(31, 32, 2)], hardState: { term: 1, vote: null, commit: 30 } });
      });

      it(`folds ${LARGE_BATCH} entries into a snapshot`, async () => {
        const { store } = await opened();
        const hardState: HardState = { term: 7, vote: 'x', commit: LARGE_BATCH };
        await store.save({ hardState, entries: entries(1, LARGE_BATCH, 7) });
        await store.compact(snapshotAt(LARGE_BATCH - 5, 7));
        await expectAfterRestart(store, { snapshot: snapshotAt(LARGE_BATCH - 5, 7), entries: entries(LARGE_BATCH - 4, LARGE_BATCH, 7), hardState });
      });

      it('keeps the snapshot it was given, whatever becomes of those bytes once the compaction is done', async () => {
        const store = await withLog();
        const data = Uint8Array.of(1, 2, 3);
        await store.compact({ index: 5, term: 1, data });
        data.fill(9);
        const { state } = await restart(store);
        expect(Array.from(state.snapshot.data)).toEqual([1, 2, 3]);
      });
    });

    describe('installed snapshots', () => {
      /** A store holding entries 1..10 at term 1, committed up to 3, compacted up to 2. */
      async function withLog(): Promise<LogStorage> {
        const { store } = await opened();
        await store.save({ hardState: { term: 1, vote: null, commit: 3 }, entries: entries(1, 10, 1) });
        await store.compact(snapshotAt(2, 1));
        return store;
      }

      it('replaces the snapshot and the whole log, without following entries', async () => {
        const store = await withLog();
        const installed = snapshotAt(40, 3, Uint8Array.of(0, 0xff, 40));
        const hardState: HardState = { term: 3, vote: 'b', commit: 40 };
        await store.save({ snapshot: installed, hardState, entries: [] });
        expect(store.firstIndex()).toBe(41);
        expect(store.snapshot()).toEqual({ index: 40, term: 3 });
        const again = await expectAfterRestart(store, { snapshot: installed, entries: [], hardState });
        await again.save({ entries: entries(41, 42, 3) });
        await expectAfterRestart(again, { snapshot: installed, entries: entries(41, 42, 3), hardState });
      });

      it("keeps an installed snapshot's configuration across a restart", async () => {
        const store = await withLog();
        const installed: Snapshot = { ...snapshotAt(40, 3), conf: { voters: ['b', 'c'], learners: ['a', 'z'], peerIds: [] } };
        const hardState: HardState = { term: 3, vote: 'b', commit: 40 };
        await store.save({ snapshot: installed, hardState, entries: [] });
        await expectAfterRestart(store, { snapshot: installed, entries: [], hardState });
      });

      it('replaces the whole log with the entries that follow it, even entries past them', async () => {
        const store = await withLog();
        // The snapshot falls inside the stored log: entries before it and past the new end all go.
        const installed = snapshotAt(5, 2);
        const hardState: HardState = { term: 2, vote: 'c', commit: 6 };
        await store.save({ snapshot: installed, hardState, entries: entries(6, 7, 2) });
        const again = await expectAfterRestart(store, { snapshot: installed, entries: entries(6, 7, 2), hardState });
        // The removed entries stay removed when the log grows back over them.
        await again.save({ entries: entries(8, 8, 2) });
        await expectAfterRestart(again, { snapshot: installed, entries: entries(6, 8, 2), hardState });
      });

      it('keeps the stored commit point when the batch has no hard state and the point falls within it', async () => {
        const store = await withLog();
        const installed = snapshotAt(3, 2);
        await store.save({ snapshot: installed, entries: entries(4, 4, 2) });
        await expectAfterRestart(store, { snapshot: installed, entries: [entry(4, 2)], hardState: { term: 1, vote: null, commit: 3 } });
      });

      it('refuses a snapshot batch that open() would reject, and loses nothing', async () => {
        const store = await withLog();
        const installed = snapshotAt(20, 2);
        const hardState: HardState = { term: 2, vote: null, commit: 20 };
        await expectInvalid(store.save({ snapshot: installed, hardState, entries: [entry(22, 2)] }), 'batch.entries[0].index');
        await expectInvalid(store.save({ snapshot: installed, hardState, entries: [entry(20, 2)] }), 'batch.entries[0].index');
        await expectInvalid(store.save({ snapshot: installed, hardState, entries: [entry(21, 1)] }), 'batch.entries[0].term');
        await expectInvalid(store.save({ snapshot: installed, hardState: { ...hardState, commit: 19 }, entries: [] }), 'batch.hardState.commit');
        await expectInvalid(store.save({ snapshot: installed, hardState: { ...hardState, commit: 22 }, entries: [entry(21, 2)] }), 'batch.hardState.commit');
        // Without a hard state the stored commit point (3) would fall behind the snapshot.
        await expectInvalid(store.save({ snapshot: installed, entries: [] }), 'batch.hardState');
        await expectInvalid(store.save({ snapshot: { ...installed, data: [1, 2] as unknown as Uint8Array }, hardState, entries: [] }), 'batch.snapshot.data');
        await expectInvalid(store.save({ snapshot: { ...installed, term: -1 }, hardState, entries: [] }), 'batch.snapshot.term');
        await expectInvalid(store.save({ snapshot: { ...installed, index: Number.MAX_SAFE_INTEGER + 1 }, hardState, entries: [] }), 'batch.snapshot.index');
        // Behind the stored snapshot (at 2): an installed snapshot never moves the start of the log back.
        await expectInvalid(store.save({ snapshot: snapshotAt(1, 1), hardState: { term: 1, vote: null, commit: 3 }, entries: [] }), 'batch.snapshot.index');
        await expectAfterRestart(store, { snapshot: snapshotAt(2, 1), entries: entries(3, 10, 1), hardState: { term: 1, vote: null, commit: 3 } });
      });

      it('keeps the snapshot it was given, whatever becomes of those bytes once the save is done', async () => {
        const store = await withLog();
        const data = Uint8Array.of(7, 8);
        await store.save({ snapshot: { index: 12, term: 1, data }, hardState: { term: 1, vote: null, commit: 12 }, entries: [] });
        data.fill(0);
        const { state } = await restart(store);
        expect(Array.from(state.snapshot.data)).toEqual([7, 8]);
      });
    });

    describe('random batches against a model', () => {
      it('holds what a model log holds after any sequence of appends, replacements, compactions, installed snapshots and restarts', async () => {
        await fc.assert(
          fc.asyncProperty(modelCommands, (commands) => expectModelHolds(factory, commands)),
          { numRuns: options.propertyRuns ?? DEFAULT_PROPERTY_RUNS },
        );
      });
    });
  });
}

/**
 * Runs `commands` against a new store and a model log, and expects the store to hold what the
 * model holds at every restart and at the end.
 */
export async function expectModelHolds(factory: LogStorageFactory, commands: readonly Command[]): Promise<void> {
  let store = await factory.create();
  const model: Model = { snapshot: EMPTY_SNAPSHOT, entries: [], hardState: { ...emptyHardState } };
  try {
    await store.open();
    for (const command of commands) {
      if (command.kind === 'restart') {
        await store.close();
        store = await factory.reopen(store);
        const state = await store.open();
        expect(state.snapshot).toEqual(model.snapshot);
        expect(state.entries).toEqual(model.entries);
        continue;
      }
      if (command.kind === 'compact') {
        const snapshot = compactionFor(command, model);
        await store.compact(snapshot);
        compactModel(model, snapshot);
        continue;
      }
      const batch = batchFor(command, model);
      await store.save(batch);
      applyToModel(model, batch);
    }
    await store.close();
    store = await factory.reopen(store);
    const state = await store.open();
    expect(state.snapshot).toEqual(model.snapshot);
    expect(state.entries).toEqual(model.entries);
    expect(state.hardState).toEqual(model.hardState);
    expect(store.firstIndex()).toBe(model.snapshot.index + 1);
  } finally {
    await store.close();
  }
}

/** The log as Raft sees it: entries contiguous from snapshot.index + 1. */
interface Model {
  snapshot: Snapshot;
  entries: Entry[];
  hardState: HardState;
}

type Command =
  | { readonly kind: 'append'; readonly count: number; readonly newTerm: boolean; readonly commit: number | null; readonly data: Uint8Array }
  | { readonly kind: 'replace'; readonly back: number; readonly count: number; readonly commit: number | null; readonly data: Uint8Array }
  | { readonly kind: 'hard-state'; readonly vote: string | null; readonly commit: number }
  | { readonly kind: 'compact'; readonly upTo: number; readonly data: Uint8Array }
  | { readonly kind: 'install'; readonly ahead: number; readonly count: number; readonly commit: number; readonly data: Uint8Array }
  | { readonly kind: 'restart' };

/** A commit point as a fraction of the way from the current commit to the last index. */
const commitArbitrary = fc.option(fc.double({ min: 0, max: 1, noNaN: true }), { nil: null });
const fractionArbitrary = fc.double({ min: 0, max: 1, noNaN: true });

const commandArbitrary: fc.Arbitrary<Command> = fc.oneof(
  { weight: 5, arbitrary: fc.record({ kind: fc.constant('append' as const), count: fc.integer({ min: 0, max: 20 }), newTerm: fc.boolean(), commit: commitArbitrary, data: fc.uint8Array({ maxLength: 24 }) }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('replace' as const), back: fc.integer({ min: 1, max: 12 }), count: fc.integer({ min: 1, max: 8 }), commit: commitArbitrary, data: fc.uint8Array({ maxLength: 24 }) }) },
  { weight: 1, arbitrary: fc.record({ kind: fc.constant('hard-state' as const), vote: fc.option(fc.constantFrom('a', 'b', 'c'), { nil: null }), commit: fractionArbitrary }) },
  { weight: 2, arbitrary: fc.record({ kind: fc.constant('compact' as const), upTo: fractionArbitrary, data: fc.uint8Array({ maxLength: 24 }) }) },
  {
    weight: 1,
    arbitrary: fc.record({
      kind: fc.constant('install' as const),
      // How far past the commit point the snapshot lands: behind the last index, or past it.
      ahead: fc.integer({ min: 0, max: 30 }),
      count: fc.integer({ min: 0, max: 6 }),
      commit: fractionArbitrary,
      data: fc.uint8Array({ maxLength: 24 }),
    }),
  },
  { weight: 1, arbitrary: fc.constant({ kind: 'restart' as const }) },
);

/** Any sequence of the commands expectModelHolds runs. */
export const modelCommands: fc.Arbitrary<readonly Command[]> = fc.array(commandArbitrary, { minLength: 1, maxLength: 25 });

function modelLastIndex(model: Model): number {
  return model.snapshot.index + model.entries.length;
}

function modelTermAt(model: Model, index: number): number {
  if (index === model.snapshot.index) return model.snapshot.term;
  const stored = model.entries[index - model.snapshot.index - 1];
  if (stored === undefined) throw new RangeError(`the model holds no entry at ${index}`);
  return stored.term;
}

/** A compaction Raft could make: up to a committed, stored index, with its term. */
function compactionFor(command: Extract<Command, { kind: 'compact' }>, model: Model): Snapshot {
  const from = model.snapshot.index;
  const index = from + Math.floor((model.hardState.commit - from) * command.upTo);
  return { index, term: modelTermAt(model, index), data: command.data };
}

function compactModel(model: Model, snapshot: Snapshot): void {
  model.entries.splice(0, snapshot.index - model.snapshot.index);
  model.snapshot = { ...snapshot, data: new Uint8Array(snapshot.data) };
}

/** Turns a command into a batch Raft could write: replacements never reach committed entries. */
function batchFor(command: Exclude<Command, { kind: 'restart' | 'compact' }>, model: Model): StorageBatch {
  const last = modelLastIndex(model);
  const lastTerm = modelTermAt(model, last);
  const { commit } = model.hardState;
  const commitBetween = (fraction: number, from: number, lastIndex: number): number => from + Math.floor((lastIndex - from) * fraction);
  if (command.kind === 'hard-state') {
    return { hardState: { term: model.hardState.term + 1, vote: command.vote, commit: commitBetween(command.commit, commit, last) }, entries: [] };
  }
  const term = Math.max(lastTerm, model.hardState.term) + (command.kind === 'append' && !command.newTerm ? 0 : 1);
  if (command.kind === 'install') {
    const snapshot: Snapshot = { index: commit + command.ahead, term, data: command.data };
    const written = entriesFor(snapshot.index + 1, command.count, term, command.data);
    const lastIndex = snapshot.index + command.count;
    return { snapshot, hardState: { term, vote: null, commit: commitBetween(command.commit, snapshot.index, lastIndex) }, entries: written };
  }
  const first = command.kind === 'append' ? last + 1 : Math.max(commit + 1, last - command.back + 1);
  const written = entriesFor(first, command.count, term, command.data);
  const lastIndex = command.count === 0 ? last : first + command.count - 1;
  if (command.commit === null) return { entries: written };
  // A vote cast stands for the rest of its term.
  const vote = term === model.hardState.term ? model.hardState.vote : 'a';
  return { hardState: { term, vote, commit: Math.min(lastIndex, commitBetween(command.commit, commit, lastIndex)) }, entries: written };
}

function entriesFor(first: number, count: number, term: number, seed: Uint8Array): Entry[] {
  const written: Entry[] = [];
  for (let i = 0; i < count; i++) {
    const data = seed.map((byte) => (byte + i) & 0xff);
    written.push({ index: first + i, term, type: data.length === 0 ? EntryType.Noop : EntryType.Normal, data, pid: data.length === 0 ? '' : `m#${first + i}` });
  }
  return written;
}

function applyToModel(model: Model, batch: StorageBatch): void {
  if (batch.snapshot !== undefined) {
    model.snapshot = { ...batch.snapshot, data: new Uint8Array(batch.snapshot.data) };
    model.entries.length = 0;
  }
  const first = batch.entries[0];
  if (first !== undefined) {
    model.entries.length = first.index - model.snapshot.index - 1;
    for (const written of batch.entries) model.entries.push({ ...written, data: new Uint8Array(written.data) });
  }
  if (batch.hardState !== undefined) model.hardState = { ...batch.hardState };
}
